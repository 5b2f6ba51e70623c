"""Every Slack request ends at a total deadline (issue 22, item 1): the real slack_sdk clients
(WebClient through ``web_client``, a file upload, a ``response_url`` post, Bolt's ``respond``)
against servers on 127.0.0.1 that drip their answer a byte at a time, each byte well inside any
per-read timeout (tests/support/hostile_http.py). The answers are Slack's Web API shapes
(``{"ok": true, ...}``)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest

from bot.chat.slack.app import SlackWork, build_app
from bot.chat.slack.deadline import DeadlineWebhookClient, SlackDeadlinePassed
from bot.chat.slack.web import SlackChat, UserGroups, web_client
from bot.runtime.chat import ChatError, Message, MessageRef
from tests.support.demo_world import APPROVER, make_runtime
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import bolt_request, slash_command_body
from tests.support.hostile_http import answer_json, dripping, dripping_head, upstream
from tests.support.waiting import wait_for

SECRET = "deadline-secret"
# A chat.postMessage / chat.update answer; dripped at 0.2 s a byte it takes 27 s.
ANSWER = json.dumps({"ok": True, "channel": "C1", "ts": "1764000000.000100",
                     "message": {"type": "message", "text": "GPU idle", "ts": "1764000000.000100"}}).encode()
HISTORY = json.dumps({"ok": True, "messages": [], "has_more": False, "response_metadata": {"next_cursor": ""}}).encode()
GROUP = json.dumps({"ok": True, "users": ["U1", "U2"]}).encode()
SINCE = datetime(2026, 11, 23, tzinfo=timezone.utc)


def chat(url: str, seconds: float = 1) -> SlackChat:
    return SlackChat(web_client("xoxb-test", base_url=f"{url}/api/", timeout_seconds=seconds))


CALLS = {
    "chat.postMessage": (ANSWER, lambda c: c.post("C1", Message(text="GPU idle"))),
    "chat.update": (ANSWER, lambda c: c.update(MessageRef("C1", "1764000000.000100"), Message(text="GPU idle"))),
    "conversations.history": (HISTORY, lambda c: c.find("C1", "gpu_cost_bot_request", {"request_id": 1}, SINCE)),
    "chat.postEphemeral": (ANSWER, lambda c: c.ephemeral("C1", "U1", Message(text="GPU idle"))),
}


@pytest.mark.parametrize("method", CALLS)
def test_a_web_api_call_dripped_a_byte_at_a_time_ends_at_its_deadline_untried_again(method):
    body, act = CALLS[method]
    with upstream(dripping(body)) as (url, sent):
        started = time.monotonic()
        with pytest.raises(ChatError) as info:
            act(chat(url))
        took = time.monotonic() - started
    assert str(info.value) == f"{method}: Slack did not answer within 1 s in all"
    assert isinstance(info.value.__cause__, SlackDeadlinePassed)
    # The client retries dropped connections and 5xx answers (but a post only a 429): a try that
    # took its deadline is not one of them, so the caller's worker is free at the deadline.
    assert took < 2.5 and sent["requests"] == 1 and sent["bytes"] < len(body)


def test_an_answer_whose_headers_drip_ends_at_its_deadline():
    with upstream(dripping_head(ANSWER)) as (url, sent):
        started = time.monotonic()
        with pytest.raises(ChatError, match="Slack did not answer within 1 s in all"):
            chat(url).update(MessageRef("C1", "1.0"), Message(text="GPU idle"))
        assert time.monotonic() - started < 2.5


def test_the_same_answers_sent_at_once_are_read():
    for body, act in CALLS.values():
        with upstream(dripping(body, every=0)) as (url, sent):
            act(chat(url))
        assert sent["bytes"] == len(body)
    with upstream(dripping(GROUP, every=0)) as (url, _):
        assert UserGroups(web_client("xoxb-test", base_url=f"{url}/api/", timeout_seconds=1)).members("S1") == {"U1", "U2"}


def test_a_user_group_read_past_its_deadline_expands_to_no_one():
    with upstream(dripping(GROUP)) as (url, _):
        started = time.monotonic()
        assert UserGroups(web_client("xoxb-test", base_url=f"{url}/api/", timeout_seconds=1)).members("S1") == set()
        assert time.monotonic() - started < 2.5


def test_a_file_upload_whose_upload_url_drips_ends_at_its_deadline():
    # files_upload_v2: files.getUploadURLExternal hands out an upload URL (here, this server's
    # /upload), the bytes are POSTed there, and files.completeUploadExternal shares the file.
    def slack(handler, sent):
        if handler.path.startswith("/upload"):
            return dripping(b"OK - 1024")(handler, sent)
        host = handler.headers["Host"]
        doc = {"ok": True, "upload_url": f"http://{host}/upload/F1", "file_id": "F1"}
        answer_json(handler, sent, json.dumps(doc).encode())

    with upstream(slack) as (url, sent):
        started = time.monotonic()
        with pytest.raises(ChatError, match="^files_upload_v2: Slack did not answer within 1 s in all$"):
            chat(url).upload_file("C1", "cost.png", b"\x89PNG" * 256, "GPU cost", "")
        assert time.monotonic() - started < 2.5
        assert sent["requests"] == 2  # the upload URL, then the upload; never the completion


def test_a_response_url_post_dripped_ends_at_its_deadline():
    with upstream(dripping(b"ok" * 50)) as (url, sent):
        started = time.monotonic()
        with pytest.raises(SlackDeadlinePassed, match="within 1 s in all") as info:
            DeadlineWebhookClient(f"{url}/response/late", timeout=1).send(text="Too late", response_type="ephemeral")
        assert time.monotonic() - started < 2.5 and info.value.seconds == 1
    with upstream(dripping(b"ok", every=0)) as (url, _):
        assert DeadlineWebhookClient(f"{url}/response/fine", timeout=1).send(text="Fine").body == "ok"


def test_a_commands_answer_to_a_dripping_response_url_frees_its_worker_at_the_deadline(sqlite_url):
    # Bolt's respond posts with a WebhookClient of its own; the app's is bounded like the client.
    with FakeSlack() as fake, upstream(dripping(b"ok" * 100)) as (url, sent):
        rt = make_runtime(sqlite_url, fake)
        work = SlackWork()
        app = build_app(rt, web_client("xoxb-test", fake.base_url, timeout_seconds=1), SECRET, work=work)
        body = slash_command_body(text="help", user_id=APPROVER, response_url=f"{url}/response/help")
        started = time.monotonic()
        assert app.dispatch(bolt_request(SECRET, body)).status == 200
        wait_for(lambda: sent["requests"] == 1, "the answer posted")
        wait_for(lambda: work.commands.busy == 0, "the command's worker free", timeout=5)
        assert time.monotonic() - started < 2.5 and sent["bytes"] < 200
        for pool in work.pools:
            pool.shutdown()
