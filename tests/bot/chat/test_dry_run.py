"""Every action is first sent as a server-side dry run: when a request is proposed and again right
before acting (issue 21, item 3). The real kubernetes client against the wire-level fake API
server playing Kueue's StatefulSet webhook (tests/support/kueue_webhook.py: kueue v0.19.2
statefulset_webhook.go), real stores, Slack at the wire."""

from __future__ import annotations

import json

import pytest

from actions.model.kube import ObjectRef
from bot.chat.approvals import Approvals
from bot.chat.proposals import Proposals
from tests.support.demo_world import APPROVER, buttons, wire_runtime
from tests.support.demo_world import SERVING_CHANNEL as CHANNEL
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.kueue_webhook import (
    KUEUE_DENIAL,
    QUEUE_LABEL,
    add_vector_db,
    kueue_managed,
    vector_db_mig_advice,
)

TARGET = ObjectRef("apps/v1", "StatefulSet", "serving", "vector-db")
WEEK = 7 * 86400


def writes(kube: FakeKubeApi) -> list[tuple[str, dict]]:
    return [(r.method, dict(r.query)) for r in kube.requests if r.method in ("PATCH", "DELETE")]


def test_a_change_kueues_webhook_refuses_is_never_offered(database_url, slack, kube):
    kueue_managed(kube)
    rt = wire_runtime(database_url, slack, kube)
    kube.clear_requests()
    assert Proposals(rt).propose_advice([vector_db_mig_advice()], rt.clock(), WEEK) == []
    assert writes(kube) == [("PATCH", {"dryRun": "All"})]  # the dry run, and nothing else
    [event] = [e for e in rt.store.events(None) if e.event == "dry-run-refused"]
    assert KUEUE_DENIAL in event.detail()["message"] and event.detail()["key"] == vector_db_mig_advice().key
    assert "nvidia.com/mig-1g.10gb" not in json.dumps(kube.get("StatefulSet", "serving", "vector-db"))


@pytest.mark.prometheus
def test_an_ordinary_statefulset_gets_its_button_and_its_patch_after_a_dry_run(database_url, slack, kube, resize_prometheus):
    add_vector_db(kube, {"app": "vector-db"})
    rt = wire_runtime(database_url, slack, kube, history=resize_prometheus)
    kube.clear_requests()
    [request_id] = Proposals(rt).propose_advice([vector_db_mig_advice()], rt.clock(), WEEK)
    req = rt.store.get(request_id)
    assert "gpu_approve" in buttons(slack.messages(CHANNEL)[req.message_ts])
    assert Approvals(rt).approve(request_id, APPROVER).ok
    # At proposal a dry run; at Approve a dry run, then the real patch.
    assert writes(kube) == [("PATCH", {"dryRun": "All"}), ("PATCH", {"dryRun": "All"}), ("PATCH", {})]
    assert rt.store.get(request_id).state == "done"


@pytest.mark.prometheus
def test_a_refusal_that_comes_after_the_proposal_stops_the_act_and_says_why(database_url, slack, kube, resize_prometheus):
    add_vector_db(kube, {"app": "vector-db"})
    rt = wire_runtime(database_url, slack, kube, history=resize_prometheus)
    [request_id] = Proposals(rt).propose_advice([vector_db_mig_advice()], rt.clock(), WEEK)
    # Since the proposal, Kueue took the StatefulSet over (someone added its queue label).
    obj = kube.get("StatefulSet", "serving", "vector-db")
    obj["metadata"]["labels"][QUEUE_LABEL] = "team-a"
    kueue_managed(kube)
    kube.clear_requests()
    outcome = Approvals(rt).approve(request_id, APPROVER)
    assert not outcome.ok and "the API server refuses it" in outcome.message and KUEUE_DENIAL in outcome.message
    req = rt.store.get(request_id)
    assert req.state == "failed" and KUEUE_DENIAL in req.note
    assert ("system", "dry-run-refused") in [(e.actor, e.event) for e in rt.store.events(request_id)]
    assert writes(kube) == [("PATCH", {"dryRun": "All"})]  # never the real one


def test_an_idle_proposal_the_api_server_refuses_is_posted_without_approve(database_url, slack, kube):
    # A webhook of the cluster's own (any validating webhook on Kubeflow Notebooks) refuses the stop.
    kube.deny("Notebook", "ml-research", "llm-explore", group="kubeflow.org", webhook="notebooks.example.com",
              message="notebooks in ml-research are stopped by the platform team only")
    rt = wire_runtime(database_url, slack, kube)
    now = rt.clock()
    kube.clear_requests()
    assert Proposals(rt).reconcile(rt.detect(now), now)["proposed"] == 1
    [req] = [r for r in rt.store.list_requests() if r.name == "llm-explore"]
    message = slack.messages("C0RESEARCH")[req.message_ts]
    assert "gpu_approve" not in buttons(message)
    assert "the API server refuses the change: admission webhook" in json.dumps(message["blocks"])
    assert ("system", "dry-run-refused") in [(e.actor, e.event) for e in rt.store.events(req.id)]
    assert writes(kube) == [("PATCH", {"dryRun": "All"})]
