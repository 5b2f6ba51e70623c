"""Scheduled digests: each team's GPU showback to its channel and an all-teams summary to the admin
channel, each with a chart, on ``costs.digest_cron`` (default Monday 09:00) in the team's time zone.

One job checks every :data:`DIGEST_CHECK_SECONDS` which digests are due (:func:`due_digests`,
pure) and sends them (:meth:`DigestsJob.run`). Teams keep their own zone (``teams[].timezone``,
else ``costs.timezone``), so one cron line means 09:00 local for everyone, and daylight saving
time moves with the zone.

Exactly once per team and fire time: a digest is claimed in the store as job ``digest:<team>``
(``digest-admin`` for the summary) at its fire time (aware UTC) before it is posted, so a second
scheduler, or the next check, finds it claimed. A digest whose report could not be computed is
not claimed, so the next check retries it, for up to :data:`DIGEST_CATCH_UP_SECONDS` after its
fire time; a digest claimed and then failing to post is recorded as an ``error`` run, not resent
(it may be half posted).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from apscheduler.triggers.cron import CronTrigger

from actions.advice.recommend import could_save
from actions.advice.request import silenced
from actions.advice.round import AdviceResult
from actions.cost.fleet import FleetReport
from actions.cost.report import CostReport, TeamReport
from actions.model.times import utc_now
from actions.store.database import Store
from bot.chat.blocks import section
from bot.chat.blocks.advice import could_save_lines
from bot.chat.blocks.digests import (
    admin_summary_message,
    chart_comment,
    clusters_note,
    team_digest_message,
    unreachable_note,
)
from bot.chat.chart import cost_chart_png
from bot.runtime.chat import Chat, Message
from bot.settings import Settings

__all__ = [
    "ADMIN_JOB_ID",
    "DIGEST_CATCH_UP_SECONDS",
    "DIGEST_CHECK_SECONDS",
    "JOB_ID",
    "DigestResult",
    "DigestsJob",
    "DueDigest",
    "due_digests",
    "last_fire_time",
]

log = logging.getLogger(__name__)

JOB_ID = "digests"
ADMIN_JOB_ID = "digest-admin"
DIGEST_CHECK_SECONDS = 900
# How late a digest may still go out (a restart, a failover, Prometheus down at 09:00).
DIGEST_CATCH_UP_SECONDS = 6 * 3600

ReportFn = Callable[[datetime, datetime], CostReport | FleetReport]
ChartFn = Callable[[TeamReport | CostReport], bytes]
AdviceFn = Callable[[datetime, str | None], AdviceResult]


def last_fire_time(trigger: CronTrigger, now: datetime, lookback_seconds: float) -> datetime | None:
    """The latest fire time of ``trigger`` in ``(now - lookback_seconds, now]`` as aware UTC, or
    None when it did not fire then."""
    earliest = now - timedelta(seconds=lookback_seconds)
    fire = trigger.get_next_fire_time(None, earliest + timedelta(microseconds=1))
    last = None
    while fire is not None and fire <= now:
        last = fire
        fire = trigger.get_next_fire_time(fire, fire + timedelta(microseconds=1))
    return None if last is None else last.astimezone(timezone.utc)


@dataclass(frozen=True)
class DueDigest:
    """A digest that is due: ``team`` (None for the all-teams summary) to ``channel``, fired at
    ``scheduled_at`` (aware UTC; the store claim's key with ``job_id``), covering
    ``[period_start, period_end)`` (aware UTC; ``period_end`` is the fire time), shown in ``tz``."""

    job_id: str
    team: str | None
    channel: str
    tz: str
    scheduled_at: datetime
    period_start: datetime
    period_end: datetime


def due_digests(settings: Settings, now: datetime, lookback_seconds: float = DIGEST_CATCH_UP_SECONDS) -> list[DueDigest]:
    """The digests whose fire time (``costs.digest_cron`` in each team's zone) fell in
    ``(now - lookback_seconds, now]``: one per configured team with a ``channel``, plus the
    all-teams summary (in ``costs.timezone``) when ``slack.admin_channel`` is set. Each covers
    the ``costs.digest_period_days`` local days before its fire time. Pure; ``now`` aware. Raises
    ValueError for a malformed cron line or unknown zone."""
    costs = settings.costs
    period = timedelta(days=costs.digest_period_days)
    wanted: list[tuple[str, str | None, str, str]] = [
        (f"digest:{t.name}", t.name, t.channel, t.timezone or costs.timezone) for t in settings.teams if t.channel
    ]
    if settings.slack.admin_channel:
        wanted.append((ADMIN_JOB_ID, None, settings.slack.admin_channel, costs.timezone))
    triggers: dict[str, CronTrigger] = {}
    due = []
    for job_id, team, channel, tz in wanted:
        if tz not in triggers:
            triggers[tz] = costs.digest_trigger(tz)
        fired = last_fire_time(triggers[tz], now, lookback_seconds)
        if fired is not None:
            # Wall-clock arithmetic in the zone: the period starts at the same local time N days
            # earlier, a daylight saving change in between or not.
            start = (fired.astimezone(ZoneInfo(tz)) - period).astimezone(timezone.utc)
            due.append(DueDigest(job_id, team, channel, tz, fired, start, fired))
    return due


# --- sending (the edge) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DigestResult:
    """What became of one due digest: ``outcome`` ``sent``, ``claimed-elsewhere`` (already sent or
    being sent), ``no-report`` (the report failed; retried at the next check) or ``failed``
    (claimed, then posting failed); ``detail`` the error."""

    digest: DueDigest
    outcome: str
    detail: str | None = None


def _empty_team_report(team: str, start: datetime, end: datetime) -> TeamReport:
    return TeamReport(team, start, end, 0.0, 0.0, 0.0, 0.0, None, None)


def _filename(who: str, end: datetime, tz: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", who).strip("-") or "team"
    return f"gpu-cost-{safe}-{end.astimezone(ZoneInfo(tz)).date().isoformat()}.png"


@dataclass
class DigestsJob:
    """Sends the digests that are due: ``settings`` gives the schedule (``costs``), the teams and
    the admin channel; ``reports(start, end)`` computes a period's CostReport, or a FleetReport
    (:meth:`bot.runtime.runtime.Runtime.fleet_report`) whose digests, when it has several clusters,
    say each cluster's share and name those whose report failed; ``chart(report)`` draws a TeamReport or CostReport
    as PNG bytes. Claims are recorded in ``store`` as ``holder`` (this replica's identity).
    ``unreachable()`` gives the clusters the last sweep could not read (cluster -> why), named in
    every digest (:attr:`bot.runtime.runtime.Runtime.unreachable`). ``advice(at, None)``
    (:meth:`bot.runtime.runtime.Runtime.advice`; None: no advice), called once per period end,
    adds a "could save" section: the top three recommendations (a team's own in its digest) and
    their total."""

    store: Store
    chat: Chat
    settings: Settings
    reports: ReportFn
    holder: str
    chart: ChartFn = cost_chart_png
    clock: Callable[[], datetime] = utc_now
    unreachable: Callable[[], Mapping[str, str]] = dict
    advice: AdviceFn | None = None

    def _advice(self, at: datetime, advised: dict[datetime, AdviceResult | None]) -> AdviceResult | None:
        """Every team's advice at ``at``, computed once per run (``advised`` holds it): one round
        serves all the digests of a period, each taking its team's part. None when there is no
        advice or it cannot be computed (the digests go out without it)."""
        if self.advice is None:
            return None
        if at not in advised:
            try:
                advised[at] = self.advice(at, None)
            except Exception:  # noqa: BLE001 - a digest without advice beats no digest
                log.exception("advice at %s for digests failed; they are sent without it", at.isoformat())
                advised[at] = None
        return advised[at]

    def _could_save(self, d: DueDigest, message: Message, advice: AdviceResult | None) -> Message:
        """``message`` with the "could save" section from ``advice`` (every team's; ``d``'s team's
        part of it for a team digest), or as it was without advice."""
        if advice is None:
            return message
        result = advice if d.team is None else advice.for_team(d.team)
        # Advice a team snoozed or exempted from a right-sizing request is not advised here either.
        quiet = silenced(result.recommendations, self.store.list_requests(states=["snoozed", "exempt"]), d.period_end)
        recs = [r for r in result.recommendations if r.key not in quiet]
        lines = could_save_lines(recs, could_save(recs) if quiet else result.could_save_usd_per_month)
        if not lines:
            return message
        blocks = [*message.blocks[:49], section("\n".join(lines))]
        return Message(text=message.text, blocks=blocks, metadata=message.metadata)

    def _claimed(self, d: DueDigest) -> bool:
        return any(run.scheduled_at == d.scheduled_at for run in self.store.job_runs(d.job_id))

    def run(self, now: datetime) -> list[DigestResult]:
        """Send every digest due at ``now`` (aware UTC, see :func:`due_digests`) that no one has
        sent: a team's Block Kit digest to its channel and its chart (PNG) beside it; the
        all-teams summary and chart to the admin channel. A team without GPU use gets a short "no
        GPU use" message and no chart. One report per distinct period, computed before anything
        is claimed.

        Returns one :class:`DigestResult` per due digest. Raises RuntimeError listing the digests
        that failed, after every other digest was tried, so the scheduler records the run as
        failed.
        """
        days = self.settings.costs.digest_period_days
        results: list[DigestResult] = []
        computed: dict[tuple[datetime, datetime], CostReport | FleetReport | Exception] = {}
        advised: dict[datetime, AdviceResult | None] = {}
        for d in due_digests(self.settings, now):
            if self._claimed(d):
                results.append(DigestResult(d, "claimed-elsewhere"))
                continue
            key = (d.period_start, d.period_end)
            if key not in computed:
                try:
                    computed[key] = self.reports(d.period_start, d.period_end)
                except Exception as e:  # noqa: BLE001 - nothing claimed: the next check retries
                    log.exception("cost report %s to %s for digests failed", d.period_start.isoformat(), d.period_end.isoformat())
                    computed[key] = e
            report = computed[key]
            if isinstance(report, Exception):
                results.append(DigestResult(d, "no-report", f"{type(report).__name__}: {report}"))
                continue
            run_id = self.store.claim_job_run(d.job_id, d.scheduled_at, self.holder, now)
            if run_id is None:
                results.append(DigestResult(d, "claimed-elsewhere"))
                continue
            try:
                self._send(d, report, days, self._advice(d.period_end, advised))
            except Exception as e:  # noqa: BLE001 - recorded; the other digests still go out
                log.exception("digest %s at %s failed", d.job_id, d.scheduled_at.isoformat())
                detail = f"{type(e).__name__}: {e}"
                self.store.finish_job_run(run_id, "error", self.clock(), detail)
                results.append(DigestResult(d, "failed", detail))
            else:
                self.store.finish_job_run(run_id, "ok", self.clock())
                results.append(DigestResult(d, "sent"))
        failed = [r for r in results if r.outcome in ("failed", "no-report")]
        if failed:
            raise RuntimeError("digests not sent: " + "; ".join(f"{r.digest.job_id}: {r.detail}" for r in failed))
        return results

    def scheduled(self, scheduled_at: datetime) -> None:
        """The scheduler's check for ``scheduled_at``: :meth:`run` at that time."""
        self.run(scheduled_at)

    def _send(self, d: DueDigest, report: CostReport | FleetReport, days: int, advice: AdviceResult | None) -> None:
        fleet = report if isinstance(report, FleetReport) else None
        if fleet is not None:
            # A fleet of one is that cluster's own report (its notes not prefixed with its name).
            several = len(fleet.clusters) + len(fleet.failed) > 1
            report = fleet.fleet if several else next(iter(fleet.clusters.values()))
        subject: TeamReport | CostReport
        if d.team is None:
            message: Message = admin_summary_message(report, d.tz, days)
            subject, has_use = report, report.gpu_hours > 0
        else:
            team = report.teams.get(d.team) or _empty_team_report(d.team, report.period_start, report.period_end)
            message = team_digest_message(team, d.tz, days)
            subject, has_use = team, team.gpu_hours > 0
        notes = [n for n in (clusters_note(fleet, d.team) if fleet else None, unreachable_note(self.unreachable())) if n]
        if notes:
            # Slack takes 50 blocks: room for the notes and the "could save" section.
            kept = message.blocks[: 49 - len(notes)]
            message = Message(text=message.text, blocks=[*kept, *notes], metadata=message.metadata)
        self.chat.post(d.channel, self._could_save(d, message, advice))
        if has_use:
            self.chat.upload_file(
                d.channel,
                _filename(d.team or "all-teams", d.period_end, d.tz),
                self.chart(subject),
                message.text[:250],
                chart_comment(d.team, d.period_start, d.period_end, d.tz),
            )
