"""Per-GPU telemetry from dcgm-exporter series in Prometheus.

Every figure is aggregated server-side in PromQL, one instant query per signal evaluated at the
caller's ``at``, so a fetch costs ``len(telemetry_queries(policy))`` requests however large the
fleet is. Both dcgm-exporter pod-label conventions are read: ``pod``/``namespace`` (honor_labels
on) and ``exported_pod``/``exported_namespace`` (honor_labels off, where ``pod``/``namespace``
name the exporter itself and are overridden).
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any, Callable, Mapping

import requests
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential
from urllib3.util.retry import Retry

from actions.model import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE, GpuTelemetry, TelemetrySnapshot
from actions.policy import Policy

# Labels one GPU-per-pod result is grouped by. modelName and Hostname are constant per GPU; they
# ride along so one query returns them without a separate metadata lookup.
GROUP_LABELS = ("UUID", "gpu", "Hostname", "modelName", "namespace", "pod")

# Step of the lookback subqueries (last_active, first_sample): 7 days at 300 s is 2016 steps per
# GPU, cheap; each step takes the max over its own 300 s so short bursts are not stepped over.
LOOKBACK_STEP_SECONDS = 300

SIGNAL_LABEL = "engine_signal"

QUERY_NAMES = ("peak_engine", "mean_power", "coverage", "last_active", "first_sample")


class TelemetryError(RuntimeError):
    """Prometheus could not be reached or answered an error; the message names URL and query."""


def _duration(seconds: float) -> str:
    """A PromQL duration; PromQL 2.x rejects fractional units, so fall back to milliseconds."""
    if float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000)}ms"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _pod_labels(expr: str) -> str:
    """Move exported_pod/exported_namespace onto pod/namespace where present."""
    inner = f'label_replace({expr}, "pod", "$1", "exported_pod", "(.+)")'
    return f'label_replace({inner}, "namespace", "$1", "exported_namespace", "(.+)")'


def _by_gpu(agg: str, expr: str) -> str:
    return f"{agg} by ({', '.join(GROUP_LABELS)}) ({_pod_labels(expr)})"


def _activity_pct(engine_expr: str, util_expr: str) -> str:
    """Activity in percent 0-100 per GPU: ENGINE_ACTIVE (ratio, x100) where exported, else
    GPU_UTIL. ``engine_expr``/``util_expr`` are per-series expressions of the two metrics."""
    return f"(100 * {_by_gpu('max', engine_expr)}) or {_by_gpu('max', util_expr)}"


def telemetry_queries(policy: Policy) -> dict[str, str]:
    """The PromQL texts one fetch runs, by name, each an instant query giving one sample per
    (GPU, namespace, pod) grouped by ``GROUP_LABELS`` (namespace/pod empty for a GPU no pod holds).

    - ``peak_engine``: max activity over ``policy.window_seconds`` in percent 0-100, label
      ``engine_signal`` naming the DCGM field used (ENGINE_ACTIVE preferred, ratio scaled x100).
    - ``mean_power``: mean DCGM_FI_DEV_POWER_USAGE over the window, watts (sample-weighted).
    - ``coverage``: ratio 0-1 of ``policy.sample_step_seconds`` steps in the window at which an
      activity sample was visible, capped at 1.
    - ``last_active``: unix seconds of the last ``LOOKBACK_STEP_SECONDS`` step within
      ``policy.activity_lookback_seconds`` whose activity exceeded ``policy.engine_idle_pct``
      (no sample when never); late by at most one step, so idle time is never overstated.
    - ``first_sample``: unix seconds of the first lookback step at which an activity sample was
      visible (at most one step after the true first sample).

    Pure; the count does not depend on the fleet.
    """
    window = _duration(policy.window_seconds)
    step = _duration(policy.sample_step_seconds)
    lookback = _duration(policy.activity_lookback_seconds)
    bucket = _duration(LOOKBACK_STEP_SECONDS)
    steps_in_window = policy.window_seconds / policy.sample_step_seconds

    peak = (
        f'label_replace(100 * {_by_gpu("max", f"max_over_time({ENGINE_ACTIVE}[{window}])")}, '
        f'"{SIGNAL_LABEL}", "{ENGINE_ACTIVE}", "", "")'
        f" or ignoring ({SIGNAL_LABEL}) "
        f'label_replace({_by_gpu("max", f"max_over_time({GPU_UTIL}[{window}])")}, '
        f'"{SIGNAL_LABEL}", "{GPU_UTIL}", "", "")'
    )
    mean_power = (
        f"{_by_gpu('sum', f'sum_over_time({POWER_USAGE}[{window}])')}"
        f" / {_by_gpu('sum', f'count_over_time({POWER_USAGE}[{window}])')}"
    )
    present = _activity_pct(ENGINE_ACTIVE, GPU_UTIL)
    coverage = f"clamp_max(count_over_time(({present})[{window}:{step}]) / {_number(steps_in_window)}, 1)"
    busy = (
        f"({_activity_pct(f'max_over_time({ENGINE_ACTIVE}[{bucket}])', f'max_over_time({GPU_UTIL}[{bucket}])')})"
        f" > {_number(policy.engine_idle_pct)}"
    )
    last_active = f"max_over_time(timestamp({busy})[{lookback}:{bucket}])"
    first_sample = f"min_over_time(timestamp({present})[{lookback}:{bucket}])"
    return {
        "peak_engine": peak,
        "mean_power": mean_power,
        "coverage": coverage,
        "last_active": last_active,
        "first_sample": first_sample,
    }


Key = tuple[str, ...]


def _key(metric: Mapping[str, str]) -> Key:
    return tuple(metric.get(label, "") for label in GROUP_LABELS)


def _value(sample: Mapping[str, Any]) -> float | None:
    v = float(sample["value"][1])
    return None if math.isnan(v) else v


def _time(unix: float | None) -> datetime | None:
    return None if unix is None else datetime.fromtimestamp(unix, tz=timezone.utc)


def assemble_snapshot(
    at: datetime, window_seconds: float, results: Mapping[str, list[Mapping[str, Any]]]
) -> TelemetrySnapshot:
    """Join the per-query results (Prometheus ``data.result`` lists keyed by the names of
    ``telemetry_queries``) into one GpuTelemetry per (GPU, namespace, pod), sorted by node, GPU.

    ``gpu`` is the UUID, or ``"<Hostname>/<gpu index>"`` when the series carry no UUID. Raises
    KeyError/ValueError on a malformed result.
    """
    by_key: dict[Key, dict[str, Any]] = {}
    for name in QUERY_NAMES:
        for sample in results.get(name, []):
            metric = sample["metric"]
            entry = by_key.setdefault(_key(metric), {})
            entry[name] = _value(sample)
            if name == "peak_engine":
                entry["signal"] = metric.get(SIGNAL_LABEL)

    gpus = []
    for key, e in by_key.items():
        uuid, index, host, model, namespace, pod = key
        gpus.append(
            GpuTelemetry(
                namespace=namespace,
                pod=pod,
                gpu=uuid or f"{host}/{index}",
                model_name=model,
                engine_signal=e.get("signal"),
                peak_engine_pct=e.get("peak_engine"),
                mean_power_w=e.get("mean_power"),
                coverage=e.get("coverage") or 0.0,
                node=host or None,
                last_active=_time(e.get("last_active")),
                first_sample=_time(e.get("first_sample")),
            )
        )
    gpus.sort(key=lambda g: (g.node or "", g.gpu, g.namespace, g.pod))
    return TelemetrySnapshot(at=at, window_seconds=window_seconds, gpus=tuple(gpus))


class PrometheusApi:
    """One Prometheus (or compatible: Thanos, Mimir, VictoriaMetrics) HTTP API at ``url``, shared by
    every source that queries it.

    ``headers`` are sent with every request (e.g. ``Authorization``, ``X-Scope-OrgID``);
    ``timeout_seconds`` bounds each request. Failures to connect are retried ``attempts`` times in
    all with exponential backoff before TelemetryError is raised; a query that timed out is not
    retried (it would take as long again). ``requests`` counts the queries sent.
    """

    def __init__(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        *,
        verify_tls: bool = True,
        timeout_seconds: float = 30,
        attempts: int = 3,
    ):
        self.url = url.rstrip("/")
        self.requests = 0
        self._attempts = attempts
        self._timeout = timeout_seconds
        # Retries belong to tenacity alone; urllib3's own would multiply with them.
        self._client = PrometheusConnect(
            url=self.url,
            headers=headers,
            disable_ssl=not verify_tls,
            # read=False: urllib3 then raises a read timeout as itself, not as a connection error.
            retry=Retry(total=0, read=False, raise_on_status=False),
            timeout=timeout_seconds,
        )

    def instant(self, name: str, promql: str, at: datetime) -> list[dict[str, Any]]:
        """The ``result`` of an instant query evaluated at ``at`` (aware datetime): a list of
        ``{"metric": {...}, "value": [ts, "v"]}``. ``name`` says which query in errors. Raises
        ValueError for a naive ``at``, TelemetryError when Prometheus is unreachable or refuses."""
        if at.tzinfo is None:
            raise ValueError(f"at={at!r} has no time zone; pass an aware UTC datetime")
        return self._call(name, promql, lambda: self._client.custom_query(promql, params={"time": at.timestamp()}))

    def range(self, name: str, promql: str, start: datetime, end: datetime, step_seconds: float) -> list[dict[str, Any]]:
        """The ``result`` of a range query from ``start`` to ``end`` every ``step_seconds``: a list
        of ``{"metric": {...}, "values": [[ts, "v"], ...]}``. Raises as :meth:`instant`."""
        step = f"{step_seconds:g}s"
        return self._call(name, promql, lambda: self._client.custom_query_range(promql, start, end, step))

    def _call(self, name: str, promql: str, fn: Callable[[], Any]) -> list[dict[str, Any]]:
        retrying = Retrying(
            stop=stop_after_attempt(self._attempts),
            wait=wait_exponential(multiplier=0.5, max=8),
            # ConnectTimeout is a ConnectionError; ReadTimeout (a slow query) is not.
            retry=retry_if_exception_type(requests.ConnectionError),
            reraise=True,
        )
        self.requests += 1
        try:
            return retrying(fn)
        except requests.ReadTimeout as e:
            raise TelemetryError(
                f"Prometheus at {self.url} did not answer the {name} query within {self._timeout:g} s "
                f"(raise prometheus.timeout_seconds, or the query is too heavy): {promql!r}"
            ) from e
        except requests.ConnectionError as e:
            raise TelemetryError(
                f"Prometheus at {self.url} unreachable after {self._attempts} attempts "
                f"running the {name} query {promql!r}: {e}"
            ) from e
        except (PrometheusApiClientException, requests.RequestException, ValueError, KeyError) as e:
            raise TelemetryError(f"Prometheus at {self.url} failed the {name} query {promql!r}: {e}") from e


class PrometheusTelemetry:
    """Reads per-GPU telemetry through a :class:`PrometheusApi` at ``url`` (arguments as there)."""

    def __init__(self, url: str, headers: dict[str, str] | None = None, **options: Any):
        self.api = PrometheusApi(url, headers, **options)
        self.url = self.api.url

    def fetch(self, at: datetime, policy: Policy) -> TelemetrySnapshot:
        """Telemetry of every GPU over ``policy.window_seconds`` ending at ``at`` (aware datetime;
        the queries are evaluated at ``at``, never at the wall clock).

        Returns one GpuTelemetry per (GPU, namespace, pod) seen in the window (see
        ``telemetry_queries`` for units). Raises ValueError for a naive ``at`` and TelemetryError
        when Prometheus is unreachable or answers an error.
        """
        if at.tzinfo is None:
            raise ValueError(f"at={at!r} has no time zone; pass an aware UTC datetime")
        at = at.astimezone(timezone.utc)
        results = {name: self.api.instant(name, q, at) for name, q in telemetry_queries(policy).items()}
        try:
            return assemble_snapshot(at, policy.window_seconds, results)
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise TelemetryError(f"Prometheus at {self.url} returned a malformed result: {e}") from e
