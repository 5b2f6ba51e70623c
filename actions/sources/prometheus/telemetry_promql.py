"""The PromQL of the idle sweep's telemetry and the snapshot its answers make: per GPU the window's
peak engine activity, mean power, power limit and coverage, and when it was last busy and first
and last seen over the activity lookback; every dcgm-exporter label convention read as one (see
:mod:`actions.sources.prometheus.telemetry`).
"""

from __future__ import annotations

import math
import operator
from datetime import datetime, timezone
from typing import Any, Mapping

from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE, GpuTelemetry, TelemetrySnapshot
from actions.policy.rules import Policy
from actions.sources.prometheus.promql import (
    GROUP_LABELS,
    LABEL_ALIASES,
    SOURCE_LABELS,
    by_gpu,
    by_series,
    duration,
    number,
)
from actions.telemetry.activity import Key, Seen

# Step of the lookback subqueries (last_active, first_sample): 7 days at 300 s is 2016 steps per
# GPU, cheap; each step takes the max over its own 300 s so short bursts are not stepped over.
LOOKBACK_STEP_SECONDS = 300

SIGNAL_LABEL = "engine_signal"

QUERY_NAMES = ("peak_engine", "mean_power", "coverage", "last_active", "first_sample", "power_limit")
POWER_LIMITS = ("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "DCGM_FI_DEV_POWER_MGMT_LIMIT")


def window_queries(policy: Policy) -> dict[str, str]:
    """The PromQL texts of the figures over ``policy.window_seconds``, by name, each an instant
    query giving one sample per (GPU, namespace, pod) grouped by ``GROUP_LABELS`` (namespace/pod
    empty for a GPU no pod requests).

    - ``peak_engine``: max activity over the window in percent 0-100, label ``engine_signal``
      naming the DCGM field used (ENGINE_ACTIVE preferred, ratio scaled x100).
    - ``mean_power``: mean DCGM_FI_DEV_POWER_USAGE over the window, watts (sample-weighted).
    - ``coverage``: ratio 0-1 of ``policy.sample_step_seconds`` steps in the window at which an
      activity sample was visible, capped at 1.
    - ``power_limit``: the GPU's enforced power limit in watts (``DCGM_FI_DEV_ENFORCED_POWER_LIMIT``,
      else ``DCGM_FI_DEV_POWER_MGMT_LIMIT``), for models without a known idle power ceiling.

    Pure; the count does not depend on the fleet.
    """
    window = duration(policy.window_seconds)
    step = duration(policy.sample_step_seconds)
    steps_in_window = policy.window_seconds / policy.sample_step_seconds

    peak = (
        f'label_replace(100 * {by_gpu("max", f"max_over_time({ENGINE_ACTIVE}[{window}])")}, '
        f'"{SIGNAL_LABEL}", "{ENGINE_ACTIVE}", "", "")'
        f" or ignoring ({SIGNAL_LABEL}) "
        f'label_replace({by_gpu("max", f"max_over_time({GPU_UTIL}[{window}])")}, '
        f'"{SIGNAL_LABEL}", "{GPU_UTIL}", "", "")'
    )
    mean_power = (
        f"{by_gpu('sum', f'sum_over_time({POWER_USAGE}[{window}])')}"
        f" / {by_gpu('sum', f'count_over_time({POWER_USAGE}[{window}])')}"
    )
    coverage = f"clamp_max({by_gpu('max', f'count_over_time({_PRESENT}[{window}:{step}])')} / {number(steps_in_window)}, 1)"
    enforced, managed = POWER_LIMITS
    power_limit = (
        f"{by_gpu('max', f'max_over_time({enforced}[{window}])')} or {by_gpu('max', f'max_over_time({managed}[{window}])')}"
    )
    return {"peak_engine": peak, "mean_power": mean_power, "coverage": coverage, "power_limit": power_limit}


# The subqueries step through raw series grouped by their own labels (by_series) and read the
# label conventions as one once, on their results: the same values as grouping at every step (a
# GPU's series share one convention), for a fraction of Prometheus's CPU. Either signal present:
# one selector and one aggregation a step, a third of the CPU of two and an `or`, with the same
# answer (an `or` of two groups is their union).
_EITHER = '{__name__=~"' + ENGINE_ACTIVE + "|" + GPU_UTIL + '"}'
_PRESENT = f"({by_series('group', _EITHER)})"


def lookback_queries(policy: Policy, span_seconds: float | None = None) -> dict[str, str]:
    """The PromQL texts of the lookback answers over the ``span_seconds`` before the evaluation
    time (default ``policy.activity_lookback_seconds``), by name, grouped as :func:`window_queries`,
    each a subquery stepping every ``LOOKBACK_STEP_SECONDS`` (steps at multiples of it):

    - ``last_active``: unix seconds of the last step whose activity exceeded
      ``policy.engine_idle_pct`` (no sample when never); each step takes the max over its own
      ``LOOKBACK_STEP_SECONDS`` so short bursts are not stepped over; late by at most one step,
      so idle time is never overstated.
    - ``first_sample``/``last_sample``: unix seconds of the first/last step at which an activity
      sample was visible (at most one step after the true sample).

    Pure.
    """
    span = duration(policy.activity_lookback_seconds if span_seconds is None else span_seconds)
    bucket = duration(LOOKBACK_STEP_SECONDS)
    busy = (
        f"((100 * {by_series('max', f'max_over_time({ENGINE_ACTIVE}[{bucket}])')})"
        f" or {by_series('max', f'max_over_time({GPU_UTIL}[{bucket}])')})"
        f" > {number(policy.engine_idle_pct)}"
    )
    return {
        "last_active": by_gpu("max", f"max_over_time(timestamp({busy})[{span}:{bucket}])"),
        "first_sample": by_gpu("min", f"min_over_time(timestamp({_PRESENT})[{span}:{bucket}])"),
        "last_sample": by_gpu("max", f"max_over_time(timestamp({_PRESENT})[{span}:{bucket}])"),
    }


def telemetry_queries(policy: Policy) -> dict[str, str]:
    """The PromQL texts a fetch without a state store runs, by name (``QUERY_NAMES``): the
    :func:`window_queries` and the ``last_active`` and ``first_sample`` of :func:`lookback_queries`
    over the whole ``policy.activity_lookback_seconds``. Pure; the count does not depend on the
    fleet."""
    lookback = lookback_queries(policy)
    queries = {**window_queries(policy), "last_active": lookback["last_active"], "first_sample": lookback["first_sample"]}
    return {name: queries[name] for name in QUERY_NAMES}


def activity_policy(policy: Policy) -> str:
    """What the lookback answers depend on besides the series, as the state store keys them:
    the idle threshold, the lookback and its step, e.g. ``"1%/604800s/300s"``."""
    return f"{number(policy.engine_idle_pct)}%/{duration(policy.activity_lookback_seconds)}/{duration(LOOKBACK_STEP_SECONDS)}"


def presence_query() -> str:
    """The PromQL text, as a range query stepping every ``policy.sample_step_seconds``, of the
    steps at which each series set (``SOURCE_LABELS``) had an activity sample visible: a point
    at each of them (:mod:`actions.telemetry.presence`). The coverage query counts the same points. Pure."""
    return _PRESENT


# A decoded series' telemetry key (its GROUP_LABELS), and a presence series' set (its SOURCE_LABELS).
# A decoded series' telemetry key (its GROUP_LABELS) and its own labels' values (SOURCE_LABELS).
metric_key = operator.attrgetter(*GROUP_LABELS)
source_key = operator.attrgetter(*SOURCE_LABELS)
_GROUP_AT = tuple(SOURCE_LABELS.index(label) for label in GROUP_LABELS)
_ALIAS_AT = tuple((GROUP_LABELS.index(target), SOURCE_LABELS.index(source)) for target, source in LABEL_ALIASES)


def group_key(source: tuple[str, ...]) -> Key:
    """The telemetry key of a series set named by its own labels (values in the order of
    ``SOURCE_LABELS``, "" when absent): the label conventions read as one as ``label_replace``
    does in :func:`~actions.sources.prometheus.promql.pod_labels` (a non-empty source label wins)."""
    key = [source[i] for i in _GROUP_AT]
    for target, at in _ALIAS_AT:
        if source[at]:
            key[target] = source[at]
    return tuple(key)


def sample_value(sample: Any) -> float | None:
    v = float(sample.value[1])
    return None if math.isnan(v) else v


def unix_time(unix: float | None) -> datetime | None:
    return None if unix is None else datetime.fromtimestamp(unix, tz=timezone.utc)


def assemble_snapshot(
    at: datetime, window_seconds: float, results: Mapping[str, list[Any]],
    lookback: Mapping[Key, Seen] | None = None, coverage: Mapping[Key, float] | None = None,
) -> TelemetrySnapshot:
    """Join the per-query results (``data.result`` lists as :meth:`~actions.sources.prometheus.api.PrometheusApi.vector` decodes
    them, keyed by the names of ``telemetry_queries``) into one GpuTelemetry per (GPU, namespace,
    pod), sorted by node, GPU.
    ``lookback`` (the answers kept in a state store, unix seconds) gives ``last_active`` and
    ``first_sample``, and ``coverage`` (ratio 0-1) the coverage, instead of the results of
    those names.

    ``gpu`` is the UUID, or ``"<Hostname>/<gpu index>"`` when the series carry no UUID, with
    ``/<GPU_I_ID>`` after it for a MIG instance. Raises KeyError/ValueError on a malformed result.
    """
    by_key: dict[Key, dict[str, Any]] = {}
    for name in QUERY_NAMES:
        for sample in results.get(name, ()):
            metric = sample.metric
            entry = by_key.setdefault(metric_key(metric), {})
            entry[name] = sample_value(sample)
            if name == "peak_engine":
                entry["signal"] = metric.engine_signal
    for key, ratio in (coverage or {}).items():
        by_key.setdefault(key, {})["coverage"] = ratio
    for key, seen in (lookback or {}).items():
        if seen.last_active is None and seen.first_sample is None:
            continue
        entry = by_key.setdefault(key, {})
        if seen.last_active is not None:
            entry["last_active"] = seen.last_active
        if seen.first_sample is not None:
            entry["first_sample"] = seen.first_sample

    gpus = []
    # Lookback answers are steps, shared by many GPUs: one datetime per distinct time.
    times: dict[float | None, datetime | None] = {None: None}

    def when(unix: float | None) -> datetime | None:
        t = times.get(unix, times)
        if t is times:
            t = times[unix] = unix_time(unix)
        return t  # type: ignore[return-value]

    for key, e in by_key.items():
        uuid, index, instance, profile, host, model, namespace, pod = key
        gpu = uuid or f"{host}/{index}"
        gpus.append(
            GpuTelemetry(
                namespace=namespace,
                pod=pod,
                gpu=f"{gpu}/{instance}" if instance else gpu,
                model_name=model,
                engine_signal=e.get("signal"),
                peak_engine_pct=e.get("peak_engine"),
                mean_power_w=e.get("mean_power"),
                coverage=e.get("coverage") or 0.0,
                node=host or None,
                last_active=when(e.get("last_active")),
                first_sample=when(e.get("first_sample")),
                mig_profile=profile or None,
                power_limit_w=e.get("power_limit"),
            )
        )
    gpus.sort(key=lambda g: (g.node or "", g.gpu, g.namespace, g.pod))
    return TelemetrySnapshot(at=at, window_seconds=window_seconds, gpus=tuple(gpus))
