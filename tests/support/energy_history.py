"""Thirty days of GPU power for three teams on A100, H100 and A10G nodes, over a real Prometheus,
with the energy and carbon worked out by hand that reports must give, from Prometheus and from
the usage ledger alike.

Power comes from the real H100 capture (tests/support/data/h100_nvml_trace.csv, phases as named
there). One H100 is all we have measured; the A100 and A10G series are its readings scaled by
:data:`SCALE` (a stand-in for their lower board power: the test checks the arithmetic, not those
GPUs' physics). dcgm-exporter's names and units (NVIDIA/dcgm-exporter etc/default-counters.csv):
``DCGM_FI_DEV_POWER_USAGE`` W (a gauge), ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` mJ since the
driver loaded (a counter); the A10G exports the counter alone, scraped every 60 s, the others
power every 300 s (60 s after each step, so each 300 s step holds one reading).

| namespace (team) | pod, owner | GPUs, node | phases per hour | energy series |
|---|---|---|---|---|
| vision (config) | train-a100-0, Job train-a100 | 2, a100-od-1 (p4d.24xlarge) | 11 training + 1 checkpoint pause | power x 4/7 |
| research (config) | llm-explore-0, Notebook llm-explore | 1, h100-od-1 (p5.48xlarge) | 9 idle with a model loaded + 3 cell bursts | power |
| serving (label) | chat-api-6f7d8b9c4-x2x9z, Deployment chat-api | 1, a10g-od-1 (g5.xlarge) | serving | counter x 3/14 |
| (no pod) | the second H100 of h100-od-1 | 1, h100-od-1 | empty | power |
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from actions.model.telemetry import GPU_UTIL, POWER_USAGE, TOTAL_ENERGY
from actions.policy.teams import Team, TeamDirectory
from tests.support.fleet import model_name, phase_rows
from tests.support.openmetrics import gauge_families

UTC = timezone.utc
STEP = 300
END = datetime(2026, 11, 21, tzinfo=UTC)
START = END - timedelta(days=30)
DATA_START, DATA_END = START - timedelta(hours=1), END + timedelta(hours=1)
SCALE = {"A100": 4 / 7, "H100": 1.0, "A10G": 3 / 14}
MODELS = {"A100": "NVIDIA A100-SXM4-40GB", "H100": model_name(), "A10G": "NVIDIA A10G"}
COUNTER_SECONDS = 60
TEAMS = TeamDirectory([Team(name="vision", namespaces=["vision"]), Team(name="research", namespaces=["ml-research"])])


@dataclass(frozen=True)
class Gpu:
    namespace: str
    pod: str
    node: str
    uuid: str
    family: str
    hourly_phases: tuple[str, ...]  # one trace phase per 5-minute step, cycled
    owner: tuple[str, str] | None = None
    labels: tuple[tuple[str, str], ...] = ()
    counter: bool = False


def _hour(*parts: tuple[int, str]) -> tuple[str, ...]:
    return tuple(phase for n, phase in parts for _ in range(n))


GPUS = (
    *(Gpu("vision", "train-a100-0", "a100-od-1", f"GPU-a100-{i}", "A100",
          _hour((11, "training"), (1, "training_checkpoint_pause")), owner=("Job", "train-a100")) for i in range(2)),
    Gpu("ml-research", "llm-explore-0", "h100-od-1", "GPU-h100-0", "H100",
        _hour((9, "notebook_idle_model_loaded"), (3, "notebook_cell_burst")), owner=("StatefulSet", "llm-explore"),
        labels=(("label_notebook_name", "llm-explore"),)),
    Gpu("serving", "chat-api-6f7d8b9c4-x2x9z", "a10g-od-1", "GPU-a10g-0", "A10G", ("inference_bursty",),
        owner=("ReplicaSet", "chat-api-6f7d8b9c4"), counter=True),
    Gpu("", "", "h100-od-1", "GPU-h100-1", "H100", ("empty_idle",)),
)
NODES = {
    "a100-od-1": ("p4d.24xlarge", 2),
    "h100-od-1": ("p5.48xlarge", 2),
    "a10g-od-1": ("g5.xlarge", 1),
}
NAMESPACE_LABELS = {"vision": {}, "ml-research": {}, "serving": {"label_team": "serving"}}


def _labels(**kv: str) -> str:
    return ",".join(f'{k}="{v}"' for k, v in sorted(kv.items()))


def readings(gpu: Gpu) -> list[tuple[int, float, float]]:
    """``(unix seconds, util percent 0-100, power W)`` of ``gpu`` over the data's span: a
    5-minute step plays one phase of its hour, reading by reading in the trace's order."""
    every = COUNTER_SECONDS if gpu.counter else STEP
    out = []
    t0 = int(DATA_START.timestamp())
    for n, ts in enumerate(range(t0 + 60, int(DATA_END.timestamp()), every)):
        step = (ts - t0) // STEP
        rows = phase_rows(gpu.hourly_phases[step % len(gpu.hourly_phases)])
        row = rows[n % len(rows)]
        out.append((ts, row.util_gpu_pct, row.power_w * SCALE[gpu.family]))
    return out


