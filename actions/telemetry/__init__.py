"""What a sweep keeps of Prometheus's answers between sweeps, so the next asks only about the
minutes since: :mod:`.activity` (when each GPU was first seen, last seen and last busy over the
lookback) and :mod:`.presence` (at which steps of the window each series was seen). Pure."""
