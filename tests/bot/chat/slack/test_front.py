"""The Slack front (bot.chat.slack.front) in process: the real Bolt app and store behind it,
Slack at the wire. What the reliability suite cannot time from outside: a request the server
held past Slack's 3 seconds is never handled."""

from __future__ import annotations

import io
import json
import random
import time
import urllib.parse

from actions.store.database import Store
from bot.chat.slack.app import SlackWork, build_app
from bot.chat.slack.front import SLACK_EVENTS_PATH, SlackEvents, events_route
from bot.chat.slack.web import web_client
from bot.service.http import RECEIVED_AT
from bot.wiring.process import seen_once
from tests.support.demo_world import APPROVER, CHANNEL, make_runtime, sweep
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import block_actions_body, sign, slash_command_body
from tests.support.logs import bot_json_lines
from tests.support.prometheus_server import free_port
from tests.support.slack_fuzz import fuzzed
from tests.support.waiting import wait_for

SECRET = "front-secret"


def call(app, body: str, *, received_ago: float = 0.0, headers: dict | None = None,
         content_type: str = "application/x-www-form-urlencoded"):
    raw = body.encode()
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/slack/events", "CONTENT_LENGTH": str(len(raw)),
        "CONTENT_TYPE": content_type, "wsgi.input": io.BytesIO(raw),
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


# --- each request handled once (issue 22, item 5) -------------------------------------------------


def front(rt, slack, store=None) -> SlackEvents:
    """The front as `run` mounts it: each request claimed in ``store`` (default: the bot's)."""
    return SlackEvents(build_app(rt, web_client("xoxb-test", slack.base_url), SECRET, work=SlackWork()), SECRET,
                       first_sight=seen_once(store or rt.store))


def budget_of(rt, team: str) -> float | None:
    return next((b.usd_per_month for b in rt.store.budgets() if b.team == team), None)


def test_a_replayed_slash_command_is_acked_and_not_handled_again(database_url):
    with FakeSlack() as slack:
        rt = make_runtime(database_url, slack)
        app = front(rt, slack)
        old = slash_command_body(text="budget set research 5000/month", user_id=APPROVER,
                                 response_url=slack.response_url("old"))
        signed = sign(SECRET, old, int(time.time()))
        assert call(app, old, headers=signed)[0] == 200
        wait_for(lambda: budget_of(rt, "research") == 5000, "the first budget")
        newer = slash_command_body(text="budget set research 7000/month", user_id=APPROVER,
                                   response_url=slack.response_url("newer"))
        assert call(app, newer)[0] == 200
        wait_for(lambda: budget_of(rt, "research") == 7000, "the newer budget")
        # The first one resent byte for byte, as Slack's retry or an attacker would send it.
        status, body = call(app, old, headers={**signed, "X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
        assert (status, body) == (200, b"")
        # Re-signed now (a new signature), it is still the same trigger_id: taken already.
        assert call(app, old)[:2] == (200, b"")
        time.sleep(0.5)
        assert budget_of(rt, "research") == 7000
        assert len(slack.responses_to("old")) == 1


def test_an_events_api_retry_of_an_event_taken_is_not_handled_again(database_url):
    # Slack's Events API envelope (api.slack.com/apis/events-api#callback-field): each event has
    # its event_id, the same in every retry, which carries X-Slack-Retry-Num.
    event = json.dumps({"token": "x", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
                        "event_id": "Ev0PV52K25", "event_time": int(time.time()),
                        "event": {"type": "app_home_opened", "user": APPROVER, "channel": "D1", "tab": "home"}})
    with FakeSlack() as slack:
        rt = make_runtime(database_url, slack)
        app = front(rt, slack)
        call(app, event, content_type="application/json")  # taken: Bolt answers it (nobody listens yet)
        later = sign(SECRET, event, int(time.time()) + 1)
        status, body = call(app, event, content_type="application/json", headers={**later, "X-Slack-Retry-Num": "1"})
        assert (status, body) == (200, b"")


def test_when_the_claim_cannot_be_recorded_the_request_is_still_handled(database_url):
    with FakeSlack() as slack:
        rt = make_runtime(database_url, slack)
        down = Store(f"postgresql+psycopg2://nobody@127.0.0.1:{free_port()}/none")
        app = front(rt, slack, store=down)
        body = slash_command_body(text="budget set research 5000/month", user_id=APPROVER,
                                  response_url=slack.response_url("set"))
        assert call(app, body)[0] == 200
        wait_for(lambda: budget_of(rt, "research") == 5000, "the budget")


# --- no 500, however a signed body is shaped (issue 22, item 8) -------------------------------------


def test_five_hundred_signed_bodies_of_every_wrong_shape_get_no_5xx(database_url):
    with FakeSlack() as slack:
        rt = make_runtime(database_url, slack)
        sweep(rt)
        before = [(r.id, r.state, r.version) for r in rt.store.list_requests()]
        app = front(rt, slack)
        rng = random.Random(22)
        statuses: dict[int, int] = {}
        for _ in range(500):
            body, content_type = fuzzed(rng, slack.response_url("fuzz"))
            status, _ = call(app, body, content_type=content_type)
            statuses[status] = statuses.get(status, 0) + 1
        assert max(statuses) < 500, statuses
        assert statuses.get(400, 0) > 250  # most are refused before Bolt sees them
        assert [(r.id, r.state, r.version) for r in rt.store.list_requests()] == before


def test_a_wrongly_typed_press_is_refused_with_what_was_wrong(database_url):
    with FakeSlack() as slack:
        rt = make_runtime(database_url, slack)
        app = front(rt, slack)
        body = block_actions_body("gpu_approve", "1", APPROVER, CHANNEL, "1.0", slack.response_url("x"))
        payload = json.loads(dict(urllib.parse.parse_qsl(body))["payload"])
        payload["user"]["id"] = [APPROVER]
        with bot_json_lines() as lines:
            status, _ = call(app, urllib.parse.urlencode({"payload": json.dumps(payload)}))
        assert status == 400
        [line] = [x for x in lines() if x["logger"] == "bot.chat.slack.front"]
        assert "user.id is a list, not a str" in line["message"]


def test_a_press_slack_sent_too_long_ago_is_not_taken_and_its_presser_told(database_url):
    # Issue 22, item 1: a press that waited for a connection slot (slow clients held them) arrives
    # fresh to the server but 6 s after Slack sent it; Slack showed its presser an error at 3 s.
    with FakeSlack() as slack:
        rt = make_runtime(database_url, slack)
        sweep(rt)
        (req,) = rt.store.list_requests()
        app = events_route(build_app(rt, web_client("xoxb-test", slack.base_url), SECRET, work=SlackWork()), SECRET,
                           first_sight=seen_once(rt.store))[SLACK_EVENTS_PATH]
        body = block_actions_body("gpu_approve", str(req.id), APPROVER, CHANNEL, req.message_ts, slack.response_url("late"))
        assert call(app, body, headers=sign(SECRET, body, int(time.time()) - 6))[0] == 503
        (told,) = wait_for(lambda: slack.responses_to("late"), "the presser told")
        assert told["text"].startswith(":hourglass: That came too late to take") and "nothing was done" in told["text"]
        assert rt.store.get(req.id).state == "proposed"
        # Within Slack's 3 s (and the allowed clock skew) the same press is taken.
        assert call(app, body, headers=sign(SECRET, body, int(time.time()) - 2))[0] == 200
        wait_for(lambda: rt.store.get(req.id).state == "done", "the approve")
