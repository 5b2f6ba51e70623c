"""Assembles a :class:`~bot.runtime.Runtime` from settings and command-line choices.

The only module that knows which concrete source, writer and chat go together: a live cluster
or a kubectl dump, Prometheus or a telemetry recording, Slack or the console.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Callable, TextIO

from actions.executors import InMemoryCluster, KubernetesWriter
from actions.sources.kubernetes import KubernetesSource, load_kube_config
from actions.sources.prometheus import PrometheusTelemetry
from actions.sources.prometheus_usage import PrometheusUsage
from actions.sources.recorded import RecordedTelemetry
from actions.store import Store
from bot.chat import Chat
from bot.console import ConsoleChat
from bot.live_prices import ReloadingPriceBook, price_book
from bot.reports import CostSetup
from bot.metrics import BotMetrics
from bot.runtime import Runtime, utc_now
from bot.settings import Settings


def telemetry_source(settings: Settings, telemetry_file: str | Path | None = None):
    """A telemetry recording when one is given, else the configured Prometheus."""
    if telemetry_file:
        return RecordedTelemetry.from_file(telemetry_file)
    return PrometheusTelemetry(
        settings.prometheus.url,
        settings.prometheus_headers(),
        verify_tls=settings.prometheus.verify_tls,
        timeout_seconds=settings.prometheus.timeout_seconds,
    )


def cost_setup(settings: Settings) -> CostSetup:
    """Cost reports from the configured Prometheus's kube-state-metrics and DCGM history, with
    the ``costs`` settings (team label, top consumers, time zone)."""
    return CostSetup(
        usage=PrometheusUsage(
            settings.prometheus.url,
            settings.prometheus_headers(),
            verify_tls=settings.prometheus.verify_tls,
            timeout_seconds=settings.costs.query_timeout_seconds,
            team_label=settings.costs.team_label,
        ),
        team_label=settings.costs.team_label,
        top_consumers=settings.costs.top_consumers,
        timezone=settings.costs.timezone,
        spot_ratio_target=settings.alerts.spot_ratio_target,
    )


def cluster_access(settings: Settings, cluster_state: str | Path | None, taken_at: datetime | None = None):
    """(reader, writer): an in-memory cluster from a kubectl dump when ``cluster_state`` is
    given (patches then change only that copy), else the live API server."""
    if cluster_state:
        cluster = InMemoryCluster.from_kubectl_dump(Path(cluster_state).read_bytes())
        return cluster, cluster
    api = load_kube_config(settings.kubernetes.kubeconfig, settings.kubernetes.context)
    return KubernetesSource(api, page_size=settings.kubernetes.page_size), KubernetesWriter(api)


def build_runtime(
    settings: Settings,
    *,
    chat: Chat | None = None,
    cluster_state: str | Path | None = None,
    telemetry_file: str | Path | None = None,
    clock: Callable[[], datetime] = utc_now,
    group_members: Callable[[str], set[str]] | None = None,
    out: TextIO | None = None,
    migrate: bool = True,
    metrics: BotMetrics | None = None,
) -> Runtime:
    """A Runtime for ``settings``; the store is migrated to the latest schema first. ``metrics``
    (when given) records its sweeps, actions and API errors."""
    store = Store(settings.database_url)
    if migrate:
        store.migrate()
    reader, writer = cluster_access(settings, cluster_state)
    return Runtime(
        store=store,
        chat=chat or ConsoleChat(out or sys.stdout),
        cluster=reader,
        telemetry=telemetry_source(settings, telemetry_file),
        writer=writer,
        prices=ReloadingPriceBook(settings, store, clock) if settings.prices.aws.enabled else price_book(settings),
        teams=settings.team_directory(),
        policy=settings.policy,
        dry_run=settings.dry_run,
        clock=clock,
        group_members=group_members or (lambda group: set()),
        metrics=metrics,
        costs=cost_setup(settings),
    )
