"""The scheduled alerts: decide, claim once, post to the team's channel.

Every alert is claimed in the store (``Store.record_alert``) before it is posted and posted only
when this call claimed it, so running the job again, or on two replicas at once, never posts an
alert twice. An alert's Snooze button (:mod:`bot.chat.alert_snooze`) holds back the team's
follow-up alerts of the same family: they are not claimed while the snooze lasts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from actions.alerts.alert import Alert, in_cluster, snooze_family
from actions.alerts.budgets import budget_alerts
from actions.alerts.capacity import idle_on_demand_alerts, spot_ratio_alerts
from actions.alerts.queues import cluster_queue_wait_alerts, queue_wait_alerts
from actions.cost.fleet import FleetReport
from actions.kueue.freeing import plan_freeing
from actions.kueue.queues import QueueReport
from actions.model.findings import Finding
from actions.model.kube import Node
from actions.model.snapshot import ClusterSnapshot
from actions.model.times import utc_now
from actions.policy.teams import TeamDirectory
from actions.sources.prometheus.kueue import KueueMetrics
from actions.store import bulk as store_bulk
from actions.store.database import Store
from actions.text import one_line
from bot.chat.approve_all import remember as remember_approve_all
from bot.chat.blocks.alerts import alert_message
from bot.runtime.chat import Chat, ChatError
from bot.settings import AlertSettings

log = logging.getLogger(__name__)

JOB_ID = "alerts"
SYSTEM = "system"
# The window the ClusterQueue admission-wait p90 is taken over, seconds.
ADMISSION_WAIT_WINDOW_SECONDS = 3600.0

ReadQueues = Callable[..., tuple[ClusterSnapshot, list[Finding], QueueReport]]


@dataclass(frozen=True)
class MonthSpend:
    """Each team's USD spent this month (``usd``, team -> USD), summed over ``clusters`` (empty
    or one: a bot of one cluster); ``missing`` maps each cluster whose spend could not be read
    to why (its spend is not in ``usd``)."""

    usd: Mapping[str, float]
    clusters: tuple[str, ...] = ()
    missing: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _ClusterAlerts:
    alerts: list[Alert]
    findings: list[Finding]
    nodes: Mapping[str, Node]
    failed: list[str]


@dataclass
class AlertsJob:
    """The alerts, with what they read and where they post.

    ``read_queues(now, cluster=name)`` gives a cluster's snapshot, idle findings and Kueue
    queues (:meth:`bot.runtime.runtime.Runtime.read_queues`); ``budgets()`` team -> USD per month;
    ``spend_report(start, end)`` the period's FleetReport, every cluster's cost and the teams'
    sums over them, for the month-to-date spend (None: no budget alerts from the schedule);
    ``kueue`` maps a cluster's name (``""`` for a bot of one) to the reader of its ClusterQueue
    admission-wait p90 and spot ratio (a cluster without one: those alerts are skipped).
    ``timezone`` is ``costs.timezone``, where a month starts unless a team sets its own.
    ``clusters`` names every cluster of a bot of several, the first one first; empty for a bot
    of one. ``home`` is the cluster whose alerts are claimed as a bot of one claims them (the
    store's home cluster, :meth:`bot.runtime.runtime.Runtime.home`, so reordering ``clusters:``
    claims no alert twice; None: the first); every other cluster's period keys start with its
    name. Each cluster is read on its own: one that cannot be read is logged and named, and the
    others' alerts still go out.
    """

    store: Store
    chat: Chat
    teams: TeamDirectory
    settings: AlertSettings
    read_queues: ReadQueues
    budgets: Callable[[], Mapping[str, float]]
    spend_report: Callable[[datetime, datetime], FleetReport] | None = None
    kueue: Mapping[str, KueueMetrics] = field(default_factory=dict)
    timezone: str = "UTC"
    clock: Callable[[], datetime] = utc_now
    clusters: Sequence[str] = ()
    home: str | None = None

    def team_timezone(self, team: str) -> str:
        """The zone a team's month runs in: its own when set, else :attr:`timezone`."""
        return self.teams.team_for_name(team).timezone or self.timezone

    def evaluate(
        self, now: datetime, month_to_date_usd: Mapping[str, float] | MonthSpend | None,
    ) -> tuple[list[Alert], list[str]]:
        """Every alert that holds at ``now``, and what could not be read (one line each, naming
        the cluster or team; each is logged, the others are still evaluated). Budget alerts need
        ``month_to_date_usd`` (team -> USD spent this month, or a :class:`MonthSpend`); the
        ClusterQueue p90 and spot ratio a cluster's :attr:`kueue` reader."""
        cfg = self.settings
        alerts: list[Alert] = []
        failed: list[str] = []
        spend = month_to_date_usd if isinstance(month_to_date_usd, MonthSpend) or month_to_date_usd is None \
            else MonthSpend(month_to_date_usd)
        if spend is not None:
            for team, budget in sorted(self.budgets().items()):
                try:
                    alerts += budget_alerts(
                        team,
                        budget,
                        float(spend.usd.get(team, 0.0)),
                        now,
                        thresholds_percent=cfg.budget_thresholds_percent,
                        tz=self.team_timezone(team),
                        clusters=spend.clusters,
                        missing=spend.missing,
                    )
                except (ValueError, KeyError) as e:  # a threshold without an alert kind; an unknown zone
                    log.exception("alerts: budget of team %s not evaluated", team)
                    failed.append(f"budget of team {team}: {one_line(e)}")
        findings: list[Finding] = []
        nodes: dict[str, Mapping[str, Node]] = {}
        for cluster in self.clusters or ("",):
            got = self._cluster_alerts(now, cluster)
            alerts += got.alerts
            findings += got.findings
            nodes[cluster] = got.nodes
            failed += got.failed
        # One alert per team and day, however many clusters its idle on-demand GPUs are in.
        alerts += idle_on_demand_alerts(findings, nodes, cfg.idle_on_demand_seconds, now)
        return alerts, failed

    def _cluster_alerts(self, now: datetime, cluster: str) -> _ClusterAlerts:
        """The queue-wait, ClusterQueue p90 and spot-ratio alerts of ``cluster`` (``""``: the
        only one), named by :func:`~actions.alerts.alert.in_cluster` when there are several."""
        cfg = self.settings
        where = f"cluster {cluster}: " if cluster else ""
        alerts: list[Alert] = []
        failed: list[str] = []
        found: list[Finding] = []
        nodes: Mapping[str, Node] = {}
        report: QueueReport | None = None
        try:
            snapshot, found, report = self.read_queues(now, cluster=cluster) if cluster else self.read_queues(now)
        except Exception as e:  # noqa: BLE001 - one unreadable cluster must not silence the other alerts
            log.exception("alerts: %sKubernetes API unreadable at %s", where, now.isoformat())
            failed.append(f"{where}Kubernetes API: {one_line(e)}")
        else:
            nodes = snapshot.nodes
            open_requests = store_bulk.proposed_ids(self.store)
            plans = {}
            for p in report.pending:
                plan = plan_freeing(p, found, open_requests) if p.waiting_seconds > cfg.queue_wait_seconds else None
                if plan is not None:
                    plans[p.workload.uid] = plan
            alerts += queue_wait_alerts(report, cfg.queue_wait_seconds, plans)
        kueue = self.kueue.get(cluster)
        if kueue is not None:
            try:
                p90 = kueue.admission_wait_p90(now, ADMISSION_WAIT_WINDOW_SECONDS)
                # Without the cluster's queues the teams a ClusterQueue serves are unknown.
                if report is not None:
                    alerts += cluster_queue_wait_alerts(p90, report, cfg.queue_wait_seconds, now)
            except Exception as e:  # noqa: BLE001
                log.exception("alerts: %sadmission-wait p90 unreadable at %s", where, now.isoformat())
                failed.append(f"{where}admission-wait p90: {one_line(e)}")
            try:
                ratios = kueue.spot_ratio_by_team(
                    now, cfg.spot_ratio_window_seconds, lambda ns: self.teams.team_for(ns).name
                )
                alerts += spot_ratio_alerts(ratios, cfg.spot_ratio_target, cfg.spot_ratio_window_seconds, now)
            except Exception as e:  # noqa: BLE001
                log.exception("alerts: %sspot ratio unreadable at %s", where, now.isoformat())
                failed.append(f"{where}spot ratio: {one_line(e)}")
        if cluster:
            alerts = in_cluster(alerts, cluster, first=cluster == (self.home or self.clusters[0]))
        return _ClusterAlerts(alerts, found, nodes, failed)

    def _snoozed_families(self, team: str, now: datetime) -> set[str]:
        return {
            snooze_family(a.kind)
            for a in self.store.alerts(team)
            if a.snoozed_until is not None and a.snoozed_until > now
        }

    def post(self, alerts: list[Alert], now: datetime) -> dict[str, int]:
        """Claim and post each alert once. Returns counts: ``posted``, ``duplicate`` (claimed
        before, here or by another replica), ``snoozed`` (held back by a snooze), ``unposted``
        (claimed but no channel or the post failed; audited as ``alert-post-failed``, never
        re-posted)."""
        counts = {"posted": 0, "duplicate": 0, "snoozed": 0, "unposted": 0}
        snoozed: dict[str, set[str]] = {}
        for alert in alerts:
            if alert.team not in snoozed:
                snoozed[alert.team] = self._snoozed_families(alert.team, now)
            if alert.family in snoozed[alert.team]:
                counts["snoozed"] += 1
                continue
            if not self.store.record_alert(alert.team, alert.kind, alert.period_key, now):
                counts["duplicate"] += 1
                continue
            for kind in alert.also_claims:
                self.store.record_alert(alert.team, kind, alert.period_key, now)
            record = self.store.alert(alert.team, alert.kind, alert.period_key)
            assert record is not None and record.id is not None  # just claimed
            channel = self.teams.channel_for(self.teams.team_for_name(alert.team))
            problem = None
            if not channel:
                problem = "the team has no channel and no default channel is configured"
            else:
                if alert.approve_all:
                    # Before the post: its Approve all button names the alert, the store its ids.
                    remember_approve_all(self.store, record.id, alert.approve_all, now)
                try:
                    ref = self.chat.post(channel, alert_message(alert, record.id, self.settings.snooze_seconds))
                except ChatError as e:
                    problem = str(e)
                else:
                    self.store.set_alert_message(record.id, ref.channel, ref.ts)
                    counts["posted"] += 1
                    continue
            log.warning("alert #%s (%s %s %s) not posted: %s", record.id, alert.team, alert.kind, alert.period_key, problem)
            self.store.audit(
                None, actor=SYSTEM, event="alert-post-failed", now=now,
                detail={"alert_id": record.id, "team": alert.team, "kind": alert.kind, "reason": problem},
            )
            counts["unposted"] += 1
        return counts

    def run(
        self, now: datetime | None = None, month_to_date_usd: Mapping[str, float] | MonthSpend | None = None,
    ) -> dict[str, int]:
        """One run of the alerts at ``now`` (default ``clock()``): evaluate, then claim and post
        each alert once. ``month_to_date_usd`` maps team -> USD spent this calendar month, or is
        a :class:`MonthSpend` (budget alerts are skipped without it). Never raises: failures are
        logged and counted in ``errors``; returns the counts of :meth:`post` plus ``errors``."""
        counts, _ = self._run(now or self.clock(), month_to_date_usd)
        return counts

    def _run(self, now: datetime, spend: Mapping[str, float] | MonthSpend | None) -> tuple[dict[str, int], list[str]]:
        try:
            alerts, failed = self.evaluate(now, spend)
            counts = self.post(alerts, now)
        except Exception as e:  # noqa: BLE001 - a failed run must not stop the next one
            log.exception("alerts at %s failed", now.isoformat())
            return {"posted": 0, "duplicate": 0, "snoozed": 0, "unposted": 0, "errors": 1}, [one_line(e)]
        counts["errors"] = len(failed)
        log.info("alerts at %s: %s", now.isoformat(), counts)
        return counts, failed

    def month_to_date_spend(self, now: datetime) -> MonthSpend | None:
        """Each team's USD spent from the start of ``now``'s calendar month (in
        :attr:`timezone`) to ``now``, summed over every cluster, from :attr:`spend_report`
        (a cluster whose report failed is named in ``missing``); None (budget alerts skipped, the
        reason logged) without a spend report or when no cluster's usage can be read."""
        if self.spend_report is None:
            log.info("alerts: budget alerts skipped: the bot has no cost source")
            return None
        local = now.astimezone(ZoneInfo(self.timezone))
        month_start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        try:
            fleet = self.spend_report(month_start.astimezone(now.tzinfo), now)
        except Exception:  # noqa: BLE001 - the other alerts still run; this run is recorded as failed
            log.exception("alerts: month-to-date cost unreadable at %s", now.isoformat())
            return None
        return MonthSpend(
            {team: r.cost_usd for team, r in fleet.fleet.teams.items()},
            tuple(fleet.clusters) + tuple(fleet.failed), dict(fleet.failed),
        )

    def scheduled(self, scheduled_at: datetime) -> None:
        """The scheduler's run for ``scheduled_at``: month-to-date spend, then :meth:`run`.
        Raises RuntimeError naming each source that failed (a cluster, the spend), after posting
        every alert the others gave, so the run is recorded as ``error``."""
        spend = self.month_to_date_spend(scheduled_at)
        _, failed = self._run(scheduled_at, spend)
        if spend is None and self.spend_report is not None:
            failed.append("month-to-date spend (budget alerts skipped)")
        elif spend is not None:
            failed += [f"cluster {c}: spend not counted in budgets ({why})" for c, why in spend.missing.items()]
        if failed:
            raise RuntimeError(f"alerts at {scheduled_at.isoformat()}: failed: " + "; ".join(failed))
