"""JSON log lines and their request ids: written by the real handler, for requests served over
real HTTP through the real Bolt app (Slack at the wire)."""

from __future__ import annotations

import contextvars
import io
import json
import logging
import sys
import urllib.error
import urllib.parse
import urllib.request

import pytest

from bot.chat.blocks import proposals
from bot.chat.slack.app import build_app
from bot.chat.slack.front import events_route
from bot.chat.slack.web import web_client
from bot.service import logs
from bot.service.http import serve_http, wsgi_app
from tests.support.demo_world import CHANNEL, OTHER, make_runtime, sweep
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import block_actions_body, post_to_app, slash_command_body
from tests.support.logs import bot_json_lines, bot_lines
from tests.support.waiting import wait_for

SECRET = "test-signing-secret"


@pytest.fixture
def json_lines():
    """The JSON lines every ``bot`` logger writes at INFO and above during the test, parsed."""
    with bot_json_lines() as read:
        yield read


def test_a_json_line_has_the_fields_the_request_id_and_the_extras():
    # A fresh context: what other tests left in this thread's context is no part of this one.
    contextvars.Context().run(_json_line_fields)


def _json_line_fields():
    stream = io.StringIO()
    logger = logging.getLogger("bot.test_logs.fields")
    logger.propagate = False
    logger.addHandler(logs.make_handler("json", stream))
    token = logs.request_id.set("req-1")
    try:
        logger.warning("sweep took %d s", 3, extra={"findings": 2, "at": object.__new__(object)})
    finally:
        logs.request_id.reset(token)
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("failed")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["level"] == "WARNING" and first["logger"] == "bot.test_logs.fields"
    assert first["message"] == "sweep took 3 s" and first["request_id"] == "req-1" and first["findings"] == 2
    assert first["at"].startswith("<object object")  # not JSON: written as text, never dropped
    assert first["time"].endswith("Z") and "T" in first["time"]
    assert "request_id" not in second and "ValueError: boom" in second["exc_info"]


@pytest.fixture
def served(tmp_path):
    with FakeSlack() as slack:
        rt = make_runtime(f"sqlite:///{tmp_path}/bot.db", slack)
        server = serve_http(wsgi_app(events_route(build_app(rt, web_client("xoxb-test", slack.base_url), SECRET), SECRET)), "127.0.0.1", 0)
        try:
            yield rt, slack, server.url
        finally:
            server.shutdown()


def test_an_http_request_logs_its_id(served, json_lines):
    _, _, url = served
    request = urllib.request.Request(f"{url}/slack/events", headers={"X-Request-Id": "abc-123"})
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(request)
    (line,) = [l for l in json_lines() if l["logger"] == "bot.service.http"]
    assert line["request_id"] == "abc-123" and line["status"] == 405 and line["method"] == "GET"
    assert line["message"] == "GET /slack/events 405" and line["level"] == "INFO"
    assert isinstance(line["duration_ms"], float)


def test_a_button_press_logs_with_its_trigger_id_in_the_listener_thread(served, json_lines):
    rt, slack, url = served
    sweep(rt)
    (req,) = rt.store.list_requests()
    body = block_actions_body(proposals.APPROVE, str(req.id), OTHER, CHANNEL, req.message_ts, slack.response_url("press"))
    trigger_id = json.loads(urllib.parse.parse_qs(body)["payload"][0])["trigger_id"]
    assert post_to_app(f"{url}/slack/events", SECRET, body)[0] == 200
    wait_for(lambda: slack.responses_to("press"), "the refusal", timeout=10)
    lines = wait_for(lambda: [l for l in json_lines() if l["logger"] == "bot.chat.slack.app"], "the listener's line", timeout=10)
    # Logged by the listener after the ack, on Bolt's worker thread.
    assert lines[0]["message"].startswith(f"press {proposals.APPROVE!r} on #{str(req.id)!r} by {OTHER!r}")
    assert lines[0]["request_id"] == trigger_id
    (named,) = [l for l in json_lines() if l["logger"] == "bot.chat.slack.request_ids"]
    assert named["message"] == "slack block_actions" and named["request_id"] == trigger_id
    assert named["actions"] == [proposals.APPROVE] and named["slack_user"] == OTHER
    # The HTTP request's own id joins the access line to Slack's id.
    (access,) = [l for l in json_lines() if l["logger"] == "bot.service.http" and l.get("path") == "/slack/events"]
    assert access["request_id"] == named["http_request_id"] != trigger_id


