"""Builds each configured cluster's parts (``clusters:``): the reader and writer of its API
server, its telemetry and its cost reports, each narrowed to the cluster's series when they
share one query endpoint. :mod:`bot.wiring` hands them to the Runtime; nothing below reads
settings for itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

from actions.advice.round import AdviceResult
from actions.cost.fleet import FleetReport
from actions.cost.report import CostReport
from actions.cost.reporting import build_fleet_report, build_report
from actions.executors.jupyterhub import HubWriter
from actions.executors.kubernetes import KubernetesWriter
from actions.executors.routing import RoutingWriter
from actions.sources.kube.reader import KubernetesSource, load_kube_config
from actions.sources.kube.watch_cache import ClusterCache
from actions.sources.prometheus.telemetry import PrometheusTelemetry
from actions.store.activity import ActivityStore
from actions.store.database import Store
from bot.runtime.clusters import ClusterParts, advice_of_clusters
from bot.runtime.prices import price_book
from bot.runtime.runtime import UnknownCluster
from bot.settings import Settings
from bot.settings.clusters import ClusterTarget
from bot.wiring.sources import advice_setup, cost_setup


def telemetry_for(settings: Settings, target: ClusterTarget, store: Store | None = None) -> PrometheusTelemetry:
    """The DCGM telemetry of ``target``: its Prometheus URL and headers, TLS and timeout from the
    top-level ``prometheus``, narrowed to its label when it shares the endpoint; its lookback
    answers kept in ``store`` under its name between sweeps (None: not kept)."""
    p = settings.prometheus
    return PrometheusTelemetry(
        target.prometheus_url, target.headers, verify_tls=p.verify_tls, timeout_seconds=p.timeout_seconds,
        max_response_bytes=p.max_response_bytes,
        scope=target.scope, state=None if store is None else ActivityStore(store), cluster=target.name,
    )


def cluster_parts(
    settings: Settings, hubs: Callable[[str], HubWriter | None] = lambda name: None, store: Store | None = None,
    source: str = "auto", watch: bool = False,
) -> tuple[ClusterParts, ...]:
    """One :class:`~bot.runtime.clusters.ClusterParts` per entry of ``clusters:``, in order; empty
    when the bot watches one cluster. JupyterHub servers are stopped through ``hubs(name)``, the
    Hubs of that cluster (``jupyterhub.hubs[].cluster``). Reports read each cluster's rows of the
    usage ledger in ``store`` as ``source`` says (:func:`bot.wiring.sources.usage_source`). With
    ``watch`` each cluster's reader gets a watch cache of its big kinds (not started).
    Raises ClusterConfigError when a cluster's kubeconfig context cannot be loaded."""
    if not settings.clusters:
        return ()
    k = settings.kubernetes
    parts = []
    for target in settings.cluster_targets():
        api = load_kube_config(target.kubeconfig, target.context, max_response_bytes=k.max_response_bytes)
        cache = ClusterCache(api, page_size=k.page_size, timeout_seconds=k.timeout_seconds) if watch else None
        parts.append(ClusterParts(
            name=target.name,
            cluster=KubernetesSource(api, page_size=k.page_size, timeout_seconds=k.timeout_seconds, cache=cache),
            telemetry=telemetry_for(settings, target, store),
            writer=RoutingWriter(KubernetesWriter(api, timeout_seconds=k.timeout_seconds), hubs(target.name)),
            costs=cost_setup(settings, store, source, target),
            advice=advice_setup(settings, target, store),
            energy=settings.energy_factors(target.name),
        ))
    return tuple(parts)


def cost_reports(
    settings: Settings, start: datetime, end: datetime, cluster: str | None = None,
    store: Store | None = None, source: str = "auto",
) -> tuple[CostReport, FleetReport | None]:
    """The cost report over ``[start, end]`` of a bot with ``clusters:``: ``(cluster's report,
    None)`` for a named ``cluster``, else ``(the fleet's totals, the FleetReport with a report per
    cluster)``. Node capacity types missing from ``kube_node_labels`` are read from each cluster's
    API server. Raises UnknownCluster for a name not configured (listing them), ValueError
    without ``clusters:``, and TelemetryError when no cluster's Prometheus answers. Each cluster's usage
    comes from the usage ledger in ``store`` as ``source`` says (:func:`bot.wiring.sources.usage_source`)."""
    parts = cluster_parts(settings, store=store, source=source)
    if not parts:
        raise ValueError("cost_reports is for a bot with `clusters:`; a bot of one cluster reports as it always did")
    book, teams, policy = price_book(settings), settings.team_directory(), settings.policy

    def nodes(p: ClusterParts) -> Callable[[], Mapping]:
        return lambda: p.cluster.snapshot(end).nodes

    if cluster is not None:
        chosen = next((p for p in parts if p.name == cluster), None)
        if chosen is None:
            raise UnknownCluster(
                f"no cluster {cluster!r}; the clusters are {', '.join(p.name for p in parts)} (e.g. --cluster {parts[0].name})"
            )
        return build_report(chosen.costs, book, teams, policy, start, end, api_nodes=nodes(chosen)), None
    fleet = build_fleet_report([(p.name, p.costs, nodes(p)) for p in parts], book, teams, policy, start, end)
    return fleet.fleet, fleet


def clusters_advice(settings: Settings, at: datetime, team: str | None = None) -> AdviceResult:
    """The advice of every cluster of ``clusters:`` at ``at`` (only ``team``'s when given), each
    from its own API server and its own history, as one result
    (:func:`~actions.advice.round.fleet_advice`). Raises ValueError without ``clusters:``, and what
    a cluster's sources raise (ClusterReadError, TelemetryError)."""
    parts = cluster_parts(settings)
    if not parts:
        raise ValueError("clusters_advice is for a bot with `clusters:`")
    return advice_of_clusters(parts, price_book(settings), settings.policy, settings.team_directory(), at, team)

