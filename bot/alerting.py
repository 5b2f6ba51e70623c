"""The scheduled alerts: decide, claim once, post to the team's channel; and their Snooze button.

Every alert is claimed in the store (``Store.record_alert``) before it is posted and posted only
when this call claimed it, so running the job again, or on two replicas at once, never posts an
alert twice. A Snooze press silences the team's follow-up alerts of the same family (all budget
alerts together; otherwise the same kind) until the snooze ends: they are not claimed meanwhile,
so one that still holds when the snooze ends goes out then.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta

from actions.alerts import (
    Alert,
    budget_alerts,
    cluster_queue_wait_alerts,
    idle_on_demand_alerts,
    queue_wait_alerts,
    snooze_family,
    spot_ratio_alerts,
)
from actions.idle import detect_idle
from actions.model import ClusterSnapshot, Finding
from actions.queue import QueueReport, queue_report
from actions.sources.prometheus_kueue import KueueMetrics
from bot.alert_blocks import alert_message, snoozed_message
from bot.approvals import Outcome
from bot.blocks import short_time
from bot.chat import ChatError, Message, MessageRef
from bot.runtime import Runtime
from bot.settings import Settings

log = logging.getLogger(__name__)

SYSTEM = "system"
# The window the ClusterQueue admission-wait p90 is taken over, seconds.
ADMISSION_WAIT_WINDOW_SECONDS = 3600.0


def kueue_metrics(settings: Settings) -> KueueMetrics:
    """The admission-wait and spot-ratio reader for the configured Prometheus (its URL, headers,
    bearer token, TLS and timeout settings)."""
    return KueueMetrics(
        settings.prometheus.url,
        settings.prometheus_headers(),
        verify_tls=settings.prometheus.verify_tls,
        timeout_seconds=settings.prometheus.timeout_seconds,
    )


def team_budgets(rt: Runtime) -> dict[str, float]:
    """Team -> monthly budget in USD: the config's ``teams[].monthly_budget_usd``, overridden by
    budgets set in chat (``/gpu budget set``, kept in the store)."""
    out = {name: t.monthly_budget_usd for name, t in rt.teams.teams.items() if t.monthly_budget_usd}
    out.update({b.team: b.usd_per_month for b in rt.store.budgets()})
    return out


def team_timezone(rt: Runtime, settings: Settings, team: str) -> str:
    """The zone a team's month runs in: its own when set, else ``costs.timezone``."""
    return rt.teams.team_for_name(team).timezone or settings.costs.timezone


def open_request_ids(rt: Runtime) -> dict[str, int]:
    """Finding key -> id of its ActionRequest awaiting approval."""
    return {r.key: r.id for r in rt.store.list_requests(states=["proposed"]) if r.id is not None}


def read_queues(rt: Runtime, now: datetime, team: str | None = None) -> tuple[ClusterSnapshot, list[Finding], QueueReport]:
    """Read the cluster and telemetry at ``now``; return the snapshot, the idle findings (empty,
    logged, when the telemetry cannot be read: the queues are still worth showing) and the queue
    report (only ``team``'s queues when given). Raises ClusterReadError when the cluster cannot
    be read."""
    snapshot = rt.cluster.snapshot(now)
    try:
        telemetry = rt.telemetry.fetch(now, rt.policy)
        findings = detect_idle(snapshot, telemetry, rt.prices, rt.policy, rt.teams, now)
    except Exception:  # noqa: BLE001 - queues without the idle context beat no queues
        log.exception("telemetry at %s unreadable; queues shown without idle GPUs elsewhere", now.isoformat())
        findings = []
    report = queue_report(snapshot, findings, rt.teams, now, open_requests=open_request_ids(rt), team=team)
    return snapshot, findings, report


