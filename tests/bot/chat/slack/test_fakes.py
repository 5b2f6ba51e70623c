"""The Slack fakes speak the protocol: the real WebClient and a real Bolt App talk to them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest
from slack_bolt import App
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import (
    block_actions_body,
    bolt_request,
    post_to_app,
    sign,
    slash_command_body,
)

TOKEN = "xoxb-test-token"
SECRET = "s"
# The smallest valid PNG: signature, IHDR 1x1, IDAT, IEND.
PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server


@pytest.fixture
def client(fake: FakeSlack) -> WebClient:
    return WebClient(token=TOKEN, base_url=fake.base_url)


def make_app(fake: FakeSlack) -> App:
    """A real Bolt App whose client talks to the fake; listeners run before the ack returns."""
    return App(
        client=WebClient(token=TOKEN, base_url=fake.base_url),
        signing_secret=SECRET,
        process_before_response=True,
    )


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass


@pytest.fixture
def served_app(fake: FakeSlack) -> Iterator[tuple[App, str]]:
    """``(app, url)``: a Bolt App behind slack_bolt's WSGI adapter on wsgiref, at ``url``."""
    app = make_app(fake)
    server: WSGIServer = make_server("127.0.0.1", 0, SlackRequestHandler(app), handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield app, f"http://127.0.0.1:{server.server_port}/slack/events"
    finally:
        server.shutdown()
        server.server_close()


# -- Web API -------------------------------------------------------------------------


def test_base_url_ends_with_slash_and_auth_test_answers(fake: FakeSlack, client: WebClient) -> None:
    assert fake.base_url.endswith("/")
    answer = client.auth_test()
    assert (answer["ok"], answer["user_id"], answer["bot_id"], answer["team_id"]) == (True, "UBOT", "BBOT", "T1")
    (call,) = fake.calls
    assert call.method == "auth.test"
    assert call.headers["authorization"] == f"Bearer {TOKEN}"


def test_missing_or_bad_token_is_refused(fake: FakeSlack) -> None:
    with pytest.raises(SlackApiError) as missing:
        WebClient(base_url=fake.base_url).chat_postMessage(channel="C1", text="hi")
    assert missing.value.response["error"] == "not_authed"
    with pytest.raises(SlackApiError) as bad:
        WebClient(token="nope", base_url=fake.base_url).auth_test()
    assert bad.value.response["error"] == "invalid_auth"
    fake.valid_tokens = {"xoxb-only-this"}
    with pytest.raises(SlackApiError) as unknown:
        WebClient(token=TOKEN, base_url=fake.base_url).auth_test()
    assert unknown.value.response["error"] == "invalid_auth"
    assert fake.messages("C1") == {}


def test_post_then_update_shows_the_current_message(fake: FakeSlack, client: WebClient) -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*idle* gpu-node-1"}}]
    first = client.chat_postMessage(channel="C1", text="idle gpu-node-1", blocks=blocks)
    second = client.chat_postMessage(channel="C1", text="second", thread_ts=first["ts"])
    assert first["ok"] and first["channel"] == "C1"
    assert first["message"]["blocks"] == blocks and first["message"]["bot_id"] == "BBOT"
    assert float(second["ts"]) > float(first["ts"])
    assert len(first["ts"].split(".")[1]) == 6

    updated = client.chat_update(channel="C1", ts=first["ts"], text="stopped gpu-node-1", blocks=[])
    assert (updated["channel"], updated["ts"]) == ("C1", first["ts"])

    messages = fake.messages("C1")
    assert list(messages) == [first["ts"], second["ts"]]
    assert messages[first["ts"]]["text"] == "stopped gpu-node-1"
    assert messages[first["ts"]]["blocks"] == []
    assert "edited" in messages[first["ts"]]
    assert messages[second["ts"]]["thread_ts"] == first["ts"]
    assert [p["text"] for p in fake.calls_to("chat.postMessage")] == ["idle gpu-node-1", "second"]


def test_update_of_unknown_message_is_message_not_found(client: WebClient) -> None:
    with pytest.raises(SlackApiError) as error:
        client.chat_update(channel="C1", ts="1.000001", text="x")
    assert error.value.response["error"] == "message_not_found"


def test_ephemeral_is_recorded_with_its_message_ts(fake: FakeSlack, client: WebClient) -> None:
    answer = client.chat_postEphemeral(channel="C1", user="U1", text="only you can see this")
    assert answer["ok"] and answer["message_ts"]
    (ephemeral,) = fake.ephemerals
    assert (ephemeral["channel"], ephemeral["user"], ephemeral["text"]) == ("C1", "U1", "only you can see this")
    assert ephemeral["message_ts"] == answer["message_ts"]
    assert fake.messages("C1") == {}


def test_usergroup_members_and_unknown_group(fake: FakeSlack, client: WebClient) -> None:
    fake.usergroups = {"S0APPROVERS": ["U1", "U2"]}
    assert client.usergroups_users_list(usergroup="S0APPROVERS")["users"] == ["U1", "U2"]
    with pytest.raises(SlackApiError) as error:
        client.usergroups_users_list(usergroup="S0NOPE")
    assert error.value.response["error"] == "no_such_subteam"


def test_users_info_and_conversations(fake: FakeSlack, client: WebClient) -> None:
    fake.users = {"U1": {"name": "alice", "real_name": "Alice Liddell"}}
    user = client.users_info(user="U1")["user"]
    assert (user["id"], user["name"], user["real_name"]) == ("U1", "alice", "Alice Liddell")
    assert client.users_info(user="U9")["user"]["id"] == "U9"
    assert client.conversations_join(channel="C1")["channel"]["id"] == "C1"
    assert client.conversations_info(channel="C1")["channel"]["is_member"] is True


def test_unknown_method(client: WebClient) -> None:
    with pytest.raises(SlackApiError) as error:
        client.api_call("gpu.frobnicate")
    assert error.value.response["error"] == "unknown_method"


def test_files_upload_v2_round_trip(fake: FakeSlack, client: WebClient) -> None:
    answer = client.files_upload_v2(
        channel="C1", content=PNG_1X1, filename="cost.png", title="GPU cost", initial_comment="weekly cost"
    )
    assert answer["ok"]
    file_id = answer["file"]["id"]
    assert fake.uploads[file_id] == PNG_1X1
    shared = fake.files[file_id]
    assert (shared["name"], shared["title"], shared["mimetype"]) == ("cost.png", "GPU cost", "image/png")
    assert shared["channels"] == ["C1"] and shared["initial_comment"] == "weekly cost"
    assert [c.method for c in fake.calls] == [
        "files.getUploadURLExternal",
        "upload",
        "files.completeUploadExternal",
    ]
    assert fake.calls_to("files.getUploadURLExternal")[0]["length"] == str(len(PNG_1X1))


def test_rate_limit_is_retried_by_the_sdk(fake: FakeSlack) -> None:
    client = WebClient(
        token=TOKEN, base_url=fake.base_url, retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=1)]
    )
    fake.fail_next("chat.postMessage", status=429, retry_after=1)
    started = time.monotonic()
    answer = client.chat_postMessage(channel="C1", text="after a pause")
    assert answer["ok"]
    assert time.monotonic() - started >= 1
    assert len(fake.calls_to("chat.postMessage")) == 2
    assert [m["text"] for m in fake.messages("C1").values()] == ["after a pause"]


