"""The Prometheus readers a bot's settings describe: DCGM telemetry (or a recording), Kueue
metrics, usage history for reports (Prometheus, or the usage ledger in the bot's database), and
the history advice is drawn from. :mod:`bot.wiring` and the CLI commands build their readers here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from actions.advice.round import AdviceSetup
from actions.cost.reporting import CostSetup
from actions.ledger.advice_history import LedgerHistorySource
from actions.ledger.rollup import SOURCES, AdviceHours, LedgerUsage
from actions.sources.prometheus.advice_hours import PrometheusAdviceHours
from actions.sources.prometheus.api import PrometheusApi
from actions.sources.prometheus.history import AdviceHistorySource
from actions.sources.prometheus.kueue import KueueMetrics
from actions.sources.prometheus.telemetry import PrometheusTelemetry
from actions.sources.prometheus.usage import PrometheusUsage
from actions.sources.recording import RecordedTelemetry
from actions.store.activity import ActivityStore
from actions.store.advice_hours import AdviceHourStore
from actions.store.database import Store
from actions.store.ledger import LedgerStore
from bot.settings import Settings
from bot.settings.clusters import ClusterTarget


def _prometheus(settings: Settings) -> dict[str, Any]:
    """The connection options every Prometheus reader shares: URL, headers (with the bearer
    token), TLS verification, the largest answer read."""
    return {
        "url": settings.prometheus.url,
        "headers": settings.prometheus_headers(),
        "verify_tls": settings.prometheus.verify_tls,
        "max_response_bytes": settings.prometheus.max_response_bytes,
    }


def telemetry_source(settings: Settings, telemetry_file: str | Path | None = None, store: Store | None = None):
    """A telemetry recording when one is given, else the configured Prometheus, keeping its
    lookback answers in ``store`` between sweeps (None: every sweep asks for the whole lookback)."""
    if telemetry_file:
        return RecordedTelemetry.from_file(telemetry_file)
    p = _prometheus(settings)
    return PrometheusTelemetry(
        p["url"], p["headers"], verify_tls=p["verify_tls"], timeout_seconds=settings.prometheus.timeout_seconds,
        max_response_bytes=p["max_response_bytes"],
        state=None if store is None else ActivityStore(store), cluster=settings.cluster_targets()[0].name,
    )


def kueue_metrics(settings: Settings, target: ClusterTarget | None = None) -> KueueMetrics:
    """The admission-wait and spot-ratio reader of ``target`` (default: the first or only
    cluster), narrowed to its label on a shared query endpoint."""
    target = target or settings.cluster_targets()[0]
    return KueueMetrics(
        target.prometheus_url, target.headers, verify_tls=settings.prometheus.verify_tls,
        timeout_seconds=settings.prometheus.timeout_seconds, scope=target.scope,
        max_response_bytes=settings.prometheus.max_response_bytes,
    )


def kueue_by_cluster(settings: Settings) -> dict[str, KueueMetrics]:
    """Cluster name -> :func:`kueue_metrics` of each cluster of ``clusters:``, in order."""
    return {t.name: kueue_metrics(settings, t) for t in settings.cluster_targets()}


def prometheus_usage(settings: Settings, target: ClusterTarget | None = None) -> PrometheusUsage:
    """The configured Prometheus's kube-state-metrics and DCGM history, or ``target``'s (a
    cluster of ``clusters:``, narrowed to its label), read with the cost queries' timeout and
    the team label."""
    target = target or settings.cluster_targets()[0]
    return PrometheusUsage(
        target.prometheus_url, target.headers, verify_tls=settings.prometheus.verify_tls,
        timeout_seconds=settings.costs.query_timeout_seconds, team_label=settings.costs.team_label,
        scope=target.scope, max_response_bytes=settings.prometheus.max_response_bytes,
    )


def usage_source(
    settings: Settings, store: Store | None, source: str = "auto", target: ClusterTarget | None = None,
) -> PrometheusUsage | LedgerUsage:
    """Where reports of ``target`` (default: the first or only cluster) read usage:
    ``prometheus`` straight from Prometheus; ``ledger`` the usage ledger in ``store`` alone (no
    PromQL); ``auto`` the ledger in ``store`` with the current hour from Prometheus, or, when
    ``ledger.enabled`` is off (no job keeps the ledger), only for a period whose hours a
    backfill left in it (else Prometheus; Prometheus alone without a store). Raises ValueError
    for another source, or ``ledger`` without a store."""
    if source not in SOURCES:
        raise ValueError(f"source {source!r} is not one of {', '.join(SOURCES)}; e.g. --source ledger")
    target = target or settings.cluster_targets()[0]
    prometheus = prometheus_usage(settings, target)
    if source == "prometheus" or (source == "auto" and store is None):
        return prometheus
    if store is None:
        raise ValueError("source ledger reads the database; give a config whose database_url holds the ledger")
    return LedgerUsage(
        LedgerStore(store), prometheus, cluster=target.name, team_label=settings.costs.team_label, source=source,
        kept=settings.ledger.enabled,
    )


def cost_setup(
    settings: Settings, store: Store | None = None, source: str = "auto", target: ClusterTarget | None = None,
) -> CostSetup:
    """Cost reports of ``target`` (default: the first or only cluster) from :func:`usage_source`
    (the ledger in ``store`` as it says, else Prometheus's history), with the
    ``costs`` settings (team label, top consumers, time zone)."""
    return CostSetup(
        usage=usage_source(settings, store, source, target),
        team_label=settings.costs.team_label,
        top_consumers=settings.costs.top_consumers,
        timezone=settings.costs.timezone,
        spot_ratio_target=settings.alerts.spot_ratio_target,
        energy=settings.energy_factors(target.name if target is not None else None),
    )


def _advice_api(settings: Settings, target: ClusterTarget | None) -> PrometheusApi:
    p = _prometheus(settings)
    url, headers, scope = (p["url"], p["headers"], None) if target is None else (target.prometheus_url, target.headers, target.scope)
    return PrometheusApi(url, headers, verify_tls=p["verify_tls"], timeout_seconds=settings.costs.query_timeout_seconds,
                         scope=scope, max_response_bytes=p["max_response_bytes"])


def advice_setup(settings: Settings, target: ClusterTarget | None = None, store: Store | None = None) -> AdviceSetup:
    """Advice history of the configured Prometheus, or ``target``'s (a cluster of ``clusters:``,
    narrowed to its label), judged by the ``advice`` settings. With ``ledger.enabled`` and a
    ``store`` (and ``advice.history_source`` auto), the whole hours come from the ledger's advice
    facts and only the rest from Prometheus (:class:`~actions.ledger.advice_history.LedgerHistorySource`);
    else 7 and 30 days of DCGM series are read whole, heavy queries that
    ``costs.query_timeout_seconds`` bounds."""
    api = _advice_api(settings, target)
    whole = AdviceHistorySource(api)
    if store is None or not settings.ledger.enabled or settings.advice.history_source == "prometheus":
        return AdviceSetup(whole, settings.advice)
    cluster = target.name if target is not None else settings.cluster_name
    return AdviceSetup(LedgerHistorySource(AdviceHourStore(store), cluster, live=PrometheusAdviceHours(api), whole=whole),
                       settings.advice)


def advice_hours(settings: Settings, store: Store, target: ClusterTarget | None = None) -> AdviceHours:
    """What the ledger's rollup keeps for advice each hour, read from ``target``'s Prometheus
    with the ``advice`` settings' busy threshold."""
    return AdviceHours(PrometheusAdviceHours(_advice_api(settings, target)), AdviceHourStore(store), settings.advice)
