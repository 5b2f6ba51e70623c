"""What the bot knows and does about GPU cost, with no chat in it.

- Data at the bottom: :mod:`.model` (the types), :mod:`.policy` (thresholds, teams),
  :mod:`.prices` (the catalog and overrides), :mod:`.text` (units as people read them).
- Pure decisions above it: :mod:`.idle` (what is idle), :mod:`.cost` (the cost engine),
  :mod:`.estimate`, :mod:`.queue`, :mod:`.alerts`, :mod:`.patches` (what an action patches and
  how to undo it).
- At the edges: ``sources/`` (Prometheus, the Kubernetes API, a kubectl dump, AWS prices),
  :mod:`.executors` (patches a live cluster), :mod:`.in_memory_cluster` (a dump played as a
  cluster), :mod:`.store` (the database), :mod:`.lease`; :mod:`.reporting` reads a period's usage
  and prices it.

Nothing here imports ``bot``; decisions import nothing that does I/O (``.importlinter``).
"""
