"""What the bot needs from a chat system, whatever the chat system is.

Two backends implement :class:`Chat`: ``bot.slack_chat.SlackChat`` (the Slack Web API) and
``bot.console.ConsoleChat`` (a terminal). Everything above them speaks in :class:`Message`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Message:
    """A chat message: Block Kit ``blocks`` and the plain ``text`` shown in notifications and by
    clients that cannot render blocks."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)


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
        """Replace a posted message."""

    def ephemeral(self, channel: str, user: str, message: Message) -> None:
        """Show ``message`` to ``user`` only."""

    def upload_file(self, channel: str, filename: str, content: bytes, title: str, initial_comment: str) -> None:
        """Share a file (e.g. a PNG chart, ``content`` its bytes) in ``channel`` as ``filename``,
        titled ``title``, with ``initial_comment`` posted beside it."""
