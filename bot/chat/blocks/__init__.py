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
from bot.chat.blocks.fit import clip, clip_middle, more_line
from bot.runtime.chat import Message


def short_time(t: datetime) -> str:
    """``"2026-11-20 12:05 UTC"`` for an aware UTC ``t``."""
    return t.strftime("%Y-%m-%d %H:%M UTC")


SECTION_CHARS = 3000  # Slack's limit on a section's text and on a context element's
HEADER_CHARS = 150
CONTEXT_ELEMENTS = 10
MESSAGE_BLOCKS = 50


def header(text: str, keep: str = "") -> dict:
    """A header block (plain text) of ``text`` then ``keep``, within Slack's 150 characters: a
    long ``text`` (a 253-character Kubernetes name) is shortened in its middle so that ``keep``
    (``" in cluster west"``) is always shown."""
    return {"type": "header", "text": {"type": "plain_text", "text": clip_middle(text, HEADER_CHARS - len(keep)) + keep}}


def section(text: str) -> dict:
    """A section block of mrkdwn ``text``. Slack refuses one over 3000 characters; a longer
    ``text`` is clipped with "…" as a last guard: fit rows first (:func:`.fit.fit_rows`)."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, SECTION_CHARS)}}


def context(*texts: str) -> dict:
    """A context block: one mrkdwn element per text (Slack takes at most 10, each of at most 3000
    characters); from an 11th on, the tenth says how many more there are."""
    if len(texts) > CONTEXT_ELEMENTS:
        texts = (*texts[: CONTEXT_ELEMENTS - 1], more_line(len(texts) - CONTEXT_ELEMENTS + 1, "more notes"))
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(t, SECTION_CHARS)} for t in texts]}


def error_message(problem: str, example: str | None = None) -> Message:
    """An ephemeral error: what was wrong and, when there is one, a correct example."""
    text = f":warning: {problem}"
    if example:
        text += f"\nFor example: `{example}`"
    return Message(text=text, blocks=[section(text)])


def text_message(text: str) -> Message:
    """A plain mrkdwn message."""
    return Message(text=text, blocks=[section(text)])