def evaluate_alerts(
    rt: Runtime,
    settings: Settings,
    now: datetime,
    month_to_date_usd: Mapping[str, float] | None,
    kueue: KueueMetrics | None = None,
) -> tuple[list[Alert], int]:
    """Every alert that holds at ``now``, and how many sources failed (each is logged; the
    others are still evaluated). Budget alerts need ``month_to_date_usd`` (team -> USD spent this
    month); the ClusterQueue p90 and spot ratio need ``kueue``."""
    cfg = settings.alerts
    alerts: list[Alert] = []
    errors = 0
    if month_to_date_usd is not None:
        for team, budget in sorted(team_budgets(rt).items()):
            try:
                alerts += budget_alerts(
                    team,
                    budget,
                    float(month_to_date_usd.get(team, 0.0)),
                    now,
                    thresholds_percent=cfg.budget_thresholds_percent,
                    tz=team_timezone(rt, settings, team),
                )
            except (ValueError, KeyError):  # a threshold without an alert kind; an unknown zone
                log.exception("alerts: budget of team %s not evaluated", team)
                errors += 1
    report: QueueReport | None = None
    try:
        snapshot, findings, report = read_queues(rt, now)
        alerts += queue_wait_alerts(report, cfg.queue_wait_seconds)
        alerts += idle_on_demand_alerts(findings, snapshot.nodes, cfg.idle_on_demand_seconds, now)
    except Exception:  # noqa: BLE001 - one unreadable source must not silence the other alerts
        log.exception("alerts: cluster unreadable at %s", now.isoformat())
        errors += 1
    if kueue is not None:
        try:
            p90 = kueue.admission_wait_p90(now, ADMISSION_WAIT_WINDOW_SECONDS)
            if report is not None:
                alerts += cluster_queue_wait_alerts(p90, report, cfg.queue_wait_seconds, now)
        except Exception:  # noqa: BLE001
            log.exception("alerts: admission-wait p90 unreadable at %s", now.isoformat())
            errors += 1
        try:
            ratios = kueue.spot_ratio_by_team(
                now, cfg.spot_ratio_window_seconds, lambda ns: rt.teams.team_for(ns).name
            )
            alerts += spot_ratio_alerts(ratios, cfg.spot_ratio_target, cfg.spot_ratio_window_seconds, now)
        except Exception:  # noqa: BLE001
            log.exception("alerts: spot ratio unreadable at %s", now.isoformat())
            errors += 1
    return alerts, errors


def _snoozed_families(rt: Runtime, team: str, now: datetime) -> set[str]:
    return {
        snooze_family(a.kind)
        for a in rt.store.alerts(team)
        if a.snoozed_until is not None and a.snoozed_until > now
    }


def post_alerts(rt: Runtime, alerts: list[Alert], now: datetime, snooze_seconds: float) -> dict[str, int]:
    """Claim and post each alert once. Returns counts: ``posted``, ``duplicate`` (claimed before,
    here or by another replica), ``snoozed`` (held back by a snooze), ``unposted`` (claimed but
    no channel or the post failed; audited as ``alert-post-failed``, never re-posted)."""
    counts = {"posted": 0, "duplicate": 0, "snoozed": 0, "unposted": 0}
    snoozed: dict[str, set[str]] = {}
    for alert in alerts:
        if alert.team not in snoozed:
            snoozed[alert.team] = _snoozed_families(rt, alert.team, now)
        if alert.family in snoozed[alert.team]:
            counts["snoozed"] += 1
            continue
        if not rt.store.record_alert(alert.team, alert.kind, alert.period_key, now):
            counts["duplicate"] += 1
            continue
        for kind in alert.also_claims:
            rt.store.record_alert(alert.team, kind, alert.period_key, now)
        record = rt.store.alert(alert.team, alert.kind, alert.period_key)
        assert record is not None and record.id is not None  # just claimed
        channel = rt.teams.channel_for(rt.teams.team_for_name(alert.team))
        problem = None
        if not channel:
            problem = "the team has no channel and no default channel is configured"
        else:
            try:
                ref = rt.chat.post(channel, alert_message(alert, record.id, snooze_seconds))
            except ChatError as e:
                problem = str(e)
            else:
                rt.store.set_alert_message(record.id, ref.channel, ref.ts)
                counts["posted"] += 1
                continue
        log.warning("alert #%s (%s %s %s) not posted: %s", record.id, alert.team, alert.kind, alert.period_key, problem)
        rt.store.audit(
            None, actor=SYSTEM, event="alert-post-failed", now=now,
            detail={"alert_id": record.id, "team": alert.team, "kind": alert.kind, "reason": problem},
        )
        counts["unposted"] += 1
    return counts


