"""The ``gpu-cost-bot`` command: :mod:`.main` (the app and its commands: check, sweep, estimate,
report, run, demo, migrate), :mod:`.advise`, :mod:`.ledger` and :mod:`.settings` (the settings
every command loads)."""
