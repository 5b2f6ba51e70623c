"""Signed requests as Slack sends them to an app, for driving a real Bolt ``App`` in tests.

Bodies are strings exactly as they travel on the wire (form-encoded); ``sign`` gives the
headers Slack adds. Use ``post_to_app`` against an app served over HTTP, or ``bolt_request``
for in-process ``app.dispatch(...)``.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlencode

from slack_bolt import BoltRequest

API_APP_ID = "A0GPUCOST"
VERIFICATION_TOKEN = "legacy-verification-token"
TEAM_DOMAIN = "gpu-team"


def sign(signing_secret: str, body: str, timestamp: int) -> dict[str, str]:
    """Headers Slack sends with ``body``: ``{X-Slack-Signature, X-Slack-Request-Timestamp, Content-Type}``.

    The signature is ``"v0=" + hex(HMAC-SHA256(signing_secret, f"v0:{timestamp}:{body}"))``.
    Content-Type is JSON for a body starting with ``{`` (Events API), form otherwise.
    """
    base = f"v0:{timestamp}:{body}".encode("utf-8")
    digest = hmac.new(signing_secret.encode("utf-8"), base, hashlib.sha256).hexdigest()
    content_type = "application/json" if body.lstrip().startswith("{") else "application/x-www-form-urlencoded"
    return {
        "X-Slack-Signature": f"v0={digest}",
        "X-Slack-Request-Timestamp": str(timestamp),
        "Content-Type": content_type,
    }


_TRIGGERS = itertools.count(1)


def _trigger_id(seed: str) -> str:
    """A trigger_id shaped like Slack's, ``"<digits>.<digits>.<32 hex>"``, and like Slack's one of
    its own for every body made (Slack gives each command and press a new one)."""
    n = next(_TRIGGERS)
    return f"1732000000123.{1234567890 + n}.{hashlib.md5(f'{seed} {n}'.encode()).hexdigest()}"


def slash_command_body(
    command: str = "/gpu",
    text: str = "help",
    user_id: str = "U1",
    channel_id: str = "C1",
    team_id: str = "T1",
    *,
    response_url: str,
    user_name: str | None = None,
    channel_name: str | None = None,
) -> str:
    """The form body of a slash command, fields in the order Slack sends them.

    Fields: token, team_id, team_domain, channel_id, channel_name, user_id, user_name,
    command, text, api_app_id, is_enterprise_install, response_url, trigger_id.
    ``response_url`` is required so that a test never posts anywhere but its fake
    (use ``FakeSlack.response_url(name)``).
    """
    fields = [
        ("token", VERIFICATION_TOKEN),
        ("team_id", team_id),
        ("team_domain", TEAM_DOMAIN),
        ("channel_id", channel_id),
        ("channel_name", channel_name or channel_id.lower()),
        ("user_id", user_id),
        ("user_name", user_name or user_id.lower()),
        ("command", command),
        ("text", text),
        ("api_app_id", API_APP_ID),
        ("is_enterprise_install", "false"),
        ("response_url", response_url),
        ("trigger_id", _trigger_id(f"{command} {text} {user_id}")),
    ]
    return urlencode(fields)


def block_actions_body(
    action_id: str,
    value: str,
    user_id: str,
    channel_id: str,
    message_ts: str,
    response_url: str,
    block_id: str = "actions",
    *,
    team_id: str = "T1",
    button_text: str = "Click",
    message_text: str = "",
    message_blocks: list[dict[str, Any]] | None = None,
    is_ephemeral: bool = False,
) -> str:
    """The form body ``payload=<json>`` of a button click (a ``block_actions`` interaction).

    Payload keys: type, user{id, username, name, team_id}, api_app_id, token,
    container{type: message, message_ts, channel_id, is_ephemeral}, trigger_id,
    team{id, domain}, enterprise, is_enterprise_install, channel{id, name},
    message{type, user, bot_id, ts, text, blocks}, state{values}, response_url,
    actions[{action_id, block_id, text, value, type: button, action_ts}].
    Unless ``message_blocks`` is given, the message holds one actions block with the
    clicked button, as the message carrying it would.
    """
    button_label = {"type": "plain_text", "text": button_text, "emoji": True}
    if message_blocks is None:
        message_blocks = [
            {
                "type": "actions",
                "block_id": block_id,
                "elements": [{"type": "button", "action_id": action_id, "text": button_label, "value": value}],
            }
        ]
    payload = {
        **_presser(user_id, team_id),
        "container": {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel_id,
            "is_ephemeral": is_ephemeral,
        },
        "trigger_id": _trigger_id(f"{action_id} {value} {user_id} {message_ts}"),
        "team": {"id": team_id, "domain": TEAM_DOMAIN},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel_id, "name": channel_id.lower()},
        "message": {
            "type": "message",
            "user": "UBOT",
            "bot_id": "BBOT",
            "app_id": API_APP_ID,
            "team": team_id,
            "ts": message_ts,
            "text": message_text,
            "blocks": message_blocks,
        },
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [_button_action(action_id, block_id, button_label, value)],
    }
    return urlencode({"payload": json.dumps(payload, separators=(",", ":"))})


def _presser(user_id: str, team_id: str) -> dict[str, Any]:
    """What every block_actions payload opens with: its type, who pressed, the app and its token."""
    user_name = user_id.lower()
    return {
        "type": "block_actions",
        "user": {"id": user_id, "username": user_name, "name": user_name, "team_id": team_id},
        "api_app_id": API_APP_ID,
        "token": VERIFICATION_TOKEN,
    }


def _button_action(action_id: str, block_id: str, label: dict[str, Any], value: str) -> dict[str, Any]:
    """One pressed button as a block_actions payload's ``actions[]`` entry."""
    now = time.time()
    return {
        "action_id": action_id, "block_id": block_id, "text": label, "value": value, "type": "button",
        "action_ts": f"{int(now)}.{int(now * 1e6) % 1_000_000:06d}",
    }


def app_home_opened_body(
    user_id: str, *, tab: str = "home", channel_id: str = "D0BOTDM", team_id: str = "T1",
    view: dict[str, Any] | None = None,
) -> str:
    """The JSON body of an Events API ``event_callback`` carrying ``app_home_opened``
    (docs.slack.dev/reference/events/app_home_opened): ``event`` {type, user, channel (the app's
    DM with the user), tab (``home`` or ``messages``), event_ts, and ``view`` once a Home was
    published}, in the envelope of docs.slack.dev/apis/events-api (token, team_id, api_app_id,
    type, event_id, event_time)."""
    now = time.time()
    event: dict[str, Any] = {
        "type": "app_home_opened", "user": user_id, "channel": channel_id, "tab": tab,
        "event_ts": f"{int(now)}.{int(now * 1e6) % 1_000_000:06d}",
    }
    if view is not None:
        event["view"] = view
    return json.dumps({
        "token": VERIFICATION_TOKEN, "team_id": team_id, "api_app_id": API_APP_ID, "event": event,
        "type": "event_callback", "event_id": f"Ev0{next(_TRIGGERS):09d}", "event_time": int(now),
    })


def view_block_actions_body(
    action_id: str, value: str, user_id: str, view: dict[str, Any], block_id: str = "actions", *,
    team_id: str = "T1", button_text: str = "Click",
) -> str:
    """The form body ``payload=<json>`` of a button click in a published view, the App Home
    (docs.slack.dev/reference/interaction-payloads/block_actions-payload): ``container`` {type:
    view, view_id}, the ``view`` as published (its id, type, blocks, hash, ...) instead of a
    ``message``, and no ``channel`` nor ``response_url``; the rest as :func:`block_actions_body`."""
    button_label = {"type": "plain_text", "text": button_text, "emoji": True}
    payload = {
        **_presser(user_id, team_id),
        "container": {"type": "view", "view_id": view["id"]},
        "trigger_id": _trigger_id(f"{action_id} {value} {user_id} {view['id']}"),
        "team": {"id": team_id, "domain": TEAM_DOMAIN},
        "enterprise": None,
        "is_enterprise_install": False,
        "view": view,
        "actions": [_button_action(action_id, block_id, button_label, value)],
    }
    return urlencode({"payload": json.dumps(payload, separators=(",", ":"))})


def post_to_app(url: str, signing_secret: str, body: str, *, timestamp: int | None = None) -> tuple[int, str]:
    """POST ``body`` signed with ``signing_secret`` to ``url`` over HTTP; returns ``(status, body)``.

    ``timestamp`` defaults to now (Bolt rejects ones more than five minutes old).
    HTTP error statuses (e.g. 401) are returned, not raised.
    """
    ts = int(time.time()) if timestamp is None else timestamp
    request = urllib.request.Request(url, data=body.encode("utf-8"), headers=sign(signing_secret, body, ts), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8")


def bolt_request(signing_secret: str, body: str, timestamp: int | None = None) -> BoltRequest:
    """A ``BoltRequest`` for ``app.dispatch(...)``, signed with ``signing_secret`` (timestamp: now)."""
    ts = int(time.time()) if timestamp is None else timestamp
    return BoltRequest(body=body, headers=sign(signing_secret, body, ts))