def hand(gpu: Gpu, idle_pct: float, start: datetime = START, end: datetime = END) -> tuple[float, float]:
    """``(kWh, idle kWh)`` of ``gpu`` over ``(start, end]`` by hand: each 5-minute step's
    readings' mean power x 300 s (a counter's readings being 60 s of energy each, their sum),
    idle when the step's peak utilisation is at or under ``idle_pct``."""
    steps: dict[int, list[tuple[float, float]]] = {}
    a, b = int(start.timestamp()), int(end.timestamp())
    for ts, util, watts in readings(gpu):
        if a < ts <= b:
            steps.setdefault(-(-ts // STEP) * STEP, []).append((util, watts))
    kwh = idle = 0.0
    for rows in steps.values():
        joules = sum(w for _, w in rows) * COUNTER_SECONDS if gpu.counter else sum(w for _, w in rows) / len(rows) * STEP
        kwh += joules / 3.6e6
        if max(u for u, _ in rows) <= idle_pct:
            idle += joules / 3.6e6
    return kwh, idle


def openmetrics() -> str:
    fam: dict[str, list[str]] = {}

    def add(name: str, labels: str, value: float, ts: int) -> None:
        fam.setdefault(name, []).append(f"{name}{{{labels}}} {value:.6f} {ts}")

    for g in GPUS:
        kv = dict(gpu=g.uuid[-1], UUID=g.uuid, device="nvidia" + g.uuid[-1], modelName=MODELS[g.family], Hostname=g.node)
        if g.pod:
            kv.update(pod=g.pod, namespace=g.namespace, container="main")
        lab = _labels(**kv)
        energy = 9.1e11  # mJ the counter held when the data starts: the driver loaded long before
        for ts, util, watts in readings(g):
            add(GPU_UTIL, lab, util, ts)
            if g.counter:
                energy += watts * COUNTER_SECONDS * 1000
                add(TOTAL_ENERGY, lab, energy, ts)
            else:
                add(POWER_USAGE, lab, watts, ts)
    t0, t1 = int(DATA_START.timestamp()), int(DATA_END.timestamp())
    held = {}
    for g in GPUS:
        if g.pod:
            held.setdefault((g.namespace, g.pod, g.node, g.owner, g.labels), 0)
            held[(g.namespace, g.pod, g.node, g.owner, g.labels)] += 1
    for ts in range(t0 + 60, t1, STEP):
        for (ns, pod, node, owner, labels), n in held.items():
            add("kube_pod_container_resource_requests",
                _labels(namespace=ns, pod=pod, container="main", node=node, resource="nvidia_com_gpu", unit="integer"), n, ts)
            add("kube_pod_info", _labels(namespace=ns, pod=pod, node=node, uid=f"uid-{pod}"), 1, ts)
            add("kube_pod_status_phase", _labels(namespace=ns, pod=pod, phase="Running", uid=f"uid-{pod}"), 1, ts)
            add("kube_pod_owner", _labels(namespace=ns, pod=pod, owner_kind=owner[0], owner_name=owner[1],
                                          owner_is_controller="true"), 1, ts)
            add("kube_pod_labels", _labels(namespace=ns, pod=pod, **dict(labels)), 1, ts)
        for node, (instance, gpus) in NODES.items():
            add("kube_node_status_capacity", _labels(node=node, resource="nvidia_com_gpu", unit="integer"), gpus, ts)
    for ts in range(t0 + 60, t1, 3600):
        for node, (instance, _) in NODES.items():
            add("kube_node_labels", _labels(node=node, label_node_kubernetes_io_instance_type=instance,
                                            label_karpenter_sh_capacity_type="on-demand"), 1, ts)
        for ns, labels in NAMESPACE_LABELS.items():
            add("kube_namespace_labels", _labels(namespace=ns, **labels), 1, ts)
    return gauge_families(fam)
