"""The Runtime from settings and command-line choices: a live cluster or a kubectl dump (with
``run``'s watch caches), Prometheus or a telemetry recording, a JupyterHub where configured, the
store, the prices, and every cluster of a bot of several.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TextIO

from actions.detect.detection import Detection, with_energy
from actions.executors.in_memory import InMemoryCluster
from actions.executors.jupyterhub import HubClient, HubWriter
from actions.executors.kubernetes import KubernetesWriter
from actions.executors.routing import RoutingWriter
from actions.model.times import utc_now
from actions.sources.kube.dump import read_kubectl_dump
from actions.sources.kube.reader import KubernetesSource, load_kube_config
from actions.sources.kube.watch_cache import ClusterCache
from actions.store.database import Store
from bot.chat.console import ConsoleChat
from bot.jobs import sweep
from bot.runtime.chat import Chat
from bot.runtime.clusters import detect_clusters, detect_with
from bot.runtime.identity import settle_home_cluster
from bot.runtime.latest import LatestFindings
from bot.runtime.prices import ReloadingPriceBook, price_book
from bot.runtime.runtime import ActionTimeouts, Runtime
from bot.service.metrics import BotMetrics
from bot.settings import Settings
from bot.wiring.clusters import cluster_parts
from bot.wiring.sources import (
    advice_setup,
    cost_setup,
    telemetry_source,
)


def hub_writer(settings: Settings, cluster: str | None = None) -> HubWriter | None:
    """The configured JupyterHubs (``jupyterhub.hubs``) of ``cluster`` (default: the first or only
    one), each with the token its ``token_env`` holds; None without any. Raises SystemExit naming
    a token variable that is not set."""
    cfg = settings.jupyterhub
    first = settings.cluster_targets()[0].name
    hubs = [h for h in cfg.hubs if (h.cluster or first) == (cluster or first)]
    if not hubs:
        return None
    clients = {}
    for hub in hubs:
        token = os.environ.get(hub.token_env)
        if not token:
            raise SystemExit(
                f"jupyterhub.hubs: {hub.token_env} is not set; it holds the Hub token (scope servers) for {hub.namespace}"
            )
        clients[hub.namespace] = HubClient(
            hub.api_url, token, timeout_seconds=cfg.timeout_seconds, settle_seconds=cfg.settle_seconds
        )
    return HubWriter(clients)


def cluster_access(settings: Settings, cluster_state: str | Path | None, *, watch: bool = False):
    """(reader, writer): an in-memory cluster from a kubectl dump when ``cluster_state`` is
    given (patches then change only that copy), else the live API server, with a watch cache of
    its big kinds when ``watch`` (:func:`cluster_caches` finds it; not started); JupyterHub
    servers go to the configured Hubs either way."""
    hubs = hub_writer(settings)
    if cluster_state:
        cluster = InMemoryCluster.from_kubectl_dump(read_kubectl_dump(cluster_state))
        return cluster, RoutingWriter(cluster, hubs)
    api = load_kube_config(settings.kubernetes.kubeconfig, settings.kubernetes.context,
                           max_response_bytes=settings.kubernetes.max_response_bytes)
    k = settings.kubernetes
    cache = ClusterCache(api, page_size=k.page_size, timeout_seconds=k.timeout_seconds) if watch else None
    return (
        KubernetesSource(api, page_size=k.page_size, timeout_seconds=k.timeout_seconds, cache=cache),
        RoutingWriter(KubernetesWriter(api, timeout_seconds=k.timeout_seconds), hubs),
    )


def keep_alive_to_exit() -> None:
    """Take every object alive now out of the cyclic garbage collector's reach (``gc.freeze``).

    Call it once start-up is done (the modules, the Runtime: they live as long as the process)
    and, in a one-shot command, when the work is done. A full collection otherwise walks every
    one of them again: a second of a fleet-scale ``sweep --once``, half of it in the collection
    at interpreter exit, which frees them only for the process to end. Exit still runs as usual
    (atexit, logging's flush, the database engine's disposal)."""
    gc.freeze()


def cluster_caches(rt: Runtime) -> list[ClusterCache]:
    """The watch caches of ``rt``'s clusters (built with ``watch=True``), to start and stop."""
    readers = [p.cluster for p in rt.clusters] or [rt.cluster]
    return [r.cache for r in readers if isinstance(r, KubernetesSource) and r.cache is not None]


