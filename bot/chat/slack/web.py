"""The Slack backend of :class:`bot.runtime.chat.Chat`, on slack_sdk's WebClient.

Rate limits (HTTP 429), Slack's 5xx answers and dropped connections are retried by slack_sdk's
own retry handlers, except for ``chat.postMessage``: a post whose answer was lost may have been
posted, so only a 429 (Slack did nothing) is retried there, and the caller searches the channel
(:meth:`SlackChat.find`) before posting again. Every request ends at the client's ``timeout`` in
all (:mod:`bot.chat.slack.deadline`), and a try past it is not retried. Anything else surfaces as
:class:`~bot.runtime.chat.ChatError` so the caller keeps its state and tries again.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any, Callable

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from bot.chat.slack.deadline import TIMEOUT_SECONDS, DeadlineWebClient
from bot.runtime.chat import ChatError, Message, MessageRef
from bot.service.metrics import BotMetrics


def web_client(
    token: str, base_url: str | None = None, *, idempotent: bool = True, timeout_seconds: float = TIMEOUT_SECONDS,
) -> WebClient:
    """A WebClient whose every request ends at ``timeout_seconds`` in all (connect, send and every
    read; past it SlackDeadlinePassed, a SlackClientError, and no retry), that retries
    rate-limited calls (3 times), and, when ``idempotent`` (every call it makes can be repeated
    safely), dropped connections and Slack's 5xx answers too (2 times each)."""
    kwargs = {"base_url": base_url} if base_url else {}
    client = DeadlineWebClient(token=token, timeout=timeout_seconds, **kwargs)
    client.retry_handlers[:] = [RateLimitErrorRetryHandler(max_retry_count=3)]
    if idempotent:
        client.retry_handlers.extend(
            [ConnectionErrorRetryHandler(max_retry_count=2), ServerErrorRetryHandler(max_retry_count=2)]
        )
    return client


def posting_client(client: WebClient) -> WebClient:
    """A copy of ``client`` for ``chat.postMessage``: same token, URL and deadline, but only a 429
    is retried, because a post whose answer was lost may have been posted."""
    copy = DeadlineWebClient(token=client.token, base_url=client.base_url, timeout=client.timeout)
    copy.retry_handlers[:] = [RateLimitErrorRetryHandler(max_retry_count=3)]
    return copy


class SlackChat:
    """Posts, updates, finds and ephemerals through the Web API (``chat.postMessage``,
    ``chat.update``, ``conversations.history``, ``chat.postEphemeral``). Raises ChatError with the
    method and Slack's error code, and counts each in ``metrics``
    (``gpu_cost_bot_slack_api_errors_total{method}``) when given."""

    # conversations.history pages to read before giving up the search for a lost post.
    MAX_HISTORY_PAGES = 5

    def __init__(self, client: WebClient, metrics: BotMetrics | None = None):
        self.client = client
        self.poster = posting_client(client)
        self.metrics = metrics

    def _call(self, method: str, fn: Callable, **kwargs):
        try:
            return fn(**kwargs)
        except SlackApiError as e:
            error = ChatError(f"{method}: {e.response.get('error', e)}")
            cause: Exception = e
        except (SlackClientError, OSError) as e:
            error = ChatError(f"{method}: {e}")
            cause = e
        if self.metrics:
            self.metrics.slack_error(method)
        raise error from cause

    def post(self, channel: str, message: Message) -> MessageRef:
        extra = {"metadata": message.metadata} if message.metadata else {}
        r = self._call(
            "chat.postMessage", self.poster.chat_postMessage,
            channel=channel, text=message.text, blocks=message.blocks, **extra,
        )
        return MessageRef(r["channel"], r["ts"])

    def find(self, channel: str, event_type: str, payload: dict[str, Any], since: datetime) -> MessageRef | None:
        """See :meth:`bot.runtime.chat.Chat.find`: ``conversations.history`` from ``since`` with
        ``include_all_metadata``, newest first, at most :attr:`MAX_HISTORY_PAGES` pages of 200."""
        cursor = None
        for _ in range(self.MAX_HISTORY_PAGES):
            page = self._call(
                "conversations.history", self.client.conversations_history, channel=channel,
                oldest=f"{since.timestamp():.6f}", limit=200, include_all_metadata=True,
                **({"cursor": cursor} if cursor else {}),
            )
            for m in page.get("messages") or []:
                meta = m.get("metadata") or {}
                carried = (meta.get("event_payload") or {}).items()
                if meta.get("event_type") == event_type and payload.items() <= carried:
                    return MessageRef(channel, m["ts"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return None
        return None

    def update(self, ref: MessageRef, message: Message) -> None:
        self._call(
            "chat.update", self.client.chat_update,
            channel=ref.channel, ts=ref.ts, text=message.text, blocks=message.blocks,
        )

    def ephemeral(self, channel: str, user: str, message: Message) -> None:
        self._call(
            "chat.postEphemeral", self.client.chat_postEphemeral,
            channel=channel, user=user, text=message.text, blocks=message.blocks,
        )

    def upload_file(self, channel: str, filename: str, content: bytes, title: str, initial_comment: str) -> None:
        """Share ``content`` in ``channel`` with ``files_upload_v2`` (files.getUploadURLExternal,
        the upload, files.completeUploadExternal). Raises ChatError naming ``files_upload_v2`` and
        Slack's error code when any step fails."""
        self._call(
            "files_upload_v2", self.client.files_upload_v2,
            channel=channel, filename=filename, content=content, title=title,
            initial_comment=initial_comment,
        )


class UserGroups:
    """Expands a Slack user group id (``S...``) into its member ids with ``usergroups.users.list``,
    caching each answer for ``ttl_seconds`` so a burst of presses costs one call. A group that
    cannot be read expands to no one: an approval is never granted by an unreadable group (and
    counts as a ``usergroups.users.list`` error in ``metrics`` when given)."""

    def __init__(
        self,
        client: WebClient,
        ttl_seconds: float = 60,
        clock: Callable[[], float] = time.monotonic,
        metrics: BotMetrics | None = None,
    ):
        self.client = client
        self.ttl = ttl_seconds
        self.clock = clock
        self.metrics = metrics
        self._cache: dict[str, tuple[float, set[str]]] = {}
        self._lock = threading.Lock()

    def members(self, group: str) -> set[str]:
        with self._lock:
            hit = self._cache.get(group)
            if hit and self.clock() - hit[0] < self.ttl:
                return hit[1]
        try:
            users = set(self.client.usergroups_users_list(usergroup=group)["users"])
        except (SlackApiError, SlackClientError, OSError):
            if self.metrics:
                self.metrics.slack_error("usergroups.users.list")
            return set()
        with self._lock:
            self._cache[group] = (self.clock(), users)
        return users
