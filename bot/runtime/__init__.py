"""The running bot's application layer, which the chat, the jobs and the CLI stand on:
:mod:`.runtime` (the parts assembled once, and the questions every front end asks of them),
:mod:`.clusters` (several clusters read side by side), :mod:`.identity` (the cluster each request names), :mod:`.chat` (the chat abstraction every
post goes through) and :mod:`.prices` (the price book a running bot uses). It imports
``actions``, :mod:`bot.service` and :mod:`bot.settings`, never the chat backends or the jobs."""
