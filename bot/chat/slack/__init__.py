"""The Slack backend: :mod:`.web` (the Web API: posting, user groups), :mod:`.app` (Bolt's
listeners for ``/gpu`` and the buttons), :mod:`.front` (how Slack reaches the bot: HTTP or Socket
Mode) and :mod:`.request_ids` (Slack's ids in the logs). The only modules that import
``slack_sdk`` and ``slack_bolt``.
"""
