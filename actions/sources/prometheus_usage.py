"""GPU usage per pod, node and day over a period, aggregated server-side in PromQL.

Reads kube-state-metrics (``kube_pod_container_resource_requests`` and
``kube_node_status_capacity`` for every GPU resource, whole, shared, MIG or AMD; ``kube_pod_info``,
``kube_pod_status_phase``, ``kube_pod_owner``, ``kube_pod_labels``, ``kube_node_labels``, ``kube_namespace_labels``) and dcgm-exporter (engine activity) from the
history Prometheus already keeps, so the first report after installation covers the past.

Resolution: everything is sampled by subqueries at ``step_seconds`` (300 s default). A pod holds
its requested GPUs during a step when, at the step's end, its request series is visible, it is
bound to a node (``kube_pod_info{node!=""}``) and its phase is Pending or Running (a scheduled
pod holds its devices while images pull). A held GPU is idle during the step when its peak
activity within the step was at or under ``Policy.engine_idle_pct`` percent
(``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` x100 where exported, else ``DCGM_FI_DEV_GPU_UTIL``; both
dcgm-exporter pod label conventions). Steps count the interval ``(t - step, t]``, so adjacent
periods and days never count a step twice.

kube-state-metrics exports Kubernetes labels only where allowed: start it with
``--metric-labels-allowlist=nodes=[karpenter.sh/capacity-type,node.kubernetes.io/instance-type,
nvidia.com/gpu.product,nvidia.com/gpu.replicas],pods=[notebook-name,kueue.x-k8s.io/queue-name,
kueue.x-k8s.io/local-queue-name],namespaces=[team]``
(the namespace label being ``costs.team_label``). Without the node labels the capacity type is
read from the Kubernetes API (``actions.reporting``); without the pod labels Notebooks are reported as
their StatefulSets and Kueue Workloads as their Jobs.

A report costs at most ``len(QUERY_NAMES) + len(PRESENCE_NAMES) + 6`` requests however many
pods there are: one per name in ``QUERY_NAMES``, three that check the data is there
(:func:`presence_queries`) plus, for the daily split (allocated and idle), one range query
(``step=1d``) each over the whole days and one instant query each for a partial first and last
day.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import defaultdict
from datetime import date, datetime, timedelta, timezone
from typing import Any, Mapping

from actions.cost import (
    DEFAULT_STEP_SECONDS,
    DailyUsage,
    NodeInfo,
    PodOwner,
    PodUsage,
    UsageData,
    day_buckets,
)
from actions.gpus import KSM_GPU_RESOURCES, gpu_equivalents, gpu_family, mig_fraction, resource_from_ksm, share_label
from actions.model import ENGINE_ACTIVE, GPU_UTIL, CapacityType
from actions.policy import Policy
from actions.sources.kubeobjects import capacity_type
from actions.sources.prometheus import PrometheusApi, TelemetryError, _activity_pct, _duration, _number

GPU_REQUESTS = f'kube_pod_container_resource_requests{{resource=~"{KSM_GPU_RESOURCES}"}}'
GPU_CAPACITY = f'kube_node_status_capacity{{resource=~"{KSM_GPU_RESOURCES}"}}'

QUERY_NAMES = ("allocated", "idle", "nodes", "owners", "pod_labels", "namespace_labels", "capacity")

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
_CAPACITY_KEYS = (
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


def _allocated_per_step() -> str:
    """GPU resources held per (namespace, pod, node, resource) at one evaluation instant."""
    return (
        # max per container first: a kube-state-metrics scraped twice (two jobs, HA replicas
        # without dedup) must not double the GPUs.
        f"sum by (namespace, pod, resource) (max by (namespace, pod, container, resource) ({GPU_REQUESTS}))"
        ' * on (namespace, pod) group_left (node) max by (namespace, pod, node) (kube_pod_info{node!=""})'
        ' * on (namespace, pod) group_left () (max by (namespace, pod) (kube_pod_status_phase{phase=~"Pending|Running"}) == 1)'
    )


def _idle_per_step(policy: Policy, step_seconds: float) -> str:
    """1 per GPU whose peak activity in the step ending now is at or under the idle threshold,
    0 when above; only for GPUs of pods holding them now."""
    window = _duration(step_seconds - 0.001)
    activity = _activity_pct(f"max_over_time({ENGINE_ACTIVE}[{window}])", f"max_over_time({GPU_UTIL}[{window}])")
    return f"(({activity}) <= bool {_number(policy.engine_idle_pct)}) and on (namespace, pod) ({_allocated_per_step()})"


def _steps(expr: str, range_seconds: float, step_seconds: float) -> str:
    # One second short of the range: the subquery then takes the steps in (t - range, t].
    return f"sum_over_time(({expr})[{_duration(range_seconds - 1)}:{_duration(step_seconds)}])"


def usage_queries(policy: Policy, range_seconds: float, step_seconds: float = DEFAULT_STEP_SECONDS) -> dict[str, str]:
    """The instant queries of one report over the ``range_seconds`` ending at the evaluation time.

    - ``allocated``: device-steps per (namespace, pod, node, resource), ``resource`` as
      kube-state-metrics names it (``nvidia_com_mig_1g_5gb``);
    - ``idle``: idle device-steps per (namespace, pod, Hostname, modelName, GPU_I_PROFILE), one
      device being a GPU or, under MIG, a GPU instance;
    - ``nodes``: each node's last ``kube_node_labels`` in the range;
    - ``owners``: the controller (``kube_pod_owner``) of every pod that requested GPUs;
    - ``pod_labels``: the last ``kube_pod_labels`` of those pods;
    - ``namespace_labels``: the last ``kube_namespace_labels`` of every namespace;
    - ``capacity``: device-steps per (node, resource) of every node's GPU resources
      (``kube_node_status_capacity``), what the nodes had whether requested or not.

    A device-step is ``step_seconds`` of one device; :func:`parse_usage` turns devices into
    physical-GPU equivalents. Pure.
    """
    rng = _duration(range_seconds)
    gpu_pods = f"last_over_time({GPU_REQUESTS}[{rng}])"
    return {
        "allocated": "sum by (namespace, pod, node, resource) "
        f"({_steps(_allocated_per_step(), range_seconds, step_seconds)})",
        "idle": "sum by (namespace, pod, Hostname, modelName, GPU_I_PROFILE) "
        f"({_steps(_idle_per_step(policy, step_seconds), range_seconds, step_seconds)})",
        "nodes": f"last_over_time(kube_node_labels[{rng}])",
        "owners": "max by (namespace, pod, owner_kind, owner_name) "
        f'(last_over_time(kube_pod_owner{{owner_is_controller="true"}}[{rng}])) and on (namespace, pod) {gpu_pods}',
        "pod_labels": f"last_over_time(kube_pod_labels[{rng}]) and on (namespace, pod) {gpu_pods}",
        "namespace_labels": f"last_over_time(kube_namespace_labels[{rng}])",
        "capacity": "sum by (node, resource) "
        f"({_steps(f'max by (node, resource) ({GPU_CAPACITY})', range_seconds, step_seconds)})",
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
    rng = _duration(range_seconds)
    return {
        "kube_state_metrics": f"count(last_over_time(kube_pod_info[{rng}]))",
        "dcgm": f"count(last_over_time({GPU_UTIL}[{rng}])) or count(last_over_time({ENGINE_ACTIVE}[{rng}]))",
        "first_data": f"min_over_time(timestamp(count(kube_pod_info))[{_duration(range_seconds - 1)}:1h])",
    }


def presence_warnings(
    url: str, start: datetime, end: datetime, results: Mapping[str, list[Mapping[str, Any]]]
) -> tuple[tuple[str, ...], datetime | None]:
    """``(warnings, covered_from)`` from the results of :func:`presence_queries` over
    ``[start, end]``: what is missing for the report to be whole, and the first moment the data
    covers when that is after ``start``. Pure."""

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
        return tuple(warnings), None
    if not first("dcgm"):
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
    time: ``allocated`` (per ``resource``) and ``idle`` (per ``Hostname``, dcgm-exporter's node
    name, and ``GPU_I_PROFILE``). Pure."""
    allocated = _steps(_allocated_per_step(), range_seconds, step_seconds)
    idle = _steps(_idle_per_step(policy, step_seconds), range_seconds, step_seconds)
    return {
        "allocated": f"sum by (namespace, node, resource) ({allocated})",
        "idle": f"sum by (namespace, Hostname, GPU_I_PROFILE) ({idle})",
    }


