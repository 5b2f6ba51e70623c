"""GPU usage per pod, node and day over a period, aggregated server-side in PromQL.

Reads kube-state-metrics (``kube_pod_container_resource_requests`` and
``kube_node_status_capacity`` for every GPU resource, whole, shared, MIG or AMD; ``kube_pod_info``,
``kube_pod_status_phase``, ``kube_pod_owner``, ``kube_pod_labels``, ``kube_node_labels``, ``kube_namespace_labels``) and dcgm-exporter (engine activity) from the
history Prometheus already keeps, so the first report after installation covers the past.

Resolution: everything is sampled by subqueries at ``step_seconds`` (300 s default). A pod's
GPUs count as requested during a step when, at the step's end, its request series is visible, it
is bound to a node (``kube_pod_info{node!=""}``) and its phase is Pending or Running (a scheduled
pod keeps its devices while images pull). A requested GPU is idle during the step when its peak
activity within the step was at or under ``Policy.engine_idle_pct`` percent
(``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` x100 where exported, else ``DCGM_FI_DEV_GPU_UTIL``; both
dcgm-exporter pod label conventions). Steps count the interval ``(t - step, t]``, so adjacent
periods and days never count a step twice.

kube-state-metrics exports Kubernetes labels only where allowed: start it with
``--metric-labels-allowlist=nodes=[karpenter.sh/capacity-type,node.kubernetes.io/instance-type,
nvidia.com/gpu.product,nvidia.com/gpu.replicas],pods=[notebook-name,kueue.x-k8s.io/queue-name,
kueue.x-k8s.io/local-queue-name],namespaces=[team]``
(the namespace label being ``costs.team_label``). Without the node labels the capacity type is
read from the Kubernetes API (``actions.cost.reporting``); without the pod labels Notebooks are reported as
their StatefulSets and Kueue Workloads as their Jobs.

A report costs at most ``len(QUERY_NAMES) + len(PRESENCE_NAMES) + 6`` requests however many
pods there are: one per name in ``QUERY_NAMES``, three that check the data is there
(:func:`presence_queries`) plus, for the daily split (requested and idle), one range query
(``step=1d``) each over the whole days and one instant query each for a partial first and last
day.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from datetime import date, datetime, timedelta, timezone
from typing import Any, Mapping

from actions.cost.periods import day_buckets
from actions.hardware.gpus import (
    gpu_equivalents,
    gpu_family,
    mig_fraction,
    resource_from_ksm,
    sharing_of,
)
from actions.model.kube import CapacityType
from actions.model.times import HOUR, floor_hour
from actions.model.usage import DEFAULT_STEP_SECONDS, DailyUsage, NodeInfo, PodOwner, PodUsage, UsageData
from actions.policy.rules import Policy
from actions.sources.kube.objects import capacity_type
from actions.sources.prometheus.api import DEFAULT_MAX_RESPONSE_BYTES, PrometheusApi, TelemetryError
from actions.sources.prometheus.energy import attribute_energy
from actions.sources.prometheus.usage_promql import (
    CAPACITY_KEYS,
    NODE_LABELS,
    POD_LABELS,
    REQUESTED_QUERY,
    daily_queries,
    ksm_label_name,
    presence_queries,
    presence_warnings,
    usage_queries,
)

# --- parsing ---------------------------------------------------------------------------------------


def _value(sample: Mapping[str, Any]) -> float:
    v = float(sample["value"][1])
    return 0.0 if math.isnan(v) else v


def _nodes(results: Mapping[str, list[Mapping[str, Any]]]) -> dict[str, NodeInfo]:
    nodes: dict[str, NodeInfo] = {}
    for s in results.get("nodes", []):
        m = s["metric"]
        labels = {NODE_LABELS[k]: v for k, v in m.items() if k in NODE_LABELS and v}
        has_capacity = any(k in labels for k in CAPACITY_KEYS)
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
        """``(equivalents, sharing)`` of ``count`` of a resource on ``node``; ``(0, None)``
        for a resource that is not a GPU."""
        resource = resource_from_ksm(ksm_resource)
        if resource is None:
            return 0.0, None
        family, replicas, product = self._node(node)
        devices = {resource: count}
        return gpu_equivalents(devices, family, replicas, product), sharing_of(devices, replicas, product)

    def idle(self, host: str, profile: str, count: float) -> float:
        """Equivalents of ``count`` idle DCGM device-steps on ``host``: a MIG instance its
        profile's share; a GPU advertised as R replicas 1/R (dcgm-exporter gives a shared GPU's
        series to one of the pods on it, so the share keeps idle within what one pod requests)."""
        return count * self.share(host, profile) / self.replicas(host)

    def share(self, host: str, profile: str) -> float:
        """The fraction of a GPU one DCGM device series on ``host`` stands for: a MIG instance its
        profile's (ratio 0-1), else 1."""
        return mig_fraction(profile, self._node(host)[0]) if profile else 1.0

    def replicas(self, host: str) -> int:
        """The time-slicing replicas of ``host``'s GPUs (1 when not shared)."""
        return self._node(host)[1]


