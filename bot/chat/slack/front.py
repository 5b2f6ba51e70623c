"""How Slack reaches the bot: the Events API endpoint (HTTP mode) or a Socket Mode connection.

The process (:mod:`bot.service.process`) serves what :func:`events_route` returns, or holds the
:class:`SocketModeConnection`; it never sees Bolt itself.

In HTTP mode every request is checked on its raw bytes before anything parses it: the body's
size (the server refused anything over ``server.max_body_bytes`` before reading it), Slack's
timestamp (within five minutes of now) and Slack's signature (``v0=`` HMAC-SHA256 of
``v0:{timestamp}:{body}`` with the signing secret). Whatever fails gets a 4xx and one WARNING
line; only a signed, well-formed request reaches Bolt. A request that waited so long to be
handled that Slack has given up on it (3 seconds) is not handled at all: its ack would come too
late, and acting on it would surprise the person who saw an error.

A request is handled once: it is claimed under its signature and its ``trigger_id`` (a slash
command, a press, a view submission) or ``event_id`` (the Events API) until its timestamp leaves
the replay window (``first_sight``, the store's :meth:`~actions.store.seen.SeenRequests.first_sight`,
shared by every replica). A replay, or Slack's retry (``X-Slack-Retry-Num``) of a request already
taken, is acked with an empty 200 and not handled again: a budget set resent later cannot undo a
newer one. When the claim cannot be recorded (the database is down) the request is handled, and
the failure logged: what needs no database keeps working.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from slack_bolt import App, BoltRequest
from slack_bolt.adapter.socket_mode import SocketModeHandler

from bot.chat.slack.deadline import DeadlineWebhookClient
from bot.service.http import RECEIVED_AT

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger(__name__)

# (a request's keys, Unix seconds until which they are kept) -> whether none was taken before.
FirstSight = Callable[[Sequence[str], float], bool]

SLACK_EVENTS_PATH = "/slack/events"
# Slack's replay window: a timestamp further from now than this, either way, is refused.
MAX_CLOCK_SKEW_SECONDS = 300
# Slack shows an error when no ack came within 3 s; a request handled later than this after it
# arrived is not handled (its ack would arrive past the limit).
ACK_WITHIN_SECONDS = 2.5
TOO_LATE = (":hourglass: That came too late to take (Slack waits 3 seconds for the bot, and it was busy), so nothing "
            "was done. Press the button, or send the command, again.")
_TIMESTAMP = re.compile(rb"^[0-9]{1,12}$")
_SIGNATURE = re.compile(rb"^v0=[0-9a-f]{64}$")


class SlackEvents:
    """The WSGI application at ``/slack/events``: checks each request (see the module docstring)
    and hands the good ones to ``bolt``. ``max_body_bytes`` bounds the body read (the server
    enforces it too); ``clock`` returns Unix seconds (Slack's timestamps), which may differ from
    Slack's by ``clock_skew_seconds``; ``reply(response_url, text)`` answers a request too late to
    take (None: no answer)."""

    def __init__(
        self, bolt: App, signing_secret: str, *, max_body_bytes: int = 1024 * 1024,
        clock: Callable[[], float] = time.time, first_sight: FirstSight | None = None,
        clock_skew_seconds: float = 2.0, reply: Callable[[str, str], None] | None = None,
    ):
        if not signing_secret:
            raise ValueError("HTTP mode needs the signing secret (SLACK_SIGNING_SECRET)")
        self.bolt = bolt
        self._secret = signing_secret.encode("utf-8")
        self.max_body_bytes = max_body_bytes
        self.clock = clock
        self.first_sight = first_sight
        self.clock_skew_seconds = clock_skew_seconds
        self.reply = reply

    def __call__(self, environ: "WSGIEnvironment", start_response: "StartResponse") -> Iterable[bytes]:
        try:
            length = int(environ.get("CONTENT_LENGTH") or "")
        except ValueError:
            return self._refuse(start_response, 411, "no valid Content-Length", environ)
        if length < 0 or length > self.max_body_bytes:
            return self._refuse(start_response, 413, f"a body of {length} bytes", environ)
        body = environ["wsgi.input"].read(length) if length else b""
        if len(body) != length:
            return self._refuse(start_response, 400, f"{len(body)} of {length} bytes arrived", environ)
        problem = self._unauthentic(environ, body)
        if problem:
            return self._refuse(start_response, 401, problem, environ)
        try:
            text = body.decode("utf-8")
            ids, response_url = _request_ids(text, environ.get("CONTENT_TYPE", ""))
        except ValueError as e:
            return self._refuse(start_response, 400, f"a signed body that is not a Slack payload ({e})", environ)
        late = self._too_late(environ)
        if late:
            self._tell_to_press_again(response_url)
            return self._refuse(start_response, 503, late, environ)
        if not self._first_sight(environ, ids):
            return self._taken(start_response, environ)
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        headers["content-type"] = environ.get("CONTENT_TYPE", "")
        try:
            request = BoltRequest(body=text, query=environ.get("QUERY_STRING", ""), headers=headers)
            response = self.bolt.dispatch(request)
        except Exception:  # noqa: BLE001 - whatever a signed body does to Bolt, the answer is no 500
            log.exception("Bolt could not handle a signed request to %s", SLACK_EVENTS_PATH)
            return self._refuse(start_response, 400, "a signed body Bolt could not handle", environ)
        if response.status >= 500:
            # A listener raised before its ack (Bolt logged it): the request was not handled.
            why = f"a signed body a listener could not handle (Bolt {response.status})"
            return self._refuse(start_response, 400, why, environ)
        payload = (response.body or "").encode("utf-8")
        out = [(k, v) for k, values in response.headers.items() for v in values if k.lower() != "content-length"]
        status = f"{response.status} {_REASONS.get(response.status, 'Status')}"
        start_response(status, [*out, ("Content-Length", str(len(payload)))])
        return [payload]

    def _unauthentic(self, environ: "WSGIEnvironment", body: bytes) -> str | None:
        """Why the request is not Slack's, or None when it is: checked on the raw bytes."""
        timestamp = environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP", "").encode("latin-1")
        signature = environ.get("HTTP_X_SLACK_SIGNATURE", "").encode("latin-1")
        if not timestamp or not signature:
            return "no Slack signature or timestamp"
        if not _TIMESTAMP.match(timestamp):
            return "a malformed timestamp"
        skew = self.clock() - int(timestamp)
        if abs(skew) > MAX_CLOCK_SKEW_SECONDS:
            return f"a timestamp {skew:+.0f} s from now (replayed or forged)"
        if not _SIGNATURE.match(signature):
            return "a malformed signature"
        digest = hmac.new(self._secret, b"v0:" + timestamp + b":" + body, hashlib.sha256).hexdigest()
        expected = b"v0=" + digest.encode()
        if not hmac.compare_digest(expected, signature):
            return "a wrong signature"
        return None

    def _too_late(self, environ: "WSGIEnvironment") -> str | None:
        """Why the request can no longer be acked in time, or None: handled more than
        :data:`ACK_WITHIN_SECONDS` after the server read it, or after Slack sent it (its timestamp,
        our clock allowed ``clock_skew_seconds`` of difference): a request slow clients kept
        waiting for a connection slot counts from when Slack sent it."""
        received = environ.get(RECEIVED_AT)
        if received is not None and time.monotonic() - received > ACK_WITHIN_SECONDS:
            return f"handled {time.monotonic() - received:.1f} s after it arrived, too late to ack"
        sent = int(environ["HTTP_X_SLACK_REQUEST_TIMESTAMP"])
        # Slack's timestamp has whole seconds: up to one more is no lateness.
        age = self.clock() - sent
        if age > ACK_WITHIN_SECONDS + 1 + self.clock_skew_seconds:
            return f"handled {age:.1f} s after Slack sent it, too late to ack"
        return None

    def _tell_to_press_again(self, url: str | None) -> None:
        """A press or command too late to take: its presser saw Slack's error, and is told through
        the request's ``response_url`` (when it has one) that nothing was done, off this thread."""
        if not url or self.reply is None:
            return
        threading.Thread(target=self.reply, args=(url, TOO_LATE), name="too-late-reply", daemon=True).start()

    def _first_sight(self, environ: "WSGIEnvironment", ids: list[str]) -> bool:
        """Whether this request is new: claimed now under its signature and ``ids``."""
        if self.first_sight is None:
            return True
        keys = ["sig:" + environ.get("HTTP_X_SLACK_SIGNATURE", "")[3:], *ids]
        timestamp = int(environ["HTTP_X_SLACK_REQUEST_TIMESTAMP"])
        try:
            return self.first_sight(keys, timestamp + MAX_CLOCK_SKEW_SECONDS)
        except Exception:  # noqa: BLE001 - a request the store cannot record is still handled
            log.exception("could not record Slack request %s to refuse its replays; handling it", keys[-1])
            return True

    @staticmethod
    def _taken(start_response: "StartResponse", environ: "WSGIEnvironment") -> list[bytes]:
        retry = environ.get("HTTP_X_SLACK_RETRY_NUM")
        log.warning(
            "ignored a request to %s from %s taken before (%s)", SLACK_EVENTS_PATH, environ.get("REMOTE_ADDR", "?"),
            f"Slack's retry {retry!r}" if retry else "a replay", extra={"status": 200},
        )
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]

    @staticmethod
    def _refuse(start_response: "StartResponse", status: int, why: str, environ: "WSGIEnvironment") -> list[bytes]:
        log.warning(
            "refused a request to %s from %s: %s", SLACK_EVENTS_PATH, environ.get("REMOTE_ADDR", "?"), why,
            extra={"status": status},
        )
        body = f"{_REASONS.get(status, 'refused').lower()}\n".encode()
        start_response(
            f"{status} {_REASONS.get(status, 'Refused')}",
            [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))],
        )
        return [body]


