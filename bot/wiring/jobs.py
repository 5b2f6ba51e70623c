"""The scheduled jobs from a Runtime and the settings: which jobs run, on what schedule, each bound
to the parts it needs (the sweep, alerts, digests, advice posts, price refresh, one ledger rollup
per cluster).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from apscheduler.triggers.interval import IntervalTrigger

from actions.ledger.rollup import LedgerRollup
from actions.sources.prometheus.kueue import KueueMetrics
from actions.store.ledger import LedgerStore
from bot.chat.auto import AutoActions
from bot.chat.proposals import Proposals
from bot.chat.verify import Verifier
from bot.jobs import advice as advice_jobs
from bot.jobs import alerts, anomalies, budgets, ledger, prices, sweep
from bot.runtime.queue_starts import QueueStarts
from bot.runtime.runtime import Runtime
from bot.service.leader import replica_identity
from bot.settings import Settings
from bot.settings.clusters import ClusterTarget
from bot.wiring.sources import (
    advice_hours,
    kueue_by_cluster,
    kueue_metrics,
    prometheus_usage,
)

if TYPE_CHECKING:
    # Imported where they are used: Slack's SDK and the digests' charts (matplotlib) are a second
    # of start-up that `sweep --once`, `check` and the console never use, APScheduler's
    # schedulers a tenth that a one-shot sweep never starts.
    from bot.jobs import digests
    from bot.jobs.scheduler import BackgroundJobs, ScheduledJob


def sweep_for(rt: Runtime, *, verify: bool = False) -> sweep.Sweep:
    """The idle sweep over ``rt``: detection, then proposals in ``rt``'s store and chat, and with
    ``verify`` the outcomes of done actions judged after each sweep (for a process without
    housekeeping: ``sweep``, ``sweep --once``)."""
    return sweep.Sweep(rt.detection, Proposals(rt), rt.metrics, rt.clock, AutoActions(rt),
                       verify=Verifier(rt).run if verify else None)


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
        read_queues=QueueStarts(rt).read_queues, budgets=rt.team_budgets,
        spend_report=rt.fleet_report if rt.costs is not None else None,
        kueue=dict(kueue or {}), timezone=settings.costs.timezone, clock=rt.clock,
        clusters=tuple(c.name for c in rt.clusters), home=rt.home(),
    )


def budgets_for(rt: Runtime, settings: Settings) -> budgets.BudgetsJob:
    """The budget job over ``rt``: its alerts claimed and posted as the alerts job's are."""
    return budgets.BudgetsJob(rt, alerts_for(rt, settings).post, settings.alerts.budget_thresholds_percent)


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
        advice=advice_hours(settings, rt.store, target) if settings.advice.history_source == "auto" else None,
    )
    return ledger.LedgerJob(rollup, store, settings.ledger, rt.policy, rt.clock)


def anomalies_for(rt: Runtime, settings: Settings, *, holder: str | None = None) -> anomalies.AnomaliesJob:
    """The spend-anomaly job over every cluster's ledger in ``rt``'s store, priced with ``rt``'s
    prices, posting to each team's channel and ``slack.admin_channel``."""
    return anomalies.AnomaliesJob(
        store=rt.store, chat=rt.chat, teams=rt.teams, prices=rt.prices, settings=settings.anomalies,
        clusters=tuple(t.name for t in settings.cluster_targets()),
        holder=holder or replica_identity(settings.leader_election), team_label=settings.costs.team_label,
        admin_channel=settings.slack.admin_channel, clock=rt.clock,
    )


def _every(seconds: float) -> IntervalTrigger:
    return IntervalTrigger(seconds=seconds, timezone=timezone.utc)


def scheduled_jobs(rt: Runtime, settings: Settings, *, verify: bool = False) -> list[ScheduledJob]:
    """Every scheduled job this bot runs, in one place: the idle sweep (judging done actions'
    outcomes too with ``verify``: :func:`sweep_for`), the alerts, the digests (a frequent
    check; each team's digest fires at its own local time), new advice (every
    ``advice.post_every_seconds``), when ``ledger.enabled`` the usage ledger's rollup and
    (``anomalies.enabled``, by default with the ledger) the spend anomalies, and, when
    ``prices.aws.enabled``, the live-price refresh."""
    from bot.jobs import digests
    from bot.jobs.scheduler import ScheduledJob

    jobs = [
        ScheduledJob(sweep.JOB_ID, _every(settings.sweep.interval_seconds), sweep_for(rt, verify=verify).scheduled,
                     first_run_at_start=True),
        ScheduledJob(alerts.JOB_ID, _every(settings.alerts.interval_seconds), alerts_for(
            rt, settings, kueue=kueue_by_cluster(settings) if rt.clusters else kueue_metrics(settings)).scheduled),
        ScheduledJob(digests.JOB_ID, _every(digests.DIGEST_CHECK_SECONDS), digests_for(rt, settings).scheduled),
        ScheduledJob(budgets.JOB_ID, _every(settings.alerts.interval_seconds), budgets_for(rt, settings).scheduled),
    ]
    if settings.ledger.enabled:
        # One rollup per cluster, each claimed on its own (the first keeps the id "usage-ledger").
        for i, target in enumerate(settings.cluster_targets()):
            jobs.append(ScheduledJob(
                ledger.JOB_ID if i == 0 else f"{ledger.JOB_ID}-{target.name}", _every(settings.ledger.interval_seconds),
                ledger_job(rt, settings, target).scheduled, first_run_at_start=True,
            ))
    if settings.anomalies.active(settings.ledger.enabled):
        # At the rollup's pace: each hour it writes is judged within one interval.
        jobs.append(ScheduledJob(anomalies.JOB_ID, _every(settings.ledger.interval_seconds),
                                 anomalies_for(rt, settings).scheduled))
    every = settings.advice.post_every_seconds
    if every is not None and rt.advice_setup is not None:
        posts = advice_jobs.AdviceJob(
            rt.store, rt.chat, rt.teams, rt.advice, propose=Proposals(rt).propose_advice,
            window_seconds=settings.advice.window_seconds, energy=rt.energy_factors(),
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
