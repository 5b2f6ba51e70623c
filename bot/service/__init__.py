"""The long-running process: :mod:`.process` (start, serve, drain on SIGTERM), :mod:`.http`
(``/healthz``, ``/readyz``, ``/metrics`` and what the chat mounts), :mod:`.leader` (Lease
election), :mod:`.metrics` (``gpu_cost_bot_*``), :mod:`.logs` (JSON lines with request ids) and
:mod:`.work` (bounded worker pools, shared computations, periodic housekeeping).

The service imports ``actions`` (the store, the Lease) and :mod:`bot.settings` only: it knows
neither Slack nor Kueue, and the chat and jobs reach it through small protocols.
"""
