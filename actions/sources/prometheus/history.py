"""The history advice is made from, from dcgm-exporter series in Prometheus.

Every figure is aggregated server-side; a fetch sends :data:`POD_QUERIES` (one each), one query
per :data:`CONSUMERS_PER_QUERY` consumers of more than one pod, and :data:`TEAM_QUERIES` (one
each), however many GPUs the cluster has. Label conventions are read as in
:mod:`actions.sources.prometheus.promql` (``pod``/``exported_pod``/``pod_name`` ...).

Per pod, over ``AdvicePolicy.window_seconds``:

- ``peak_fb``: the most framebuffer any of its GPUs held, ``DCGM_FI_DEV_FB_USED`` (MiB);
- ``peak_engine``: the most engine activity of any of its GPUs, percent 0-100
  (``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` x 100 where exported, else ``DCGM_FI_DEV_GPU_UTIL``);
- ``mean_power``: the highest mean ``DCGM_FI_DEV_POWER_USAGE`` of its GPUs over each hour, averaged
  over the hourly marks of the window (watts), which tells light serving (GPU_UTIL 0% at
  190-250 W on a real H100) from idle;
- ``gpu_hours``: GPU-hours with an activity sample, counted at :data:`STEP_SECONDS` steps;
- ``busy``: the ``busy_quantile`` over :data:`STEP_SECONDS` steps of how many of its GPUs were
  above ``busy_engine_pct`` at once. A consumer of several pods gets the same figure over all
  its GPUs together (the quantile of a sum is not the sum of quantiles), named by its key.

Per team and GPU model, over ``commitment_window_seconds`` at one-hour steps: the
``baseline_quantile``, the count of hours with any and the most of the GPUs whole (not MIG)
that the team's pods requested at the hour mark.

Per container of the pods with several GPU containers: the same ``busy`` figure over that
container's GPUs alone (dcgm-exporter's ``container`` label), so a right-sizing can say which
container keeps how many.

Reserved GPUs (the nodes named): per GPU model, how many at the window's last hourly mark, and
the share of GPU-marks over the commitment window at which their activity was at or under
``busy_engine_pct``, requested by a pod or not.

Every window is ``(at - w, at]`` (:func:`~actions.sources.prometheus.promql.open_window`) and every
figure one that hours read one by one add up to: the ledger keeps them per hour
(:mod:`actions.sources.prometheus.advice_hours`) and advice from it equals advice from here.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Mapping, Sequence

from actions.model.history import AdviceHistory, PodHistory, ReservedHistory, TeamHistory
from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE
from actions.policy.advice import AdvicePolicy
from actions.sources.prometheus.api import PrometheusApi, TelemetryError
from actions.sources.prometheus.promql import by_gpu, duration, number, open_window, pod_labels

FB_USED = "DCGM_FI_DEV_FB_USED"
STEP_SECONDS = 300
CONSUMERS_PER_QUERY = 20
POD_QUERIES = ("peak_fb", "peak_engine", "mean_power", "gpu_hours", "busy")
TEAM_QUERIES = ("baseline", "hours_in_use", "peak")
IDLE_SHARE_QUERY = "idle_ratio"  # the query's published name: Prometheus errors name it
RESERVED_QUERIES = (IDLE_SHARE_QUERY, "gpus")
SIGNAL = "engine_signal"


def _regex(values: Sequence[str]) -> str:
    """A PromQL string literal matching exactly ``values``."""
    text = "|".join(re.escape(v) for v in sorted(values))
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# Activity per GPU series in percent 0-100: ENGINE_ACTIVE (ratio, x100) where exported, else
# GPU_UTIL. Set operators match label sets without the metric name, so a GPU exporting both
# keeps ENGINE_ACTIVE.
ACTIVITY = f"((100 * {ENGINE_ACTIVE}) or {GPU_UTIL})"
# The pod labels of every dcgm-exporter convention: grouping by all of them inside a subquery and
# renaming them once outside keeps the 2,016 steps of a week free of label_replace.
POD_KEYS = "namespace, pod, exported_namespace, exported_pod, pod_namespace, pod_name"
NAMESPACE_KEYS = "namespace, exported_namespace, pod_namespace"


def peak_queries(w: str) -> dict[str, str]:
    """``peak_fb``, ``peak_engine`` and ``mean_power`` over the range ``w`` (a PromQL duration;
    ``mean_power`` the plain mean, as at one hourly mark). Pure."""
    peak_engine = (
        f'max by (namespace, pod, {SIGNAL}) (label_replace(100 * {by_gpu("max", f"max_over_time({ENGINE_ACTIVE}[{w}])")}, '
        f'"{SIGNAL}", "{ENGINE_ACTIVE}", "", "") or ignoring ({SIGNAL}) '
        f'label_replace({by_gpu("max", f"max_over_time({GPU_UTIL}[{w}])")}, "{SIGNAL}", "{GPU_UTIL}", "", ""))'
    )
    return {
        "peak_fb": f"max by (namespace, pod, modelName) ({by_gpu('max', f'max_over_time({FB_USED}[{w}])')})",
        "peak_engine": peak_engine,
        "mean_power": f"max by (namespace, pod) ({by_gpu('max', f'avg_over_time({POWER_USAGE}[{w}])')})",
    }


def busy_at_once(policy: AdvicePolicy) -> str:
    """Per pod (under every label convention) at one step: its GPU series above ``busy_engine_pct``."""
    return f"sum by ({POD_KEYS}) ({ACTIVITY} > bool {number(policy.busy_engine_pct)})"


def pod_queries(policy: AdvicePolicy) -> dict[str, str]:
    """The per-pod PromQL (module docstring), by name. Pure."""
    w, step = open_window(policy.window_seconds), duration(STEP_SECONDS)
    hourly_power = peak_queries(open_window(3600))["mean_power"]
    return {
        **peak_queries(w),
        "mean_power": f"avg_over_time(({hourly_power})[{w}:1h])",
        "gpu_hours": (
            f"sum by (namespace, pod) ({pod_labels(f'count_over_time({ACTIVITY}[{w}:{step}])')})"
            f" * {number(STEP_SECONDS / 3600)}"
        ),
        "busy": (
            f"max by (namespace, pod) ({pod_labels(f'quantile_over_time({number(policy.busy_quantile)}, ({busy_at_once(policy)})[{w}:{step}])')})"
        ),
    }


def _replacement(value: str) -> str:
    """``value`` as a PromQL string literal for label_replace's replacement (``$`` doubled)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$") + '"'