# --- parsing ---------------------------------------------------------------------------------------


def _value(sample: Mapping[str, Any]) -> float:
    v = float(sample["value"][1])
    return 0.0 if math.isnan(v) else v


def _nodes(results: Mapping[str, list[Mapping[str, Any]]]) -> dict[str, NodeInfo]:
    nodes: dict[str, NodeInfo] = {}
    for s in results.get("nodes", []):
        m = s["metric"]
        labels = {NODE_LABELS[k]: v for k, v in m.items() if k in NODE_LABELS and v}
        has_capacity = any(k in labels for k in _CAPACITY_KEYS)
        cap = capacity_type(labels) if has_capacity else None
        try:
            replicas = max(1, int(labels.get("nvidia.com/gpu.replicas", "1")))
        except ValueError:
            replicas = 1
        nodes[m["node"]] = NodeInfo(
            name=m["node"],
            instance_type=labels.get("node.kubernetes.io/instance-type") or labels.get("beta.kubernetes.io/instance-type"),
            capacity_type=cap if cap is not CapacityType.UNKNOWN else None,
            gpu_model=labels.get("nvidia.com/gpu.product"),
            replicas=replicas,
            node_pool=labels.get("karpenter.sh/nodepool"),
        )
    return nodes


class _Devices:
    """Turns kube-state-metrics resource rows and DCGM idle rows into physical-GPU equivalents
    on a node, from what is known of it: GFD's product and replicas labels, else the DCGM
    ``modelName`` reported there."""

    def __init__(self, nodes: Mapping[str, NodeInfo], models: Mapping[str, str]):
        self.nodes, self.models = nodes, models

    def _node(self, node: str) -> tuple[str | None, int, str | None]:
        info = self.nodes.get(node)
        product = info.gpu_model if info else None
        model = self.models.get(node) or product
        return (gpu_family(model) if model else None), (info.replicas if info else 1), product

    def equivalents(self, node: str, ksm_resource: str, count: float) -> tuple[float, str | None]:
        """``(equivalents, share label)`` of ``count`` of a resource on ``node``; ``(0, None)``
        for a resource that is not a GPU."""
        resource = resource_from_ksm(ksm_resource)
        if resource is None:
            return 0.0, None
        family, replicas, product = self._node(node)
        devices = {resource: count}
        return gpu_equivalents(devices, family, replicas, product), share_label(devices, replicas, product)

    def idle(self, host: str, profile: str, count: float) -> float:
        """Equivalents of ``count`` idle DCGM device-steps on ``host``: a MIG instance its
        profile's share; a GPU advertised as R replicas 1/R (dcgm-exporter gives a shared GPU's
        series to one of the pods on it, so the share keeps idle within what one pod holds)."""
        family, replicas, _ = self._node(host)
        if profile:
            return count * mig_fraction(profile, family)
        return count / replicas