_REASONS = {
    200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 411: "Length Required",
    413: "Payload Too Large", 500: "Internal Server Error", 503: "Service Unavailable",
}


def _request_ids(text: str, content_type: str) -> tuple[list[str], str | None]:
    """The ids Slack gives the request ``text`` (``event:<event_id>`` of an Events API body,
    ``trigger:<trigger_id>`` of a slash command, a form, or of an interaction's ``payload``; none
    when it has no such id) and its ``response_url`` (None when it has none). Raises ValueError
    unless ``text`` is shaped like a Slack request: a JSON object nested no deeper than Python's
    parser goes, or a form whose ``payload``, when present, is such an object; and every field
    Bolt routes by or a listener reads of the type Slack sends (:func:`_wrongly_typed`)."""
    if content_type.split(";")[0].strip().lower() == "application/json":
        body = _json(text)
        if not isinstance(body, dict):
            raise ValueError("JSON that is not an object")
        _wrongly_typed(body, {"type": str, "event_id": str, "event": dict, "challenge": str})
        return _ids("event", body.get("event_id")), None
    form = parse_qs(text, keep_blank_values=True, strict_parsing=bool(text), max_num_fields=200)
    if "payload" not in form:
        return _ids("trigger", (form.get("trigger_id") or [None])[0]), _url((form.get("response_url") or [None])[0])
    payload = _json(form["payload"][0])
    if not isinstance(payload, dict):
        raise ValueError("a payload that is not a JSON object")
    _wrongly_typed(payload, {"type": str, "trigger_id": str, "response_url": str, "user": dict, "actions": list,
                             "view": dict, "channel": dict, "container": dict})
    _wrongly_typed(payload.get("user") or {}, {"id": str}, "user.")
    for i, action in enumerate(payload.get("actions") or []):
        if not isinstance(action, dict):
            raise ValueError(f"actions.{i} is not an object")
        _wrongly_typed(action, {"action_id": str, "block_id": str, "value": str}, f"actions.{i}.")
    return _ids("trigger", payload.get("trigger_id")), _url(payload.get("response_url"))


