"""Assembles the bot from settings and command-line choices.

The only module that knows which concrete parts go together: a live cluster or a kubectl dump,
Prometheus or a telemetry recording, Slack or the console, and which jobs run on what. Everything
it builds is handed down; nothing below it reads settings for itself.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from apscheduler.triggers.interval import IntervalTrigger

from actions.detection import Detection
from actions.executors import KubernetesWriter, RoutingWriter
from actions.executors.jupyterhub import HubClient, HubWriter
from actions.in_memory_cluster import InMemoryCluster
from actions.ledger_store import LedgerStore
from actions.model import utc_now
from actions.sources.kubectl_dump import read_kubectl_dump
from actions.sources.kubernetes import KubernetesSource, load_kube_config
from actions.sources.ledger_usage import LedgerRollup
from actions.sources.prometheus_kueue import KueueMetrics
from actions.sources.watch_cache import ClusterCache
from actions.store import Store
from bot.chat import Chat
from bot.chat.auto import AutoActions
from bot.chat.console import ConsoleChat, ConsoleSession
from bot.chat.messages import MessageSync
from bot.chat.proposals import Proposals
from bot.chat.runtime import ActionTimeouts, Runtime, detect_clusters, detect_with
from bot.fleet import cluster_parts
from bot.jobs import advice as advice_jobs
from bot.jobs import alerts, ledger, prices, sweep
from bot.readers import advice_setup, cost_setup, kueue_by_cluster, kueue_metrics, prometheus_usage, telemetry_source
from bot.service.http import HttpOptions
from bot.service.leader import replica_identity
from bot.service.metrics import BotMetrics
from bot.service.process import Process, exit_now, run_until_signalled
from bot.service.work import Periodic, WorkerPool
from bot.settings import Settings
from bot.settings.clusters import ClusterTarget

if TYPE_CHECKING:
    # Imported where they are used: Slack's SDK and the digests' charts (matplotlib) are a second
    # of start-up that `sweep --once`, `check` and the console never use, APScheduler's
    # schedulers a tenth that a one-shot sweep never starts.
    from bot.chat.slack.app import SlackWork
    from bot.jobs import digests
    from bot.jobs.scheduler import BackgroundJobs, ScheduledJob

log = logging.getLogger(__name__)


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
    api = load_kube_config(settings.kubernetes.kubeconfig, settings.kubernetes.context)
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
    """A Runtime for ``settings``; the store is migrated to the latest schema first. ``metrics``
    (when given) records its sweeps, actions and API errors. ``watch`` (the long-running ``run``)
    gives each live cluster a watch cache of its big kinds, started by the caller
    (:func:`cluster_caches`)."""
    store = Store(settings.database_url)
    if migrate:
        store.migrate()
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
        prices=prices.ReloadingPriceBook(settings, store, clock) if aws.enabled else prices.price_book(settings),
        teams=settings.team_directory(),
        policy=settings.policy,
        dry_run=settings.dry_run,
        clock=clock,
        group_members=group_members or (lambda group: set()),
        metrics=metrics,
        costs=costs,
        clusters=several,
        cluster_name=settings.cluster_name,
        advice_setup=advice_setup(settings),
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
    book, teams, policy = prices.price_book(settings), settings.team_directory(), settings.policy
    several = () if cluster_state or telemetry_file else cluster_parts(settings, lambda name: hub_writer(settings, name))
    if several:
        return sweep.Sweep(lambda now: detect_clusters(several, several[0].name, book, policy, teams, now))
    reader, _ = cluster_access(settings, cluster_state)
    telemetry = telemetry_source(settings, telemetry_file)

    def detection(now: datetime) -> Detection:
        return detect_with(reader.snapshot(now), telemetry, book, policy, teams, now)

    return sweep.Sweep(detection)


def sweep_for(rt: Runtime) -> sweep.Sweep:
    """The idle sweep over ``rt``: detection, then proposals in ``rt``'s store and chat."""
    return sweep.Sweep(rt.detection, Proposals(rt), rt.metrics, rt.clock, AutoActions(rt))


