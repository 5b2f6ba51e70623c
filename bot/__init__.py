"""The chat process: everything that talks to people, runs on a schedule, or keeps the process
alive. The GPU-cost logic it runs is in ``actions``.

- ``chat/``: what people see and press: the chat abstraction, the Runtime its handlers are
  given, the Slack and console backends, Block Kit, the ``/gpu`` subcommands, the proposal and
  alert buttons.
- ``jobs/``: one module per scheduled job (idle sweep, alerts, digests, price refresh) and the
  scheduler that runs them.
- ``service/``: the long-running process: HTTP endpoints, leader election, metrics, logs,
  graceful shutdown.
- Here: :mod:`.cli` (the command line), :mod:`.settings` (the config), :mod:`.wiring` (which
  assembles the parts from the settings) and :mod:`.demo`.

Imports run downwards only: cli -> demo -> wiring -> jobs -> chat -> service -> settings ->
actions (``.importlinter`` checks it).
"""