def _url(value: object) -> str | None:
    return value if isinstance(value, str) and value.startswith(("https://", "http://")) else None


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except RecursionError:  # not a ValueError: Python's parser gives up around 1,000 levels
        raise ValueError("JSON nested too deeply") from None


def _wrongly_typed(obj: dict, fields: dict[str, type], where: str = "") -> None:
    """Raise ValueError naming the first of ``fields`` present in ``obj`` with another type (a
    null counts as absent)."""
    for name, kind in fields.items():
        value = obj.get(name)
        if value is not None and not isinstance(value, kind):
            raise ValueError(f"{where}{name} is a {type(value).__name__}, not a {kind.__name__}")


def _ids(kind: str, value: object) -> list[str]:
    return [f"{kind}:{value}"] if isinstance(value, str) and value else []


def events_route(
    bolt: App, signing_secret: str, *, max_body_bytes: int = 1024 * 1024, first_sight: FirstSight | None = None,
    clock_skew_seconds: float = 2.0,
) -> dict[str, "WSGIApplication"]:
    """``{"/slack/events": app}``: Slack's Events API, slash commands and button presses, checked
    by :class:`SlackEvents` (each handled once when ``first_sight`` is given; one too late answered
    through its ``response_url``) and then handled by Bolt. Raises ValueError without a signing
    secret."""
    return {SLACK_EVENTS_PATH: SlackEvents(
        bolt, signing_secret, max_body_bytes=max_body_bytes, first_sight=first_sight,
        clock_skew_seconds=clock_skew_seconds, reply=_reply_ephemeral,
    )}


def _reply_ephemeral(response_url: str, text: str) -> None:
    try:
        DeadlineWebhookClient(response_url, timeout=5).send(text=text, response_type="ephemeral", replace_original=False)
    except Exception as e:  # noqa: BLE001 - the answer to a late request is a courtesy, never a crash
        log.warning("could not tell a late request's sender (%s): %s", type(e).__name__, str(e)[:200])


class ScopedSocketModeHandler(SocketModeHandler):
    """Bolt's Socket Mode handler, handling each envelope in a copy of the current context, so
    what Bolt sets while handling it (the request id, see ``bot.chat.slack.request_ids``) ends
    with it instead of staying on the pooled worker thread for the next envelope."""

    def handle(self, client, req) -> None:  # noqa: ANN001 - Bolt's signature
        contextvars.copy_context().run(super().handle, client, req)


class SocketModeConnection:
    """Slack's Socket Mode: a websocket the bot opens with the app-level token (``xapp-...``),
    so no public endpoint is needed. ``handler`` is Bolt's, once connected."""

    name = "Slack (Socket Mode)"

    def __init__(self, bolt: App, app_token: str):
        self._bolt, self._app_token = bolt, app_token
        self.handler: ScopedSocketModeHandler | None = None

    def connect(self) -> None:
        """Open the websocket; raises when Slack cannot be reached or refuses the token."""
        self.handler = ScopedSocketModeHandler(self._bolt, self._app_token)
        self.handler.connect()

    def connected(self) -> bool:
        """Whether the websocket is up now."""
        return self.handler is not None and bool(self.handler.client.is_connected())

    def close(self) -> None:
        """Close the websocket (no-op before :meth:`connect`)."""
        if self.handler is not None:
            self.handler.close()
