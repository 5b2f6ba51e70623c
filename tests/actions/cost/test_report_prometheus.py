"""The cost report end to end over a real Prometheus holding the usage history of
tests/support/usage_history.py (30 days of kube-state-metrics, Kueue-labelled pods and dcgm-exporter
series for a few teams), checked to the cent against the figures worked out by hand there."""

from __future__ import annotations

import pytest

from actions.cost.engine import compute_cost_report
from actions.cost.periods import parse_period
from actions.cost.report import UNALLOCATED
from actions.model.kube import CapacityType, Node
from actions.policy.rules import Policy
from actions.sources.prometheus.usage import PrometheusUsage
from actions.sources.prometheus.usage_promql import presence_queries, usage_queries
from tests.support.usage_history import END, TEAMS, d, price_book

pytestmark = pytest.mark.prometheus


@pytest.fixture(scope="module")
def usage(usage_prometheus):
    source = PrometheusUsage(usage_prometheus, team_label="team")
    start, end = parse_period("30d", END)
    data = source.fetch(start, end, Policy())
    return source, data


def cents(x: float) -> float:
    return round(x, 2)


def test_a_report_costs_a_constant_number_of_queries(usage):
    source, data = usage
    # 7 instant queries and 4 of GPU energy, 3 that check the data is there, and one range query
    # (step 1d) each for allocated and idle: 30 whole days.
    assert source.requests == len(usage_queries(Policy(), 86400)) + len(presence_queries(86400)) + 2 == 16
    assert len(data.pods) == 6  # one row per (pod, node); the Succeeded pod held nothing
    # The fleet's history covers the whole period and holds both exporters: nothing to warn of.
    assert data.warnings == () and data.covered_from is None


def test_report_matches_the_hand_computed_chargeback(usage):
    _, data = usage
    report = compute_cost_report(data, price_book(), TEAMS, team_label="team", top_consumers=5)
    teams = report.teams

    vision = teams["vision"]
    assert vision.gpu_hours == pytest.approx(312)
    (line,) = vision.price_lines
    # The seed case: A100 on-demand 312 hrs x $3.06 = $954.72
    assert (line.gpu_model, line.capacity_type, cents(line.usd_per_gpu_hour), cents(line.cost_usd)) == (
        "A100", "on-demand", 3.06, 954.72)
    assert line.price_source == "config override prices.instance_types.p4d.24xlarge (on-demand): seed rate"
    assert vision.idle_gpu_hours == 0 and vision.efficiency == 1.0 and vision.spot_ratio == 0.0

    research = teams["research"]  # configured team wins over the namespace label
    assert (research.gpu_hours, cents(research.cost_usd)) == (pytest.approx(720), 4953.60)
    assert (research.idle_gpu_hours, cents(research.idle_cost_usd)) == (pytest.approx(540), 3715.20)
    assert research.efficiency == pytest.approx(0.25)
    (nb,) = research.top_consumers
    assert (nb.kind, nb.name, nb.idle_share) == ("Notebook", "llm-explore", pytest.approx(0.75))

    training = teams["training"]  # from the namespace label team=training
    assert training.gpu_hours == pytest.approx(960 + 120)
    assert cents(training.cost_usd) == cents(960 * 2.50 + 120 * 6.88) == 3225.60
    assert training.idle_gpu_hours == pytest.approx(80 + 120)
    assert cents(training.idle_cost_usd) == cents(80 * 2.50 + 120 * 6.88) == 1025.60
    assert training.efficiency == pytest.approx(880 / 1080)
    assert training.spot_ratio == pytest.approx(960 / 1080)
    spot, od = training.price_lines
    assert (spot.capacity_type, spot.gpu_model, cents(spot.usd_per_gpu_hour), cents(spot.cost_usd)) == (
        "spot", "H100", 2.50, 2400.00)
    assert (od.capacity_type, cents(od.cost_usd)) == ("on-demand", 825.60)
    wl, dep = training.top_consumers
    assert (wl.kind, wl.name, wl.queue, cents(wl.cost_usd)) == ("Workload", "pretrain", "training-queue", 2400.00)
    assert wl.idle_share == pytest.approx(1 / 12)
    assert (dep.kind, dep.name, dep.idle_share) == ("Deployment", "eval", pytest.approx(1.0))

    # sandbox: no configured team, no team label: its own team, as the sweep names it
    un = teams["sandbox"]
    assert (un.gpu_hours, cents(un.cost_usd), un.idle_gpu_hours) == (pytest.approx(48), 330.24, pytest.approx(48))
    assert un.top_consumers[0].kind == "Pod" and "reported as its own team" in un.notes[0]
    assert UNALLOCATED not in teams