def _mapped(expr: str, groups: Mapping[str, Sequence[str]], source: str, target: str) -> str:
    """``expr`` with label ``target`` set to each group's name where ``source`` is one of its
    values (label_replace anchors its regex), one label_replace per group. Applied to a small
    aggregated vector at each step, so its cost does not grow with the GPUs."""
    for name, values in sorted(groups.items()):
        expr = f'label_replace({expr}, "{target}", {_replacement(name)}, "{source}", {_regex(values)})'
    return expr


def consumer_busy_query(policy: AdvicePolicy, consumers: Mapping[str, tuple[str, Sequence[str]]]) -> str:
    """PromQL: for each consumer (key -> (namespace, its pods)), the ``busy_quantile`` of its
    GPUs busy at once, as one series labelled ``consumer`` (and one with ``consumer`` empty for
    every other pod, to be ignored). At each step the busy GPUs are summed per pod, the pods
    renamed to one label convention and mapped to their consumer. Pure."""
    w, step = open_window(policy.window_seconds), duration(STEP_SECONDS)
    per_pod = pod_labels(busy_at_once(policy))
    joined = f'label_join({per_pod}, "ns_pod", "/", "namespace", "pod")'
    groups = {key: [f"{ns}/{p}" for p in pods] for key, (ns, pods) in consumers.items()}
    at_once = f"sum by (consumer) ({_mapped(joined, groups, 'ns_pod', 'consumer')})"
    return f"quantile_over_time({number(policy.busy_quantile)}, ({at_once})[{w}:{step}])"


# dcgm-exporter's container label under each convention (container_name before 2.0; with
# honor_labels off, exported_container), applied in order as pod_labels does for the pod.
CONTAINER_KEYS = "container, container_name, exported_container"


def container_label(expr: str) -> str:
    for source in ("container_name", "exported_container"):
        expr = f'label_replace({expr}, "container", "$1", "{source}", "(.+)")'
    return expr


