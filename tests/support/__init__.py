"""What the tests share; no test module imports another (tests/test_layers.py checks).

- ``fixtures/``: the shared fixtures, plugins of tests/conftest.py (databases, the shared real
  Prometheus servers, the demo fleet, the GPU-accounting scenario);
- ``needs.py``: the ``prometheus``, ``postgres`` and ``process`` markers, held to what a test starts;
- ``fakes/``: Slack, the Kubernetes API server and Prometheus at the wire, and a TCP proxy to cut;
- the worlds tests run in: ``demo_world`` (the demo fleet as a Runtime), ``fleet`` (FLEET.md from the
  real H100 capture in ``data/``), ``usage_history`` (30 days for cost reports), ``gpu_shapes`` and
  ``accounting`` (GPU accounting of real clusters), ``workload_shapes`` (every workload kind as its
  controller builds it), ``advice_fleet``, ``kueue_metrics``;
- the means: ``prometheus_server`` (a real one), ``bot_process`` and ``processes`` (the bot as a child
  process), ``kubeconfig``, ``clusters``, ``openmetrics``, ``raw_http``, ``logs``, ``replies``,
  ``clock``, ``waiting``, ``paths``.
"""
