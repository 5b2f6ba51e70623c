"""The bot's log lines, captured in the test's own process."""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections.abc import Callable, Iterator

from bot.service import logs


@contextlib.contextmanager
def bot_json_lines() -> Iterator[Callable[[], list[dict]]]:
    """Collects the JSON lines every ``bot`` logger writes at INFO and above; yields a function
    returning them parsed."""
    stream = io.StringIO()
    handler = logs.make_handler("json", stream)
    logger = logging.getLogger("bot")
    old_level = logger.level
    # Libraries that configure logging (import-linter, in another test) may have disabled every
    # logger existing at the time; these must write for the test to see anything.
    ours = [l for n, l in logging.root.manager.loggerDict.items() if n.startswith("bot") and isinstance(l, logging.Logger)]
    was_disabled = {l: l.disabled for l in ours}
    for l in ours:
        l.disabled = False
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    def read() -> list[dict]:
        return [json.loads(line) for line in stream.getvalue().splitlines()]

    try:
        yield read
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        for l, disabled in was_disabled.items():
            l.disabled = disabled
