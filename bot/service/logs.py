"""Logging: one JSON object per line for log collectors, or plain text for a terminal.

A JSON line looks like::

    {"time": "2026-11-20T12:00:00.123Z", "level": "INFO", "logger": "bot.service.http",
     "message": "GET /readyz 200", "request_id": "3f2c...", "status": 200}

``request_id`` is present while a request is being handled (see :data:`request_id`): the HTTP
request id (:mod:`bot.service.http`), replaced inside Bolt by Slack's own id for the request
(``bot.chat.slack.request_ids``), so the lines written on its behalf, after the ack and on a
worker pool's threads (:class:`bot.service.work.WorkerPool` carries the context over), carry the
id of the press that caused them. ``exc_info`` holds the formatted traceback when one was logged; keys passed with
``extra={...}`` are added as they are (values that are not JSON become strings).

The formatter is the standard library's ``logging.Formatter`` with a ``format`` of a dozen lines:
the fields above are all the bot needs, and owning them keeps the time exactly RFC 3339 UTC.
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Literal

LogFormat = Literal["json", "text"]

request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
"""The id of the request being handled in this context, or None outside one."""

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s%(request_id_suffix)s: %(message)s"

# What str.splitlines() and line-based log readers break a line at besides \n and \r: a record
# holding one must stay one line. JSON escapes the C0 controls itself; text escapes them all.
_UNICODE_BREAKS = ("\x85", "\u2028", "\u2029")
_JSON_LINE_BREAKS = str.maketrans({c: f"\\u{ord(c):04x}" for c in _UNICODE_BREAKS})
_TEXT_ESCAPES = str.maketrans({
    **{chr(c): f"\\x{c:02x}" for c in (*range(0x20), 0x7F) if chr(c) != "\t"},
    "\n": "\\n", "\r": "\\r",
    **{c: f"\\u{ord(c):04x}" for c in _UNICODE_BREAKS},
})

# Attributes every LogRecord has; anything else on a record came from ``extra=``.
_RECORD_ATTRIBUTES = frozenset(
    vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None)).keys()
    | {"message", "asctime", "request_id", "request_id_suffix"}
)


class RequestIdFilter(logging.Filter):
    """Stamps each record with ``request_id`` (the context's value, or None) and
    ``request_id_suffix`` (`` [<id>]`` or empty, for the text format). Attach it to a handler so
    records from every logger get it, in the thread that logged them."""

    def filter(self, record: logging.LogRecord) -> bool:
        rid = request_id.get()
        record.request_id = rid
        record.request_id_suffix = f" [{rid}]" if rid else ""
        return True


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON: ``time`` (RFC 3339, UTC, milliseconds), ``level``,
    ``logger``, ``message``, then ``request_id`` when set, ``exc_info`` and ``stack_info`` when
    present, and any ``extra`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, timezone.utc)
        line: dict[str, object] = {
            "time": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        rid = getattr(record, "request_id", None)
        if rid:
            line["request_id"] = rid
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exc_info"] = record.exc_text
        if record.stack_info:
            line["stack_info"] = self.formatStack(record.stack_info)
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and key not in line:
                line[key] = value
        # json escapes the C0 controls; these other line breaks it leaves as they are.
        return json.dumps(line, default=str, ensure_ascii=False).translate(_JSON_LINE_BREAKS)


class TextFormatter(logging.Formatter):
    """:data:`TEXT_FORMAT`, one record a line whatever it holds: control characters and Unicode
    line breaks in the message are escaped (``\\n``, ``\\u2028``), so a value someone typed cannot
    start a line that reads as a record of its own; a traceback's lines are indented."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        return super().formatMessage(record).translate(_TEXT_ESCAPES)

    def formatException(self, ei) -> str:  # noqa: N802, ANN001 - logging's name and signature
        return "\n".join("    " + line for line in super().formatException(ei).splitlines())


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the moment of each record, so a handler set up
    before stderr is redirected (by a test runner, or a CLI runner) never writes to a closed
    stream."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr


def make_handler(fmt: LogFormat, stream=None) -> logging.Handler:
    """A handler writing ``fmt`` lines, with the request id filter, to ``stream`` (a text file
    object) or, when None, to the current ``sys.stderr``."""
    handler = logging.StreamHandler(stream) if stream is not None else _StderrHandler()
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    return handler


_installed: logging.Handler | None = None


def setup(fmt: LogFormat | None = None, level: int | str = logging.INFO) -> logging.Handler:
    """Send every logger's records at ``level`` (``"INFO"`` or ``logging.INFO``) and above to
    stderr as ``fmt``: ``"json"`` or ``"text"``; None picks text when stderr is a terminal and
    JSON otherwise (a container's log collector). Returns the handler installed on the root
    logger.

    Calling it again replaces the handler it installed before. A plain stderr handler already on
    the root logger (``logging.basicConfig``'s) is removed, or every line would be written twice;
    other handlers (a test runner's capture, say) are left alone.
    """
    global _installed
    if fmt is None:
        fmt = "text" if sys.stderr.isatty() else "json"
    root = logging.getLogger()
    if _installed is not None:
        root.removeHandler(_installed)
    for handler in list(root.handlers):
        if type(handler) is logging.StreamHandler and handler.stream in (sys.stderr, sys.__stderr__):
            root.removeHandler(handler)
    _installed = make_handler(fmt)
    root.addHandler(_installed)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    quiet_libraries(root.level)
    return _installed


def remove() -> None:
    """Take the handler :func:`setup` installed off the root logger (none: nothing to do)."""
    global _installed
    if _installed is not None:
        logging.getLogger().removeHandler(_installed)
        _installed = None


def quiet_libraries(level: int) -> None:
    """Below DEBUG (``level``, a logging level), hold back library lines a reader cannot act on:
    alembic's INFO line per migration step (a new database writes twenty before the bot says
    anything), and urllib3's warning before each retry of a connection (the caller's one error
    after the last try says what failed and where)."""
    debugging = level <= logging.DEBUG
    logging.getLogger("alembic").setLevel(logging.NOTSET if debugging else logging.WARNING)
    logging.getLogger("urllib3.connectionpool").setLevel(logging.NOTSET if debugging else logging.ERROR)
