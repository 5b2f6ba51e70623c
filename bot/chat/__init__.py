"""The chat layer: everything people see and press, whatever the chat system is.

``blocks/`` renders Block Kit (pure); ``commands/`` has one module per ``/gpu`` subcommand;
:mod:`.proposals` moves each idle-GPU proposal's request with the sweeps and settles actions whose
outcome is unknown; :mod:`.messages` writes each request's message until the channel shows its
state; :mod:`.approvals` and :mod:`.alert_snooze` handle the buttons, and :mod:`.outcomes` holds
what a press answers; :mod:`.auto` acts for a
team's policy after the grace; :mod:`.verify` checks each action's outcome afterwards; :mod:`.chart` draws cost charts. The backends are ``slack/`` (Bolt
and the Web API) and :mod:`.console` (a terminal), each a :class:`bot.runtime.chat.Chat`. The
chat layer imports ``actions``, :mod:`bot.runtime`, :mod:`bot.service` and :mod:`bot.settings`,
never ``bot.jobs``; only ``slack/`` imports ``slack_sdk`` and ``slack_bolt``.
"""
