"""The advice facts of one piece of time (:class:`~actions.model.advice_hours.AdviceHour`) from
dcgm-exporter series in Prometheus: what the usage ledger keeps per hour, and what advice over
the ledger reads live for the hours it does not hold yet.

Each figure is the per-hour part of a query of :mod:`actions.sources.prometheus.history`, with the
same label handling: the peaks over ``(start, end]``; at each 5-minute step (one range query per
figure) the GPUs busy and the GPU series with an activity sample per pod, and per container for
pods of several GPU containers; at the piece's hour mark the hourly mean power per pod, the whole
GPUs per namespace and each node's GPUs and idle ones. At most eight queries a piece, however many
GPUs.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from typing import Mapping

from actions.model.advice_hours import (
    STEP_SECONDS,
    AdviceHour,
    NamespaceMark,
    NodeMark,
    PodHour,
    encode_steps,
    mark_in,
    steps_in,
)
from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL
from actions.policy.advice import AdvicePolicy
from actions.sources.prometheus.api import PrometheusApi, TelemetryError
from actions.sources.prometheus.history import (
    ACTIVITY,
    CONTAINER_KEYS,
    POD_KEYS,
    SIGNAL,
    busy_at_once,
    container_label,
    namespace_gpus,
    node_gpus,
    peak_queries,
)
from actions.sources.prometheus.promql import number, open_window, pod_labels
from actions.sources.prometheus.usage import first_hour_with


def step_queries(policy: AdvicePolicy) -> dict[str, str]:
    """The per-step PromQL, each evaluated by a range query at the piece's steps: ``busy`` and
    ``present`` per pod, ``containers`` per pod and container. Pure."""
    thr = number(policy.busy_engine_pct)
    per_container = pod_labels(f"sum by ({POD_KEYS}, {CONTAINER_KEYS}) ({ACTIVITY} > bool {thr})")
    return {
        "busy": f"max by (namespace, pod) ({pod_labels(busy_at_once(policy))})",
        "present": f"sum by (namespace, pod) ({pod_labels(f'count by ({POD_KEYS}) ({ACTIVITY})')})",
        "containers": f"sum by (namespace, pod, container) ({container_label(per_container)})",
    }


def mark_queries(policy: AdvicePolicy) -> dict[str, str]:
    """The PromQL evaluated at the hour mark: ``power`` (the hour's mean per GPU, the highest per
    pod), ``namespaces`` and per node ``gpus`` and ``idle``. Pure."""
    per_gpu = node_gpus()
    return {
        "power": peak_queries(open_window(3600))["mean_power"],
        "namespaces": namespace_gpus(),
        "gpus": f"count by (Hostname, modelName) ({per_gpu})",
        "idle": f"sum by (Hostname, modelName) ({per_gpu} <= bool {number(policy.busy_engine_pct)})",
    }


def _count(value: str, what: str) -> int:
    v = float(value)
    if not v.is_integer() or v < 0:
        raise ValueError(f"{what} is not a count of GPUs: {value}")
    return int(v)


class PrometheusAdviceHours:
    """Reads :class:`~actions.model.advice_hours.AdviceHour` through a :class:`PrometheusApi`."""

    def __init__(self, api: PrometheusApi):
        self.api = api

    def first_data_hour(self, since: datetime, until: datetime) -> datetime | None:
        """The first hour in ``[since, until)`` in which Prometheus holds any DCGM activity series
        (``DCGM_FI_DEV_GPU_UTIL`` or ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``), None when none. Raises
        TelemetryError when Prometheus fails."""
        return first_hour_with(self.api, f'{{__name__=~"{GPU_UTIL}|{ENGINE_ACTIVE}"}}', since, until)

    def fetch(self, start: datetime, end: datetime, policy: AdvicePolicy) -> AdviceHour:
        """The facts of ``(start, end]`` (aware; at most an hour). Raises ValueError for naive,
        reversed or longer pieces, TelemetryError when Prometheus fails or answers something
        malformed."""
        if start.tzinfo is None or end.tzinfo is None:
            raise ValueError("start and end need a time zone; pass aware UTC datetimes")
        start, end = start.astimezone(timezone.utc), end.astimezone(timezone.utc)
        if not start < end or (end - start).total_seconds() > 3600:
            raise ValueError(f"a piece is (start, end] of at most an hour, got {start.isoformat()} to {end.isoformat()}")
        peaks = {name: self.api.instant(f"advice hour {name}", q, end)
                 for name, q in peak_queries(open_window((end - start).total_seconds())).items() if name != "mean_power"}
        steps, mark = steps_in(start, end), mark_in(start, end)
        stepped = {name: self.api.range(f"advice hour {name}", q, steps[0], steps[-1], STEP_SECONDS)
                   for name, q in step_queries(policy).items()} if steps else {}
        marked = {name: self.api.instant(f"advice hour {name}", q, mark)
                  for name, q in mark_queries(policy).items()} if mark else {}
        try:
            return AdviceHour(
                start, end, policy.busy_engine_pct, steps[0] if steps else None, mark,
                _pods(peaks, stepped, marked.get("power", []), steps),
                _namespaces(marked.get("namespaces", [])), _nodes(marked.get("gpus", []), marked.get("idle", [])),
            )
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise TelemetryError(f"Prometheus at {self.api.url} returned a malformed result: {e}") from e


def _vector(values: list, steps: list[datetime]) -> list[int | None]:
    at = {int(float(t)): v for t, v in values}
    return [None if int(s.timestamp()) not in at else _count(at[int(s.timestamp())], "a busy count") for s in steps]


def _pods(peaks: Mapping[str, list], stepped: Mapping[str, list], power: list, steps: list[datetime]) -> tuple[PodHour, ...]:
    found: dict[tuple[str, str], dict] = defaultdict(dict)
    for row in peaks.get("peak_fb", []):
        m = row["metric"]
        if m.get("pod"):
            found[(m.get("namespace", ""), m["pod"])].update(model=m.get("modelName", ""), fb=float(row["value"][1]))
    for row in peaks.get("peak_engine", []):
        m = row["metric"]
        if m.get("pod"):
            found[(m.get("namespace", ""), m["pod"])].update(engine=float(row["value"][1]), signal=m.get(SIGNAL))
    for row in power:
        m = row["metric"]
        if m.get("pod"):
            found[(m.get("namespace", ""), m["pod"])]["power"] = float(row["value"][1])
    for row in stepped.get("present", []):
        m = row["metric"]
        if m.get("pod"):
            found[(m.get("namespace", ""), m["pod"])]["steps"] = sum(_count(v, "a GPU count") for _, v in row["values"])
    for row in stepped.get("busy", []):
        m = row["metric"]
        if m.get("pod"):
            found[(m.get("namespace", ""), m["pod"])]["busy"] = encode_steps(_vector(row["values"], steps))
    containers: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for row in stepped.get("containers", []):
        m = row["metric"]
        if m.get("pod") and m.get("container"):
            containers[(m.get("namespace", ""), m["pod"])].append((m["container"], encode_steps(_vector(row["values"], steps))))
    return tuple(
        PodHour(ns, pod, e.get("model", ""), e.get("fb"), e.get("engine"), e.get("signal"), e.get("steps", 0),
                e.get("busy", ""), e.get("power"),
                tuple(sorted(containers[(ns, pod)])) if len(containers.get((ns, pod), ())) > 1 else ())
        for (ns, pod), e in sorted(found.items())
    )


def _namespaces(rows: list) -> tuple[NamespaceMark, ...]:
    found: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows:
        m = row["metric"]
        if m.get("namespace"):  # a GPU no pod requests
            found[(m["namespace"], m.get("modelName", ""))] += _count(row["value"][1], "a GPU count")
    return tuple(NamespaceMark(ns, model, n) for (ns, model), n in sorted(found.items()))


def _nodes(gpus: list, idle: list) -> tuple[NodeMark, ...]:
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for i, rows in enumerate((gpus, idle)):
        for row in rows:
            m = row["metric"]
            counts[(m.get("Hostname", ""), m.get("modelName", ""))][i] += _count(row["value"][1], "a GPU count")
    return tuple(NodeMark(node, model, n, k) for (node, model), (n, k) in sorted(counts.items()))