def container_busy_query(policy: AdvicePolicy, pods: Sequence[tuple[str, str]]) -> str:
    """PromQL: for each container of ``pods`` ((namespace, pod) pairs, pods of several GPU
    containers), the ``busy_quantile`` of its GPUs busy at once, labelled ``namespace``, ``pod``,
    ``container`` and ``picked="1"`` (series of other pods have ``picked`` empty, to be ignored).
    A container's GPUs are its own: the most it needs is what it used at once. Pure."""
    w, step, thr = open_window(policy.window_seconds), duration(STEP_SECONDS), number(policy.busy_engine_pct)
    per = container_label(pod_labels(f"sum by ({POD_KEYS}, {CONTAINER_KEYS}) ({ACTIVITY} > bool {thr})"))
    joined = f'label_join({per}, "ns_pod", "/", "namespace", "pod")'
    picked = _mapped(joined, {"1": [f"{ns}/{p}" for ns, p in pods]}, "ns_pod", "picked")
    at_once = f"sum by (namespace, pod, container, picked) ({picked})"
    return f"quantile_over_time({number(policy.busy_quantile)}, ({at_once})[{w}:{step}])"


def namespace_gpus() -> str:
    """Whole GPUs (not MIG instances) per namespace and ``modelName`` at one instant, under every
    label convention renamed to ``namespace``. Pure."""
    requested = (
        # Every convention's GPU identity, so GPUs are told apart whichever labels carry it.
        f"max by (UUID, uuid, gpu, Hostname, hostname, modelName, {NAMESPACE_KEYS}) "
        f'({{__name__=~"{GPU_UTIL}|{ENGINE_ACTIVE}", GPU_I_ID=""}})'
    )
    return pod_labels(f"count by (modelName, {NAMESPACE_KEYS}) ({requested})")


def node_gpus(hosts: str | None = None) -> str:
    """Activity (percent 0-100) per GPU at one instant, labelled ``UUID``, ``Hostname`` (the
    ``hostname`` convention renamed) and ``modelName``; only the nodes matching the PromQL
    regex literal ``hosts`` when given. Pure."""
    def one(metric: str) -> str:
        if hosts is None:
            picked = metric
        else:
            picked = f"{metric}{{Hostname=~{hosts}}} or {metric}{{hostname=~{hosts}}}"
        return f'max by (UUID, Hostname, modelName) (label_replace({picked}, "Hostname", "$1", "hostname", "(.+)"))'
    return f"((100 * {one(ENGINE_ACTIVE)}) or {one(GPU_UTIL)})"