def alerts_for(
    rt: Runtime, settings: Settings, *, kueue: KueueMetrics | Mapping[str, KueueMetrics] | None = None,
) -> alerts.AlertsJob:
    """The alerts job over ``rt`` (every one of its clusters), with ``alerts`` and
    ``costs.timezone`` from ``settings``; ``kueue`` reads the admission-wait p90 and the spot
    ratio: one reader for a bot of one cluster, cluster name -> reader for a bot of several
    (None: those alerts are skipped). Raises ValueError for one reader given to a bot of several."""
    if isinstance(kueue, KueueMetrics):
        if rt.clusters:
            raise ValueError("a bot of several clusters reads Kueue per cluster: pass kueue_by_cluster(settings)")
        kueue = {"": kueue}
    return alerts.AlertsJob(
        store=rt.store, chat=rt.chat, teams=rt.teams, settings=settings.alerts,
        read_queues=rt.read_queues, budgets=rt.team_budgets,
        spend_report=rt.fleet_report if rt.costs is not None else None,
        kueue=dict(kueue or {}), timezone=settings.costs.timezone, clock=rt.clock,
        clusters=tuple(c.name for c in rt.clusters),
    )


def digests_for(rt: Runtime, settings: Settings, *, holder: str | None = None) -> digests.DigestsJob:
    """The digests job over ``rt``, claiming as ``holder`` (default: this replica's identity)."""
    from bot.jobs import digests

    return digests.DigestsJob(
        store=rt.store, chat=rt.chat, settings=settings, reports=rt.fleet_report,
        holder=holder or replica_identity(settings.leader_election), clock=rt.clock,
        unreachable=lambda: dict(rt.unreachable),
        advice=rt.advice if rt.advice_setup is not None else None,
    )


def ledger_job(rt: Runtime, settings: Settings, target: ClusterTarget | None = None) -> ledger.LedgerJob:
    """The usage-ledger job of ``target`` (default: the first or only cluster): its Prometheus,
    narrowed to its label, rolled up into ``rt``'s store as its rows, with ``rt``'s prices
    recorded as the prices in force."""
    target = target or settings.cluster_targets()[0]
    store = LedgerStore(rt.store)
    rollup = LedgerRollup(
        prometheus_usage(settings, target), store, cluster=target.name,
        team_label=settings.costs.team_label, prices=rt.prices,
    )
    return ledger.LedgerJob(rollup, store, settings.ledger, rt.policy, rt.clock)


def _every(seconds: float) -> IntervalTrigger:
    return IntervalTrigger(seconds=seconds, timezone=timezone.utc)


def scheduled_jobs(rt: Runtime, settings: Settings) -> list[ScheduledJob]:
    """Every scheduled job this bot runs, in one place: the idle sweep, the alerts, the digests
    (a frequent check; each team's digest fires at its own local time), new advice (every
    ``advice.post_every_seconds``), when ``ledger.enabled`` the usage ledger's rollup, and, when
    ``prices.aws.enabled``, the live-price refresh."""
    from bot.jobs import digests
    from bot.jobs.scheduler import ScheduledJob

    jobs = [
        ScheduledJob(sweep.JOB_ID, _every(settings.sweep.interval_seconds), sweep_for(rt).scheduled, first_run_at_start=True),
        ScheduledJob(alerts.JOB_ID, _every(settings.alerts.interval_seconds), alerts_for(
            rt, settings, kueue=kueue_by_cluster(settings) if rt.clusters else kueue_metrics(settings)).scheduled),
        ScheduledJob(digests.JOB_ID, _every(digests.DIGEST_CHECK_SECONDS), digests_for(rt, settings).scheduled),
    ]
    if settings.ledger.enabled:
        # One rollup per cluster, each claimed on its own (the first keeps the id "usage-ledger").
        for i, target in enumerate(settings.cluster_targets()):
            jobs.append(ScheduledJob(
                ledger.JOB_ID if i == 0 else f"{ledger.JOB_ID}-{target.name}", _every(settings.ledger.interval_seconds),
                ledger_job(rt, settings, target).scheduled, first_run_at_start=True,
            ))
    every = settings.advice.post_every_seconds
    if every is not None and rt.advice_setup is not None:
        posts = advice_jobs.AdviceJob(
            rt.store, rt.chat, rt.teams, rt.advice, propose=Proposals(rt).propose_advice,
            window_seconds=settings.advice.window_seconds,
        )
        jobs.append(ScheduledJob(advice_jobs.JOB_ID, _every(every), posts.scheduled))
    aws = settings.prices.aws
    if aws.enabled:
        def refresh(at: datetime) -> None:
            prices.refresh_prices(rt.store, rt.prices, aws, at)

        jobs.append(ScheduledJob(prices.JOB_ID, _every(aws.refresh_seconds), refresh, first_run_at_start=True))
    return jobs


