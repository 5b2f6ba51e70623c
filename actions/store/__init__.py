"""The bot's database (SQLite or PostgreSQL), one module per table group:
:mod:`.states` and :mod:`.requests` (action requests, their states and the table),
:mod:`.state_machine` (moving a request from state to state, atomically, audited),
:mod:`.outbox` (each request's Slack message as desired state), :mod:`.audit`,
:mod:`.price_cache`, :mod:`.budgets`, :mod:`.alerts` (alerts sent, once across replicas),
:mod:`.job_runs`, :mod:`.ledger` (the usage ledger's tables), :mod:`.activity` (the sweep's
activity state), :mod:`.bulk` (many requests in a few statements), :mod:`.facts` (what the store
records about itself once), :mod:`.seen` (Slack requests taken, so a replay is not handled
twice); :mod:`.schema` (what the tables share) and :mod:`.database` (:class:`~.database.Store`,
all of them on one engine, and the migrations in ``migrations/``)."""