def test_rate_limit_without_retry_handler_surfaces(fake: FakeSlack, client: WebClient) -> None:
    fake.fail_next("chat.postMessage", status=429, retry_after=1)
    with pytest.raises(SlackApiError) as error:
        client.chat_postMessage(channel="C1", text="x")
    assert error.value.response.status_code == 429
    assert error.value.response.headers["Retry-After"] == "1"
    assert error.value.response["error"] == "ratelimited"


def test_injected_error_happens_once(fake: FakeSlack, client: WebClient) -> None:
    fake.fail_next("chat.postMessage", error="channel_not_found")
    with pytest.raises(SlackApiError) as error:
        client.chat_postMessage(channel="C1", text="x")
    assert error.value.response["error"] == "channel_not_found"
    assert client.chat_postMessage(channel="C1", text="x")["ok"]


def test_response_url_records_posts(fake: FakeSlack) -> None:
    from slack_sdk.webhook import WebhookClient

    WebhookClient(fake.response_url("cmd1")).send(text="working on it", response_type="ephemeral")
    WebhookClient(fake.response_url("other")).send(text="second")
    assert [r["text"] for r in fake.responses] == ["working on it", "second"]
    assert fake.responses_to("cmd1") == [{"text": "working on it", "response_type": "ephemeral"}]