def background_for(rt: Runtime, settings: Settings, jobs: Sequence[ScheduledJob] | None = None) -> BackgroundJobs:
    """Start ``jobs`` (default :func:`scheduled_jobs`) on this replica's background threads, under
    leader election when it is enabled."""
    from bot.jobs.scheduler import start_background

    return start_background(
        rt.store, scheduled_jobs(rt, settings) if jobs is None else jobs,
        settings.leader_election, settings.kubernetes, rt.clock,
    )


# --- the process -----------------------------------------------------------------------------------


def slack_work(settings: Settings, metrics: BotMetrics | None = None) -> SlackWork:
    """The worker pools of the Slack listeners, sized by ``server``; ``metrics`` counts what
    they refuse."""
    from bot.chat.slack.app import SlackWork

    s = settings.server
    refused = metrics.work_refused_by if metrics is not None else None
    return SlackWork(
        commands=WorkerPool("commands", s.command_workers, s.command_queue, refused),
        presses=WorkerPool("presses", s.press_workers, s.press_queue, refused),
        replies=WorkerPool("replies", 2, 64),
    )


def housekeeping(rt: Runtime, settings: Settings) -> Callable[[], None]:
    """One round of what every replica does every ``server.housekeeping_seconds``: settle actions
    whose outcome is unknown, then write the messages that do not show their request's state."""
    proposals = Proposals(rt)
    messages = MessageSync(rt, recent_days=settings.slack.sync_recent_days)

    def round_() -> None:
        now = rt.clock()
        settled = proposals.settle(now)
        if set(settled) - {"waiting"}:
            log.info("housekeeping: settled %s", settled)
        synced = messages.sync_due(now)
        if synced["synced"] or synced["failed"]:
            log.info("housekeeping: messages %s", synced)

    return round_


def slack_process(
    settings: Settings, rt: Runtime, bolt: Any, metrics: BotMetrics, *, host: str = "0.0.0.0",
    work: SlackWork | None = None,
) -> Process:
    """The bot with Slack, not started: HTTP mode serves ``/slack/events`` on ``slack.http_port``,
    Socket Mode connects with ``SLACK_APP_TOKEN``; the probes and metrics are on ``server.port``;
    ``work`` (the listeners' pools) is cancelled by a shutdown. Raises SystemExit when the mode's
    secret is missing."""
    from bot.chat.slack.front import SocketModeConnection, events_route

    s = settings
    proposals = Proposals(rt)
    if s.slack.mode == "socket":
        if not s.slack_app_token:
            raise SystemExit("slack.mode is socket but SLACK_APP_TOKEN is not set")
        front: dict[str, Any] = {"connection": SocketModeConnection(bolt, s.slack_app_token.get_secret_value())}
    else:
        if not s.slack_signing_secret:
            raise SystemExit("slack.mode is http but SLACK_SIGNING_SECRET is not set")
        secret = s.slack_signing_secret.get_secret_value()
        front = {"mounted": events_route(bolt, secret, max_body_bytes=s.server.max_body_bytes)}
    server = s.server
    return Process(
        store=rt.store, inflight=rt.inflight, metrics=metrics,
        start_background=lambda: background_for(rt, s),
        # Only requests past their deadline: a patch another replica (or a previous life) sent
        # may still land before it, and the housekeeping reads those back once it passes.
        recover=lambda: proposals.settle(rt.clock(), why="The bot restarted"),
        settle=lambda ids, why: proposals.interrupted(ids, rt.clock(), why),
        events_port=s.slack.http_port, probe_port=server.port,
        grace_seconds=server.shutdown_grace_seconds, host=host,
        http=HttpOptions(threads=server.http_threads, backlog=server.backlog, max_body_bytes=server.max_body_bytes),
        pools=work.pools if work is not None else (),
        housekeeping=housekeeping(rt, s), housekeeping_seconds=server.housekeeping_seconds,
        watches=cluster_caches(rt),
        **front,
    )