def parse_usage(
    start: datetime,
    end: datetime,
    step_seconds: float,
    results: Mapping[str, list[Mapping[str, Any]]],
    daily: Mapping[date, Mapping[str, list[Mapping[str, Any]]]] | None = None,
) -> UsageData:
    """Build :class:`~actions.cost.UsageData` from Prometheus ``data.result`` lists keyed by the
    names of :func:`usage_queries`, and ``daily`` (day -> results keyed by the names of
    :func:`daily_queries`). Device-steps become GPU-hours in physical-GPU equivalents
    (:func:`actions.gpus.gpu_equivalents`). Raises KeyError/ValueError on a malformed result."""
    hours_per_step = step_seconds / 3600
    nodes = _nodes(results)
    node_models: dict[str, str] = {}
    for s in results.get("idle", []):
        m = s["metric"]
        if m.get("modelName") and m.get("Hostname"):
            node_models.setdefault(m["Hostname"], m["modelName"])
    devices = _Devices(nodes, node_models)

    idle: dict[tuple[str, str], dict[str, float]] = {}  # (namespace, pod) -> Hostname -> GPU-hours
    models: dict[tuple[str, str], str] = {}
    for s in results.get("idle", []):
        m = s["metric"]
        ns, pod = m.get("namespace", ""), m.get("pod", "")
        if not pod:
            continue
        hosts = idle.setdefault((ns, pod), {})
        host = m.get("Hostname", "")
        hosts[host] = hosts.get(host, 0.0) + devices.idle(host, m.get("GPU_I_PROFILE", ""), _value(s)) * hours_per_step
        if m.get("modelName"):
            models[(ns, pod)] = m["modelName"]

    pods = []
    alloc_by_pod: dict[tuple[str, str], dict[str, list]] = {}  # -> node -> [GPU-hours, share labels]
    for s in results.get("allocated", []):
        m = s["metric"]
        hours, share = devices.equivalents(m["node"], m.get("resource", "nvidia_com_gpu"), _value(s))
        if hours <= 0:
            continue
        row = alloc_by_pod.setdefault((m["namespace"], m["pod"]), {}).setdefault(m["node"], [0.0, []])
        row[0] += hours * hours_per_step
        if share:
            row[1].append(share)
    for (ns, pod), rows in alloc_by_pod.items():
        total = sum(h for h, _ in rows.values())
        hosts = idle.get((ns, pod), {})
        # Idle GPU-steps whose Hostname names none of the pod's nodes are spread over them pro rata.
        unmatched = sum(v for host, v in hosts.items() if host not in rows)
        for node, (hours, shares) in rows.items():
            pods.append(
                PodUsage(
                    namespace=ns,
                    pod=pod,
                    node=node,
                    gpu_hours=hours,
                    idle_gpu_hours=min(hours, hosts.get(node, 0.0) + unmatched * hours / total),
                    gpu_model=models.get((ns, pod)),
                    flavor=", ".join(dict.fromkeys(shares)) or None,
                )
            )
    pods.sort(key=lambda p: (p.namespace, p.pod, p.node))

    capacity: dict[str, float] = {}
    for s in results.get("capacity", []):
        m = s["metric"]
        hours, _ = devices.equivalents(m["node"], m.get("resource", ""), _value(s))
        if hours > 0:
            capacity[m["node"]] = capacity.get(m["node"], 0.0) + hours * hours_per_step

    pod_labels: dict[tuple[str, str], dict[str, str]] = {}
    for s in results.get("pod_labels", []):
        m = s["metric"]
        pod_labels.setdefault((m["namespace"], m["pod"]), {}).update(
            {POD_LABELS[k]: v for k, v in m.items() if k in POD_LABELS and v}
        )
    owners: dict[tuple[str, str], PodOwner] = {}
    for s in results.get("owners", []):
        m = s["metric"]
        key = (m["namespace"], m["pod"])
        owners[key] = PodOwner(key[0], key[1], m.get("owner_kind"), m.get("owner_name"), pod_labels.get(key, {}))
    for key, labels in pod_labels.items():
        owners.setdefault(key, PodOwner(key[0], key[1], labels=labels))

    namespace_labels: dict[str, dict[str, str]] = {}
    for s in results.get("namespace_labels", []):
        m = s["metric"]
        namespace_labels.setdefault(m["namespace"], {}).update(
            {k: v for k, v in m.items() if k.startswith("label_")}
        )

    daily_rows = []
    for day, res in sorted((daily or {}).items()):
        day_idle: dict[tuple[str, str], float] = defaultdict(float)
        for s in res.get("idle", []):
            m = s["metric"]
            if m.get("namespace"):
                host = m.get("Hostname", "")
                day_idle[(m["namespace"], host)] += devices.idle(host, m.get("GPU_I_PROFILE", ""), _value(s))
        day_alloc: dict[tuple[str, str], float] = defaultdict(float)
        for s in res.get("allocated", []):
            m = s["metric"]
            day_alloc[(m["namespace"], m["node"])] += devices.equivalents(
                m["node"], m.get("resource", "nvidia_com_gpu"), _value(s)
            )[0]
        for (ns, node), steps in sorted(day_alloc.items()):
            if steps > 0:
                hours = steps * hours_per_step
                daily_rows.append(
                    DailyUsage(day, ns, node, hours, min(hours, day_idle.get((ns, node), 0.0) * hours_per_step))
                )
    return UsageData(
        start=start,
        end=end,
        step_seconds=step_seconds,
        pods=tuple(pods),
        daily=tuple(daily_rows),
        nodes=nodes,
        owners=owners,
        namespace_labels=namespace_labels,
        node_gpu_hours=capacity,
    )