# -- signed requests into a real Bolt App ---------------------------------------------


def test_sign_matches_the_sdk_verifier() -> None:
    from slack_sdk.signature import SignatureVerifier

    body = slash_command_body(response_url="http://127.0.0.1:9/r")
    now = int(time.time())
    headers = sign("secret", body, now)
    assert SignatureVerifier("secret").is_valid_request(body, headers)
    assert not SignatureVerifier("other").is_valid_request(body, headers)


def test_slash_command_over_http_acks_and_bad_signature_is_401(
    fake: FakeSlack, served_app: tuple[App, str]
) -> None:
    app, url = served_app
    seen: list[dict] = []

    @app.command("/gpu")
    def gpu(ack, command, respond) -> None:  # noqa: ANN001 - Bolt injects by parameter name
        ack("on it")
        seen.append(command)
        respond(text=f"you asked: {command['text']}")

    body = slash_command_body(text="idle", user_id="U7", response_url=fake.response_url("cmd"))
    status, text = post_to_app(url, SECRET, body)
    assert (status, text) == (200, "on it")
    assert (seen[0]["user_id"], seen[0]["channel_id"], seen[0]["text"]) == ("U7", "C1", "idle")
    assert fake.responses_to("cmd") == [{"text": "you asked: idle"}]

    status, _ = post_to_app(url, "wrong-secret", body)
    assert status == 401
    status, _ = post_to_app(url, SECRET, body, timestamp=int(time.time()) - 600)
    assert status == 401
    assert len(seen) == 1


def test_block_action_reaches_the_action_listener(fake: FakeSlack) -> None:
    app = make_app(fake)
    posted = app.client.chat_postMessage(channel="C1", text="stop gpu-node-1?")
    clicks: list[tuple[str, str, str]] = []

    @app.action("approve_stop")
    def approve(ack, body, action, client) -> None:  # noqa: ANN001 - Bolt injects by parameter name
        ack()
        clicks.append((action["value"], body["user"]["id"], body["container"]["message_ts"]))
        client.chat_update(channel=body["channel"]["id"], ts=body["container"]["message_ts"], text="approved")

    body = block_actions_body(
        "approve_stop", "stop:gpu-node-1", "U2", "C1", posted["ts"], fake.response_url("click")
    )
    response = app.dispatch(bolt_request(SECRET, body))
    assert response.status == 200
    assert clicks == [("stop:gpu-node-1", "U2", posted["ts"])]
    assert fake.messages("C1")[posted["ts"]]["text"] == "approved"

    assert app.dispatch(bolt_request("wrong", body)).status == 401
    assert len(clicks) == 1


def test_conversations_history_pages_newest_first_and_shows_metadata_only_when_asked():
    with FakeSlack() as fake:
        client = WebClient(token="xoxb-test", base_url=fake.base_url)
        meta = {"event_type": "gpu_cost_bot_request", "event_payload": {"request_id": 7}}
        first = client.chat_postMessage(channel="C1", text="one", metadata=meta)["ts"]
        second = client.chat_postMessage(channel="C1", text="two")["ts"]
        page = client.conversations_history(channel="C1", limit=1, include_all_metadata=True)
        assert [m["ts"] for m in page["messages"]] == [second] and page["has_more"]
        rest = client.conversations_history(channel="C1", limit=1, include_all_metadata=True,
                                            cursor=page["response_metadata"]["next_cursor"])
        assert rest["messages"][0]["metadata"] == meta and rest["messages"][0]["ts"] == first
        assert "metadata" not in client.conversations_history(channel="C1")["messages"][1]
        assert client.conversations_history(channel="C1", oldest=first)["messages"][0]["ts"] == second