def build_slack_process(
    settings: Settings,
    *,
    cluster_state: Path | None = None,
    telemetry_file: Path | None = None,
    clock: Callable[[], datetime] = utc_now,
    host: str = "0.0.0.0",
) -> Process:
    """:func:`slack_process` with its Web API client, metrics, Runtime and Bolt app. Raises
    SystemExit when ``SLACK_BOT_TOKEN`` is not set."""
    from bot.chat.slack.app import build_app
    from bot.chat.slack.web import SlackChat, UserGroups, web_client

    if not settings.slack_bot_token:
        raise SystemExit("SLACK_BOT_TOKEN is not set; `gpu-cost-bot check` lists what is missing")
    metrics = BotMetrics(clusters=[t.name for t in settings.cluster_targets()])
    client = web_client(settings.slack_bot_token.get_secret_value(), settings.slack.base_url)
    rt = build_runtime(
        settings, chat=SlackChat(client, metrics), cluster_state=cluster_state, telemetry_file=telemetry_file,
        group_members=UserGroups(client, metrics=metrics).members, clock=clock, metrics=metrics, watch=True,
    )
    secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
    work = slack_work(settings, metrics)
    bolt = build_app(rt, client, secret, alert_snooze_seconds=settings.alerts.snooze_seconds, work=work)
    return slack_process(settings, rt, bolt, metrics, host=host, work=work)


CONSOLE_CHANNEL = "#console"


def serve(
    settings: Settings, *, chat: str, cluster_state: Path | None, telemetry_file: Path | None, user: str = "UCONSOLE"
) -> None:
    """Run until SIGTERM/SIGINT (call from the main thread). ``chat`` is ``slack`` (Socket Mode or
    HTTP per ``slack.mode``) or ``console``: a prompt on this terminal, until end of input, where
    ``user`` (a Slack user id; an approver from the config may approve) presses the buttons and
    teams without a channel are posted to :data:`CONSOLE_CHANNEL`."""
    if chat == "console":
        if not settings.slack.default_channel:
            settings = settings.model_copy(update={"slack": settings.slack.model_copy(update={"default_channel": CONSOLE_CHANNEL})})
        rt = build_runtime(settings, cluster_state=cluster_state, telemetry_file=telemetry_file, watch=True,
                           metrics=BotMetrics(clusters=[t.name for t in settings.cluster_targets()]))
        keep_alive_to_exit()
        Proposals(rt).settle(rt.clock(), why="The bot restarted")
        caches = [c.start() for c in cluster_caches(rt)]
        background = background_for(rt, settings)
        keeper = Periodic("housekeeping", settings.server.housekeeping_seconds, housekeeping(rt, settings)).start()
        try:
            ConsoleSession(rt, user=user, out=sys.stdout, alert_snooze_seconds=settings.alerts.snooze_seconds).loop()
        finally:
            keeper.stop()
            background.shutdown(wait=True)
            for cache in caches:
                cache.stop()
        return

    process = build_slack_process(settings, cluster_state=cluster_state, telemetry_file=telemetry_file)
    keep_alive_to_exit()

    def start() -> None:
        process.start()
        log.info("gpu-cost-bot running (Slack %s mode, dry_run=%s)", settings.slack.mode, settings.dry_run)

    run_until_signalled(start, process.stop)
    # The drain is over; threads still running (a cost report's query) must not hold the exit.
    exit_now(0)
