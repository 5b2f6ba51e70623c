"""Per-GPU telemetry from dcgm-exporter series in Prometheus.

Every figure is aggregated server-side in PromQL, one instant query per signal evaluated at the
caller's ``at``, so a fetch costs a fixed number of requests however large the fleet is: the
window's four and two over the whole activity lookback; or, with a state store, the window's
peak, power and power limit, the steps of the window since the last fetch at which each series
set was seen as one number (:mod:`actions.presence`: the coverage, and the first and last sample
since) and when each GPU was last busy since the last fetch (:mod:`actions.activity`): minutes
of steps instead of an hour and 7 days. Every dcgm-exporter label convention is read as one:

- the pod: ``pod``/``namespace`` (honor_labels on), ``exported_pod``/``exported_namespace``
  (honor_labels off, where ``pod``/``namespace`` name the exporter itself), and
  ``pod_name``/``pod_namespace`` (``--use-old-namespace``);
- the GPU: ``UUID``, or ``uuid`` under ``--use-old-namespace`` (dcgm-exporter
  internal/pkg/collector/gpu_collector.go);
- the node: ``Hostname`` (releases to 4.x) and ``hostname`` (its main branch);
- MIG: one series per GPU instance, told apart by ``GPU_I_ID`` and named by ``GPU_I_PROFILE``.
"""

from __future__ import annotations

import math
import operator
import re
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Protocol

import requests
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential
from urllib3.util.retry import Retry

from actions.activity import Key, Row, Seen, decode, encode, lookback_answers, merge, span_seconds
from actions.model import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE, GpuTelemetry, TelemetrySnapshot
from actions.policy import Policy
from actions.presence import Presence, advance, first_last, step_mask, step_range
from actions.sources import prometheus_wire
from actions.sources.promql_scope import matcher, scoped

# Labels one GPU-per-pod result is grouped by. modelName and Hostname are constant per GPU; they
# ride along so one query returns them without a separate metadata lookup.
GROUP_LABELS = ("UUID", "gpu", "GPU_I_ID", "GPU_I_PROFILE", "Hostname", "modelName", "namespace", "pod")

# Step of the lookback subqueries (last_active, first_sample): 7 days at 300 s is 2016 steps per
# GPU, cheap; each step takes the max over its own 300 s so short bursts are not stepped over.
LOOKBACK_STEP_SECONDS = 300

SIGNAL_LABEL = "engine_signal"

QUERY_NAMES = ("peak_engine", "mean_power", "coverage", "last_active", "first_sample", "power_limit")
POWER_LIMITS = ("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "DCGM_FI_DEV_POWER_MGMT_LIMIT")


class TelemetryError(RuntimeError):
    """Prometheus could not be reached or answered an error. The message names the URL, the
    query by name and what went wrong (the HTTP status when there was one), never the whole
    PromQL, which is kept in ``promql`` for logs; ``status`` is the HTTP status (None when no
    answer came)."""

    def __init__(self, message: str, *, url: str = "", status: int | None = None, promql: str = ""):
        super().__init__(message)
        self.url = url
        self.status = status
        self.promql = promql


def _duration(seconds: float) -> str:
    """A PromQL duration; PromQL 2.x rejects fractional units, so fall back to milliseconds."""
    if float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000)}ms"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# (label to fill, label that carries the value under another convention), applied in order.
_LABEL_ALIASES = (
    ("pod", "pod_name"),
    ("namespace", "pod_namespace"),
    ("pod", "exported_pod"),
    ("namespace", "exported_namespace"),
    ("Hostname", "hostname"),
    ("UUID", "uuid"),
)


def _pod_labels(expr: str) -> str:
    """Copy the other conventions' pod, namespace, node and GPU labels onto ``pod``,
    ``namespace``, ``Hostname`` and ``UUID`` where present (see the module docstring)."""
    for target, source in _LABEL_ALIASES:
        expr = f'label_replace({expr}, "{target}", "$1", "{source}", "(.+)")'
    return expr


