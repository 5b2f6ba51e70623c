"""Block Kit, rendered purely: data in, :class:`~bot.runtime.chat.Message` out. No I/O, no clock reads.

This package holds the builders every message shares (header, section, context, errors) and
Slack's limits (50 blocks per message, 3000 characters per section text, 150 per header); one
module per kind of message: :mod:`.proposals` (idle-GPU proposals and their buttons),
:mod:`.alerts`, :mod:`.digests`. It imports only ``actions`` (data and text formats) and
:mod:`bot.chat`.
"""

from __future__ import annotations

from datetime import datetime

from actions.text import duration, plain, usd  # noqa: F401 - re-exported for the chat layer
from bot.runtime.chat import Message


def short_time(t: datetime) -> str:
    """``"2026-11-20 12:05 UTC"`` for an aware UTC ``t``."""
    return t.strftime("%Y-%m-%d %H:%M UTC")


SECTION_CHARS = 3000  # Slack's limit on a section's text and on a context element's
HEADER_CHARS = 150


def header(text: str) -> dict:
    """A header block (plain text, cut at Slack's 150 characters)."""
    return {"type": "header", "text": {"type": "plain_text", "text": text[:HEADER_CHARS]}}


def section(text: str) -> dict:
    """A section block of mrkdwn ``text``, cut at Slack's 3000 characters."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_CHARS]}}


def context(*texts: str) -> dict:
    """A context block: one mrkdwn element per text (Slack takes at most 10), each cut at 3000
    characters."""
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": t[:SECTION_CHARS]} for t in texts[:10]]}


def error_message(problem: str, example: str | None = None) -> Message:
    """An ephemeral error: what was wrong and, when there is one, a correct example."""
    text = f":warning: {problem}"
    if example:
        text += f"\nFor example: `{example}`"
    return Message(text=text, blocks=[section(text)])


def text_message(text: str) -> Message:
    """A plain mrkdwn message."""
    return Message(text=text, blocks=[section(text)])