def test_daily_split_adds_up_and_follows_the_schedule(usage):
    _, data = usage
    report = compute_cost_report(data, price_book(), TEAMS, team_label="team")
    for t in report.teams.values():
        assert len(t.daily) == 30
        assert sum(x.cost_usd for x in t.daily) == pytest.approx(t.cost_usd, abs=1e-6)
        assert sum(x.idle_cost_usd for x in t.daily) == pytest.approx(t.idle_cost_usd, abs=1e-6)
    research = {x.day: x for x in report.teams["research"].daily}
    nov1 = research[d(11, 1).date()]
    assert dict(nov1.cost_usd_by_capacity_type) == {"on-demand": pytest.approx(24 * 6.88)}
    assert cents(nov1.idle_cost_usd) == cents(18 * 6.88)
    training = {x.day: x for x in report.teams["training"].daily}
    oct31 = training[d(10, 31).date()]
    assert dict(oct31.cost_usd_by_capacity_type) == {"spot": pytest.approx(96 * 2.50)}
    assert cents(oct31.idle_cost_usd) == 20.00
    assert training[d(11, 1).date()].cost_usd == 0  # pretrain stopped at midnight: no step counted twice


def test_capacity_type_falls_back_to_the_kubernetes_api(usage):
    _, data = usage
    without = compute_cost_report(data, price_book(), TEAMS, team_label="team")
    platform = without.teams["platform"]
    assert (platform.gpu_hours, cents(platform.cost_usd)) == (pytest.approx(24), cents(24 * 6.88))
    assert platform.price_lines[0].capacity_type == "unknown"
    assert any("capacity type unknown for node h100-nolabel-1" in n for n in without.notes)

    api_nodes = {"h100-nolabel-1": Node("h100-nolabel-1", instance_type="p5.48xlarge",
                                        capacity_type=CapacityType.SPOT)}
    with_api = compute_cost_report(data, price_book(), TEAMS, team_label="team", api_nodes=api_nodes)
    platform = with_api.teams["platform"]
    assert (cents(platform.cost_usd), platform.spot_ratio) == (60.00, 1.0)
    assert any("capacity type read from the Kubernetes API" in n and "h100-nolabel-1" in n for n in with_api.notes)
    # other teams are priced from kube_node_labels as before
    assert cents(with_api.teams["research"].cost_usd) == 4953.60


def test_a_partial_period_counts_only_its_own_steps(usage_prometheus):
    # mtd on Nov 20 12:00: the 19.5 days since Nov 1, a partial last day; llm-explore held 1 GPU all along.
    source = PrometheusUsage(usage_prometheus, team_label="team")
    start, end = parse_period("mtd", d(11, 20, 12))
    report = compute_cost_report(source.fetch(start, end, Policy()), price_book(), TEAMS, team_label="team")
    research = report.teams["research"]
    assert research.gpu_hours == pytest.approx(19.5 * 24)
    assert len(research.daily) == 20 and research.daily[-1].cost_usd == pytest.approx(12 * 6.88)
    assert report.teams["platform"].gpu_hours == pytest.approx(24)  # render-0 ran Nov 20 00:00-12:00
