"""A usage history for cost reports over a real Prometheus: 30 days of kube-state-metrics, Kueue-labelled
pods and dcgm-exporter series (activity from the real H100 trace) for a few teams, with the
figures worked out by hand that the reports must give to the cent.

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
| team-d (none) | only CPU pods: the namespace is in kube_namespace_labels alone | | | | 0 | 0 |
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.pricing.overrides import PriceOverrides
from tests.support.fleet import model_name, phase_rows
from tests.support.openmetrics import gauge_families

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


def hour_phases(*parts: tuple[int, str]) -> tuple[str, ...]:
    """An hour of 5-minute trace phases: ``(9, "a"), (3, "b")`` is nine ``a`` then three ``b``."""
    return tuple(phase for n, phase in parts for _ in range(n))


PODS = (
    SeriesPod("vision", "a100-train-0", "a100-od-1", 2, d(11, 1), d(11, 7, 12), ("training",),
              owner=("Job", "a100-train"), model=A100),
    SeriesPod("ml-research", "llm-explore-0", "h100-od-1", 1, DATA_START, DATA_END,
              hour_phases((9, "notebook_idle_model_loaded"), (3, "notebook_cell_burst")),
              owner=("StatefulSet", "llm-explore"), labels=(("label_notebook_name", "llm-explore"),)),
    SeriesPod("training", "pretrain-worker-0", "h100-spot-1", 4, d(10, 20), d(11, 1),
              hour_phases((11, "training"), (1, "training_checkpoint_pause")), owner=("Job", "pretrain"),
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
                    "sandbox": {}, "vision": {}, "platform-ns": {}, "team-d": {}}


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


def label_set(**kv: str) -> str:
    """OpenMetrics label text of ``kv``, sorted by name: ``a="1",b="2"``."""
    return ",".join(f'{k}="{v}"' for k, v in sorted(kv.items()))


def _sample_times(start: datetime, stop: datetime) -> list[int]:
    first = max(start, DATA_START)
    last = min(stop, DATA_END)
    t0 = int(first.timestamp()) + 60
    return list(range(t0, int(last.timestamp()), STEP))


def usage_openmetrics() -> str:
    """The OpenMetrics text of the schedule in the module docstring (kube-state-metrics, Kueue
    labels, dcgm-exporter series in both label conventions)."""
    fam: dict[str, list[str]] = {}

    def add(name: str, labels: str, value: float, ts: int) -> None:
        fam.setdefault(name, []).append(f"{name}{{{labels}}} {value:g} {ts}")

    h100 = model_name()
    for p in PODS:
        times = _sample_times(p.start, p.stop)
        req = label_set(namespace=p.namespace, pod=p.pod, container="main", node=p.node,
                      resource="nvidia_com_gpu", unit="integer")
        info = label_set(namespace=p.namespace, pod=p.pod, node=p.node, host_ip="10.0.0.1", uid=f"uid-{p.pod}")
        phase = label_set(namespace=p.namespace, pod=p.pod, phase=p.phase, uid=f"uid-{p.pod}")
        owner = label_set(namespace=p.namespace, pod=p.pod, owner_kind=p.owner[0], owner_name=p.owner[1],
                        owner_is_controller="true") if p.owner else None
        plabels = label_set(namespace=p.namespace, pod=p.pod, **dict(p.labels))
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
            lab = label_set(**base)
            for i, ts in enumerate(times):
                rows = phase_rows(p.hourly_phases[i % len(p.hourly_phases)])
                util = rows[i % len(rows)].util_gpu_pct
                add(GPU_UTIL, lab, util, ts)
                if p.engine_active:
                    add(ENGINE_ACTIVE, lab, util / 100, ts)
    hourly = range(int(DATA_START.timestamp()) + 60, int(DATA_END.timestamp()), 3600)
    for node, labels in NODES.items():
        for ts in hourly:
            add("kube_node_labels", label_set(node=node, **labels), 1, ts)
    for ns, labels in NAMESPACE_LABELS.items():
        for ts in hourly:
            add("kube_namespace_labels", label_set(namespace=ns, **labels), 1, ts)
    return gauge_families(fam)


def price_book() -> PriceBook:
    """The bundled catalog with :data:`PRICES` over it."""
    return PriceBook(PriceCatalog.bundled(), PRICES)


# The node kube_node_labels knows no capacity type of (h100-nolabel-1): the API server says spot.
SPOT_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "h100-nolabel-1",
        "labels": {"karpenter.sh/capacity-type": "spot", "node.kubernetes.io/instance-type": "p5.48xlarge"},
    },
    "status": {"capacity": {"nvidia.com/gpu": "8"}},
}
