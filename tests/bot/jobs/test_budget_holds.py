"""A LocalQueue over its GPU-hour budget is held through Kueue's own ``spec.stopPolicy: Hold``
(kubernetes-sigs/kueue apis/kueue/v1beta1/localqueue_types.go: ``StopPolicy *StopPolicy
`json:"stopPolicy,omitempty"```, enum None;Hold;HoldAndDrain, default None), end to end: the budget
job over a real ledger (SQLite and PostgreSQL), the real kubernetes client against the wire-level
fake API server, Slack at the wire. Approve holds it (dry run first), Restore releases it, a new
month releases it by itself, mode auto holds after the grace; no Workload is ever deleted."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from actions.budgets.model import ASK, AUTO, GPU_HOURS, LOCALQUEUE, Budget
from actions.cost.reporting import CostSetup
from actions.ledger.rollup import LedgerUsage
from actions.model.ledger import FILLED, REQUESTED, LedgerRow
from actions.model.times import hours_between
from actions.policy.teams import Team, TeamDirectory
from actions.store.ledger import LedgerStore
from bot.chat.approvals import Approvals
from bot.chat.auto import AutoActions
from bot.chat.commands import CommandContext, dispatch
from bot.chat.verify import Verifier
from bot.jobs.alerts import AlertsJob
from bot.jobs.budgets import BudgetsJob
from bot.settings import AlertSettings
from tests.support.demo_world import APPROVER, buttons, wire_runtime

UTC = timezone.utc
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
TRAINING = "C0TRAINING"
KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUE = {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"namespace": "training", "name": "training-queue"},
         "spec": {"clusterQueue": "cq-h100"}}
CLUSTER_QUEUE = {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "cq-h100"},
                 "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
                                              "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 16}]}]}]}}
WORKLOAD = {"apiVersion": KUEUE, "kind": "Workload", "metadata": {"namespace": "training", "name": "job-pretrain-3c1f2", "uid": "wl-1"},
            "spec": {"queueName": "training-queue", "podSets": [{"name": "main", "count": 1}]}}
BUDGET = Budget(LOCALQUEUE, "training/training-queue", 100.0, GPU_HOURS, "month", on_exhausted=ASK)


def ledger_hours(store, first: datetime, hours: int, gpus: float) -> None:
    """``hours`` hours from ``first`` of the pretrain Workload holding ``gpus`` H100s in the LocalQueue."""
    table = LedgerStore(store)
    for hour in hours_between(first, first + timedelta(hours=hours)):
        row = LedgerRow(hour, "default", REQUESTED, "training", "Workload", "pretrain", "gpu-od-2", gpus,
                        queue="training-queue", gpu_model="NVIDIA H100 80GB HBM3", instance_type="p5.48xlarge",
                        capacity_type="on-demand")
        assert table.write_hour("default", hour, [row], FILLED, hour + timedelta(hours=1))


@pytest.fixture
def world(database_url, slack, kube):
    for obj in (QUEUE, CLUSTER_QUEUE, WORKLOAD):
        kube.add(obj)
    rt = wire_runtime(database_url, slack, kube)
    rt.clock.now = NOW
    teams = TeamDirectory([*rt.teams.teams.values(),
                           Team(name="training", namespaces=["training"], channel=TRAINING, approvers=[APPROVER])])
    rt = dataclasses.replace(
        rt, teams=teams, configured_budgets=(BUDGET,),
        costs=CostSetup(LedgerUsage(LedgerStore(rt.store), None, cluster="default", team_label=None, source="ledger"),
                        team_label=None),
    )
    # 8 H100s for 14 hours on November 19: 112 GPU-hours of the 100 the month allows.
    ledger_hours(rt.store, datetime(2026, 11, 19, 8, tzinfo=UTC), 14, 8.0)
    alerts = AlertsJob(rt.store, rt.chat, rt.teams, AlertSettings(), read_queues=rt.read_queues, budgets=dict)
    return rt, BudgetsJob(rt, alerts.post)


def stop_policy(kube) -> str | None:
    return (kube.get("LocalQueue", "training", "training-queue", group="kueue.x-k8s.io")["spec"]).get("stopPolicy")


def writes(kube) -> list[tuple[str, str, dict, object]]:
    return [(r.method, r.path, dict(r.query), r.body) for r in kube.requests if r.method in ("PATCH", "DELETE", "POST", "PUT")]


def test_a_localqueue_over_its_gpu_hour_budget_is_held_on_approve_and_restored(world, kube, slack):
    rt, job = world
    kube.clear_requests()
    counts = job.run(NOW)
    assert counts["proposed"] == 1 and counts["posted"] == 1 and counts["errors"] == 0
    # The proposal's server-side dry run, and nothing else yet.
    [(method, path, query, body)] = writes(kube)
    assert (method, query, body) == ("PATCH", {"dryRun": "All"}, {"spec": {"stopPolicy": "Hold"}})
    assert path == "/apis/kueue.x-k8s.io/v1beta2/namespaces/training/localqueues/training-queue"
    [req] = [r for r in rt.store.list_requests(states=["proposed"]) if r.kind == "budget-exhausted"]
    posted = slack.messages(TRAINING)
    assert "gpu_approve" in buttons(posted[req.message_ts])
    text = str(posted)
    assert "112.0 GPU-hours of 100 GPU-hours per month (112%) in 2026-11" in text and "Workloads finish" in text
    # the budget alert at 100%, claimed once: a second round posts nothing and proposes nothing new
    assert job.run(NOW + timedelta(minutes=15))["posted"] == 0
    shown = dispatch("budget training", CommandContext(user=APPROVER, prices=rt.prices, rt=rt, channel=TRAINING))
    assert ("LocalQueue training/training-queue*: 100 GPU-hours per month, at 100% a hold asked of the approvers "
            "(config)\n    used 112.0 GPU-hours of 100 GPU-hours per month (112%) in 2026-11") in shown.message.blocks[0]["text"]["text"]

    kube.clear_requests()
    assert Approvals(rt).approve(req.id, APPROVER).ok
    assert stop_policy(kube) == "Hold"
    assert [(m, q, b) for m, _, q, b in writes(kube)] == [
        ("PATCH", {"dryRun": "All"}, {"spec": {"stopPolicy": "Hold"}}), ("PATCH", {}, {"spec": {"stopPolicy": "Hold"}})]
    assert rt.store.get(req.id).state == "done"
    # Verified from the LocalQueue as read back: its policy is Hold.
    assert Verifier(rt).run(NOW + timedelta(minutes=1)).get("verified") == 1
    assert kube.get("Workload", "training", "job-pretrain-3c1f2", group="kueue.x-k8s.io") is not None

    assert Approvals(rt).restore(req.id, APPROVER).ok
    assert stop_policy(kube) == "None"
    assert rt.store.get(req.id).state == "restored"
    assert not [w for w in kube.requests if w.method == "DELETE"]  # nothing of the queue is ever deleted


def test_a_new_month_releases_the_hold_by_itself_and_says_so(world, kube, slack):
    rt, job = world
    job.run(NOW)
    [req] = [r for r in rt.store.list_requests(states=["proposed"]) if r.kind == "budget-exhausted"]
    assert Approvals(rt).approve(req.id, APPROVER).ok and stop_policy(kube) == "Hold"
    december = datetime(2026, 12, 1, 0, 5, tzinfo=UTC)
    rt.clock.now = december
    counts = job.run(december)
    assert counts["released"] == 1 and counts["proposed"] == 0
    assert stop_policy(kube) == "None" and rt.store.get(req.id).state == "restored"
    assert ("system", "hold-released") in [(e.actor, e.event) for e in rt.store.events(req.id)]
    said = [m["text"] for m in slack.messages(TRAINING).values()]
    assert any("admits Workloads again: a new budget period began (2026-12)" in t for t in said)


def test_a_raised_budget_releases_the_hold(world, kube):
    rt, job = world
    job.run(NOW)
    [req] = [r for r in rt.store.list_requests(states=["proposed"]) if r.kind == "budget-exhausted"]
    assert Approvals(rt).approve(req.id, APPROVER).ok and stop_policy(kube) == "Hold"
    rt.store.set_rule(dataclasses.replace(BUDGET, amount=200.0, source="chat"), APPROVER, NOW)
    assert job.run(NOW + timedelta(minutes=15))["released"] == 1 and stop_policy(kube) == "None"


def test_an_approve_after_the_month_turned_holds_nothing(world, kube):
    rt, job = world
    rt.clock.now = datetime(2026, 11, 30, 20, tzinfo=UTC)
    job.run(rt.clock.now)
    [req] = [r for r in rt.store.list_requests(states=["proposed"]) if r.kind == "budget-exhausted"]
    rt.clock.now = datetime(2026, 12, 1, 1, tzinfo=UTC)  # within the request's day, in a new month
    outcome = Approvals(rt).approve(req.id, APPROVER)
    assert not outcome.ok and "a new budget period began (2026-12)" in outcome.message
    assert stop_policy(kube) is None  # untouched


def test_mode_auto_holds_after_the_grace(world, kube):
    rt, job = world
    rt.configured_budgets = (dataclasses.replace(BUDGET, on_exhausted=AUTO, grace_seconds=3600),)
    job.run(NOW)
    assert AutoActions(rt).act_due(NOW + timedelta(minutes=59)) == {"acted": 0, "left": 0}
    assert stop_policy(kube) is None
    assert AutoActions(rt).act_due(NOW + timedelta(hours=1))["acted"] == 1
    assert stop_policy(kube) == "Hold"
    [req] = [r for r in rt.store.list_requests(states=["done"]) if r.kind == "budget-exhausted"]
    assert req.decided_by == "policy"