class PrometheusUsage:
    """Reads a period's GPU usage from a Prometheus (or Thanos, Mimir, VictoriaMetrics) at ``url``.

    ``team_label`` is the namespace label naming a namespace's team (as in the config's
    ``costs.team_label``): :meth:`fetch` returns namespace labels under that original key.
    ``headers``, ``verify_tls``, ``timeout_seconds``, ``attempts`` and ``scope`` (one cluster's
    series behind a shared endpoint) go to its
    :class:`~actions.sources.prometheus.PrometheusApi` (retries and errors as there).
    """

    def __init__(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        *,
        verify_tls: bool = True,
        timeout_seconds: float = 60,
        attempts: int = 3,
        team_label: str | None = "team",
        step_seconds: float = DEFAULT_STEP_SECONDS,
        scope: tuple[str, str] | None = None,
    ):
        self.url = url.rstrip("/")
        self.team_label = team_label
        self.step_seconds = step_seconds
        self.api = PrometheusApi(
            self.url, headers, verify_tls=verify_tls, timeout_seconds=timeout_seconds, attempts=attempts, scope=scope,
        )

    @property
    def requests(self) -> int:
        """Queries sent so far."""
        return self.api.requests

    def _daily(self, policy: Policy, start: datetime, end: datetime) -> dict[date, dict[str, list]]:
        out: dict[date, dict[str, list]] = {}
        buckets = day_buckets(start, end)
        full = [b for b in buckets if (b[2] - b[1]) == timedelta(days=1)]
        for day, b0, b1 in buckets:
            if (b1 - b0) != timedelta(days=1):
                queries = daily_queries(policy, (b1 - b0).total_seconds(), self.step_seconds)
                out[day] = {n: self.api.instant(f"daily {n}", q, b1) for n, q in queries.items()}
        if full:
            first, last = full[0][2], full[-1][2]
            for n, q in daily_queries(policy, 86400, self.step_seconds).items():
                series = self.api.range(f"daily {n}", q, first, last, 86400)
                for s in series:
                    for ts, v in s["values"]:
                        day = (datetime.fromtimestamp(float(ts), tz=timezone.utc) - timedelta(days=1)).date()
                        out.setdefault(day, {}).setdefault(n, []).append({"metric": s["metric"], "value": [ts, v]})
        return out

    def fetch(self, start: datetime, end: datetime, policy: Policy) -> UsageData:
        """Usage over ``[start, end]`` (aware datetimes; best a multiple of the step apart, as
        :func:`actions.cost.parse_period` gives them). Namespace labels come back under their
        Kubernetes keys for ``team_label``. Raises ValueError for naive or reversed times and
        TelemetryError when Prometheus is unreachable, answers an error or a malformed result.
        """
        if start.tzinfo is None or end.tzinfo is None:
            raise ValueError("start and end need a time zone; pass aware UTC datetimes")
        if end <= start:
            raise ValueError(f"end {end} is not after start {start}")
        start, end = start.astimezone(timezone.utc), end.astimezone(timezone.utc)
        range_seconds = (end - start).total_seconds()
        results = {
            name: self.api.instant(name, q, end)
            for name, q in usage_queries(policy, range_seconds, self.step_seconds).items()
        }
        presence = {name: self.api.instant(name, q, end) for name, q in presence_queries(range_seconds).items()}
        daily = self._daily(policy, start, end)
        try:
            usage = parse_usage(start, end, self.step_seconds, results, daily)
            warnings, covered_from = presence_warnings(self.url, start, end, presence)
            usage = dataclasses.replace(
                usage, idle_threshold_pct=policy.engine_idle_pct, warnings=warnings, covered_from=covered_from
            )
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise TelemetryError(f"Prometheus at {self.url} returned a malformed result: {e}") from e
        if self.team_label:
            key = ksm_label_name(self.team_label)
            labels = {ns: ({self.team_label: ls[key]} if ls.get(key) else {}) for ns, ls in usage.namespace_labels.items()}
            usage = dataclasses.replace(usage, namespace_labels=labels)
        return usage
