"""The chat layer: everything people see and press, whatever the chat system is.

This module is the abstraction: :class:`Chat` (post, update, ephemeral, upload) and the
:class:`Message` it carries. Beside it: :mod:`.runtime` holds the parts every handler is given
(store, cluster, telemetry, prices, teams) and the questions asked of them; ``blocks/`` renders
Block Kit (pure); ``commands/`` has one module per ``/gpu`` subcommand; :mod:`.proposals` moves
each idle-GPU proposal's request with the sweeps and settles actions whose outcome is unknown;
:mod:`.messages` writes each request's message until the channel shows its state; :mod:`.approvals` and
:mod:`.alert_snooze` handle the buttons; :mod:`.chart` draws cost charts. The backends are
``slack/`` (Bolt and the Web API) and :mod:`.console` (a terminal). The chat layer imports
``actions``, :mod:`bot.service` and :mod:`bot.settings`, never ``bot.jobs``; only ``slack/``
imports ``slack_sdk`` and ``slack_bolt``.
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
