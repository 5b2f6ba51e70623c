"""Scheduled digests: each team's GPU showback to its channel and an all-teams summary to the admin
channel, each with a chart, on ``costs.digest_cron`` (default Monday 09:00) in the team's time zone.

One job checks every :data:`DIGEST_CHECK_SECONDS` which digests are due (:func:`due_digests`,
pure) and sends them (:func:`digest_job`); it is the ``digests`` entry of ``bot.scheduler.JOBS``.
Teams keep their
own zone (``teams[].timezone``, else ``costs.timezone``), so one cron line means 09:00 local for
everyone, and daylight saving time moves with the zone.

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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from apscheduler.triggers.cron import CronTrigger

from actions.cost import CostReport, TeamReport
from bot.chart import cost_chart_png
from bot.chat import Message
from bot.digest_blocks import admin_summary_message, chart_comment, team_digest_message
from bot.leader import replica_identity
from bot.reports import team_reports
from bot.runtime import Runtime
from bot.settings import Settings

__all__ = [
    "ADMIN_JOB_ID",
    "DIGEST_CATCH_UP_SECONDS",
    "DIGEST_CHECK_SECONDS",
    "JOB_ID",
    "DigestResult",
    "DueDigest",
    "digest_job",
    "digest_trigger",
    "due_digests",
    "last_fire_time",
]

log = logging.getLogger(__name__)

JOB_ID = "digests"
ADMIN_JOB_ID = "digest-admin"
DIGEST_CHECK_SECONDS = 900
# How late a digest may still go out (a restart, a failover, Prometheus down at 09:00).
DIGEST_CATCH_UP_SECONDS = 6 * 3600

ReportFn = Callable[[Runtime, datetime, datetime], CostReport]
ChartFn = Callable[[TeamReport | CostReport], bytes]

_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


# --- when (pure) -----------------------------------------------------------------------------------


def _crontab_days(field: str) -> str:
    """A crontab day-of-week field in APScheduler's terms. Crontab counts 0 (and 7) as Sunday,
    1 as Monday; APScheduler 3's ``from_crontab`` reads numbers as 0 = Monday, which would move
    ``0 9 * * 1`` to Tuesday. Numbers, ranges and steps become day names; names pass through."""
    out: list[str] = []
    for item in field.split(","):
        base, _, step = item.partition("/")
        if not re.fullmatch(r"\*|\d(-\d)?", base):
            out.append(item)  # names such as mon-fri: APScheduler reads those as crontab does
            continue
        if base == "*":
            if not step:
                out.append("*")
                continue
            lo, hi = 0, 6
        else:
            lo_s, _, hi_s = base.partition("-")
            lo, hi = int(lo_s), int(hi_s or (lo_s if not step else "6"))
            if not (0 <= lo <= 7 and 0 <= hi <= 7 and lo <= hi):
                raise ValueError(f"day of week {item!r} is not a crontab day range (0-7, 0 and 7 are Sunday)")
        days = range(lo, hi + 1, int(step) if step else 1)
        out.extend(_DAY_NAMES[d % 7] for d in days)
    return ",".join(dict.fromkeys(out))


def digest_trigger(cron: str, tz: str) -> CronTrigger:
    """An APScheduler trigger for a five-field crontab line (``"0 9 * * mon"``; days of the week
    numbered as crontab does, 0 or 7 Sunday) in the IANA zone ``tz``. Raises ValueError naming
    the problem for a malformed line or an unknown zone."""
    fields = cron.split()
    if len(fields) != 5:
        raise ValueError(f"cron {cron!r} needs 5 fields (minute hour day month day-of-week), got {len(fields)}")
    try:
        zone = ZoneInfo(tz)
    except (KeyError, ValueError) as e:  # ZoneInfoNotFoundError is a KeyError
        raise ValueError(f"timezone {tz!r} is not an IANA time zone name: {e}") from None
    minute, hour, day, month, dow = fields
    try:
        return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=_crontab_days(dow), timezone=zone)
    except ValueError as e:
        raise ValueError(f"cron {cron!r}: {e}") from None


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
            triggers[tz] = digest_trigger(costs.digest_cron, tz)
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


def _claimed(rt: Runtime, d: DueDigest) -> bool:
    return any(run.scheduled_at == d.scheduled_at for run in rt.store.job_runs(d.job_id))


def digest_job(
    rt: Runtime,
    settings: Settings,
    now: datetime,
    *,
    holder: str | None = None,
    reports: ReportFn | None = None,
    chart: ChartFn | None = None,
) -> list[DigestResult]:
    """Send every digest due at ``now`` (aware UTC, see :func:`due_digests`) that no one has sent:
    a team's Block Kit digest to its channel and its chart (PNG) beside it; the all-teams summary
    and chart to the admin channel. A team without GPU use gets a short "no GPU use" message and no
    chart. One report per distinct period, computed before anything is claimed.

    ``holder`` names this replica in the claims (default: the leader-election identity);
    ``reports(rt, start, end)`` computes the CostReport (default :func:`bot.reports.team_reports`),
    ``chart(report)`` draws a TeamReport or CostReport as PNG bytes (default
    :func:`bot.chart.cost_chart_png`).
    Returns one :class:`DigestResult` per due digest. Raises RuntimeError listing the digests
    that failed, after every other digest was tried, so the scheduler records the run as failed.
    """
    holder = holder or replica_identity(settings.leader_election)
    reports = reports or team_reports
    chart = chart or cost_chart_png
    days = settings.costs.digest_period_days
    results: list[DigestResult] = []
    computed: dict[tuple[datetime, datetime], CostReport | Exception] = {}
    for d in due_digests(settings, now):
        if _claimed(rt, d):
            results.append(DigestResult(d, "claimed-elsewhere"))
            continue
        key = (d.period_start, d.period_end)
        if key not in computed:
            try:
                computed[key] = reports(rt, d.period_start, d.period_end)
            except Exception as e:  # noqa: BLE001 - nothing claimed: the next check retries
                log.exception("cost report %s to %s for digests failed", d.period_start.isoformat(), d.period_end.isoformat())
                computed[key] = e
        report = computed[key]
        if isinstance(report, Exception):
            results.append(DigestResult(d, "no-report", f"{type(report).__name__}: {report}"))
            continue
        run_id = rt.store.claim_job_run(d.job_id, d.scheduled_at, holder, now)
        if run_id is None:
            results.append(DigestResult(d, "claimed-elsewhere"))
            continue
        try:
            _send(rt, d, report, days, chart)
        except Exception as e:  # noqa: BLE001 - recorded; the other digests still go out
            log.exception("digest %s at %s failed", d.job_id, d.scheduled_at.isoformat())
            detail = f"{type(e).__name__}: {e}"
            rt.store.finish_job_run(run_id, "error", rt.clock(), detail)
            results.append(DigestResult(d, "failed", detail))
        else:
            rt.store.finish_job_run(run_id, "ok", rt.clock())
            results.append(DigestResult(d, "sent"))
    failed = [r for r in results if r.outcome in ("failed", "no-report")]
    if failed:
        raise RuntimeError("digests not sent: " + "; ".join(f"{r.digest.job_id}: {r.detail}" for r in failed))
    return results


def _send(rt: Runtime, d: DueDigest, report: CostReport, days: int, chart: ChartFn) -> None:
    subject: TeamReport | CostReport
    if d.team is None:
        message: Message = admin_summary_message(report, d.tz, days)
        subject, has_use = report, report.gpu_hours > 0
    else:
        team = report.teams.get(d.team) or _empty_team_report(d.team, report.period_start, report.period_end)
        message = team_digest_message(team, d.tz, days)
        subject, has_use = team, team.gpu_hours > 0
    rt.chat.post(d.channel, message)
    if has_use:
        rt.chat.upload_file(
            d.channel,
            _filename(d.team or "all-teams", d.period_end, d.tz),
            chart(subject),
            message.text[:250],
            chart_comment(d.team, d.period_start, d.period_end, d.tz),
        )
