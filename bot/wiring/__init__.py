"""Assembles the bot from settings and command-line choices: the only place that knows which
concrete parts go together. :mod:`.runtime` (the Runtime: a live cluster or a dump, Prometheus or
a recording), :mod:`.clusters` (each of several clusters' parts), :mod:`.sources` (the readers of
Prometheus, the usage ledger and advice history), :mod:`.jobs` (the scheduled jobs),
:mod:`.process` (Slack or the console, serving until SIGTERM) and :mod:`.probes` (what ``check
--connect`` reaches). Everything it builds is handed down; nothing below it reads settings for
itself."""
