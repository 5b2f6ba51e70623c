"""Outcomes verified (issue 21, item 5): after an action the bot watches what it meant to happen
within ``policy.verify_seconds``, says what it saw in the request's message and the audit, and
restores a resize the cluster did not take. Real stores, Slack at the wire; the in-memory cluster
(which plays the controllers) and the real kubernetes client against the wire-level fake API
server (which plays none, so a test plays the StatefulSet controller and the scheduler by hand).

Upstream shapes: a pod the scheduler cannot place has the condition ``PodScheduled`` ``False``
with reason ``Unschedulable`` (k8s.io/api core/v1 PodReasonUnschedulable) and the message of
kubernetes pkg/scheduler/framework/types.go FitError.Error(): ``NoNodeAvailableMsg`` ("0/%v nodes
are available") then ": " and the sorted "<count> <reason>" histogram, then "."; the resource fit
plugin's reason is "Insufficient <resource>" (pkg/scheduler/framework/plugins/noderesources/fit.go).
A running pod whose containers pass their probes has ``Ready`` ``True``.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from bot.chat.approvals import Approvals
from bot.chat.proposals import Proposals
from bot.chat.verify import Verifier
from bot.wiring.jobs import sweep_for
from tests.support.demo_world import APPROVER, CHANNEL, SERVING_CHANNEL, buttons, make_runtime, sweep, wire_runtime
from tests.support.kueue_webhook import add_vector_db, vector_db_mig_advice

WEEK = 7 * 86400
# The scheduler's words for a MIG slice no node offers (FitError.Error(), 3 nodes in the demo).
UNSCHEDULABLE = "0/3 nodes are available: 3 Insufficient nvidia.com/mig-1g.10gb."


def events(rt, request_id):
    return [(e.actor, e.event) for e in rt.store.events(request_id)]


def note_shown(slack, channel, req) -> str:
    return json.dumps(slack.messages(channel)[req.message_ts]["blocks"])


def test_a_stop_whose_pods_are_gone_is_verified_at_the_first_check_before_the_window_ends(database_url, slack):
    rt = make_runtime(database_url, slack)
    sweep(rt)
    (req,) = rt.store.list_requests()
    assert Approvals(rt).approve(req.id, APPROVER).ok
    rt.clock.now += timedelta(seconds=30)  # well inside verify_seconds (600)
    assert Verifier(rt).run(rt.clock.now) == {"verified": 1}
    req = rt.store.get(req.id)
    assert req.state == "done" and "Verified: pods gone." in req.note
    assert ("system", "verified") in events(rt, req.id)
    assert "Verified: pods gone" in note_shown(slack, CHANNEL, req)
    assert buttons(slack.messages(CHANNEL)[req.message_ts]) == ["gpu_restore"]  # Restore stays
    assert Verifier(rt).run(rt.clock.now + timedelta(hours=1)) == {}  # judged once


def test_a_stop_whose_pod_stays_is_reported_once_the_window_is_over(database_url, slack, kube):
    # The fake API server runs no Notebook controller: the annotation lands, the pod stays.
    rt = wire_runtime(database_url, slack, kube)
    sweep(rt)
    [req] = [r for r in rt.store.list_requests() if r.key == "idle-notebook/ml-research/llm-explore"]
    assert Approvals(rt).approve(req.id, APPROVER).ok
    verifier = Verifier(rt)
    rt.clock.now += timedelta(seconds=599)
    assert verifier.run(rt.clock.now) == {"waiting": 1}
    assert rt.store.get(req.id).note.startswith("Done:")
    rt.clock.now += timedelta(seconds=2)
    assert verifier.run(rt.clock.now) == {"verify-failed": 1}
    req = rt.store.get(req.id)
    assert req.state == "done"  # a stop is reported, never undone on its own
    assert req.note.startswith("Not verified: 1 pod still there: llm-explore-0 (Running) within 600 s")
    assert events(rt, req.id)[-1] == ("system", "verify-failed")
    detail = rt.store.events(req.id)[-1].detail()
    assert detail["saw"] == "1 pod still there: llm-explore-0 (Running)" and detail["verify_seconds"] == 600
    assert "Not verified: 1 pod still there" in note_shown(slack, CHANNEL, req)
    assert verifier.run(rt.clock.now + timedelta(hours=1)) == {}


def resized_pod(ready: bool) -> dict:
    """vector-db-0 as the StatefulSet controller recreates it from the resized template: Pending
    and unschedulable, or Running and Ready."""
    when = "2026-11-20T12:01:00Z"
    conditions = (
        [{"type": "PodScheduled", "status": "True", "lastTransitionTime": when},
         {"type": "Ready", "status": "True", "lastTransitionTime": when}]
        if ready else
        [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": UNSCHEDULABLE,
          "lastTransitionTime": when}]
    )
    spec = {"containers": [{"name": "db", "image": "db:1",
                            "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"},
                                          "requests": {"nvidia.com/mig-1g.10gb": "1"}}}]}
    if ready:
        spec["nodeName"] = "gpu-od-1"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "vector-db-0", "namespace": "serving", "uid": "pod-resized", "creationTimestamp": when,
                     "labels": {"app": "vector-db"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "vector-db",
                                          "uid": "sts-vector-db", "controller": True}]},
        "spec": spec,
        "status": {"phase": "Running" if ready else "Pending", "conditions": conditions,
                   **({"startTime": when} if ready else {})},
    }


def approved_resize(database_url, slack, kube, history):
    add_vector_db(kube, {"app": "vector-db"})
    rt = wire_runtime(database_url, slack, kube, history=history)
    [request_id] = Proposals(rt).propose_advice([vector_db_mig_advice()], rt.clock(), WEEK)
    assert Approvals(rt).approve(request_id, APPROVER).ok
    return rt, request_id


def limits(kube) -> dict:
    return kube.get("StatefulSet", "serving", "vector-db")["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]


@pytest.mark.prometheus
def test_a_resize_whose_pod_cannot_be_scheduled_is_restored_and_says_what_the_scheduler_said(database_url, slack, kube, resize_prometheus):
    rt, request_id = approved_resize(database_url, slack, kube, resize_prometheus)
    assert limits(kube) == {"nvidia.com/mig-1g.10gb": "1"}
    kube.add(resized_pod(ready=False))  # the controller's new pod; no node offers the slice
    verifier = Verifier(rt)
    rt.clock.now += timedelta(seconds=300)
    assert verifier.run(rt.clock.now) == {"waiting": 1}
    rt.clock.now += timedelta(seconds=301)
    assert verifier.run(rt.clock.now) == {"verify-failed": 1, "restored": 1}
    assert limits(kube) == {"nvidia.com/gpu": "1"}  # the exact undo record, as Restore applies it
    req = rt.store.get(request_id)
    assert req.state == "restored"
    saw = f"0/1 pods ready: {UNSCHEDULABLE}"
    assert req.note.startswith(f"Not verified: {saw} within 600 s after the resize. Restored: undid ")
    assert events(rt, request_id)[-2:] == [("system", "verify-failed"), ("system", "restored")]
    assert rt.store.events(request_id)[-2].detail()["saw"] == saw
    assert f"Not verified: {saw}" in note_shown(slack, SERVING_CHANNEL, req)
    assert buttons(slack.messages(SERVING_CHANNEL)[req.message_ts]) == []
    assert verifier.run(rt.clock.now + timedelta(hours=1)) == {}


@pytest.mark.prometheus
def test_a_resize_whose_new_pod_runs_ready_is_verified_early_and_kept(database_url, slack, kube, resize_prometheus):
    rt, request_id = approved_resize(database_url, slack, kube, resize_prometheus)
    kube.add(resized_pod(ready=True))
    rt.clock.now += timedelta(seconds=60)
    assert Verifier(rt).run(rt.clock.now) == {"verified": 1}
    req = rt.store.get(request_id)
    assert req.state == "done" and "Verified: 1/1 pods ready with 1 nvidia.com/mig-1g.10gb." in req.note
    assert limits(kube) == {"nvidia.com/mig-1g.10gb": "1"}
    assert events(rt, request_id)[-1] == ("system", "verified")


@pytest.mark.prometheus
def test_a_resize_judged_long_after_its_window_is_reported_not_undone(database_url, slack, kube, resize_prometheus):
    rt, request_id = approved_resize(database_url, slack, kube, resize_prometheus)
    kube.add(resized_pod(ready=False))
    rt.clock.now += timedelta(seconds=1201)  # the bot was down past twice the window
    assert Verifier(rt).run(rt.clock.now) == {"verify-failed": 1}
    assert rt.store.get(request_id).state == "done" and limits(kube) == {"nvidia.com/mig-1g.10gb": "1"}


def test_a_sweep_of_a_process_without_housekeeping_verifies_too(database_url, slack):
    # `sweep` and `sweep --once` run no housekeeping: their sweep judges done actions itself.
    rt = make_runtime(database_url, slack)
    sweep(rt)
    (req,) = rt.store.list_requests()
    assert Approvals(rt).approve(req.id, APPROVER).ok
    rt.clock.now += timedelta(seconds=30)
    sweep_for(rt).run(rt.clock.now)  # as `run` schedules it: its housekeeping verifies instead
    assert ("system", "verified") not in events(rt, req.id)
    sweep_for(rt, verify=True).run(rt.clock.now)
    assert ("system", "verified") in events(rt, req.id) and "Verified: pods gone." in rt.store.get(req.id).note
