"""The chat as the running bot posts through it, whatever the chat system is: :class:`Chat` (post,
update, find, ephemeral, upload) and the :class:`Message` it carries. The backends are
:mod:`bot.chat.slack` and :mod:`bot.chat.console`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol


@dataclass(frozen=True)
class Message:
    """A chat message: Block Kit ``blocks`` and the plain ``text`` shown in notifications and by
    clients that cannot render blocks. ``metadata`` (Slack's message metadata,
    ``{"event_type": ..., "event_payload": {...}}``) travels with a post so the message can be
    found again (:meth:`Chat.find`)."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class MessageRef:
    """Where a posted message lives: channel id and Slack's ``ts``."""

    channel: str
    ts: str


class ChatError(Exception):
    """The chat system refused or could not be reached; the message says which call and why."""


class Chat(Protocol):
    """Posting side of a chat backend. All methods raise ChatError on failure."""

    def post(self, channel: str, message: Message) -> MessageRef:
        """Post a new message to ``channel``."""

    def update(self, ref: MessageRef, message: Message) -> None:
        """Replace a posted message (its metadata is kept)."""

    def find(self, channel: str, event_type: str, payload: dict[str, Any], since: datetime) -> MessageRef | None:
        """The newest message in ``channel`` posted at or after ``since`` (aware UTC) whose
        metadata has ``event_type`` and an ``event_payload`` containing ``payload``; None when
        there is none (a post whose answer was lost is found this way instead of posted again)."""

    def ephemeral(self, channel: str, user: str, message: Message) -> None:
        """Show ``message`` to ``user`` only."""

    def upload_file(self, channel: str, filename: str, content: bytes, title: str, initial_comment: str) -> None:
        """Share a file (e.g. a PNG chart, ``content`` its bytes) in ``channel`` as ``filename``,
        titled ``title``, with ``initial_comment`` posted beside it."""
