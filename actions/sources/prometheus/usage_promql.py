"""The PromQL of a cost report's usage over a period, aggregated server-side: GPUs requested and
idle per pod, node and step, node and pod labels, node capacity, and which sources the period has
data from (kube-state-metrics, dcgm-exporter), with the warnings when one lacks.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any, Mapping

from actions.hardware.gpus import (
    KSM_GPU_RESOURCES,
)
from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL
from actions.model.usage import DEFAULT_STEP_SECONDS
from actions.policy.rules import Policy
from actions.sources.prometheus.energy_promql import ENERGY_QUERY_NAMES, energy_queries
from actions.sources.prometheus.promql import activity_pct, duration, number

GPU_REQUESTS = f'kube_pod_container_resource_requests{{resource=~"{KSM_GPU_RESOURCES}"}}'
GPU_CAPACITY = f'kube_node_status_capacity{{resource=~"{KSM_GPU_RESOURCES}"}}'

REQUESTED_QUERY = "allocated"  # the query's published name: Prometheus errors name it
QUERY_NAMES = (REQUESTED_QUERY, "idle", "nodes", "owners", "pod_labels", "namespace_labels", "capacity", *ENERGY_QUERY_NAMES)

# kube-state-metrics label names (sanitized, snake_case) -> the Kubernetes label they carry.
NODE_LABELS = {
    "label_karpenter_sh_capacity_type": "karpenter.sh/capacity-type",
    "label_eks_amazonaws_com_capacity_type": "eks.amazonaws.com/capacityType",
    "label_eks_amazonaws_com_capacitytype": "eks.amazonaws.com/capacityType",
    "label_cloud_google_com_gke_spot": "cloud.google.com/gke-spot",
    "label_cloud_google_com_gke_preemptible": "cloud.google.com/gke-preemptible",
    "label_kubernetes_azure_com_scalesetpriority": "kubernetes.azure.com/scalesetpriority",
    "label_node_kubernetes_io_instance_type": "node.kubernetes.io/instance-type",
    "label_beta_kubernetes_io_instance_type": "beta.kubernetes.io/instance-type",
    "label_nvidia_com_gpu_product": "nvidia.com/gpu.product",
    "label_nvidia_com_gpu_replicas": "nvidia.com/gpu.replicas",
    "label_karpenter_sh_nodepool": "karpenter.sh/nodepool",
}
CAPACITY_KEYS = (
    "karpenter.sh/capacity-type",
    "eks.amazonaws.com/capacityType",
    "cloud.google.com/gke-spot",
    "cloud.google.com/gke-preemptible",
    "kubernetes.azure.com/scalesetpriority",
)
POD_LABELS = {
    "label_notebook_name": "notebook-name",
    "label_kueue_x_k8s_io_queue_name": "kueue.x-k8s.io/queue-name",
    "label_kueue_x_k8s_io_local_queue_name": "kueue.x-k8s.io/local-queue-name",
}


def ksm_label_name(key: str) -> str:
    """The name kube-state-metrics gives a Kubernetes label in ``kube_*_labels``:
    ``label_`` + the key with invalid characters as ``_``, camelCase as snake_case
    (``team`` -> ``label_team``, ``eks.amazonaws.com/capacityType`` ->
    ``label_eks_amazonaws_com_capacity_type``)."""
    snake = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"[^a-zA-Z0-9_]", "_", key))
    return "label_" + snake.lower()


def _requested_per_step() -> str:
    """GPU resources requested per (namespace, pod, node, resource) at one evaluation instant."""
    return (
        # max per container first: a kube-state-metrics scraped twice (two jobs, HA replicas
        # without dedup) must not double the GPUs.
        f"sum by (namespace, pod, resource) (max by (namespace, pod, container, resource) ({GPU_REQUESTS}))"
        ' * on (namespace, pod) group_left (node) max by (namespace, pod, node) (kube_pod_info{node!=""})'
        ' * on (namespace, pod) group_left () (max by (namespace, pod) (kube_pod_status_phase{phase=~"Pending|Running"}) == 1)'
    )


def _idle_per_step(policy: Policy, step_seconds: float) -> str:
    """1 per GPU whose peak activity in the step ending now is at or under the idle threshold,
    0 when above; only for GPUs of pods requesting them now."""
    window = duration(step_seconds - 0.001)
    activity = activity_pct(f"max_over_time({ENGINE_ACTIVE}[{window}])", f"max_over_time({GPU_UTIL}[{window}])")
    return f"(({activity}) <= bool {number(policy.engine_idle_pct)}) and on (namespace, pod) ({_requested_per_step()})"


def _steps(expr: str, range_seconds: float, step_seconds: float) -> str:
    # One second short of the range: the subquery then takes the steps in (t - range, t].
    return f"sum_over_time(({expr})[{duration(range_seconds - 1)}:{duration(step_seconds)}])"


def usage_queries(policy: Policy, range_seconds: float, step_seconds: float = DEFAULT_STEP_SECONDS) -> dict[str, str]:
    """The instant queries of one report over the ``range_seconds`` ending at the evaluation time.

    - :data:`REQUESTED_QUERY`: requested device-steps per (namespace, pod, node, resource),
      ``resource`` as kube-state-metrics names it (``nvidia_com_mig_1g_5gb``);
    - ``idle``: idle device-steps per (namespace, pod, Hostname, modelName, GPU_I_PROFILE), one
      device being a GPU or, under MIG, a GPU instance;
    - ``nodes``: each node's last ``kube_node_labels`` in the range;
    - ``owners``: the controller (``kube_pod_owner``) of every pod that requested GPUs;
    - ``pod_labels``: the last ``kube_pod_labels`` of those pods;
    - ``namespace_labels``: the last ``kube_namespace_labels`` of every namespace;
    - ``capacity``: device-steps per (node, resource) of every node's GPU resources
      (``kube_node_status_capacity``), what the nodes had whether requested or not;
    - the GPU energy queries of :func:`~actions.sources.prometheus.energy_promql.energy_queries`.

    A device-step is ``step_seconds`` of one device; :func:`~actions.sources.prometheus.usage.parse_usage` turns devices into
    physical-GPU equivalents. Pure.
    """
    rng = duration(range_seconds)
    gpu_pods = f"last_over_time({GPU_REQUESTS}[{rng}])"
    return {
        REQUESTED_QUERY: "sum by (namespace, pod, node, resource) "
        f"({_steps(_requested_per_step(), range_seconds, step_seconds)})",
        "idle": "sum by (namespace, pod, Hostname, modelName, GPU_I_PROFILE) "
        f"({_steps(_idle_per_step(policy, step_seconds), range_seconds, step_seconds)})",
        "nodes": f"last_over_time(kube_node_labels[{rng}])",
        "owners": "max by (namespace, pod, owner_kind, owner_name) "
        f'(last_over_time(kube_pod_owner{{owner_is_controller="true"}}[{rng}])) and on (namespace, pod) {gpu_pods}',
        "pod_labels": f"last_over_time(kube_pod_labels[{rng}]) and on (namespace, pod) {gpu_pods}",
        "namespace_labels": f"last_over_time(kube_namespace_labels[{rng}])",
        "capacity": "sum by (node, resource) "
        f"({_steps(f'max by (node, resource) ({GPU_CAPACITY})', range_seconds, step_seconds)})",
        **energy_queries(policy, range_seconds, step_seconds),
    }


PRESENCE_NAMES = ("kube_state_metrics", "dcgm", "first_data")
# How late the data may start and still count as covering the period: the hourly presence steps
# and a scrape interval or two.
COVERAGE_SLACK_SECONDS = 2 * 3600


def presence_queries(range_seconds: float) -> dict[str, str]:
    """Instant queries that tell whether the period's data is there at all: the number of
    kube-state-metrics pod series (``kube_pod_info``) and of DCGM activity series seen in the
    range, and the first hour in the range at which any ``kube_pod_info`` was visible (unix
    seconds). Pure."""
    rng = duration(range_seconds)
    return {
        "kube_state_metrics": f"count(last_over_time(kube_pod_info[{rng}]))",
        "dcgm": f"count(last_over_time({GPU_UTIL}[{rng}])) or count(last_over_time({ENGINE_ACTIVE}[{rng}]))",
        "first_data": f"min_over_time(timestamp(count(kube_pod_info))[{duration(range_seconds - 1)}:1h])",
    }


def presence_warnings(
    url: str, start: datetime, end: datetime, results: Mapping[str, list[Mapping[str, Any]]], *,
    gpus_seen: bool = True,
) -> tuple[tuple[str, ...], datetime | None]:
    """``(warnings, covered_from)`` from the results of :func:`presence_queries` over
    ``[start, end]``: what is missing for the report to be whole, and the first moment the data
    covers when that is after ``start``. ``gpus_seen``: whether kube-state-metrics showed any
    node with GPU capacity or any pod requesting GPUs in the period; without one, no DCGM series
    is what a cluster scaled to zero GPUs exports, not missing data. Pure."""

    def first(name: str) -> float | None:
        rows = results.get(name) or []
        return float(rows[0]["value"][1]) if rows else None

    warnings: list[str] = []
    if not first("kube_state_metrics"):
        warnings.append(
            f"Prometheus at {url} holds no kube-state-metrics series (kube_pod_info) for this period, so no "
            "GPU-hours could be counted: install kube-state-metrics and let Prometheus scrape it, or ask for "
            "a period Prometheus still keeps (its retention)"
        )
        if not first("dcgm"):
            # Said apart: the GPU telemetry is empty too, not only the pod inventory.
            warnings.append(f"Prometheus at {url} holds no DCGM series ({GPU_UTIL} or {ENGINE_ACTIVE}) for this period either: "
                            "its GPU telemetry is empty")
        return tuple(warnings), None
    if gpus_seen and not first("dcgm"):
        warnings.append(
            f"Prometheus at {url} holds no DCGM series ({GPU_UTIL} or {ENGINE_ACTIVE}) for this period, so idle "
            "GPU-hours are unknown and shown as 0: install NVIDIA's dcgm-exporter and let Prometheus scrape it"
        )
    covered_from = None
    first_data = first("first_data")
    if first_data is not None:
        begins = datetime.fromtimestamp(first_data, tz=timezone.utc)
        if (begins - start).total_seconds() > COVERAGE_SLACK_SECONDS:
            covered_from = begins
            days, held = (end - start).total_seconds() / 86400, (end - begins).total_seconds() / 86400
            warnings.append(
                f"Prometheus holds data only from {begins:%Y-%m-%d %H:%M} UTC (its retention?): this report "
                f"covers {held:.1f} of the {days:.1f} days asked for ({held / days:.0%})"
            )
    return tuple(warnings), covered_from


def daily_queries(policy: Policy, range_seconds: float, step_seconds: float = DEFAULT_STEP_SECONDS) -> dict[str, str]:
    """Device-steps per (namespace, node) over the ``range_seconds`` ending at the evaluation
    time: :data:`REQUESTED_QUERY` (requested, per ``resource``) and ``idle`` (per ``Hostname``, dcgm-exporter's node
    name, and ``GPU_I_PROFILE``). Pure."""
    requested = _steps(_requested_per_step(), range_seconds, step_seconds)
    idle = _steps(_idle_per_step(policy, step_seconds), range_seconds, step_seconds)
    return {
        REQUESTED_QUERY: f"sum by (namespace, node, resource) ({requested})",
        "idle": f"sum by (namespace, Hostname, GPU_I_PROFILE) ({idle})",
    }