def _by_gpu(agg: str, expr: str) -> str:
    return f"{agg} by ({', '.join(GROUP_LABELS)}) ({_pod_labels(expr)})"


# Every label one of GROUP_LABELS is read from, under any convention (_LABEL_ALIASES): grouping by
# these keeps one GPU's series apart from another's without rewriting a label.
SOURCE_LABELS = tuple(dict.fromkeys([*GROUP_LABELS, *(source for _, source in _LABEL_ALIASES)]))


def _by_series(agg: str, expr: str) -> str:
    """``agg`` of ``expr`` per GPU and pod as the series name them, before the conventions are
    read as one: what a subquery evaluates at each of its steps, where six ``label_replace``
    per series per step cost Prometheus seconds at 10,000 GPUs."""
    return f"{agg} by ({', '.join(SOURCE_LABELS)}) ({expr})"


def _activity_pct(engine_expr: str, util_expr: str) -> str:
    """Activity in percent 0-100 per GPU: ENGINE_ACTIVE (ratio, x100) where exported, else
    GPU_UTIL. ``engine_expr``/``util_expr`` are per-series expressions of the two metrics."""
    return f"(100 * {_by_gpu('max', engine_expr)}) or {_by_gpu('max', util_expr)}"


def window_queries(policy: Policy) -> dict[str, str]:
    """The PromQL texts of the figures over ``policy.window_seconds``, by name, each an instant
    query giving one sample per (GPU, namespace, pod) grouped by ``GROUP_LABELS`` (namespace/pod
    empty for a GPU no pod holds).

    - ``peak_engine``: max activity over the window in percent 0-100, label ``engine_signal``
      naming the DCGM field used (ENGINE_ACTIVE preferred, ratio scaled x100).
    - ``mean_power``: mean DCGM_FI_DEV_POWER_USAGE over the window, watts (sample-weighted).
    - ``coverage``: ratio 0-1 of ``policy.sample_step_seconds`` steps in the window at which an
      activity sample was visible, capped at 1.
    - ``power_limit``: the GPU's enforced power limit in watts (``DCGM_FI_DEV_ENFORCED_POWER_LIMIT``,
      else ``DCGM_FI_DEV_POWER_MGMT_LIMIT``), for models without a known idle power ceiling.

    Pure; the count does not depend on the fleet.
    """
    window = _duration(policy.window_seconds)
    step = _duration(policy.sample_step_seconds)
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
    coverage = f"clamp_max({_by_gpu('max', f'count_over_time({_PRESENT}[{window}:{step}])')} / {_number(steps_in_window)}, 1)"
    enforced, managed = POWER_LIMITS
    power_limit = (
        f"{_by_gpu('max', f'max_over_time({enforced}[{window}])')} or {_by_gpu('max', f'max_over_time({managed}[{window}])')}"
    )
    return {"peak_engine": peak, "mean_power": mean_power, "coverage": coverage, "power_limit": power_limit}


