"""The one gate (actions.detect.gate) for every action kind and every guard, pure: each kind's
objects as its controller builds them (tests/support/workload_shapes.py: Kueue v0.19.2, KubeRay
v1.7.0, LWS v0.10.0, KServe v0.20.0, kubespawner 7.1.0), the guard added to them, the gate's
answer read. Karpenter's shapes: ``karpenter.sh/do-not-disrupt`` "true" or, on a pod, a duration
after the pod's start (karpenter.sh reference, "Well-Known Annotations"); NodePool
``spec.disruption.budgets`` with ``nodes``, ``reasons`` (Underutilized, Empty, Drifted),
``schedule`` and ``duration`` (kubernetes-sigs/karpenter pkg/apis/v1 nodepool.go, Budget)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from actions.advice.usage import consumer_pods
from actions.detect.gate import refusals
from actions.detect.owners import OwnerIndex
from actions.model.findings import ActionVerb, GpuResize, ProposedAction
from actions.model.kube import ObjectRef
from actions.model.times import format_time
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.sources.kube.dump import snapshot_from_kubectl_dump
from tests.support import workload_shapes as shapes

NOW = shapes.NOW  # six hours after the pods started
TEAM = Team(name="vision", namespaces=[shapes.NS], approvers=["U0LEAD"])
LATER, EARLIER = format_time(NOW + timedelta(days=1)), format_time(NOW - timedelta(hours=1))
KINDS = {
    "deactivate-workload (Job)": shapes.batch_job,
    "deactivate-workload (RayJob)": shapes.rayjob,
    "scale-to-zero (Deployment)": shapes.kueue_deployment,
    "scale-to-zero (StatefulSet)": shapes.kueue_statefulset,
    "scale-to-zero (LeaderWorkerSet)": shapes.leaderworkerset,
    "suspend-raycluster": shapes.raycluster,
    "stop-inferenceservice": shapes.inferenceservice,
    "stop-jupyter-server": shapes.jupyterhub_server,
}


def answer(build, *, policy: Policy | None = None, pod=None, owner=None, namespace=None, resize: bool = False,
           team: Team = TEAM):
    """The gate's sentences for the one consumer ``build`` makes, after ``pod`` / ``owner`` /
    ``namespace`` annotations are added (the owner: the pod's controller's top object), for an
    action of ``team``."""
    objects, gpu_pods = build()
    for o in objects:
        meta = o["metadata"]
        if o["kind"] == "Pod" and meta["name"] in gpu_pods and pod:
            meta["annotations"].update(pod)
        elif o["kind"] != "Pod" and owner and not meta.get("ownerReferences"):
            meta["annotations"].update(owner)
    items = [shapes.node(), shapes.namespace(namespace), *objects]
    snapshot = snapshot_from_kubectl_dump(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}).encode(), NOW)
    policy = policy or Policy()
    [(consumer, pods)] = consumer_pods(snapshot, Policy(), TeamDirectory([])).values()
    action = consumer.action
    if resize:  # right-sizing the pod template's owner instead
        top = OwnerIndex(snapshot).chain(pods[0])[-1]
        action = ProposedAction(ActionVerb.RESIZE_GPUS, ObjectRef(top.ref.api_version, top.kind, shapes.NS, top.name),
                                "resize", GpuResize(before=(("nvidia.com/gpu", 1),), after=(("nvidia.com/mig-1g.10gb", 1),)))
    return refusals(action, consumer.consumer_kind, pods, snapshot, policy, NOW, team=team)


@pytest.mark.parametrize("build", KINDS.values(), ids=KINDS.keys())
def test_every_kind_passes_when_nothing_forbids_it(build):
    assert answer(build) == ()


GUARDS = [
    ("mode", {"policy": Policy(mode="report")}, "mode report"),
    ("act_on", {"policy": Policy(act_on=["Notebook"])}, "acts on Notebook only"),
    ("opt-out on the pod", {"pod": {"gpu-cost-bot/exclude-until": LATER}}, "is annotated gpu-cost-bot/exclude-until"),
    ("opt-out on the owner", {"owner": {"gpu-cost-bot/exclude-until": LATER}}, "is annotated gpu-cost-bot/exclude-until"),
    ("opt-out on the namespace", {"namespace": {"gpu-cost-bot/exclude-until": LATER}}, f"namespace {shapes.NS} is annotated"),
    ("do-not-disrupt true", {"pod": {"karpenter.sh/do-not-disrupt": "true"}}, "karpenter.sh/do-not-disrupt"),
    ("do-not-disrupt for 12h after start", {"pod": {"karpenter.sh/do-not-disrupt": "12h"}}, "karpenter.sh/do-not-disrupt"),
    ("approvers", {"team": Team(name="vision", namespaces=[shapes.NS])},
     "team vision has no approvers, so nobody could approve it (add them under teams[].approvers of team vision)"),
]


@pytest.mark.parametrize("build, guard, kwargs, says", [
    pytest.param(build, *g, id=f"{kind}-{g[0]}") for kind, build in KINDS.items() for g in GUARDS
    # kubespawner's pod has no owner object: the Hub that made it lives outside the cluster.
    if not (build is shapes.jupyterhub_server and g[0] == "opt-out on the owner")
])
def test_every_guard_refuses_every_kind(build, guard, kwargs, says):
    why = answer(build, **kwargs)
    assert len(why) == 1 and says in why[0], why


@pytest.mark.parametrize("build", KINDS.values(), ids=KINDS.keys())
def test_what_has_run_out_forbids_nothing(build):
    # An opt-out in the past, and a do-not-disrupt of 2h for a pod that started 6h ago.
    assert answer(build, pod={"gpu-cost-bot/exclude-until": EARLIER, "karpenter.sh/do-not-disrupt": "2h"}) == ()
    # An opt-out that names no time never hides a GPU.
    assert answer(build, owner={"gpu-cost-bot/exclude-until": "forever"}) == ()


@pytest.mark.parametrize("build", [shapes.kueue_deployment, shapes.kueue_statefulset, shapes.leaderworkerset],
                         ids=["Deployment", "StatefulSet", "LeaderWorkerSet"])
@pytest.mark.parametrize("guard, kwargs", [
    ("mode", {"policy": Policy(mode="report")}),
    ("act_on", {"policy": Policy(act_on=["Workload"])}),
    ("opt-out", {"pod": {"gpu-cost-bot/exclude-until": LATER}}),
    ("do-not-disrupt", {"pod": {"karpenter.sh/do-not-disrupt": "true"}}),
    ("approvers", {"team": Team(name="vision", namespaces=[shapes.NS])}),
])
def test_a_resize_passes_the_same_gate(build, guard, kwargs):
    # The three bypasses issue 21 found: report mode, act_on and exclude-until (and do-not-disrupt).
    assert answer(build, resize=True) == ()
    assert len(answer(build, resize=True, **kwargs)) == 1


# --- a NodeClaim delete -------------------------------------------------------------------------

def node_world(*, node_annotations=None, pod_annotations=None, budgets=None, pod_started=shapes.STARTED,
               admin_approvers=("U0ADMIN",)):
    """An empty Karpenter GPU node of NodePool gpu (NodeClaim gpu-x7k2p), a CPU pod bound to it
    when ``pod_annotations`` is given, the NodePool with ``budgets``."""
    node = shapes.node()
    node["metadata"]["labels"]["karpenter.sh/nodepool"] = "gpu"
    node["metadata"]["annotations"] = node_annotations or {}
    items = [node, {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                    "metadata": {"name": "gpu-x7k2p", "labels": {"karpenter.sh/nodepool": "gpu"}},
                    "status": {"nodeName": shapes.NODE}},
             {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
              "spec": {"disruption": {"consolidationPolicy": "WhenEmpty", "budgets": budgets or [{"nodes": "10%"}]}}}]
    if pod_annotations is not None:
        pod = shapes.obj("v1", "Pod", "log-shipper", annotations=pod_annotations)
        pod["spec"] = {"nodeName": shapes.NODE, "containers": [{"name": "main"}]}
        pod["status"] = {"phase": "Running", "startTime": pod_started}
        items.append(pod)
    snapshot = snapshot_from_kubectl_dump(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}).encode(), NOW)
    action = ProposedAction(ActionVerb.DELETE_NODECLAIM, ObjectRef("karpenter.sh/v1", "NodeClaim", "", "gpu-x7k2p"), "delete")
    admins = TeamDirectory([], admin_approvers=list(admin_approvers)).admin
    return refusals(action, "Node", [], snapshot, Policy(), NOW, team=admins)


def test_a_nodeclaim_delete_nobody_could_approve_is_refused():
    assert node_world(admin_approvers=()) == (
        "team cluster-admins has no approvers, so nobody could approve it (add them under slack.admin_approvers)",)


def test_a_nodeclaim_delete_passes_on_a_plain_node():
    assert node_world() == ()


def test_a_node_annotated_do_not_disrupt_refuses_the_delete():
    [why] = node_world(node_annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert f'node {shapes.NODE} is annotated karpenter.sh/do-not-disrupt: "true"' in why
    # Karpenter reads a duration only on pods.
    assert node_world(node_annotations={"karpenter.sh/do-not-disrupt": "1h"}) == ()


def test_a_pod_on_the_node_protects_it_while_its_duration_runs():
    [why] = node_world(pod_annotations={"karpenter.sh/do-not-disrupt": "12h"})
    assert f"pod {shapes.NS}/log-shipper on node {shapes.NODE} is annotated" in why
    assert node_world(pod_annotations={"karpenter.sh/do-not-disrupt": "2h"}) == ()


@pytest.mark.parametrize("budget, refused", [
    ({"nodes": "0"}, True),
    ({"nodes": "0%"}, True),
    ({"nodes": "0", "reasons": ["Empty"]}, True),
    ({"nodes": "0", "reasons": ["Underutilized", "Drifted"]}, False),  # not the reason of an empty node
    ({"nodes": "1"}, False),
    # 12:00 UTC on a Friday: inside a window opened at 09:00 for 8 h, outside one for 2 h.
    ({"nodes": "0", "schedule": "0 9 * * *", "duration": "8h"}, True),
    ({"nodes": "0", "schedule": "0 9 * * *", "duration": "2h"}, False),
])
def test_a_disruption_budget_refuses_only_for_its_reasons_and_within_its_schedule(budget, refused):
    assert NOW.hour == 12
    why = node_world(budgets=[{"nodes": "10%"}, budget])
    assert bool(why) is refused, why
    if refused:
        assert "NodePool gpu's disruption budget" in why[0] and "(Empty)" in why[0]
