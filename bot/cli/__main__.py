"""``python -m bot.cli``: the ``gpu-cost-bot`` command."""

from bot.cli.main import app

app()
