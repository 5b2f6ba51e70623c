"""The scheduled jobs, one module each: :mod:`.sweep` (idle sweep), :mod:`.alerts`,
:mod:`.digests`, :mod:`.prices` (live AWS prices), and :mod:`.scheduler`, which runs them once
across replicas. A job is built with what it needs (``bot.wiring`` binds it), never the whole
Runtime.

Jobs import ``actions``, :mod:`bot.settings`, :mod:`bot.service`, and the chat abstraction and
renderers of :mod:`bot.chat`, never a chat backend (``bot.chat.slack``, ``bot.chat.console``).
"""
