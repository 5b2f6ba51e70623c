"""The main loop end to end: a real Prometheus loaded with DCGM series built from the real H100
trace, a wire-level Kubernetes API, the real Bolt app served over HTTP, Slack at the wire.

Only the idle notebook may be proposed; approving it through a signed Slack request stops it on
the API server; Restore brings it back; the audit log holds every step.
"""

from __future__ import annotations

import json
import threading
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest

from actions.executors.kubernetes import KubernetesWriter
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.kube.reader import KubernetesSource
from actions.sources.prometheus.telemetry import PrometheusTelemetry
from actions.store.database import Store
from bot.chat.blocks import proposals
from bot.chat.slack.app import build_app
from bot.chat.slack.front import events_route
from bot.chat.slack.web import SlackChat, UserGroups, web_client
from bot.runtime.runtime import Runtime
from bot.service.http import wsgi_app
from bot.wiring.jobs import sweep_for
from tests.support.clock import Clock
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import block_actions_body, post_to_app, slash_command_body
from tests.support.fleet import RECHECK_AT, SWEEP_AT
from tests.support.paths import DEMO
from tests.support.waiting import wait_for

pytestmark = pytest.mark.prometheus

SECRET = "test-signing-secret"
APPROVER, OTHER = "U0APPROVER", "U0OTHER"
CHANNELS = {"research": "C0RESEARCH", "training": "C0TRAINING", "serving": "C0SERVING"}


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def world(fleet_prometheus, database_url):
    with FakeSlack() as slack, FakeKubeApi.from_list_json((DEMO / "cluster.json").read_bytes()) as kube:
        client = web_client("xoxb-test", slack.base_url)
        store = Store(database_url)
        store.migrate()
        api = kube.api_client()
        teams = TeamDirectory(
            [
                Team(name="research", namespaces=["ml-research"], channel=CHANNELS["research"], approvers=[APPROVER]),
                Team(name="training", namespaces=["training"], channel=CHANNELS["training"], approvers=[APPROVER]),
                Team(name="serving", namespaces=["serving"], channel=CHANNELS["serving"], approvers=[APPROVER]),
            ]
        )
        clock = Clock()
        clock.now = SWEEP_AT
        rt = Runtime(
            store=store,
            chat=SlackChat(client),
            cluster=KubernetesSource(api, page_size=2),
            telemetry=PrometheusTelemetry(fleet_prometheus),
            writer=KubernetesWriter(api),
            prices=PriceBook(PriceCatalog.bundled()),
            teams=teams,
            policy=Policy(),
            dry_run=False,
            clock=clock,
            group_members=UserGroups(client).members,
        )
        server = make_server("127.0.0.1", 0, wsgi_app(events_route(build_app(rt, client, SECRET), SECRET)), handler_class=_Quiet)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            yield rt, slack, kube, f"http://127.0.0.1:{server.server_port}/slack/events"
        finally:
            server.shutdown()
            server.server_close()


def press(url, slack, action_id, request_id, user, message_ts, name):
    body = block_actions_body(
        action_id, str(request_id), user, CHANNELS["research"], message_ts, slack.response_url(name)
    )
    status, _ = post_to_app(url, SECRET, body)
    assert status == 200


def notebook_patches(kube):
    return [
        json.loads(r.body) if isinstance(r.body, (str, bytes)) else r.body
        for r in kube.changes()
        if r.method == "PATCH" and r.path.endswith("/notebooks/llm-explore")
    ]


def test_idle_notebook_is_proposed_approved_stopped_and_restored(world):
    rt, slack, kube, url = world

    assert sweep_for(rt).once() == {
        "proposed": 1, "updated": 0, "superseded": 0, "expired": 0, "reproposed": 0, "acted": 0, "left": 0,
    }
    posts = slack.calls_to("chat.postMessage")
    assert [p["channel"] for p in posts] == [CHANNELS["research"]]  # training and serving are busy
    (req,) = rt.store.list_requests()
    assert req.key == "idle-notebook/ml-research/llm-explore"
    finding = json.loads(req.finding_json)
    assert finding["evidence"][0]["engine_signal"] == "DCGM_FI_DEV_GPU_UTIL"
    assert 120 < finding["evidence"][0]["mean_power_w"] < 135

    rt.clock.now = RECHECK_AT
    press(url, slack, proposals.APPROVE, req.id, OTHER, req.message_ts, "other")
    refusal = wait_for(lambda: slack.responses_to("other"), "the refusal", timeout=20)
    assert refusal[0]["response_type"] == "ephemeral" and "Only approvers" in refusal[0]["text"]
    assert notebook_patches(kube) == []

    press(url, slack, proposals.APPROVE, req.id, APPROVER, req.message_ts, "approver")
    wait_for(lambda: rt.store.get(req.id).state == "done", "the action", timeout=20)
    (patch,) = notebook_patches(kube)
    assert "kubeflow-resource-stopped" in patch["metadata"]["annotations"]
    nb = kube.get("Notebook", "ml-research", "llm-explore")
    assert "kubeflow-resource-stopped" in nb["metadata"]["annotations"]
    # The message is updated right after the state change; wait for it too.
    message = wait_for(
        lambda: "Restore" in str(m := slack.messages(CHANNELS["research"])[req.message_ts]) and m,
        "the updated message",
        timeout=20,
    )
    assert f"<@{APPROVER}>" in str(message["blocks"]) and "Done: stop Notebook" in str(message["blocks"])

    press(url, slack, proposals.APPROVE, req.id, APPROVER, req.message_ts, "double")
    again = wait_for(lambda: slack.responses_to("double"), "the double-click answer", timeout=20)
    assert "already done" in again[0]["text"]
    assert len(notebook_patches(kube)) == 1

    press(url, slack, proposals.RESTORE, req.id, APPROVER, req.message_ts, "restore")
    wait_for(lambda: rt.store.get(req.id).state == "restored", "the restore", timeout=20)
    assert notebook_patches(kube)[-1]["metadata"]["annotations"] == {"kubeflow-resource-stopped": None}
    nb = kube.get("Notebook", "ml-research", "llm-explore")
    assert "kubeflow-resource-stopped" not in (nb["metadata"].get("annotations") or {})

    audit = [(e.actor, e.event) for e in rt.store.events(req.id)]
    for step in [
        ("system", "proposed"),
        (OTHER, "approve-rejected"),
        (APPROVER, "approved"),
        ("system", "applied"),
        (APPROVER, "approve-ignored"),
        (APPROVER, "restore-requested"),
        ("system", "restored"),
    ]:
        assert step in audit


def test_slash_commands_answer_through_the_running_app(world):
    rt, slack, kube, url = world
    body = slash_command_body(text="estimate 16 gpus 1w at $3/hr", user_id=OTHER, response_url=slack.response_url("est"))
    status, _ = post_to_app(url, SECRET, body)
    assert status == 200
    (answer,) = wait_for(lambda: slack.responses_to("est"), "the estimate", timeout=20)
    assert "$8,064.00" in answer["text"] + json.dumps(answer.get("blocks"))

    body = slash_command_body(text="estimate 16 a100", user_id=OTHER, response_url=slack.response_url("bad"))
    post_to_app(url, SECRET, body)
    (error,) = wait_for(lambda: slack.responses_to("bad"), "the error", timeout=20)
    assert error["response_type"] == "ephemeral" and "16 a100 1w" in error["text"]

    status, _ = post_to_app(url, "not-the-secret", body)
    assert status == 401
