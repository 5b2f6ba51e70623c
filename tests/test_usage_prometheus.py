"""The cost report end to end over a real Prometheus: 30 days of kube-state-metrics, Kueue-labelled
pods and dcgm-exporter series (activity from the real H100 trace) for a few teams, checked to the
cent against figures worked out by hand below.

The schedule (every pod's GPUs held for [start, stop), samples every 5 minutes, 60 s after each
step so each 300 s step sees exactly one sample). Prices: p4d.24xlarge $24.48/h on-demand
(= $3.06 per GPU-hour), p5.48xlarge $55.04/h on-demand (= $6.88) and $20.00/h spot (= $2.50).
Report period: the 30 days ending 2026-11-21T00:00Z.

| namespace (team) | pod, owner | GPUs, node | held | trace phases per hour | GPU-h | idle GPU-h |
|---|---|---|---|---|---|---|
| vision (config) | a100-train-0, Job | 2, a100-od-1 (A100 on-demand) | Nov 1 00:00 - Nov 7 12:00 | training | 312 | 0 |
| ml-research (config) | llm-explore-0, Notebook | 1, h100-od-1 (on-demand) | whole period | 9 idle_model_loaded + 3 cell_burst | 720 | 540 |
| training (label) | pretrain-worker-0, Job in Kueue | 4, h100-spot-1 (spot) | Oct 20 - Nov 1 (10 d in period) | 11 training + 1 checkpoint_pause | 960 | 80 |
| training (label) | eval-7d9f8c6b5-abcde, Deployment | 1, h100-od-1 | Nov 10 06:00 - Nov 15 06:00 | inference_bursty (0% util) | 120 | 120 |
| training (label) | old-prep-0, Job (Succeeded) | 1, h100-od-1 | Nov 2 - Nov 4, never Running | | 0 | 0 |
| sandbox (none) | scratch, bare Pod | 1, h100-od-1 | Nov 19 - Nov 21 | empty_idle | 48 | 48 |
| platform-ns (config) | render-0, Job | 2, h100-nolabel-1 (capacity type only in the API: spot) | Nov 20 00:00 - 12:00 | training | 24 | 0 |
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Iterator

import pytest

from actions.cost.engine import compute_cost_report
from actions.cost.periods import parse_period
from actions.cost.report import UNALLOCATED
from actions.model.kube import CapacityType, Node
from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.pricing.overrides import PriceOverrides
from actions.sources.prometheus.usage import PrometheusUsage
from actions.sources.prometheus.usage_promql import presence_queries, usage_queries
from tests.fleet import model_name, phase_rows
from tests.prometheus_server import shared_prometheus

UTC = timezone.utc
STEP = 300
END = datetime(2026, 11, 21, tzinfo=UTC)
DATA_START = datetime(2026, 10, 15, tzinfo=UTC)
DATA_END = END + timedelta(hours=1)  # samples after the period's end must not count
A100 = "NVIDIA A100-SXM4-40GB"


def d(month: int, day: int, hour: int = 0) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


@dataclass(frozen=True)
class SeriesPod:
    namespace: str
    pod: str
    node: str
    gpus: int
    start: datetime
    stop: datetime
    hourly_phases: tuple[str, ...]  # one trace phase per 5-minute sample, cycled
    owner: tuple[str, str] | None = None
    labels: tuple[tuple[str, str], ...] = ()
    phase: str = "Running"
    exported_labels: bool = False
    engine_active: bool = False
    model: str = ""


def _hour(*parts: tuple[int, str]) -> tuple[str, ...]:
    return tuple(phase for n, phase in parts for _ in range(n))


PODS = (
    SeriesPod("vision", "a100-train-0", "a100-od-1", 2, d(11, 1), d(11, 7, 12), ("training",),
              owner=("Job", "a100-train"), model=A100),
    SeriesPod("ml-research", "llm-explore-0", "h100-od-1", 1, DATA_START, DATA_END,
              _hour((9, "notebook_idle_model_loaded"), (3, "notebook_cell_burst")),
              owner=("StatefulSet", "llm-explore"), labels=(("label_notebook_name", "llm-explore"),)),
    SeriesPod("training", "pretrain-worker-0", "h100-spot-1", 4, d(10, 20), d(11, 1),
              _hour((11, "training"), (1, "training_checkpoint_pause")), owner=("Job", "pretrain"),
              labels=(("label_kueue_x_k8s_io_queue_name", "training-queue"),),
              exported_labels=True, engine_active=True),
    SeriesPod("training", "eval-7d9f8c6b5-abcde", "h100-od-1", 1, d(11, 10, 6), d(11, 15, 6),
              ("inference_bursty",), owner=("ReplicaSet", "eval-7d9f8c6b5")),
    SeriesPod("training", "old-prep-0", "h100-od-1", 1, d(11, 2), d(11, 4), ("training",),
              owner=("Job", "old-prep"), phase="Succeeded"),
    SeriesPod("sandbox", "scratch", "h100-od-1", 1, d(11, 19), d(11, 21), ("empty_idle",)),
    SeriesPod("platform-ns", "render-0", "h100-nolabel-1", 2, d(11, 20), d(11, 20, 12), ("training",),
              owner=("Job", "render")),
)

NODES = {
    "a100-od-1": {"label_node_kubernetes_io_instance_type": "p4d.24xlarge",
                  "label_karpenter_sh_capacity_type": "on-demand",
                  "label_nvidia_com_gpu_product": "NVIDIA-A100-SXM4-40GB"},
    "h100-od-1": {"label_node_kubernetes_io_instance_type": "p5.48xlarge",
                  "label_karpenter_sh_capacity_type": "on-demand"},
    "h100-spot-1": {"label_node_kubernetes_io_instance_type": "p5.48xlarge",
                    "label_karpenter_sh_capacity_type": "spot"},
    # kube-state-metrics was not allowed this node's capacity-type label
    "h100-nolabel-1": {"label_node_kubernetes_io_instance_type": "p5.48xlarge"},
}
NAMESPACE_LABELS = {"training": {"label_team": "training"}, "ml-research": {"label_team": "not-research"},
                    "sandbox": {}, "vision": {}, "platform-ns": {}}

PRICES = PriceOverrides.model_validate({
    "instance_types": {
        "p4d.24xlarge": {"on_demand_usd_per_hour": 24.48, "note": "seed rate"},
        "p5.48xlarge": {"on_demand_usd_per_hour": 55.04, "spot_usd_per_hour": 20.00},
    }
})
TEAMS = TeamDirectory([
    Team(name="research", namespaces=["ml-research"]),
    Team(name="vision", namespaces=["vision"]),
    Team(name="platform", namespaces=["platform-ns"]),
])


def _labels(**kv: str) -> str:
    return ",".join(f'{k}="{v}"' for k, v in sorted(kv.items()))


def _sample_times(start: datetime, stop: datetime) -> list[int]:
    first = max(start, DATA_START)
    last = min(stop, DATA_END)
    t0 = int(first.timestamp()) + 60
    return list(range(t0, int(last.timestamp()), STEP))


def usage_openmetrics() -> str:
    """The OpenMetrics text of the schedule in the module docstring."""
    fam: dict[str, list[str]] = {}

    def add(name: str, labels: str, value: float, ts: int) -> None:
        fam.setdefault(name, []).append(f"{name}{{{labels}}} {value:g} {ts}")

    h100 = model_name()
    for p in PODS:
        times = _sample_times(p.start, p.stop)
        req = _labels(namespace=p.namespace, pod=p.pod, container="main", node=p.node,
                      resource="nvidia_com_gpu", unit="integer")
        info = _labels(namespace=p.namespace, pod=p.pod, node=p.node, host_ip="10.0.0.1", uid=f"uid-{p.pod}")
        phase = _labels(namespace=p.namespace, pod=p.pod, phase=p.phase, uid=f"uid-{p.pod}")
        owner = _labels(namespace=p.namespace, pod=p.pod, owner_kind=p.owner[0], owner_name=p.owner[1],
                        owner_is_controller="true") if p.owner else None
        plabels = _labels(namespace=p.namespace, pod=p.pod, **dict(p.labels))
        # vision's pod is also scraped by a second kube-state-metrics job: its GPUs must not double
        twice = [req, req + ',job="kube-state-metrics-2"'] if p.namespace == "vision" else [req]
        for ts in times:
            for r in twice:
                add("kube_pod_container_resource_requests", r, p.gpus, ts)
            add("kube_pod_info", info, 1, ts)
            add("kube_pod_status_phase", phase, 1, ts)
            if owner:
                add("kube_pod_owner", owner, 1, ts)
            add("kube_pod_labels", plabels, 1, ts)
        if p.phase != "Running":
            continue
        for g in range(p.gpus):
            base = dict(gpu=str(g), UUID=f"GPU-{p.pod}-{g}", modelName=p.model or h100, Hostname=p.node,
                        device=f"nvidia{g}")
            if p.exported_labels:
                base.update(exported_pod=p.pod, exported_namespace=p.namespace,
                            pod="dcgm-exporter-x1", namespace="gpu-operator")
            else:
                base.update(pod=p.pod, namespace=p.namespace)
            lab = _labels(**base)
            for i, ts in enumerate(times):
                rows = phase_rows(p.hourly_phases[i % len(p.hourly_phases)])
                util = rows[i % len(rows)].util_gpu_pct
                add(GPU_UTIL, lab, util, ts)
                if p.engine_active:
                    add(ENGINE_ACTIVE, lab, util / 100, ts)
    hourly = range(int(DATA_START.timestamp()) + 60, int(DATA_END.timestamp()), 3600)
    for node, labels in NODES.items():
        for ts in hourly:
            add("kube_node_labels", _labels(node=node, **labels), 1, ts)
    for ns, labels in NAMESPACE_LABELS.items():
        for ts in hourly:
            add("kube_namespace_labels", _labels(namespace=ns, **labels), 1, ts)
    out = []
    for name, lines in fam.items():
        out.append(f"# TYPE {name} gauge")
        out.extend(lines)
    out.append("# EOF")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="session")
def usage_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a Prometheus holding ``usage_openmetrics()``, one per test session."""
    with shared_prometheus("usage-prometheus", usage_openmetrics, tmp_path_factory) as url:
        yield url


def price_book() -> PriceBook:
    return PriceBook(PriceCatalog.bundled(), PRICES)


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
    # 7 instant queries, 3 that check the data is there, and one range query (step 1d) each for
    # allocated and idle: 30 whole days.
    assert source.requests == len(usage_queries(Policy(), 86400)) + len(presence_queries(86400)) + 2 == 12
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
