"""The Slack front (bot.chat.slack.front) in process: the real Bolt app and store behind it,
Slack at the wire. What the reliability suite cannot time from outside: a request the server
held past Slack's 3 seconds is never handled."""

from __future__ import annotations

import io
import time

from bot.chat.slack.app import SlackWork, build_app
from bot.chat.slack.front import SlackEvents
from bot.chat.slack.web import web_client
from bot.service.http import RECEIVED_AT
from tests.support.demo_world import APPROVER, CHANNEL, make_runtime, sweep
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import block_actions_body, sign
from tests.support.waiting import wait_for

SECRET = "front-secret"


def call(app, body: str, *, received_ago: float = 0.0, headers: dict | None = None):
    raw = body.encode()
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/slack/events", "CONTENT_LENGTH": str(len(raw)),
        "CONTENT_TYPE": "application/x-www-form-urlencoded", "wsgi.input": io.BytesIO(raw),
        RECEIVED_AT: time.monotonic() - received_ago,
    }
    for k, v in (headers if headers is not None else sign(SECRET, body, int(time.time()))).items():
        environ["HTTP_" + k.upper().replace("-", "_")] = v
    got = {}
    out = b"".join(app(environ, lambda status, h, exc=None: got.update(status=status)))
    return int(got["status"].split()[0]), out


def test_a_press_held_past_the_ack_window_is_never_acted_on(database_url):
    with FakeSlack() as slack:
        rt = make_runtime(database_url, slack)
        sweep(rt)
        (req,) = rt.store.list_requests()
        work = SlackWork()
        app = SlackEvents(build_app(rt, web_client("xoxb-test", slack.base_url), SECRET, work=work), SECRET)
        body = block_actions_body("gpu_approve", str(req.id), APPROVER, CHANNEL, req.message_ts, slack.response_url("late"))
        assert call(app, body, received_ago=3.0)[0] == 503
        time.sleep(0.5)
        assert rt.store.get(req.id).state == "proposed" and slack.responses_to("late") == []
        assert not [e for e in rt.store.events(req.id) if e.event.startswith("approve")]
        # The same press in time is acted on.
        assert call(app, body)[0] == 200
        wait_for(lambda: rt.store.get(req.id).state == "done", "the approve")


def test_the_signature_is_checked_on_the_raw_bytes(database_url):
    with FakeSlack() as slack:
        rt = make_runtime(database_url, slack)
        app = SlackEvents(build_app(rt, web_client("xoxb-test", slack.base_url), SECRET), SECRET, max_body_bytes=1024)
        ts = int(time.time())
        assert call(app, "a=1", headers={"X-Slack-Signature": "v0=" + "0" * 64, "X-Slack-Request-Timestamp": str(ts)})[0] == 401
        assert call(app, "a=1", headers=sign(SECRET, "a=1", ts - 301))[0] == 401
        assert call(app, "a=1", headers=sign(SECRET, "a=1", ts + 301))[0] == 401
        assert call(app, "a=1", headers={"X-Slack-Request-Timestamp": str(ts)})[0] == 401
        assert call(app, "x" * 2048)[0] == 413
        # Signed, but not a Slack payload: a 400, and Bolt never sees it.
        assert call(app, "payload=%5B1%5D")[0] == 400
        assert call(app, "a&b")[0] == 400
        assert slack.calls == []
