"""The scheduled alerts: decide, claim once, post to the team's channel.

Every alert is claimed in the store (``Store.record_alert``) before it is posted and posted only
when this call claimed it, so running the job again, or on two replicas at once, never posts an
alert twice. An alert's Snooze button (:mod:`bot.chat.alert_snooze`) holds back the team's
follow-up alerts of the same family: they are not claimed while the snooze lasts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from actions.alerts import (
    Alert,
    budget_alerts,
    cluster_queue_wait_alerts,
    idle_on_demand_alerts,
    queue_wait_alerts,
    snooze_family,
    spot_ratio_alerts,
)
from actions.cost import CostReport
from actions.freeing import plan_freeing
from actions.model import ClusterSnapshot, Finding, utc_now
from actions.policy import TeamDirectory
from actions.queue import QueueReport
from actions.sources.prometheus_kueue import KueueMetrics
from actions.store import Store
from bot.chat import Chat, ChatError
from bot.chat.blocks.alerts import alert_message
from bot.settings import AlertSettings

log = logging.getLogger(__name__)

JOB_ID = "alerts"
SYSTEM = "system"
# The window the ClusterQueue admission-wait p90 is taken over, seconds.
ADMISSION_WAIT_WINDOW_SECONDS = 3600.0

ReadQueues = Callable[[datetime], tuple[ClusterSnapshot, list[Finding], QueueReport]]


@dataclass
class AlertsJob:
    """The alerts, with what they read and where they post.

    ``read_queues(now)`` gives the cluster snapshot, the idle findings and Kueue's queues
    (:meth:`bot.chat.runtime.Runtime.read_queues`); ``budgets()`` team -> USD per month;
    ``cost_report(start, end)`` the period's CostReport for the month-to-date spend (None: no
    budget alerts from the schedule); ``kueue`` reads the ClusterQueue admission-wait p90 and the
    spot ratio (None: those alerts are skipped). ``timezone`` is ``costs.timezone``, where a
    month starts unless a team sets its own. ``clusters`` names every cluster of a bot of several
    (``read_queues(now, cluster=name)`` reads each; a cluster that cannot be read is logged and
    skipped); empty for a bot of one.
    """

    store: Store
    chat: Chat
    teams: TeamDirectory
    settings: AlertSettings
    read_queues: ReadQueues
    budgets: Callable[[], Mapping[str, float]]
    cost_report: Callable[[datetime, datetime], CostReport] | None = None
    kueue: KueueMetrics | None = None
    timezone: str = "UTC"
    clock: Callable[[], datetime] = utc_now
    clusters: Sequence[str] = ()

    def team_timezone(self, team: str) -> str:
        """The zone a team's month runs in: its own when set, else :attr:`timezone`."""
        return self.teams.team_for_name(team).timezone or self.timezone

    def evaluate(self, now: datetime, month_to_date_usd: Mapping[str, float] | None) -> tuple[list[Alert], int]:
        """Every alert that holds at ``now``, and how many sources failed (each is logged; the
        others are still evaluated). Budget alerts need ``month_to_date_usd`` (team -> USD spent
        this month); the ClusterQueue p90 and spot ratio need :attr:`kueue`."""
        cfg = self.settings
        alerts: list[Alert] = []
        errors = 0
        if month_to_date_usd is not None:
            for team, budget in sorted(self.budgets().items()):
                try:
                    alerts += budget_alerts(
                        team,
                        budget,
                        float(month_to_date_usd.get(team, 0.0)),
                        now,
                        thresholds_percent=cfg.budget_thresholds_percent,
                        tz=self.team_timezone(team),
                    )
                except (ValueError, KeyError):  # a threshold without an alert kind; an unknown zone
                    log.exception("alerts: budget of team %s not evaluated", team)
                    errors += 1
        report: QueueReport | None = None
        findings: list[Finding] = []
        nodes: dict = {}
        for cluster in self.clusters or (None,):
            try:
                snapshot, found, read = self.read_queues(now) if cluster is None else self.read_queues(now, cluster=cluster)
            except Exception:  # noqa: BLE001 - one unreadable cluster must not silence the other alerts
                log.exception("alerts: cluster %s unreadable at %s", cluster or "", now.isoformat())
                errors += 1
                continue
            # Kueue's p90 and the spot ratio are the first cluster's, so is the report they join.
            report = read if report is None else report
            open_requests = {r.key: r.id for r in self.store.list_requests(states=["proposed"]) if r.id is not None}
            plans = {}
            for p in read.pending:
                plan = plan_freeing(p, found, open_requests) if p.waiting_seconds > cfg.queue_wait_seconds else None
                if plan is not None:
                    plans[p.workload.uid] = plan
            alerts += queue_wait_alerts(read, cfg.queue_wait_seconds, plans)
            findings += found
            nodes.update({n: v for n, v in snapshot.nodes.items() if n not in nodes})
        # One alert per team and day, however many clusters its idle on-demand GPUs are in.
        alerts += idle_on_demand_alerts(findings, nodes, cfg.idle_on_demand_seconds, now)
        if self.kueue is not None:
            try:
                p90 = self.kueue.admission_wait_p90(now, ADMISSION_WAIT_WINDOW_SECONDS)
                if report is not None:
                    alerts += cluster_queue_wait_alerts(p90, report, cfg.queue_wait_seconds, now)
            except Exception:  # noqa: BLE001
                log.exception("alerts: admission-wait p90 unreadable at %s", now.isoformat())
                errors += 1
            try:
                ratios = self.kueue.spot_ratio_by_team(
                    now, cfg.spot_ratio_window_seconds, lambda ns: self.teams.team_for(ns).name
                )
                alerts += spot_ratio_alerts(ratios, cfg.spot_ratio_target, cfg.spot_ratio_window_seconds, now)
            except Exception:  # noqa: BLE001
                log.exception("alerts: spot ratio unreadable at %s", now.isoformat())
                errors += 1
        return alerts, errors

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

    def run(self, now: datetime | None = None, month_to_date_usd: Mapping[str, float] | None = None) -> dict[str, int]:
        """One run of the alerts at ``now`` (default ``clock()``): evaluate, then claim and post
        each alert once. ``month_to_date_usd`` maps team -> USD spent this calendar month (budget
        alerts are skipped without it). Never raises: failures are logged and counted in
        ``errors``; returns the counts of :meth:`post` plus ``errors``."""
        now = now or self.clock()
        try:
            alerts, errors = self.evaluate(now, month_to_date_usd)
            counts = self.post(alerts, now)
        except Exception:  # noqa: BLE001 - a failed run must not stop the next one
            log.exception("alerts at %s failed", now.isoformat())
            return {"posted": 0, "duplicate": 0, "snoozed": 0, "unposted": 0, "errors": 1}
        counts["errors"] = errors
        log.info("alerts at %s: %s", now.isoformat(), counts)
        return counts

    def month_to_date_spend(self, now: datetime) -> dict[str, float] | None:
        """Each team's USD spent from the start of ``now``'s calendar month (in
        :attr:`timezone`) to ``now``, from :attr:`cost_report`; None (budget alerts skipped, the
        reason logged) without a cost report or when Prometheus cannot be read."""
        if self.cost_report is None:
            log.info("alerts: budget alerts skipped: the bot has no cost source")
            return None
        local = now.astimezone(ZoneInfo(self.timezone))
        month_start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        try:
            report = self.cost_report(month_start.astimezone(now.tzinfo), now)
        except Exception:  # noqa: BLE001 - the other alerts still run; this run is recorded as failed
            log.exception("alerts: month-to-date cost unreadable at %s", now.isoformat())
            return None
        return {team: r.cost_usd for team, r in report.teams.items()}

    def scheduled(self, scheduled_at: datetime) -> None:
        """The scheduler's run for ``scheduled_at``: month-to-date spend, then :meth:`run`.
        Raises RuntimeError when a source failed (after posting every alert the others gave), so
        the run is recorded as ``error``."""
        spend = self.month_to_date_spend(scheduled_at)
        counts = self.run(scheduled_at, spend)
        failed = counts["errors"] + (1 if spend is None and self.cost_report is not None else 0)
        if failed:
            raise RuntimeError(f"alerts at {scheduled_at.isoformat()}: {failed} source(s) failed; see the log")
