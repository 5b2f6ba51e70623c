"""The cost engine's pure decisions: periods, teams, owners, pricing by capacity type, notes."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone

import pytest

from actions.cost.engine import compute_cost_report, consumer_of, team_of
from actions.cost.periods import PeriodError, day_buckets, parse_period
from actions.cost.report import RESERVED_ON_PREM, UNALLOCATED, table_order, to_jsonable
from actions.model.kube import CapacityType, Node
from actions.model.usage import NODE_FROM_API, DailyUsage, NodeInfo, PodOwner, PodUsage, UsageData
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.pricing.overrides import PriceOverrides
from actions.sources.prometheus.usage_promql import ksm_label_name

UTC = timezone.utc
NOW = datetime(2026, 11, 23, 10, 42, 17, tzinfo=UTC)


@pytest.mark.parametrize(
    "text, start, end",
    [
        ("7d", datetime(2026, 11, 16, 10, 40, tzinfo=UTC), datetime(2026, 11, 23, 10, 40, tzinfo=UTC)),
        ("12h", datetime(2026, 11, 22, 22, 40, tzinfo=UTC), datetime(2026, 11, 23, 10, 40, tzinfo=UTC)),
        ("2w", datetime(2026, 11, 9, 10, 40, tzinfo=UTC), datetime(2026, 11, 23, 10, 40, tzinfo=UTC)),
        ("MTD", datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 23, 10, 40, tzinfo=UTC)),
        ("last-month", datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC)),
    ],
)
def test_periods_end_on_a_step_boundary(text, start, end):
    assert parse_period(text, NOW) == (start, end)


def test_month_periods_follow_the_time_zone():
    # 2026-11-01 00:00 in Berlin (CET, UTC+1) is 2026-10-31 23:00 UTC
    start, end = parse_period("last-month", NOW, "Europe/Berlin")
    assert (start, end) == (datetime(2026, 9, 30, 22, tzinfo=UTC), datetime(2026, 10, 31, 23, tzinfo=UTC))


@pytest.mark.parametrize("text", ["fortnight", "0d", "30", "-7d", ""])
def test_bad_periods_say_what_works(text):
    with pytest.raises(PeriodError, match="7d"):
        parse_period(text, NOW)


def test_day_buckets_clip_partial_days():
    buckets = day_buckets(datetime(2026, 11, 1, 18, tzinfo=UTC), datetime(2026, 11, 3, 6, tzinfo=UTC))
    assert [(d, (b - a).total_seconds() / 3600) for d, a, b in buckets] == [
        (date(2026, 11, 1), 6), (date(2026, 11, 2), 24), (date(2026, 11, 3), 6)]


def test_configured_team_then_namespace_label_then_the_namespace_as_the_sweep_names_it():
    teams = TeamDirectory([Team(name="research", namespaces=["ml-research"])])
    labels = {"ml-research": {"team": "other"}, "training": {"team": "ml-train"}, "sandbox": {"owner": "x"}}
    assert team_of("ml-research", teams, labels, "team") == "research"
    assert team_of("training", teams, labels, "team") == "ml-train"
    # One rule for the whole bot: the sweep's TeamDirectory.team_for names a namespace no team
    # lists after itself, and so does the report.
    assert team_of("sandbox", teams, labels, "team") == "sandbox" == teams.team_for("sandbox").name
    assert team_of("training", teams, labels, None) == "training"
    assert team_of("", teams, labels, "team") == UNALLOCATED


def test_ksm_label_names():
    assert ksm_label_name("team") == "label_team"
    assert ksm_label_name("app.kubernetes.io/part-of") == "label_app_kubernetes_io_part_of"
    assert ksm_label_name("eks.amazonaws.com/capacityType") == "label_eks_amazonaws_com_capacity_type"


@pytest.mark.parametrize(
    "owner, expected",
    [
        (PodOwner("ns", "nb-0", "StatefulSet", "nb", {"notebook-name": "nb"}), ("Notebook", "nb", None)),
        (PodOwner("ns", "api-7d9f8c6b5-x2x9z", "ReplicaSet", "api-7d9f8c6b5"), ("Deployment", "api", None)),
        (PodOwner("ns", "p-0", "Job", "pretrain", {"kueue.x-k8s.io/queue-name": "q"}), ("Workload", "pretrain", "q")),
        # Kueue labels the pods it admits with their LocalQueue (constants.LocalQueueLabel),
        # also those of a JobSet whose pod templates carry no queue-name.
        (PodOwner("ns", "js-0", "Job", "js-workers-0", {"kueue.x-k8s.io/local-queue-name": "lq"}),
         ("Workload", "js-workers-0", "lq")),
        (PodOwner("ns", "w-0", "Job", "etl"), ("Job", "etl", None)),
        (PodOwner("ns", "db-0", "StatefulSet", "db"), ("StatefulSet", "db", None)),
        (PodOwner("ns", "bare", "<none>", "<none>"), ("Pod", "bare", None)),
        (None, ("Pod", "bare", None)),
    ],
)
def test_workload_owners(owner, expected):
    assert consumer_of(owner, "ns", owner.pod if owner else "bare") == expected


START, END = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 3, tzinfo=UTC)
PRICES = PriceOverrides.model_validate({
    "gpu_families": {"A100": {"usd_per_gpu_hour": 1.10, "note": "on-prem, amortised over 3 years"}},
    "instance_types": {"p5.48xlarge": {"on_demand_usd_per_hour": 55.04, "spot_usd_per_hour": 20.0}},
})


def _usage(**kw) -> UsageData:
    base = dict(
        start=START,
        end=END,
        step_seconds=300,
        pods=(
            PodUsage("research", "onprem-0", "dgx-1", 40, 10, "NVIDIA A100-SXM4-80GB"),
            PodUsage("research", "spot-0", "p5-spot", 20, 0, "NVIDIA H100 80GB HBM3"),
            PodUsage("mystery", "x-0", "weird-1", 5, 5, "NVIDIA Z9000"),
        ),
        daily=(
            DailyUsage(date(2026, 11, 1), "research", "dgx-1", 24, 10),
            DailyUsage(date(2026, 11, 2), "research", "dgx-1", 16, 0),
            DailyUsage(date(2026, 11, 2), "research", "p5-spot", 20, 0),
        ),
        nodes={
            "dgx-1": NodeInfo("dgx-1", None, None, "NVIDIA-A100-SXM4-80GB"),
            "p5-spot": NodeInfo("p5-spot", "p5.48xlarge", CapacityType.SPOT),
            "weird-1": NodeInfo("weird-1", None, CapacityType.ON_DEMAND),
        },
        owners={("research", "onprem-0"): PodOwner("research", "onprem-0", "Job", "sim")},
    )
    base.update(kw)
    return UsageData(**base)


def test_flat_prices_are_reserved_on_prem_and_unpriced_nodes_are_named():
    teams = TeamDirectory([Team(name="research", namespaces=["research"]), Team(name="idle-team", namespaces=["quiet"])])
    book = PriceBook(PriceCatalog.bundled(), PRICES)
    report = compute_cost_report(_usage(), book, teams, team_label=None)
    research = report.teams["research"]
    onprem, spot = sorted(research.price_lines, key=lambda f: f.gpu_model)
    assert (onprem.gpu_model, onprem.capacity_type, onprem.cost_usd, onprem.idle_cost_usd) == (
        "A100", RESERVED_ON_PREM, pytest.approx(44.0), pytest.approx(11.0))
    assert onprem.price_source == "config flat price prices.gpu_families.A100: on-prem, amortised over 3 years"
    assert (spot.capacity_type, spot.cost_usd) == ("spot", pytest.approx(50.0))
    assert research.spot_ratio == pytest.approx(20 / 60) and research.efficiency == pytest.approx(50 / 60)
    assert [d.cost_usd_by_capacity_type for d in research.daily] == [
        {RESERVED_ON_PREM: pytest.approx(26.4)}, {"spot": pytest.approx(50.0), RESERVED_ON_PREM: pytest.approx(17.6)}]
    assert research.daily[0].idle_cost_usd == pytest.approx(11.0)
    # a node without instance type, nor a GPU model any source prices: $0 and a note that says how to fix it
    mystery = report.teams["mystery"]
    assert mystery.cost_usd == 0 and mystery.gpu_hours == 5
    # the unpriced model is named, and its GPU-hours are said to be out of the dollars, not "$0"
    note = next(n for n in report.notes if "no price for" in n)
    assert "NVIDIA Z9000 on node weird-1" in note and "left out of every USD figure" in note and "gpu_families" in note
    # a configured team that used nothing still appears, with zeros
    quiet = report.teams["idle-team"]
    assert (quiet.gpu_hours, quiet.efficiency, quiet.spot_ratio) == (0, None, None)
    assert [r.team for r in table_order(report.teams.values())] == ["research", "idle-team", "mystery"]


def test_missing_capacity_types_come_from_the_api_and_are_noted():
    usage = _usage(nodes={"p5-spot": NodeInfo("p5-spot", "p5.48xlarge", None)},
                   pods=(PodUsage("research", "spot-0", "p5-spot", 10, 0),), daily=())
    teams = TeamDirectory([Team(name="research", namespaces=["research"])])
    book = PriceBook(PriceCatalog.bundled(), PRICES)
    unknown = compute_cost_report(usage, book, teams)
    assert unknown.teams["research"].price_lines[0].capacity_type == "unknown"
    assert unknown.teams["research"].cost_usd == pytest.approx(10 * 6.88)
    api = {"p5-spot": Node("p5-spot", capacity_type=CapacityType.SPOT, instance_type="p5.48xlarge")}
    known = compute_cost_report(usage, book, teams, api_nodes=api)
    assert known.teams["research"].cost_usd == pytest.approx(10 * 2.5)
    assert any(NODE_FROM_API.replace("-", " ") in n.lower().replace("-", " ") for n in known.notes)


def test_json_has_the_report_fields():
    teams = TeamDirectory([Team(name="research", namespaces=["research"])])
    report = compute_cost_report(_usage(), PriceBook(PriceCatalog.bundled(), PRICES), teams, team_label=None)
    data = json.loads(json.dumps(to_jsonable(report.teams["research"])))
    assert {"team", "period_start", "period_end", "gpu_hours", "cost_usd", "idle_gpu_hours", "idle_cost_usd",
            "efficiency", "spot_ratio", "by_flavor", "top_consumers", "daily", "notes", "idle_share"} <= set(data)
    assert data["period_start"] == "2026-11-01T00:00:00Z" and data["daily"][0]["day"] == "2026-11-01"
    assert [c["name"] for c in data["top_consumers"]] == ["spot-0", "sim"]  # by cost: $50 spot, $44 on-prem
    assert data["top_consumers"][1] == {
        "kind": "Job", "namespace": "research", "name": "sim", "gpu_hours": 40, "cost_usd": pytest.approx(44.0),
        "idle_gpu_hours": 10, "idle_share": 0.25, "queue": None, "gpu_energy_kwh": 0.0}
    whole = json.loads(json.dumps(to_jsonable(report)))
    assert set(whole["teams"]) == {"research", "mystery"}
    # without node capacity there is nothing to reconcile against, and the JSON says so
    assert whole["unrequested"] is None and whole["reconciles"] is None


def test_idle_steps_on_an_unknown_hostname_are_spread_over_the_pods_nodes():
    from actions.sources.prometheus.usage import parse_usage

    def row(value, **metric):
        return {"metric": metric, "value": [0, str(value)]}

    results = {
        # a StatefulSet pod that moved from node-a to node-b; 12 steps of 5 minutes = 1 GPU-hour
        "allocated": [row(36, namespace="ns", pod="p-0", node="node-a"), row(12, namespace="ns", pod="p-0", node="node-b")],
        # dcgm-exporter named the host by its IP, not the node name
        "idle": [row(24, namespace="ns", pod="p-0", Hostname="ip-10-0-0-1", modelName="NVIDIA H100 80GB HBM3")],
        "nodes": [row(1, node="node-a", label_karpenter_sh_capacity_type="spot",
                      label_node_kubernetes_io_instance_type="p5.48xlarge")],
        "namespace_labels": [row(1, namespace="ns", label_team="t")],
    }
    usage = parse_usage(START, END, 300, results)
    assert [(p.node, p.gpu_hours, p.idle_gpu_hours, p.gpu_model) for p in usage.pods] == [
        ("node-a", 3.0, 1.5, "NVIDIA H100 80GB HBM3"), ("node-b", 1.0, 0.5, "NVIDIA H100 80GB HBM3")]
    assert usage.nodes["node-a"].capacity_type is CapacityType.SPOT
    assert usage.nodes_missing_capacity_type() == ["node-b"]
    assert usage.namespace_labels == {"ns": {"label_team": "t"}}


def test_a_pod_requesting_an_rtx_pro_6000_profile_is_priced_in_the_report():
    """RTX PRO 6000 Blackwell profiles carry attributes (NVIDIA mig-parted bd7160f4
    deployments/systemd/config-default.yaml: 1g.24gb+gfx, 1g.24gb+me.all, 1g.24gb-me, 2g.48gb+gfx);
    the device plugin advertises them as nvidia.com/mig-1g.24gb.gfx, ...me.all, ...-me
    (k8s-device-plugin 1b826acc internal/rm/rm.go) and kube-state-metrics writes them in the
    ``resource`` label as nvidia_com_mig_1g_24gb_gfx, ..._me_all, ..._me (c92fe0c5
    internal/store/utils.go SanitizeLabelName). Each is a share of a 4-slice GPU in the
    chargeback, not dropped."""
    from actions.sources.prometheus.usage import parse_usage

    def row(value, **metric):
        return {"metric": metric, "value": [0, str(value)]}

    node = dict(node="rtx-1")
    results = {
        # 12 steps of 5 minutes = 1 h of each request.
        "allocated": [
            row(12, namespace="render", pod="gfx-0", resource="nvidia_com_mig_1g_24gb_gfx", **node),
            row(12, namespace="render", pod="media-0", resource="nvidia_com_mig_1g_24gb_me_all", **node),
            row(12, namespace="render", pod="nome-0", resource="nvidia_com_mig_1g_24gb_me", **node),
            row(24, namespace="render", pod="big-0", resource="nvidia_com_mig_2g_48gb_gfx", **node),
        ],
        "nodes": [row(1, node="rtx-1", label_karpenter_sh_capacity_type="on-demand",
                      label_node_kubernetes_io_instance_type="rtx.test",
                      label_nvidia_com_gpu_product="NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition")],
    }
    usage = parse_usage(START, END, 300, results)
    # 1 h x 1/4 of a GPU each, and 2 h x 2/4.
    assert {p.pod: (p.gpu_hours, p.sharing) for p in usage.pods} == {
        "gfx-0": (0.25, "MIG 1g.24gb"), "media-0": (0.25, "MIG 1g.24gb"), "nome-0": (0.25, "MIG 1g.24gb"),
        "big-0": (1.0, "MIG 2g.48gb")}
    book = PriceBook(PriceCatalog.bundled(), PriceOverrides.model_validate({"instance_types": {
        "rtx.test": {"on_demand_usd_per_hour": 8.00, "gpus": 1, "note": "test rate"}}}))
    report = compute_cost_report(usage, book, TeamDirectory([]), team_label=None)
    render = report.teams["render"]
    # 1.75 GPU-hours x $8.00 = $14.00.
    assert render.gpu_hours == pytest.approx(1.75) and render.cost_usd == pytest.approx(14.00)