def parse_usage(
    start: datetime,
    end: datetime,
    step_seconds: float,
    results: Mapping[str, list[Mapping[str, Any]]],
    daily: Mapping[date, Mapping[str, list[Mapping[str, Any]]]] | None = None,
) -> UsageData:
    """Build :class:`~actions.model.usage.UsageData` from Prometheus ``data.result`` lists keyed by the
    names of :func:`usage_queries`, and ``daily`` (day -> results keyed by the names of
    :func:`daily_queries`). Device-steps become GPU-hours in physical-GPU equivalents
    (:func:`actions.hardware.gpus.gpu_equivalents`). Raises KeyError/ValueError on a malformed result."""
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

    requested_by_pod: dict[tuple[str, str], dict[str, list]] = {}  # -> node -> [GPU-hours, sharings]
    for s in results.get(REQUESTED_QUERY, []):
        m = s["metric"]
        hours, sharing = devices.equivalents(m["node"], m.get("resource", "nvidia_com_gpu"), _value(s))
        if hours <= 0:
            continue
        row = requested_by_pod.setdefault((m["namespace"], m["pod"]), {}).setdefault(m["node"], [0.0, []])
        row[0] += hours * hours_per_step
        if sharing:
            row[1].append(sharing)
    capacity: dict[str, float] = {}
    for s in results.get("capacity", []):
        m = s["metric"]
        hours, _ = devices.equivalents(m["node"], m.get("resource", ""), _value(s))
        if hours > 0:
            capacity[m["node"]] = capacity.get(m["node"], 0.0) + hours * hours_per_step
    held = {key: {node: row[0] for node, row in rows.items()} for key, rows in requested_by_pod.items()}
    energy, node_energy = attribute_energy(
        results, held, capacity, share=devices.share, replicas=devices.replicas, hours_per_step=hours_per_step
    )
    pods = []
    for (ns, pod), rows in requested_by_pod.items():
        total = sum(h for h, _ in rows.values())
        hosts = idle.get((ns, pod), {})
        # Idle GPU-steps whose Hostname names none of the pod's nodes are spread over them pro rata.
        unmatched = sum(v for host, v in hosts.items() if host not in rows)
        for node, (hours, sharings) in rows.items():
            e = energy.get((ns, pod, node))
            pods.append(
                PodUsage(
                    namespace=ns,
                    pod=pod,
                    node=node,
                    gpu_hours=hours,
                    idle_gpu_hours=min(hours, hosts.get(node, 0.0) + unmatched * hours / total),
                    gpu_model=models.get((ns, pod)),
                    sharing=", ".join(dict.fromkeys(sharings)) or None,
                    energy_kwh=e.kwh if e else 0.0,
                    idle_energy_kwh=e.idle_kwh if e else 0.0,
                    energy_gpu_hours=e.measured_gpu_hours if e else 0.0,
                )
            )
    pods.sort(key=lambda p: (p.namespace, p.pod, p.node))

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
        day_requested: dict[tuple[str, str], float] = defaultdict(float)
        for s in res.get(REQUESTED_QUERY, []):
            m = s["metric"]
            day_requested[(m["namespace"], m["node"])] += devices.equivalents(
                m["node"], m.get("resource", "nvidia_com_gpu"), _value(s)
            )[0]
        for (ns, node), steps in sorted(day_requested.items()):
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
        node_energy_kwh=node_energy,
    )


