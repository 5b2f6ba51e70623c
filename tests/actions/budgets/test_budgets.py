"""Budgets as decisions: their periods (a month and an ISO week in a time zone, N days from an
anchor), what people type after `/gpu budget set`, what a LocalQueue or ClusterQueue spent (its pods'
GPU-hours and USD, priced by the cost engine), the alerts at the thresholds and the holds at 100%,
and when a hold is lifted."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from actions.budgets.holds import BudgetState, hold_findings, hold_key, release_reason, state_alerts
from actions.budgets.model import ASK, AUTO, CLUSTERQUEUE, GPU_HOURS, LOCALQUEUE, TEAM, USD, WARN, Budget
from actions.budgets.periods import period_of
from actions.budgets.spend import queues_of, spent
from actions.budgets.words import BudgetWordsError, is_budget_rule, read_budget
from actions.model.findings import ActionVerb, Handling
from actions.model.kueue import LocalQueue
from actions.model.usage import NodeInfo, PodOwner, PodUsage, UsageData
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog

UTC = timezone.utc
NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
LQ = Budget(LOCALQUEUE, "training/training-queue", 100.0, GPU_HOURS, on_exhausted=ASK)
QUEUES = (LocalQueue("training", "training-queue", "cq-h100"), LocalQueue("training", "eval", "cq-h100"),
          LocalQueue("research", "team-r", "cq-a100", stop_policy="Hold"))


def test_periods_follow_the_calendar_in_the_budgets_zone():
    month = period_of(LQ, NOW, "Europe/Berlin")
    assert (month.key, month.start, month.end) == (
        "2026-11", datetime(2026, 10, 31, 23, tzinfo=UTC), datetime(2026, 11, 30, 23, tzinfo=UTC))
    week = period_of(Budget(TEAM, "research", 10.0, period="week"), NOW)
    assert (week.key, week.start.date(), week.end.date()) == ("2026-W47", date(2026, 11, 16), date(2026, 11, 23))
    sprint = period_of(Budget(TEAM, "research", 10.0, period="14d", anchor=date(2026, 11, 2)), NOW)
    assert (sprint.key, sprint.start.date()) == ("2026-11-16+14d", date(2026, 11, 16))
    assert month.fraction(NOW) == pytest.approx((19 * 24 + 13) / (30 * 24))  # Berlin's month began at 23:00 UTC


@pytest.mark.parametrize("typed,expected", [
    ("lq training/training-queue 2000 gpu-hours/month ask", (LOCALQUEUE, "training/training-queue", 2000, GPU_HOURS, "month", ASK)),
    ("clusterqueue cq-h100 $50k/week auto", (CLUSTERQUEUE, "cq-h100", 50000, USD, "week", AUTO)),
    ("team research 500 gpu hours per week", (TEAM, "research", 500, GPU_HOURS, "week", WARN)),
    ("LocalQueue training/q 1,500 GPU-h a month", (LOCALQUEUE, "training/q", 1500, GPU_HOURS, "month", WARN)),
    ("cq cq-h100 2.5k every 14 days from 2026-11-02", (CLUSTERQUEUE, "cq-h100", 2500, USD, "14d", WARN)),
])
def test_budgets_read_as_people_type_them(typed, expected):
    b = read_budget(typed)
    assert (b.scope, b.name, b.amount, b.unit, b.period, b.on_exhausted) == expected
    assert b.stop_policy == "Hold" and is_budget_rule(typed.split()[0])


@pytest.mark.parametrize("typed,said", [
    ("lq training-queue 100", "A LocalQueue is named namespace/name"),
    ("lq a/b 100 drain", "HoldAndDrain evicts running Workloads"),
    ("cq x lots", "not one amount in `lots`"),
    ("cq x 100 every 14 days", "needs the day it starts"),
    ("cq x $100 gpu-hours", "is dollars but the unit says GPU-hours"),
])
def test_a_misread_budget_says_what_was_understood_with_an_example(typed, said):
    with pytest.raises(BudgetWordsError, match=said) as e:
        read_budget(typed)
    assert e.value.example.startswith("/gpu budget set ")
    assert not is_budget_rule("research")  # the short form: a team and USD per month


def usage() -> UsageData:
    # Two pods in training-queue (4 H100s each for 10 h), one in eval, one outside Kueue, on a p5.48xlarge.
    pods = [PodUsage("training", f"w-{i}", "p5", 40.0, 0.0, "NVIDIA H100 80GB HBM3") for i in range(2)]
    pods += [PodUsage("training", "e-0", "p5", 8.0, 0.0, "NVIDIA H100 80GB HBM3"),
             PodUsage("training", "nb-0", "p5", 5.0, 0.0, "NVIDIA H100 80GB HBM3")]
    owners = {("training", f"w-{i}"): PodOwner("training", f"w-{i}", "Job", "w", {"kueue.x-k8s.io/local-queue-name": "training-queue"})
              for i in range(2)}
    owners[("training", "e-0")] = PodOwner("training", "e-0", "Job", "e", {"kueue.x-k8s.io/queue-name": "eval"})
    return UsageData(NOW.replace(day=1, hour=0), NOW, 300, tuple(pods), nodes={"p5": NodeInfo("p5", "p5.48xlarge")},
                     owners=owners)


def test_a_queues_spend_is_its_pods_priced_by_the_engine():
    prices, teams = PriceBook(PriceCatalog.bundled()), TeamDirectory([])
    assert spent(LQ, usage(), prices, QUEUES, teams, None) == 80.0
    usd = Budget(LOCALQUEUE, "training/training-queue", 1.0, USD)
    assert spent(usd, usage(), prices, QUEUES, teams, None) == pytest.approx(80 * 55.04 / 8)  # p5.48xlarge $55.04/h, 8 GPUs
    cq = Budget(CLUSTERQUEUE, "cq-h100", 1.0, GPU_HOURS)
    assert spent(cq, usage(), prices, QUEUES, teams, None) == 88.0  # both of its LocalQueues, not the notebook
    team = Budget(TEAM, "training", 1.0, GPU_HOURS)
    assert spent(team, usage(), prices, QUEUES, TeamDirectory([Team(name="training", namespaces=["training"])]), None) == 93.0
    assert [q.name for q in queues_of(cq, QUEUES, teams, {}, None)] == ["eval", "training-queue"]


def state(budget: Budget, used: float) -> BudgetState:
    return BudgetState(budget, period_of(budget, NOW), used, NOW)


def test_alerts_at_the_thresholds_and_a_hold_at_100_percent():
    [alert] = state_alerts(state(LQ, 112.0), "training")
    assert alert.kind == "budget-100" and set(alert.also_claims) == {"budget-50", "budget-80"}
    assert alert.period_key == "localqueue:training/training-queue@2026-11"
    assert "112.0 GPU-hours of 100 GPU-hours per month (112%)" in alert.text and "hold of its LocalQueue" in alert.text
    # 65% of the month gone at 70%: the pace (107.7 GPU-hours) passes the budget before it is used up.
    kinds = [a.kind for a in state_alerts(state(LQ, 70.0), "training")]
    assert kinds == ["budget-50", "budget-forecast"]
    [hold] = hold_findings(state(LQ, 112.0), QUEUES[:1], "training", api_version="kueue.x-k8s.io/v1beta2",
                           handling=Handling())
    assert hold.action.verb is ActionVerb.HOLD_LOCALQUEUE and hold.action.target.api_version == "kueue.x-k8s.io/v1beta2"
    assert hold.key == hold_key(LQ, period_of(LQ, NOW), QUEUES[0]) and hold.handling.mode == "ask"
    assert hold_findings(state(LQ, 99.0), QUEUES[:1], "training", api_version=None, handling=Handling()) == []
    assert hold_findings(state(Budget(LOCALQUEUE, LQ.name, 100.0, GPU_HOURS), 112.0), QUEUES[:1], "training",
                         api_version=None, handling=Handling()) == []  # warn: an alert only
    drain = Budget(CLUSTERQUEUE, "cq-a100", 1.0, GPU_HOURS, on_exhausted=AUTO, stop_policy="HoldAndDrain", grace_seconds=600)
    # research's LocalQueue is held already: nothing more to ask
    assert hold_findings(state(drain, 5.0), QUEUES[2:], "research", api_version=None, handling=Handling()) == []
    [auto] = hold_findings(state(drain, 5.0), QUEUES[:1], "training", api_version=None, handling=Handling(),
                           pods={("training", "training-queue"): ("w-0", "w-1")})
    assert auto.action.verb is ActionVerb.DRAIN_LOCALQUEUE and auto.pods == ("w-0", "w-1")
    assert (auto.handling.mode, auto.handling.grace_seconds) == ("auto", 600)


def test_a_hold_is_lifted_by_a_new_period_a_raised_budget_or_none():
    key = hold_key(LQ, period_of(LQ, NOW), QUEUES[0])
    assert release_reason(key, state(LQ, 112.0)) is None
    december = BudgetState(LQ, period_of(LQ, datetime(2026, 12, 1, 1, tzinfo=UTC)), 0.0, datetime(2026, 12, 1, 1, tzinfo=UTC))
    assert release_reason(key, december) == "a new budget period began (2026-12)"
    assert release_reason(key, state(Budget(LOCALQUEUE, LQ.name, 200.0, GPU_HOURS), 112.0)).startswith(
        "the budget is no longer used up")
    assert release_reason(key, None) == "its budget was removed"


def test_a_budget_refuses_what_cannot_be():
    for bad, said in ((dict(amount=0), "more than 0"), (dict(period="fortnight"), "not month, week"),
                      (dict(period="14d"), "needs the day"), (dict(stop_policy="Evict"), "neither Hold"),
                      (dict(name="no-namespace"), "namespace/localqueue")):
        with pytest.raises(ValueError, match=said):
            Budget(**{**dict(scope=LOCALQUEUE, name="a/b", amount=1.0), **bad})
