"""A cluster whose GPU nodes scale to zero between jobs, for the usage ledger's tests: one day's
kube-state-metrics and dcgm-exporter series, samples every 5 minutes, 60 s after each step (as
tests/support/usage_history.py lays them out).

Names as the upstream exporters write them: kube-state-metrics v2.20.0 (kubernetes/kube-state-metrics
docs/metrics/workload/pod-metrics.md: ``kube_pod_info``, ``kube_pod_status_phase``,
``kube_pod_container_resource_requests{resource="nvidia_com_gpu", unit="integer"}``;
docs/metrics/cluster/node-metrics.md: ``kube_node_status_capacity``, ``kube_node_labels``;
docs/metrics/cluster/namespace-metrics.md: ``kube_namespace_labels``) and dcgm-exporter
(NVIDIA/dcgm-exporter etc/default-counters.csv: ``DCGM_FI_DEV_GPU_UTIL``, labelled as
internal/pkg/rendermetrics/render_metrics.go and the pod transformation give it).

| hours (UTC, 2026-11-10) | GPU node | GPU pod | DCGM series |
|---|---|---|---|
| 00:00-02:00 | gpu-a (p5.48xlarge on-demand, 8 H100) | ml/train-0, 8 GPUs, Job | yes, every GPU busy |
| 02:00-05:00 | none: the NodePool scaled to zero | none | none (nothing to watch) |
| 05:00-06:00 | gpu-b (the same kind) | ml/eval-0, 1 GPU, Job | none: dcgm-exporter not yet running there |
| 06:00-10:00 | none | none | none |

kube-system/coredns-0 (no GPU) runs all day, so kube-state-metrics is there every hour.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from actions.model.telemetry import GPU_UTIL
from tests.support.fleet import model_name
from tests.support.openmetrics import gauge_families, samples

UTC = timezone.utc
DAY = datetime(2026, 11, 10, tzinfo=UTC)
DATA_START = DAY - timedelta(hours=2)
DATA_END = DAY + timedelta(hours=10)
STEP = 300
NODE_LABELS = {"label_node_kubernetes_io_instance_type": "p5.48xlarge", "label_karpenter_sh_capacity_type": "on-demand"}


@dataclass(frozen=True)
class GpuStint:
    """One GPU node's life and the one pod on it."""

    node: str
    pod: str
    gpus: int
    start: datetime
    stop: datetime
    dcgm: bool


STINTS = (
    GpuStint("gpu-a", "train-0", 8, DAY, DAY + timedelta(hours=2), dcgm=True),
    GpuStint("gpu-b", "eval-0", 1, DAY + timedelta(hours=5), DAY + timedelta(hours=6), dcgm=False),
)


def _times(start: datetime, stop: datetime) -> list[int]:
    return list(range(int(start.timestamp()) + 60, int(stop.timestamp()), STEP))


def scaled_to_zero_openmetrics() -> str:
    """The OpenMetrics text of the table in the module docstring."""
    fam: dict[str, list[str]] = {}

    def add(name: str, labels: dict[str, str], times: list[int], value: float = 1) -> None:
        fam.setdefault(name, []).extend(samples(name, labels, [(ts, value) for ts in times]))

    all_day = _times(DATA_START, DATA_END)
    add("kube_pod_info", {"namespace": "kube-system", "pod": "coredns-0", "node": "cpu-1", "uid": "uid-coredns"}, all_day)
    add("kube_pod_status_phase", {"namespace": "kube-system", "pod": "coredns-0", "phase": "Running",
                                  "uid": "uid-coredns"}, all_day)
    for ns in ("kube-system", "ml"):
        add("kube_namespace_labels", {"namespace": ns}, all_day)
    for s in STINTS:
        times = _times(s.start, s.stop)
        add("kube_node_status_capacity", {"node": s.node, "resource": "nvidia_com_gpu", "unit": "integer"}, times,
            s.gpus)
        add("kube_node_labels", {"node": s.node, **NODE_LABELS}, times)
        add("kube_pod_container_resource_requests", {
            "namespace": "ml", "pod": s.pod, "uid": f"uid-{s.pod}", "container": "main", "node": s.node,
            "resource": "nvidia_com_gpu", "unit": "integer"}, times, s.gpus)
        add("kube_pod_info", {"namespace": "ml", "pod": s.pod, "node": s.node, "uid": f"uid-{s.pod}"}, times)
        add("kube_pod_status_phase", {"namespace": "ml", "pod": s.pod, "phase": "Running", "uid": f"uid-{s.pod}"},
            times)
        add("kube_pod_owner", {"namespace": "ml", "pod": s.pod, "owner_kind": "Job", "owner_name": s.pod[:-2],
                               "owner_is_controller": "true"}, times)
        if s.dcgm:
            for g in range(s.gpus):
                add(GPU_UTIL, {"gpu": str(g), "UUID": f"GPU-{s.node}-{g}", "device": f"nvidia{g}",
                               "modelName": model_name(), "Hostname": s.node, "namespace": "ml", "pod": s.pod,
                               "container": "main"}, times, 100)
    return gauge_families(fam)