def team_queries(policy: AdvicePolicy, teams: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """The per-team PromQL (team -> its namespaces), by name, each series labelled ``team`` and
    ``modelName``: whole GPUs (not MIG instances) the team's pods requested at each hour mark over the
    commitment window, reduced by quantile, count and max. At each mark the GPUs are counted per
    namespace under every label convention, renamed to one and mapped to their team. Pure."""
    w = open_window(policy.commitment_window_seconds)
    per_namespace = namespace_gpus()
    in_use = f"sum by (team, modelName) ({_mapped(per_namespace, teams, 'namespace', 'team')})"
    series = f"({in_use})[{w}:1h]"
    return {
        "baseline": f"quantile_over_time({number(policy.baseline_quantile)}, {series})",
        "hours_in_use": f"count_over_time({series})",
        "peak": f"max_over_time({series})",
    }


def reserved_queries(policy: AdvicePolicy, nodes: Sequence[str]) -> dict[str, str]:
    """PromQL per GPU model (label ``modelName``) of the GPUs on ``nodes``: :data:`IDLE_SHARE_QUERY`, the
    share of GPU-marks (each GPU at each hourly mark) with activity at or under ``busy_engine_pct``,
    and ``gpus``, how many had a sample at the window's last mark. Pure."""
    w, thr = open_window(policy.commitment_window_seconds), number(policy.busy_engine_pct)
    per_gpu = node_gpus(_regex(nodes))
    return {
        IDLE_SHARE_QUERY: (f"sum_over_time((sum by (modelName) ({per_gpu} <= bool {thr}))[{w}:1h])"
                           f" / sum_over_time((count by (modelName) ({per_gpu}))[{w}:1h])"),
        "gpus": f"last_over_time((count by (modelName) ({per_gpu}))[{w}:1h])",
    }


def _value(row: Mapping) -> float:
    return float(row["value"][1])


class AdviceHistorySource:
    """Reads :class:`AdviceHistory` through a :class:`PrometheusApi` (shared with the sweep)."""

    def __init__(self, api: PrometheusApi):
        self.api = api

    def fetch(
        self,
        at: datetime,
        policy: AdvicePolicy,
        consumers: Mapping[str, tuple[str, Sequence[str]]],
        teams: Mapping[str, Sequence[str]],
        reserved_nodes: Sequence[str] = (),
        container_pods: Sequence[tuple[str, str]] = (),
    ) -> AdviceHistory:
        """History ending at ``at`` (aware). ``consumers`` maps a multi-pod consumer's key to
        (namespace, pod names); ``teams`` a team to its namespaces; ``reserved_nodes`` names the
        nodes of reserved capacity; ``container_pods`` the (namespace, pod) of pods with several
        GPU containers (one more query per :data:`CONSUMERS_PER_QUERY` of them). Raises ValueError for a
        naive ``at`` and TelemetryError when Prometheus fails or answers something malformed."""
        if at.tzinfo is None:
            raise ValueError(f"at={at!r} has no time zone; pass an aware UTC datetime")
        at = at.astimezone(timezone.utc)
        rows = {name: self.api.instant(f"advice {name}", q, at) for name, q in pod_queries(policy).items()}
        busy: dict[str, float] = {}
        keys = sorted(consumers)
        for i in range(0, len(keys), CONSUMERS_PER_QUERY):
            chunk = {k: consumers[k] for k in keys[i : i + CONSUMERS_PER_QUERY]}
            for row in self.api.instant("advice consumer busy", consumer_busy_query(policy, chunk), at):
                if row["metric"].get("consumer"):
                    busy[row["metric"]["consumer"]] = _value(row)
        per_container: dict[tuple[str, str, str], float] = {}
        wanted = sorted(set(container_pods))
        for i in range(0, len(wanted), CONSUMERS_PER_QUERY):
            query = container_busy_query(policy, wanted[i : i + CONSUMERS_PER_QUERY])
            for row in self.api.instant("advice container busy", query, at):
                m = row["metric"]
                if m.get("picked") and m.get("container"):
                    per_container[(m.get("namespace", ""), m.get("pod", ""), m["container"])] = _value(row)
        team_rows = (
            {name: self.api.instant(f"advice team {name}", q, at) for name, q in team_queries(policy, teams).items()}
            if teams else {}
        )
        reserved_rows = (
            {name: self.api.instant(f"advice reserved {name}", q, at) for name, q in reserved_queries(policy, reserved_nodes).items()}
            if reserved_nodes else {}
        )
        try:
            return AdviceHistory(
                at, policy.window_seconds, policy.commitment_window_seconds,
                _pods(rows), busy, _teams(team_rows), _reserved(reserved_rows), per_container,
            )
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise TelemetryError(f"Prometheus at {self.api.url} returned a malformed result: {e}") from e


def _pods(rows: Mapping[str, list]) -> tuple[PodHistory, ...]:
    found: dict[tuple[str, str], dict] = {}
    for name, result in rows.items():
        for row in result:
            m = row["metric"]
            if not m.get("pod"):
                continue  # a GPU no pod requests
            entry = found.setdefault((m.get("namespace", ""), m["pod"]), {})
            entry[name] = _value(row)
            if name == "peak_fb":
                entry["model"] = m.get("modelName", "")
            if name == "peak_engine":
                entry["signal"] = m.get(SIGNAL)
    return tuple(
        PodHistory(ns, pod, e.get("model", ""), e.get("peak_fb"), e.get("peak_engine"), e.get("signal"),
                   e.get("gpu_hours"), e.get("busy"), e.get("mean_power"))
        for (ns, pod), e in sorted(found.items())
    )


def _teams(rows: Mapping[str, list]) -> tuple[TeamHistory, ...]:
    found: dict[tuple[str, str], dict] = {}
    for name, result in rows.items():
        for row in result:
            m = row["metric"]
            if m.get("team"):  # GPUs of namespaces in no team asked about
                found.setdefault((m["team"], m.get("modelName", "")), {})[name] = _value(row)
    return tuple(
        TeamHistory(team, model, e.get("baseline", 0.0), e.get("hours_in_use", 0.0), e.get("peak"))
        for (team, model), e in sorted(found.items())
    )


def _reserved(rows: Mapping[str, list]) -> tuple[ReservedHistory, ...]:
    found: dict[str, dict] = {}
    for name, result in rows.items():
        for row in result:
            found.setdefault(row["metric"].get("modelName", ""), {})[name] = _value(row)
    return tuple(
        ReservedHistory(model, e.get("gpus", 0.0), e.get(IDLE_SHARE_QUERY, 0.0))
        for model, e in sorted(found.items()) if IDLE_SHARE_QUERY in e
    )