def test_a_slash_command_is_logged_with_its_trigger_id(served, json_lines):
    _, slack, url = served
    body = slash_command_body(text="help", user_id="U0ASKER", response_url=slack.response_url("help"))
    assert post_to_app(f"{url}/slack/events", SECRET, body)[0] == 200
    (named,) = [l for l in json_lines() if l["logger"] == "bot.chat.slack.request_ids"]
    assert named["message"] == "slack /gpu" and named["request_id"] == dict(urllib.parse.parse_qsl(body))["trigger_id"]


def test_setup_replaces_the_basic_stderr_handler_and_writes_json(capsys):
    contextvars.Context().run(_setup_replaces_the_basic_handler, capsys)


def _setup_replaces_the_basic_handler(capsys):
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    basic = logging.StreamHandler(sys.stderr)
    root.addHandler(basic)
    try:
        logs.setup("json", "INFO")
        logs.setup("json", "INFO")  # twice: still one line per record
        assert basic not in root.handlers
        logging.getLogger("bot.test").info("hello", extra={"team": "research"})
        (line,) = [json.loads(l) for l in capsys.readouterr().err.splitlines()]
        assert (line["message"], line["team"], line["level"]) == ("hello", "research", "INFO")
        logs.setup("text", "WARNING")
        logging.getLogger("bot.test").info("quiet")
        logging.getLogger("bot.test").warning("loud")
        assert capsys.readouterr().err.splitlines()[-1].endswith("WARNING bot.test: loud")
    finally:
        root.removeHandler(logs._installed)
        logs._installed = None
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


FORGED = "\n2026-11-20 12:05:00,000 INFO bot.chat.slack.app: press 'gpu_approve' on #'1' by 'U0APPROVER': approved"


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_value_typed_into_a_payload_cannot_forge_a_log_line(served, fmt):
    # A press whose button value carries a newline, U+2028 and NEL, and a forged record after them,
    # signed and sent as Slack would send it: each record stays one line in either format.
    rt, slack, url = served
    with bot_lines(fmt) as written:
        value = f"1{FORGED}\u2028{FORGED}\x85{FORGED}"
        body = block_actions_body(proposals.APPROVE, value, OTHER, CHANNEL, "1.0", slack.response_url("press"))
        assert post_to_app(f"{url}/slack/events", SECRET, body)[0] == 200
        wait_for(lambda: "bot.chat.slack.app" in written(), "the press's line", timeout=10)
        text = written()
    lines = text.splitlines()  # what a line-based reader sees: \x85 and U+2028 break lines too
    if fmt == "json":
        records = [json.loads(line) for line in lines]  # every line a whole record
        [press] = [r for r in records if r["logger"] == "bot.chat.slack.app"]
        assert "by 'U0APPROVER': approved" in press["message"]  # kept, inside its own record's message
    else:
        assert all(line[:4].isdigit() or line.startswith("    ") for line in lines), lines
        [press] = [line for line in lines if " bot.chat.slack.app: " in line]
        assert "\\n2026-11-20 12:05:00,000 INFO" in press and "by 'U0APPROVER': approved" in press
    assert not any(line.startswith("2026-11-20 12:05:00,000") for line in lines)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_every_record_is_one_line_whatever_its_message_holds(fmt):
    # What reaches a message unquoted (an exception's text, an upstream's answer) is escaped by
    # the formatter itself: \n, \r, U+2028, U+2029, NEL, and the other C0 controls.
    out = io.StringIO()
    logger = logging.getLogger("tests.one_line")
    logger.addHandler(logs.make_handler(fmt, out))
    logger.propagate, logger.level = False, logging.INFO

    def write() -> None:
        logger.info("upstream said: %s", f"a{FORGED}\r\u2028b\u2029c\x85d\x1be")
        try:
            raise ValueError(f"bad{FORGED}")
        except ValueError:
            logger.exception("failed")

    contextvars.Context().run(write)  # outside any request: no request id another test left behind
    lines = out.getvalue().splitlines()
    if fmt == "json":
        assert [json.loads(line)["message"] for line in lines] == [
            f"upstream said: a{FORGED}\r\u2028b\u2029c\x85d\x1be", "failed"]
    else:
        assert lines[0].endswith("upstream said: a\\n2026-11-20 12:05:00,000 INFO bot.chat.slack.app: press "
                                 "'gpu_approve' on #'1' by 'U0APPROVER': approved\\r\\u2028b\\u2029c\\u0085d\\x1be")
        assert lines[1].endswith(" ERROR tests.one_line: failed")
        assert all(line.startswith("    ") for line in lines[2:])  # the traceback, forged line and all
