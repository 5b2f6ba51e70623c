"""The advice facts of one piece of time (:class:`~actions.model.advice_hours.AdviceHour`) from
dcgm-exporter series in Prometheus: what the usage ledger keeps per hour, and what advice over
the ledger reads live for the hours it does not hold yet.

Each figure is the per-hour part of a query of :mod:`actions.sources.prometheus.history`, with the
same label handling: the peaks over ``(start, end]``; at each 5-minute step, in one range query,
the GPU series with an activity sample and the busy ones per container (a pod's are its
containers' summed); at the piece's hour mark the hourly mean power per pod, the whole GPUs per
namespace and each node's GPUs and idle ones. At most six queries a piece, however many GPUs.
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
    container_label,
    namespace_gpus,
    node_gpus,
    peak_queries,
)
from actions.sources.prometheus.promql import number, open_window, pod_labels
from actions.sources.prometheus.usage import first_hour_with

# Each GPU series adds this plus 1 when busy (idle, at the node marks), 0 when not: one evaluation
# of the activity gives both the series present (the quotient) and the busy or idle ones (the
# remainder), for as long as a container or a node has fewer GPU series than this.
_PRESENT = 1000


def step_query(policy: AdvicePolicy) -> str:
    """The per-step PromQL, evaluated by a range query at the piece's steps: per pod and container,
    :data:`_PRESENT` x its GPU series with an activity sample + those above ``busy_engine_pct``. Pure."""
    flagged = f"(({ACTIVITY} > bool {number(policy.busy_engine_pct)}) + {_PRESENT})"
    return f"sum by (namespace, pod, container) ({container_label(pod_labels(f'sum by ({POD_KEYS}, {CONTAINER_KEYS}) ({flagged})'))})"


def mark_queries(policy: AdvicePolicy) -> dict[str, str]:
    """The PromQL evaluated at the hour mark: ``power`` (the hour's mean per GPU, the highest per
    pod), ``namespaces`` and per node ``nodes``: :data:`_PRESENT` x its GPUs + the idle ones
    (at most ``busy_engine_pct``). Pure."""
    return {
        "power": peak_queries(open_window(3600))["mean_power"],
        "namespaces": namespace_gpus(),
        "nodes": f"sum by (Hostname, modelName) (({node_gpus()} <= bool {number(policy.busy_engine_pct)}) + {_PRESENT})",
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
        stepped = self.api.range("advice hour steps", step_query(policy), steps[0], steps[-1], STEP_SECONDS) if steps else []
        marked = {name: self.api.instant(f"advice hour {name}", q, mark)
                  for name, q in mark_queries(policy).items()} if mark else {}
        try:
            return AdviceHour(
                start, end, policy.busy_engine_pct, steps[0] if steps else None, mark,
                _pods(peaks, stepped, marked.get("power", []), steps),
                _namespaces(marked.get("namespaces", [])), _nodes(marked.get("nodes", [])),
            )
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise TelemetryError(f"Prometheus at {self.api.url} returned a malformed result: {e}") from e


def _steps(values: list, steps: list[datetime]) -> tuple[list[int | None], int]:
    """A container's (busy GPUs per step, None where no sample; GPU-steps) from ``values``."""
    at = {int(float(t)): _count(v, "a step's GPU series") for t, v in values}
    busy = [at[k] % _PRESENT if k in at else None for k in (int(s.timestamp()) for s in steps)]
    return busy, sum(v // _PRESENT for v in at.values())


def _pods(peaks: Mapping[str, list], stepped: list, power: list, steps: list[datetime]) -> tuple[PodHour, ...]:
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
    containers: dict[tuple[str, str], list[tuple[str, list[int | None]]]] = defaultdict(list)
    for row in stepped:
        m = row["metric"]
        if m.get("pod"):
            key = (m.get("namespace", ""), m["pod"])
            busy, gpu_steps = _steps(row["values"], steps)
            e = found[key]
            e["steps"] = e.get("steps", 0) + gpu_steps
            containers[key].append((m.get("container", ""), busy))
    out = []
    for key, e in sorted(found.items()):
        mine = containers.get(key, [])
        # A pod's busy GPUs at a step are its containers' summed, where any had a sample.
        summed = [None if all(b[i] is None for _, b in mine) else sum(b[i] or 0 for _, b in mine)
                  for i in range(len(steps))] if mine else []
        named = sorted((c, encode_steps(b)) for c, b in mine if c)
        out.append(PodHour(key[0], key[1], e.get("model", ""), e.get("fb"), e.get("engine"), e.get("signal"),
                           e.get("steps", 0), encode_steps(summed), e.get("power"), tuple(named) if len(named) > 1 else ()))
    return tuple(out)


def _namespaces(rows: list) -> tuple[NamespaceMark, ...]:
    found: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows:
        m = row["metric"]
        if m.get("namespace"):  # a GPU no pod requests
            found[(m["namespace"], m.get("modelName", ""))] += _count(row["value"][1], "a GPU count")
    return tuple(NamespaceMark(ns, model, n) for (ns, model), n in sorted(found.items()))


def _nodes(rows: list) -> tuple[NodeMark, ...]:
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        m = row["metric"]
        gpus, idle = divmod(_count(row["value"][1], "a GPU count"), _PRESENT)
        acc = counts[(m.get("Hostname", ""), m.get("modelName", ""))]
        acc[0] += gpus
        acc[1] += idle
    return tuple(NodeMark(node, model, n, k) for (node, model), (n, k) in sorted(counts.items()))
