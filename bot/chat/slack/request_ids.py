"""Slack's own request ids in the logs: a Bolt global middleware.

While a slash command, button press or event is handled, :data:`bot.service.logs.request_id` is
Slack's id for it, so every line logged on its behalf (after the ack too, on the worker pools)
can be joined to the press that caused it.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

from bot.service.logs import request_id

_log = logging.getLogger(__name__)


def slack_id(body: Mapping[str, Any]) -> str | None:
    """Slack's own id for a request ``body`` (a slash command, an interaction payload or an Events
    API envelope): its ``trigger_id``, else its ``event_id``; None when it has neither."""
    for key in ("trigger_id", "event_id"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def slack_request_ids(body: dict, next: Callable[[], Any]) -> Any:  # noqa: A002 - Bolt passes it by this name
    """A Bolt global middleware (``app.use(slack_request_ids)``): from here on, for the rest of
    the request, :data:`request_id` is Slack's id for it (:func:`slack_id`) when it has one, and
    logs one line naming the request (command or action ids) with the HTTP request id it
    replaced, if any, so the two can be joined.

    Bolt calls middleware one after the other (``next()`` only marks the chain to go on), so the
    id is set, not set-and-reset: each entry point scopes it to one request (``bot.service.http``
    resets it when the request ends; ``bot.chat.slack.front.ScopedSocketModeHandler`` handles
    each envelope in a copy of the context).
    """
    rid = slack_id(body)
    if rid is None:
        return next()
    outer = request_id.get()
    request_id.set(rid)
    actions = [a.get("action_id") for a in body.get("actions") or () if isinstance(a, Mapping)]
    _log.info(
        "slack %s", body.get("command") or body.get("type") or "request",
        extra={
            # A slash command's user_id, an interaction's user.id (a message's or the Home's),
            # an Events API envelope's event.user (app_home_opened).
            "slack_user": body.get("user_id") or (body.get("user") or {}).get("id")
            or (body.get("event") or {}).get("user"),
            **({"actions": actions} if actions else {}),
            **({"http_request_id": outer} if outer else {}),
        },
    )
    return next()
