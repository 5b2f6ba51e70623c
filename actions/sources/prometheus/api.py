"""Prometheus's HTTP API as the bot's sources use it (:class:`PrometheusApi`): instant and range
queries with the configured headers, TLS and timeouts, retried on a lost connection, their answers
decoded (:mod:`actions.sources.prometheus.wire`), and errors that say what to do
(:class:`TelemetryError`); also which series a Prometheus holds (``check --connect``).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Callable

import requests
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential
from urllib3.util.retry import Retry

from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE
from actions.sources.bounded import ResponseTooLarge, bounded_reads
from actions.sources.prometheus import wire as prometheus_wire
from actions.sources.prometheus.scope import matcher, scoped
from actions.text import shown_url

# A 30-day matrix of 10,000 GPUs' hourly series is about 20 MB; the bot's pod has 1 GiB.
DEFAULT_MAX_RESPONSE_BYTES = 128 * 1024 * 1024


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


class PrometheusApi:
    """One Prometheus (or compatible: Thanos, Mimir, VictoriaMetrics) HTTP API at ``url``, shared by
    every source that queries it. Its ``url`` attribute is the URL as shown
    (:func:`actions.text.shown_url`: credentials masked), in every error too.

    ``headers`` are sent with every request (e.g. ``Authorization``, ``X-Scope-OrgID``);
    ``timeout_seconds`` bounds each request in all, connect and every read of its answer, and
    ``max_response_bytes`` its answer's size (:mod:`actions.sources.bounded`: a Prometheus that
    drips its answer, or sends gigabytes, is given up on). Failures to connect are retried ``attempts`` times in
    all with exponential backoff before TelemetryError is raised; a query that timed out is not
    retried (it would take as long again). ``requests`` counts the queries sent.

    ``scope`` ``(label, value)`` narrows every query to one cluster's series behind a query
    endpoint shared by several (Thanos, Mimir, VictoriaMetrics): ``("cluster", "gpu-east")`` adds
    ``cluster="gpu-east"`` to every selector (:func:`actions.sources.prometheus.scope.scoped`). None:
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
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ):
        self._base = url.rstrip("/")
        self.url = shown_url(self._base)  # what messages and errors name: never its credentials
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
        bounded_reads(self._session, max_response_bytes, timeout_seconds)
        # Retries belong to tenacity alone; urllib3's own would multiply with them.
        self._client = PrometheusConnect(
            url=self._base,
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
        bytes (:func:`actions.sources.prometheus.wire.result`): samples with ``.value`` ``(t, "v")``
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
        response = self._session.request("GET", f"{self._base}/api/v1/{path}", params=params, headers=self._headers,
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
        except ResponseTooLarge as e:
            raise TelemetryError(
                f"Prometheus at {self.url} answered the {name} query with more than the bot reads ({e}): raise "
                "prometheus.max_response_bytes if the pod's memory allows, or narrow the query (a cluster label)",
                **where,
            ) from e
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
