"""The ``gpu-cost-bot`` command: :mod:`.main` (the app and its commands: check, sweep, estimate,
run, demo, migrate), :mod:`.report` (``report``, by team or Kueue queue), :mod:`.advise`,
:mod:`.ledger` and :mod:`.settings` (the settings every command loads, ``--at``)."""
