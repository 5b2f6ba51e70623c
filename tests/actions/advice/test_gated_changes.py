"""Advice passes the one gate before a change is offered (actions.advice.round.gate_changes): a
change the gate refuses stays advice only, with no request and no Approve, and says why. Pure,
on the demo fleet (bot/demo_data)."""

from __future__ import annotations

import json

import pytest

from actions.advice.model import ConsumerUsage
from actions.advice.recommend import advise_consumer
from actions.advice.round import gate_changes
from actions.model.kube import CapacityType, ObjectRef
from actions.policy.advice import AdvicePolicy
from actions.policy.namespaces import PolicyBook
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.kube.dump import snapshot_from_kubectl_dump
from tests.support.clock import T0
from tests.support.gpu_nodes import h100_cluster
from tests.support.paths import DEMO_CLUSTER

USAGE = ConsumerUsage(
    key="idle-notebook/ml-research/llm-explore", team="research", namespace="ml-research", consumer_kind="Notebook",
    name="llm-explore", role="notebook", pods=("llm-explore-0",), whole_gpus=1, gpus=1.0,
    gpu_model="NVIDIA H100 80GB HBM3", instance_type="p5.48xlarge", capacity=CapacityType.ON_DEMAND,
    window_seconds=7 * 86400, gpu_hours=168.0, peak_fb_mib=6000, peak_engine_pct=9, busy_gpus=1,
    target=ObjectRef("kubeflow.org/v1", "Notebook", "ml-research", "llm-explore"), landing=h100_cluster(),
)


def gated(team_policy: dict, pod_annotations: dict | None = None, approvers: tuple[str, ...] = ("U0APPROVER",)):
    items = json.loads(DEMO_CLUSTER.read_bytes())["items"]
    for o in items:
        if o["kind"] == "Pod" and o["metadata"]["name"] == "llm-explore-0" and pod_annotations:
            o["metadata"].setdefault("annotations", {}).update(pod_annotations)
    snapshot = snapshot_from_kubectl_dump(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}).encode(), T0)
    teams = TeamDirectory([Team(name="research", namespaces=["ml-research"], policy=team_policy,
                                  approvers=list(approvers))])
    recs = [r for r in advise_consumer(USAGE, PriceBook(PriceCatalog.bundled()), AdvicePolicy()) if r.kind == "mig"]
    assert recs[0].action is not None
    [r] = gate_changes(recs, [USAGE], snapshot, PolicyBook(Policy(), teams, snapshot.namespace_annotations), T0)
    return r


def test_a_change_the_gate_allows_keeps_its_action():
    assert gated({}).action is not None


@pytest.mark.parametrize("team_policy, pods, says", [
    ({"mode": "report"}, None, "mode report"),
    ({"act_on": ["RayJob"]}, None, "acts on RayJob only"),
    ({}, {"karpenter.sh/do-not-disrupt": "true"}, "karpenter.sh/do-not-disrupt"),
], ids=["mode-report", "act_on", "do-not-disrupt"])
def test_a_change_the_gate_refuses_is_advice_only_and_says_why(team_policy, pods, says):
    r = gated(team_policy, pods)
    assert r.action is None and says in r.notes[-1] and r.notes[-1].startswith("Not offered as a change: ")
    assert r.kind == "mig" and "1g.10gb" in r.summary  # the advice itself stands


def test_a_change_nobody_could_approve_is_advice_only():
    r = gated({}, approvers=())
    assert r.action is None
    assert "team research has no approvers" in r.notes[-1] and "teams[].approvers" in r.notes[-1]