# The subqueries step through raw series grouped by their own labels (_by_series) and read the
# label conventions as one once, on their results: the same values as grouping at every step (a
# GPU's series share one convention), for a fraction of Prometheus's CPU. Either signal present:
# one selector and one aggregation a step, a third of the CPU of two and an `or`, with the same
# answer (an `or` of two groups is their union).
_EITHER = '{__name__=~"' + ENGINE_ACTIVE + "|" + GPU_UTIL + '"}'
_PRESENT = f"({_by_series('group', _EITHER)})"


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
    span = _duration(policy.activity_lookback_seconds if span_seconds is None else span_seconds)
    bucket = _duration(LOOKBACK_STEP_SECONDS)
    busy = (
        f"((100 * {_by_series('max', f'max_over_time({ENGINE_ACTIVE}[{bucket}])')})"
        f" or {_by_series('max', f'max_over_time({GPU_UTIL}[{bucket}])')})"
        f" > {_number(policy.engine_idle_pct)}"
    )
    return {
        "last_active": _by_gpu("max", f"max_over_time(timestamp({busy})[{span}:{bucket}])"),
        "first_sample": _by_gpu("min", f"min_over_time(timestamp({_PRESENT})[{span}:{bucket}])"),
        "last_sample": _by_gpu("max", f"max_over_time(timestamp({_PRESENT})[{span}:{bucket}])"),
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
    return f"{_number(policy.engine_idle_pct)}%/{_duration(policy.activity_lookback_seconds)}/{_duration(LOOKBACK_STEP_SECONDS)}"


def presence_query() -> str:
    """The PromQL text, as a range query stepping every ``policy.sample_step_seconds``, of the
    steps at which each series set (``SOURCE_LABELS``) had an activity sample visible: a point
    at each of them (:mod:`actions.presence`). The coverage query counts the same points. Pure."""
    return _PRESENT


# A decoded series' telemetry key (its GROUP_LABELS), and a presence series' set (its SOURCE_LABELS).
_key = operator.attrgetter(*GROUP_LABELS)
_source = operator.attrgetter(*SOURCE_LABELS)
_GROUP_AT = tuple(SOURCE_LABELS.index(label) for label in GROUP_LABELS)
_ALIAS_AT = tuple((GROUP_LABELS.index(target), SOURCE_LABELS.index(source)) for target, source in _LABEL_ALIASES)


def group_key(source: tuple[str, ...]) -> Key:
    """The telemetry key of a series set named by its own labels (values in the order of
    ``SOURCE_LABELS``, "" when absent): the label conventions read as one as ``label_replace``
    does in :func:`_pod_labels` (a non-empty source label wins)."""
    key = [source[i] for i in _GROUP_AT]
    for target, at in _ALIAS_AT:
        if source[at]:
            key[target] = source[at]
    return tuple(key)


def _value(sample: Any) -> float | None:
    v = float(sample.value[1])
    return None if math.isnan(v) else v


def _time(unix: float | None) -> datetime | None:
    return None if unix is None else datetime.fromtimestamp(unix, tz=timezone.utc)


def assemble_snapshot(
    at: datetime, window_seconds: float, results: Mapping[str, list[Any]],
    lookback: Mapping[Key, Seen] | None = None, coverage: Mapping[Key, float] | None = None,
) -> TelemetrySnapshot:
    """Join the per-query results (``data.result`` lists as :meth:`PrometheusApi.vector` decodes
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
            entry = by_key.setdefault(_key(metric), {})
            entry[name] = _value(sample)
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
            t = times[unix] = _time(unix)
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


class PrometheusApi:
    """One Prometheus (or compatible: Thanos, Mimir, VictoriaMetrics) HTTP API at ``url``, shared by
    every source that queries it.

    ``headers`` are sent with every request (e.g. ``Authorization``, ``X-Scope-OrgID``);
    ``timeout_seconds`` bounds each request. Failures to connect are retried ``attempts`` times in
    all with exponential backoff before TelemetryError is raised; a query that timed out is not
    retried (it would take as long again). ``requests`` counts the queries sent.

    ``scope`` ``(label, value)`` narrows every query to one cluster's series behind a query
    endpoint shared by several (Thanos, Mimir, VictoriaMetrics): ``("cluster", "gpu-east")`` adds
    ``cluster="gpu-east"`` to every selector (:func:`actions.sources.promql_scope.scoped`). None:
    the queries go as written. Raises ValueError for a label name PromQL cannot take.
    """

    def __init__(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        *,
        verify_tls: bool = True,
        timeout_seconds: float = 30,
        attempts: int = 3,
        scope: tuple[str, str] | None = None,
    ):
        self.url = url.rstrip("/")
        self.requests = 0
        if scope is not None:
            matcher(*scope)  # a bad label name fails here, at start, not at the first query
        self.scope = scope
        self._attempts = attempts
        self._timeout = timeout_seconds
        self._headers = headers
        # The client's session (its adapter mounted by it), which :meth:`vector`/:meth:`matrix` also use.
        self._session = requests.Session()
        self._session.verify = verify_tls
        # Retries belong to tenacity alone; urllib3's own would multiply with them.
        self._client = PrometheusConnect(
            url=self.url,
            headers=headers,
            session=self._session,
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
        promql = self._scoped(promql)
        return self._call(name, promql, lambda: self._client.custom_query(promql, params={"time": at.timestamp()}))

    def range(self, name: str, promql: str, start: datetime, end: datetime, step_seconds: float) -> list[dict[str, Any]]:
        """The ``result`` of a range query from ``start`` to ``end`` every ``step_seconds``: a list
        of ``{"metric": {...}, "values": [[ts, "v"], ...]}``. Raises as :meth:`instant`."""
        step = f"{step_seconds:g}s"
        promql = self._scoped(promql)
        return self._call(name, promql, lambda: self._client.custom_query_range(promql, start, end, step))

    def vector(
        self, name: str, promql: str, at: datetime, labels: tuple[str, ...], optional: tuple[str, ...] = (),
    ) -> list[Any]:
        """The ``result`` of an instant query at ``at`` as :meth:`instant`, decoded from the answer's
        bytes (:func:`actions.sources.prometheus_wire.result`): samples with ``.value`` ``(t, "v")``
        and ``.metric`` keeping only ``labels`` ("" when absent) and ``optional`` (None when
        absent) as attributes. Raises as :meth:`instant`."""
        if at.tzinfo is None:
            raise ValueError(f"at={at!r} has no time zone; pass an aware UTC datetime")
        promql = self._scoped(promql)
        params = {"query": promql, "time": at.timestamp()}
        return self._call(name, promql, lambda: self._get("query", params, labels, optional, matrix=False))

    def matrix(
        self, name: str, promql: str, start: datetime, end: datetime, step_seconds: float, labels: tuple[str, ...],
    ) -> list[Any]:
        """The ``result`` of a range query as :meth:`range`, decoded as :meth:`vector`: series with
        ``.values`` ``[(t, "v"), ...]`` and ``.metric``. Raises as :meth:`instant`."""
        promql = self._scoped(promql)
        params = {"query": promql, "start": round(start.timestamp()), "end": round(end.timestamp()),
                  "step": f"{step_seconds:g}s"}
        return self._call(name, promql, lambda: self._get("query_range", params, labels, (), matrix=True))

    def _get(self, path: str, params: dict, labels: tuple[str, ...], optional: tuple[str, ...], *, matrix: bool) -> list:
        # As prometheus-api-client's custom_query sends it, but decoding the bytes with msgspec:
        # requests' json() is most of the bot's CPU for a query of 10,000 series.
        response = self._session.request("GET", f"{self.url}/api/v1/{path}", params=params, headers=self._headers,
                                         timeout=self._timeout)
        if response.status_code != 200:
            raise PrometheusApiClientException(f"HTTP Status Code {response.status_code} ({response.content!r})")
        return prometheus_wire.result(response.content, labels, optional, matrix=matrix)

    def _scoped(self, promql: str) -> str:
        return promql if self.scope is None else scoped(promql, *self.scope)

    def _call(self, name: str, promql: str, fn: Callable[[], Any]) -> list[dict[str, Any]]:
        retrying = Retrying(
            stop=stop_after_attempt(self._attempts),
            wait=wait_exponential(multiplier=0.5, max=8),
            # ConnectTimeout is a ConnectionError; ReadTimeout (a slow query) is not.
            retry=retry_if_exception_type(requests.ConnectionError),
            reraise=True,
        )
        self.requests += 1
        where = {"url": self.url, "promql": promql}
        try:
            return retrying(fn)
        except requests.ReadTimeout as e:
            raise TelemetryError(
                f"Prometheus at {self.url} did not answer the {name} query within {self._timeout:g} s "
                "(raise prometheus.timeout_seconds, or the query is too heavy for this Prometheus)",
                **where,
            ) from e
        except requests.ConnectionError as e:
            raise TelemetryError(
                f"Prometheus at {self.url} is unreachable ({_reason(e)}; "
                f"{'tried once' if self._attempts == 1 else f'tried {self._attempts} times'}): "
                "check prometheus.url",
                **where,
            ) from e
        except prometheus_wire.ApiError as e:
            raise TelemetryError(
                f"Prometheus at {self.url} answered the {name} query with an error ({e})", **where,
            ) from e
        except PrometheusApiClientException as e:
            status = _status(e)
            raise TelemetryError(
                f"Prometheus at {self.url} answered HTTP {status or '?'} to the {name} query"
                f"{_hint(status)}",
                status=status, **where,
            ) from e
        except (requests.RequestException, ValueError, KeyError, TypeError) as e:
            raise TelemetryError(
                f"Prometheus at {self.url} answered the {name} query with something that is not "
                f"Prometheus's JSON API ({type(e).__name__}): is {self.url} a Prometheus?",
                **where,
            ) from e


def _reason(e: requests.ConnectionError) -> str:
    """The root cause of a connection failure in a few words, e.g. ``Connection refused``."""
    text = str(e)
    for known in ("Connection refused", "Name or service not known", "No route to host", "timed out",
                  "Temporary failure in name resolution", "certificate verify failed", "Connection reset"):
        if known in text:
            return known
    return type(e).__name__


def _status(e: PrometheusApiClientException) -> int | None:
    # prometheus-api-client words a non-200 answer as "HTTP Status Code 404 (b'...')".
    match = re.search(r"HTTP Status Code (\d{3})", str(e))
    return int(match.group(1)) if match else None


def _hint(status: int | None) -> str:
    if status in (401, 403):
        return ": the credentials were refused (PROMETHEUS_BEARER_TOKEN, prometheus.headers)"
    if status == 404:
        return ": no Prometheus API there (prometheus.url should end before /api/v1)"
    if status == 400:
        return ": the query was refused (an older Prometheus, or a Thanos/Mimir without a tenant header?)"
    if status is not None and status >= 500:
        return ": Prometheus failed; see its log"
    return ""


class ActivityStateStore(Protocol):
    """Where the lookback answers are kept between sweeps (:class:`actions.activity_store.ActivityStore`)."""

    def read(self, cluster: str, policy: str) -> tuple[float | None, dict[Key, Row]]:
        """``(as_of, rows)``: unix seconds the rows are known up to (None: none kept)."""

    def write(self, cluster: str, policy: str, read_as_of: float | None, as_of: float, rows: Mapping[Key, Row]) -> bool:
        """Replace the rows merged from the state of ``read_as_of`` by ``rows`` known up to ``as_of``."""


def _seen(results: Mapping[str, list[Any]], base: Mapping[Key, Seen] | None = None) -> dict[Key, Seen]:
    """The :func:`lookback_queries` results per telemetry key, over what ``base`` holds."""
    values = {key: [s.first_sample, s.last_sample, None] for key, s in (base or {}).items()}
    for field, name in enumerate(("first_sample", "last_sample", "last_active")):
        for sample in results.get(name, ()):
            key = _key(sample.metric)
            v = values.get(key)
            if v is None:
                v = values[key] = [None, None, None]
            v[field] = _value(sample)
    return {key: Seen(*v) for key, v in values.items()}


def _seen_in(presence: Presence, lo: int, hi: int, every: int, step: float) -> dict[Key, Seen]:
    """The first and last sample per telemetry key at the steps ``lo`` to ``hi`` of ``presence``
    that are multiples of ``every``, in unix seconds: what ``lookback_queries``' ``first_sample``
    and ``last_sample`` answer over those steps."""
    mask = step_mask(presence.base, lo, hi, every)
    out: dict[Key, Seen] = {}
    for source, bits in presence.bits.items():
        found = first_last(bits & mask, presence.base)
        if found is None:
            continue
        key = group_key(source)
        first, last = found[0] * step, found[1] * step
        s = out.get(key)
        out[key] = Seen(first, last) if s is None else Seen(min(first, s.first_sample), max(last, s.last_sample))
    return out


def _coverage(presence: Presence, policy: Policy) -> dict[Key, float]:
    """The window's coverage per telemetry key (ratio 0-1): the most steps any of its series sets
    was seen at over the window's steps, capped at 1, as the ``coverage`` query answers."""
    steps = policy.window_seconds / policy.sample_step_seconds
    counts: dict[Key, int] = {}
    for source, bits in presence.bits.items():
        key = group_key(source)
        counts[key] = max(counts.get(key, 0), bits.bit_count())
    return {key: min(n / steps, 1.0) for key, n in counts.items()}


class PrometheusTelemetry:
    """Reads per-GPU telemetry through a :class:`PrometheusApi` at ``url`` (arguments as there).

    With ``state`` the lookback answers (last active, first sample) are kept there under
    ``cluster`` between fetches and the window's per-step presence in this object's memory, and
    each fetch asks Prometheus only about the steps since the last one (:mod:`actions.activity`,
    :mod:`actions.presence`); without it every fetch asks about the whole window and lookback
    (:func:`telemetry_queries`)."""

    def __init__(
        self, url: str, headers: dict[str, str] | None = None, *, state: ActivityStateStore | None = None,
        cluster: str = "", **options: Any,
    ):
        self.api = PrometheusApi(url, headers, **options)
        self.url = self.api.url
        self.state = state
        self.cluster = cluster
        # (window, step) -> the window's steps each series set was seen at, as of the last fetch.
        self._windows: dict[tuple[float, float], Presence] = {}

    def fetch(self, at: datetime, policy: Policy) -> TelemetrySnapshot:
        """Telemetry of every GPU over ``policy.window_seconds`` ending at ``at`` (aware datetime;
        the queries are evaluated at ``at``, never at the wall clock).

        Returns one GpuTelemetry per (GPU, namespace, pod) seen in the window or the lookback
        (see ``window_queries`` and ``lookback_queries`` for units). Raises ValueError for a
        naive ``at`` and TelemetryError when Prometheus is unreachable or answers an error; lets
        the state store's errors through.
        """
        if at.tzinfo is None:
            raise ValueError(f"at={at!r} has no time zone; pass an aware UTC datetime")
        at = at.astimezone(timezone.utc)
        lookback = coverage = None
        if self.state is None:
            queries = telemetry_queries(policy)
            results = {name: self._vector(name, q, at) for name, q in queries.items()}
        else:
            try:
                presence = self._presence(at, policy)
            except (KeyError, ValueError, TypeError, IndexError) as e:
                raise TelemetryError(f"Prometheus at {self.url} returned a malformed result: {e}") from e
            # Coverage from the steps in memory once they span the window, else its subquery.
            whole = presence is not None and presence.base <= step_range(
                at.timestamp() - policy.window_seconds, at.timestamp(), policy.sample_step_seconds)[0]
            queries = {name: q for name, q in window_queries(policy).items() if name != "coverage" or not whole}
            results = {name: self._vector(name, q, at) for name, q in queries.items()}
            coverage = _coverage(presence, policy) if whole and presence is not None else None
            lookback = self._lookback(at, policy, presence)
        try:
            return assemble_snapshot(at, policy.window_seconds, results, lookback, coverage)
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise TelemetryError(f"Prometheus at {self.url} returned a malformed result: {e}") from e

    def _vector(self, name: str, promql: str, at: datetime) -> list[Any]:
        """An instant query's samples keyed by ``GROUP_LABELS`` (and the peak's signal label)."""
        return self.api.vector(name, promql, at, GROUP_LABELS, (SIGNAL_LABEL,))

    def _presence(self, at: datetime, policy: Policy) -> Presence | None:
        """At which steps of the window ending at ``at`` each series set was seen, from the
        last step the previous fetch saw on (the steps since asked of Prometheus, the ones before
        from memory): the whole window once fetches have covered it. None on a first fetch, which
        only marks where the next one starts (a whole window of points would cost this process
        more than the coverage subquery costs Prometheus)."""
        step = policy.sample_step_seconds
        first, last = step_range(at.timestamp() - policy.window_seconds, at.timestamp(), step)
        known = self._windows.get((policy.window_seconds, step))
        if known is None or known.last > last or known.last < first:
            self._windows[(policy.window_seconds, step)] = Presence(last, last, {})
            return None
        # The last step known is asked again: it may have been asked before its samples arrived.
        new_first = known.last
        new: dict[Key, int] = {}
        start, end = (datetime.fromtimestamp(n * step, tz=timezone.utc) for n in (new_first, last))
        # A range query, not a subquery: its points are the steps as they are, with no arithmetic
        # at each step to pack them (which cost Prometheus more than the steps themselves).
        for series in self.api.matrix("presence", presence_query(), start, end, step, SOURCE_LABELS):
            bits = 0
            for t, _ in series.values:
                bits |= 1 << (round(t / step) - new_first)
            new[_source(series.metric)] = bits
        presence = advance(known, first, last, new, new_first)
        self._windows[(policy.window_seconds, step)] = presence
        return presence

    def _lookback(self, at: datetime, policy: Policy, presence: Presence | None) -> dict[Key, Seen]:
        """The lookback answers at ``at`` (unix seconds) from the state kept and the span since
        it, kept again. The first and last sample over the span come from ``presence`` when it
        holds the span's steps."""
        assert self.state is not None
        key, now = activity_policy(policy), at.timestamp()
        lookback, step = policy.activity_lookback_seconds, LOOKBACK_STEP_SECONDS
        as_of, rows = self.state.read(self.cluster, key)
        span = span_seconds(as_of, now, lookback, step)
        queries = lookback_queries(policy, span)
        seen: dict[Key, Seen] = {}
        every = step / policy.sample_step_seconds
        if presence is not None and span is not None and every.is_integer():
            lo, hi = step_range(now - span, now, policy.sample_step_seconds)
            if lo >= presence.base and hi == presence.last:
                seen = _seen_in(presence, lo, hi, int(every), policy.sample_step_seconds)
                queries = {"last_active": queries["last_active"]}
        try:
            new = _seen({name: self._vector(name, q, at) for name, q in queries.items()}, seen)
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise TelemetryError(f"Prometheus at {self.url} returned a malformed result: {e}") from e
        known = decode(rows, as_of, step) if span is not None and as_of is not None else {}
        state = merge(known, new, now, lookback)
        # A fetch of the past leaves a newer state as it is.
        if as_of is None or now >= as_of:
            self.state.write(self.cluster, key, as_of, now, encode(state, now, step))
        return lookback_answers(state, now, lookback, step)


# What `gpu-cost-bot check --connect` looks for: the series the bot's queries read.
PROBED_METRICS = (
    ENGINE_ACTIVE,
    GPU_UTIL,
    POWER_USAGE,
    "kube_pod_info",
    "kube_pod_container_resource_requests",
    "kube_node_labels",
    "kube_namespace_labels",
)


def series_counts(api: PrometheusApi, at: datetime) -> dict[str, int]:
    """How many series of each of :data:`PROBED_METRICS` Prometheus holds at ``at`` (0 for a
    metric it has none of), in one query. Raises TelemetryError as :meth:`PrometheusApi.instant`."""
    names = "|".join(PROBED_METRICS)
    rows = api.instant("series count", f'count by (__name__) ({{__name__=~"{names}"}})', at)
    counts = {m: 0 for m in PROBED_METRICS}
    for row in rows:
        counts[row["metric"].get("__name__", "")] = int(float(row["value"][1]))
    return counts
