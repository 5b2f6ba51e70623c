"""Kueue admission waits and the spot ratio, from Prometheus.

Two families of series, both aggregated server-side so the number of queries does not grow with
the cluster:

- Kueue's ``kueue_admission_wait_time_seconds`` histogram (label ``cluster_queue``): the p90 of
  the time Workloads admitted in the window waited, per ClusterQueue.
- kube-state-metrics: ``kube_pod_container_resource_requests{resource="nvidia_com_gpu"}`` joined
  to ``kube_pod_info`` (which node a pod runs on), ``kube_pod_status_phase`` (only Running pods
  hold GPUs) and ``kube_node_labels`` (the node's capacity type; the labels must be on
  kube-state-metrics' ``--metric-labels-allowlist``, e.g. ``nodes=[karpenter.sh/capacity-type,
  eks.amazonaws.com/capacityType,cloud.google.com/gke-spot]``). The spot ratio is spot GPUs over
  all GPUs requested by running pods, a ratio 0-1.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any, Callable, Sequence

from actions.sources.prometheus.api import PrometheusApi, TelemetryError
from actions.sources.prometheus.promql import duration

ADMISSION_WAIT = "kueue_admission_wait_time_seconds"

# kube_node_labels selectors that mark a spot node, one per cloud's label (as kube-state-metrics
# sanitises the label names).
SPOT_NODE_SELECTORS = (
    'kube_node_labels{label_karpenter_sh_capacity_type="spot"}',
    'kube_node_labels{label_eks_amazonaws_com_capacity_type="SPOT"}',
    'kube_node_labels{label_cloud_google_com_gke_spot="true"}',
    'kube_node_labels{label_cloud_google_com_gke_preemptible="true"}',
    'kube_node_labels{label_kubernetes_azure_com_scalesetpriority="spot"}',
)

_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def admission_wait_p90_query(window_seconds: float) -> str:
    """PromQL: per ClusterQueue (label ``cluster_queue``), the 0.9 quantile in seconds of the
    admission wait of Workloads admitted in the last ``window_seconds``, interpolated within the
    histogram's buckets. ClusterQueues that admitted nothing in the window give NaN."""
    return (
        f"histogram_quantile(0.9, sum by (cluster_queue, le) "
        f"(rate({ADMISSION_WAIT}_bucket[{duration(window_seconds)}])))"
    )


def _gpu_requests(namespaces: Sequence[str] | None) -> str:
    matcher = 'resource="nvidia_com_gpu"'
    if namespaces is not None:
        for ns in namespaces:
            if not _NAMESPACE.fullmatch(ns):
                raise ValueError(f"{ns!r} is not a Kubernetes namespace name")
        matcher += f', namespace=~"{"|".join(sorted(namespaces))}"'
    return (
        f"sum by (namespace, pod) (kube_pod_container_resource_requests{{{matcher}}})"
        ' * on (namespace, pod) group_left(node) max by (namespace, pod, node) (kube_pod_info{node!=""})'
        ' * on (namespace, pod) group_left() max by (namespace, pod) (kube_pod_status_phase{phase="Running"} == 1)'
    )


def spot_ratio_query(window_seconds: float, step_seconds: float, namespaces: Sequence[str] | None = None) -> str:
    """PromQL: the highest spot ratio (ratio 0-1 of requested GPUs on spot nodes) reached at any
    ``step_seconds`` step of the last ``window_seconds``, by namespace; or, with ``namespaces``,
    one series for those namespaces together (a team). The maximum, because "below the target for
    the whole window" is "its maximum over the window is below the target"; the minimum would
    fire on one dip. Namespaces without running GPU pods give no series.

    Raises ValueError for a name that is not a namespace name.
    """
    by = "" if namespaces is not None else " by (namespace)"
    placed = _gpu_requests(namespaces)
    spot_nodes = "max by (node) (" + " or ".join(SPOT_NODE_SELECTORS) + ")"
    total = f"sum{by} ({placed})"
    spot = f"sum{by} ({placed} * on (node) group_left() {spot_nodes})"
    ratio = f"({spot} or {total} * 0) / {total}"
    return f"max_over_time(({ratio})[{duration(window_seconds)}:{duration(step_seconds)}])"


class KueueMetrics:
    """Reads admission waits and spot ratios through a
    :class:`~actions.sources.prometheus.api.PrometheusApi` at ``url`` (arguments, retries and errors
    as there)."""

    def __init__(self, url: str, headers: dict[str, str] | None = None, **options: Any):
        self.api = PrometheusApi(url, headers, **options)
        self.url = self.api.url

    def _by_label(self, promql: str, at: datetime, label: str) -> dict[str, float]:
        out = {}
        for sample in self.api.instant("kueue", promql, at):
            try:
                value = float(sample["value"][1])
                key = sample["metric"].get(label, "")
            except (KeyError, IndexError, TypeError, ValueError) as e:
                raise TelemetryError(f"Prometheus at {self.url} returned a malformed sample {sample!r}: {e}") from e
            if not math.isnan(value):
                out[key] = value
        return out

    def admission_wait_p90(self, at: datetime, window_seconds: float) -> dict[str, float]:
        """ClusterQueue -> p90 admission wait in seconds over the ``window_seconds`` before ``at``
        (ClusterQueues that admitted nothing in the window are left out). Raises TelemetryError."""
        return self._by_label(admission_wait_p90_query(window_seconds), at, "cluster_queue")

    def spot_ratio_by_namespace(self, at: datetime, window_seconds: float, step_seconds: float = 60) -> dict[str, float]:
        """Namespace -> highest spot ratio (0-1) over the window before ``at``. Raises TelemetryError."""
        return self._by_label(spot_ratio_query(window_seconds, step_seconds), at, "namespace")

    def spot_ratio(
        self, at: datetime, window_seconds: float, namespaces: Sequence[str], step_seconds: float = 60
    ) -> float | None:
        """Highest spot ratio (0-1) of ``namespaces`` together over the window before ``at``;
        ``None`` when they ran no GPU pods. Raises TelemetryError, ValueError for a bad name."""
        values = self._by_label(spot_ratio_query(window_seconds, step_seconds, namespaces), at, "namespace")
        return next(iter(values.values()), None)

    def spot_ratio_by_team(
        self,
        at: datetime,
        window_seconds: float,
        team_of: Callable[[str], str],
        step_seconds: float = 60,
    ) -> dict[str, float]:
        """Team -> highest spot ratio (0-1) of its namespaces together over the window, for teams
        that ran GPU pods in it; ``team_of`` maps a namespace to its team. One query, plus one per
        team with several namespaces (a ratio of sums is not a sum of ratios)."""
        per_ns = self.spot_ratio_by_namespace(at, window_seconds, step_seconds)
        members: dict[str, list[str]] = {}
        for ns in per_ns:
            members.setdefault(team_of(ns), []).append(ns)
        out: dict[str, float] = {}
        for team, namespaces in sorted(members.items()):
            if len(namespaces) == 1:
                out[team] = per_ns[namespaces[0]]
            else:
                ratio = self.spot_ratio(at, window_seconds, namespaces, step_seconds)
                if ratio is not None:
                    out[team] = ratio
        return out