# --- the runtime -----------------------------------------------------------------------------------


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
    watch: bool = False,
) -> Runtime:
    """A Runtime for ``settings``; the store is migrated to the latest schema first, its home
    cluster recorded when it has none and its requests without a cluster's name named
    (:func:`bot.runtime.identity.settle_home_cluster`; with ``migrate`` false, neither). ``metrics``
    (when given) records its sweeps, actions and API errors. ``watch`` (the long-running ``run``)
    gives each live cluster a watch cache of its big kinds, started by the caller
    (:func:`cluster_caches`)."""
    store = Store(settings.database_url)
    home = None
    if migrate:
        store.migrate()
        home = settle_home_cluster(store, [t.name for t in settings.cluster_targets()], clock())
    # A dump or a recording stands for one cluster: `clusters:` is then not read.
    several = () if cluster_state or telemetry_file else cluster_parts(
        settings, lambda name: hub_writer(settings, name), store, watch=watch,
    )
    if several:
        first = several[0]
        reader, writer, telemetry, costs = first.cluster, first.writer, first.telemetry, first.costs
    else:
        reader, writer = cluster_access(settings, cluster_state, watch=watch)
        telemetry, costs = telemetry_source(settings, telemetry_file, store), cost_setup(settings, store)
    aws = settings.prices.aws
    k = settings.kubernetes
    return Runtime(
        store=store,
        chat=chat or ConsoleChat(out or sys.stdout),
        cluster=reader,
        telemetry=telemetry,
        writer=writer,
        prices=ReloadingPriceBook(settings, store, clock) if aws.enabled else price_book(settings),
        teams=settings.team_directory(),
        policy=settings.policy,
        dry_run=settings.dry_run,
        clock=clock,
        group_members=group_members or (lambda group: set()),
        metrics=metrics,
        costs=costs,
        clusters=several,
        cluster_name=settings.cluster_name,
        home_cluster=home,
        advice_setup=advice_setup(settings, store=store),
        configured_budgets=tuple(b.budget() for b in settings.budgets),
        # The alerts job runs beside the sweep on its own interval, often at the same moment: the
        # latest finished sweep is then one interval old (and a minute, for the schedules' drift).
        latest=LatestFindings(reuse_seconds=settings.sweep.interval_seconds + 60),
        timeouts=ActionTimeouts(
            recheck=settings.actions.recheck_timeout_seconds,
            # The writer's GET and PATCH, each bounded by the timeout, up to three times on conflicts.
            apply=6 * k.timeout_seconds,
            settle=settings.actions.settle_seconds,
        ),
    )


# --- the jobs --------------------------------------------------------------------------------------


def detect_only(settings: Settings, cluster_state: str | Path | None, telemetry_file: str | Path | None) -> sweep.Sweep:
    """A sweep that only detects (``sweep --json``): no database, no chat, nothing posted. With
    ``clusters:`` (and neither a dump nor a recording) every cluster is swept, each failing alone."""
    book, teams, policy = price_book(settings), settings.team_directory(), settings.policy
    several = () if cluster_state or telemetry_file else cluster_parts(settings, lambda name: hub_writer(settings, name))
    if several:
        return sweep.Sweep(lambda now: detect_clusters(several, several[0].name, book, policy, teams, now))
    reader, _ = cluster_access(settings, cluster_state)
    telemetry = telemetry_source(settings, telemetry_file)

    def detection(now: datetime) -> Detection:
        return with_energy(detect_with(reader.snapshot(now), telemetry, book, policy, teams, now), settings.energy_factors())

    return sweep.Sweep(detection)