def alerts_job(
    rt: Runtime,
    settings: Settings,
    now: datetime | None = None,
    month_to_date_usd: Mapping[str, float] | None = None,
    *,
    kueue: KueueMetrics | None = None,
) -> dict[str, int]:
    """One run of the alerts at ``now`` (default ``rt.clock()``): evaluate, then claim and post
    each alert once. ``month_to_date_usd`` maps team -> USD spent this calendar month (budget
    alerts are skipped without it); ``kueue`` reads the ClusterQueue admission-wait p90 and the
    spot ratio (skipped without it). Never raises: failures are logged and counted in
    ``errors``; returns the counts of :func:`post_alerts` plus ``errors``."""
    now = now or rt.clock()
    try:
        alerts, errors = evaluate_alerts(rt, settings, now, month_to_date_usd, kueue)
        counts = post_alerts(rt, alerts, now, settings.alerts.snooze_seconds)
    except Exception:  # noqa: BLE001 - a failed run must not stop the next one
        log.exception("alerts at %s failed", now.isoformat())
        return {"posted": 0, "duplicate": 0, "snoozed": 0, "unposted": 0, "errors": 1}
    counts["errors"] = errors
    log.info("alerts at %s: %s", now.isoformat(), counts)
    return counts


def month_to_date_spend(rt: Runtime, settings: Settings, now: datetime) -> dict[str, float] | None:
    """Each team's USD spent from the start of ``now``'s calendar month (in ``costs.timezone``) to
    ``now``, from the cost engine; None (budget alerts skipped, the reason logged) when the bot has
    no usage source or Prometheus cannot be read."""
    from zoneinfo import ZoneInfo

    from bot.reports import ReportUnavailable, team_reports

    local = now.astimezone(ZoneInfo(settings.costs.timezone))
    month_start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    try:
        report = team_reports(rt, month_start.astimezone(now.tzinfo), now)
    except ReportUnavailable as e:
        log.info("alerts: budget alerts skipped: %s", e)
        return None
    except Exception:  # noqa: BLE001 - the other alerts still run; this run is recorded as failed
        log.exception("alerts: month-to-date cost unreadable at %s", now.isoformat())
        return None
    return {team: r.cost_usd for team, r in report.teams.items()}


def scheduled_alerts(rt: Runtime, settings: Settings, scheduled_at: datetime) -> None:
    """The scheduler's alerts run for ``scheduled_at``: month-to-date spend from the cost engine,
    the Kueue metrics from the configured Prometheus, then :func:`alerts_job`. Raises
    RuntimeError when a source failed (after posting every alert the others gave), so the run is
    recorded as ``error``."""
    spend = month_to_date_spend(rt, settings, scheduled_at)
    counts = alerts_job(rt, settings, scheduled_at, spend, kueue=kueue_metrics(settings))
    failed = counts["errors"] + (1 if spend is None and rt.costs is not None else 0)
    if failed:
        raise RuntimeError(f"alerts at {scheduled_at.isoformat()}: {failed} source(s) failed; see the log")


def snooze(rt: Runtime, alert_id: int, user: str, seconds: float, original: Message | None = None) -> Outcome:
    """Snooze alert ``alert_id`` for ``seconds`` on behalf of ``user`` (a Slack user id): stored and
    audited (``alert-snoozed``); the posted message, when ``original`` (its current content) is
    given, loses its button and says who snoozed it until when. Anyone who sees the alert may
    snooze it. An unknown id changes nothing and is audited as ``alert-snooze-rejected``."""
    now = rt.clock()
    until = now + timedelta(seconds=seconds)
    record = rt.store.snooze_alert(alert_id, until, user, now)
    if record is None:
        rt.store.audit(
            None, actor=user, event="alert-snooze-rejected", now=now,
            detail={"alert_id": alert_id, "reason": "no such alert"},
        )
        return Outcome(False, f"There is no alert #{alert_id}; nothing was snoozed.")
    if original is not None and record.channel and record.message_ts:
        try:
            rt.chat.update(MessageRef(record.channel, record.message_ts), snoozed_message(original, user, until))
        except ChatError as e:
            log.warning("alert #%s snoozed but its message was not updated: %s", alert_id, e)
    return Outcome(True, f"Alert #{alert_id} snoozed until {short_time(until)}: no {snooze_family(record.kind)} follow-ups for {record.team} until then.")