class PrometheusUsage:
    """Reads a period's GPU usage from a Prometheus (or Thanos, Mimir, VictoriaMetrics) at ``url``.

    ``team_label`` is the namespace label naming a namespace's team (as in the config's
    ``costs.team_label``): :meth:`fetch` returns namespace labels under that original key.
    ``headers``, ``verify_tls``, ``timeout_seconds``, ``attempts`` and ``scope`` (one cluster's
    series behind a shared endpoint) go to its
    :class:`~actions.sources.prometheus.api.PrometheusApi` (retries and errors as there).
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
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ):
        self.team_label = team_label
        self.step_seconds = step_seconds
        self.api = PrometheusApi(
            url, headers, verify_tls=verify_tls, timeout_seconds=timeout_seconds, attempts=attempts, scope=scope,
            max_response_bytes=max_response_bytes,
        )
        self.url = self.api.url  # as shown: credentials masked

    @property
    def requests(self) -> int:
        """Queries sent so far."""
        return self.api.requests

    def _daily(
        self, policy: Policy, start: datetime, end: datetime, results: Mapping[str, list],
    ) -> dict[date, dict[str, list]]:
        out: dict[date, dict[str, list]] = {}
        buckets = day_buckets(start, end)
        if len(buckets) == 1:
            # Within one day the split is the period's own per-pod answers, which parse_usage sums
            # per namespace and node as it would the daily queries' (linear in the device-steps):
            # asking Prometheus again cost an hourly rollup a quarter of its query CPU.
            return {buckets[0][0]: {n: results[n] for n in (REQUESTED_QUERY, "idle")}}
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
        :func:`actions.cost.periods.parse_period` gives them). Namespace labels come back under their
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
        daily = self._daily(policy, start, end, results)
        try:
            usage = parse_usage(start, end, self.step_seconds, results, daily)
            gpus_seen = any(p.gpu_hours > 0 for p in usage.pods) or any(h > 0 for h in usage.node_gpu_hours.values())
            warnings, covered_from = presence_warnings(self.url, start, end, presence, gpus_seen=gpus_seen)
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

    def first_data_hour(self, since: datetime, until: datetime) -> datetime | None:
        """The first hour in ``[since, until)`` (hour starts) whose rollup would see any
        ``kube_pod_info`` (:func:`first_hour_with`). Raises TelemetryError when Prometheus fails."""
        return first_hour_with(self.api, "kube_pod_info", since, until)


def first_hour_with(api: PrometheusApi, series: str, since: datetime, until: datetime) -> datetime | None:
    """The first hour in ``[since, until)`` (hour starts) in which Prometheus holds any of
    ``series`` (a PromQL selector), None when it holds none in the range: two cheap queries, by
    day, then by hour within the day found. Raises TelemetryError when Prometheus fails."""
    since, until = floor_hour(since), floor_hour(until)

    def first(at: datetime, lo: datetime, step: str) -> datetime | None:
        # Steps in (lo, at]; the subquery's range one second short keeps lo itself out.
        rng = int((at - lo).total_seconds()) - 1
        rows = api.instant("first data", f"min_over_time(timestamp(count({series}))[{rng}s:{step}])", at)
        return datetime.fromtimestamp(float(rows[0]["value"][1]), tz=timezone.utc) if rows else None

    if until <= since:
        return None
    day = first(until, since, "1d") if until - since > timedelta(days=1) else None
    hi = day or until
    hour = first(hi, max(since, hi - timedelta(days=1)), "1h")
    if hour is None:
        return None
    # The step at t sees the hour ending at t: [t - 1h, t) is the first hour with data.
    return max(floor_hour(hour) - HOUR, since)
