"""What the bot knows and does about GPU cost, with no chat in it. Each folder is one part:

- plain data at the bottom: ``hardware/`` (GPU models, datasheets, MIG profiles), ``model/`` (the
  types every part shares, by subject, with their JSON codec and time helpers), :mod:`.text`
  (money and durations as people read them), ``telemetry/`` (what a sweep keeps between sweeps);
- the rules: ``pricing/`` (the catalog, config overrides, the price book, live prices),
  ``policy/`` (thresholds, teams, the policy in force per namespace, advice settings);
- :mod:`.ports`: every interface to the outside, as Protocols;
- pure decisions: ``detect/`` (owners, consumers, the idle and unrequested-GPU detectors),
  ``remedy/`` (what each action patches and its exact undo), ``cost/`` (the cost engine and
  reports), ``kueue/`` (queues, freeing GPUs for a waiting Workload), ``ledger/`` (the usage
  ledger's hours and rollup), ``estimate/`` (``/gpu estimate``: parse, price, render),
  ``advice/`` (right-size, spot, commitments), ``alerts/`` (budgets, queue waits, capacity);
- the edges: ``sources/`` (the Kubernetes API, Prometheus, AWS prices, kubectl dumps,
  recordings), ``executors/`` (a live cluster, a JupyterHub, a cluster in memory), ``store/``
  (the database, one module per table group, and its migrations).

Nothing here imports ``bot``; every package but the edges does no I/O, and the packages import
only downwards in the order above (``.importlinter``, checked by ``tests/test_layers.py``).
"""
