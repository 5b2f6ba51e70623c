"""The Slack backend of :class:`bot.chat.Chat`, on slack_sdk's WebClient.

Rate limits (HTTP 429) and dropped connections are retried by slack_sdk's own retry handlers;
anything else surfaces as :class:`~bot.chat.ChatError` so the caller can keep its state and try
again on the next sweep.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler

from bot.chat import ChatError, Message, MessageRef
from bot.metrics import BotMetrics


def web_client(token: str, base_url: str | None = None) -> WebClient:
    """A WebClient that retries rate-limited and dropped calls (3 times each)."""
    kwargs = {"base_url": base_url} if base_url else {}
    client = WebClient(token=token, **kwargs)
    client.retry_handlers.extend(
        [RateLimitErrorRetryHandler(max_retry_count=3), ConnectionErrorRetryHandler(max_retry_count=3)]
    )
    return client


class SlackChat:
    """Posts, updates and ephemerals through the Web API (``chat.postMessage``, ``chat.update``,
    ``chat.postEphemeral``). Raises ChatError with the method and Slack's error code, and counts
    each in ``metrics`` (``gpu_cost_bot_slack_api_errors_total{method}``) when given."""

    def __init__(self, client: WebClient, metrics: BotMetrics | None = None):
        self.client = client
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
        r = self._call(
            "chat.postMessage", self.client.chat_postMessage,
            channel=channel, text=message.text, blocks=message.blocks,
        )
        return MessageRef(r["channel"], r["ts"])

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
