"""The bot's log lines, captured in the test's own process."""

from __future__ import annotations

import contextlib
import io
import json
import logging
from collections.abc import Callable, Iterator

from bot.service import logs


@contextlib.contextmanager
def bot_lines(fmt: logs.LogFormat = "json") -> Iterator[Callable[[], str]]:
    """Collects what every ``bot`` logger writes at INFO and above, as ``fmt`` lines; yields a
    function returning the text written so far."""
    stream = io.StringIO()
    handler = logs.make_handler(fmt, stream)
    logger = logging.getLogger("bot")
    old_level = logger.level
    # Libraries that configure logging (import-linter, in another test) may have disabled every
    # logger existing at the time; these must write for the test to see anything.
    ours = [lg for n, lg in logging.root.manager.loggerDict.items() if n.startswith("bot") and isinstance(lg, logging.Logger)]
    was_disabled = {lg: lg.disabled for lg in ours}
    for lg in ours:
        lg.disabled = False
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield stream.getvalue
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        for lg, disabled in was_disabled.items():
            lg.disabled = disabled


@contextlib.contextmanager
def bot_json_lines() -> Iterator[Callable[[], list[dict]]]:
    """Collects the JSON lines every ``bot`` logger writes at INFO and above; yields a function
    returning them parsed."""
    with bot_lines("json") as text:
        yield lambda: [json.loads(line) for line in text().splitlines()]
