"""The chat process: everything that talks to people, runs on a schedule, or keeps the process
alive. The GPU-cost logic it runs is in ``actions``.

- ``cli/``: the ``gpu-cost-bot`` command, one module per group of commands.
- :mod:`.demo`: the whole loop on bundled data.
- ``wiring/``: assembles the parts from the settings; the only place that knows which go together.
- ``jobs/``: one module per scheduled job (idle sweep, alerts, digests, advice, price refresh,
  ledger) and the scheduler that runs them.
- ``chat/``: what people see and press: the Slack and console backends, Block Kit, the ``/gpu``
  subcommands, the proposal and alert buttons.
- ``runtime/``: the application layer the chat, the jobs and the CLI stand on: the Runtime (what
  is idle, what waits, what it cost, across clusters), the chat abstraction, the price book.
- ``service/``: the long-running process: HTTP endpoints, leader election, metrics, logs,
  graceful shutdown, worker pools.
- ``settings/``: the config, loaded once into one typed object.

Imports run downwards only: cli -> demo -> wiring -> jobs -> chat -> runtime -> service ->
settings -> actions (``.importlinter`` checks it).
"""

import gc

# The process keeps nearly everything it allocates: start-up loads hundreds of thousands of
# long-lived objects (modules, the settings, the kubernetes client's models) and a fleet-scale
# sweep decodes tens of thousands of pods. At Python's default (a young collection every 700 net
# allocations, each promoting survivors towards full collections) the collector walks them again
# and again: a quarter of a second of start-up and as much of a sweep. Cycles are still collected,
# a young collection every 10,000 allocations. Start-up's objects are then frozen out of the
# collector's reach (:func:`bot.wiring.runtime.keep_alive_to_exit`).
gc.set_threshold(10_000, 10, 10)
