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
    ``chat.postEphemeral``). Raises ChatError with the method and Slack's error code."""

    def __init__(self, client: WebClient):
        self.client = client

    def _call(self, method: str, fn: Callable, **kwargs):
        try:
            return fn(**kwargs)
        except SlackApiError as e:
            raise ChatError(f"{method}: {e.response.get('error', e)}") from e
        except (SlackClientError, OSError) as e:
            raise ChatError(f"{method}: {e}") from e

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


class UserGroups:
    """Expands a Slack user group id (``S...``) into its member ids with ``usergroups.users.list``,
    caching each answer for ``ttl_seconds`` so a burst of presses costs one call. A group that
    cannot be read expands to no one: an approval is never granted by an unreadable group."""

    def __init__(self, client: WebClient, ttl_seconds: float = 60, clock: Callable[[], float] = time.monotonic):
        self.client = client
        self.ttl = ttl_seconds
        self.clock = clock
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
            return set()
        with self._lock:
            self._cache[group] = (self.clock(), users)
        return users
