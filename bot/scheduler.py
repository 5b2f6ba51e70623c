"""The scheduled jobs (APScheduler 3): for now the idle sweep.

A job never lets an exception escape: a failed sweep is logged and the next one runs on time.
``coalesce`` folds missed runs into one and ``max_instances=1`` keeps sweeps from overlapping.
"""

from __future__ import annotations

import logging

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.blocking import BlockingScheduler

from bot.approvals import Approvals
from bot.runtime import Runtime
from bot.settings import Settings

log = logging.getLogger(__name__)


def sweep_job(rt: Runtime) -> dict[str, int] | None:
    """One idle sweep at ``rt.clock()``: detect, then reconcile proposals. Returns the counts,
    or None when the sweep failed (the error is logged)."""
    now = rt.clock()
    try:
        counts = Approvals(rt).reconcile(rt.find_idle(now), now)
    except Exception:  # noqa: BLE001 - one failed sweep must not stop the next
        log.exception("idle sweep at %s failed", now.isoformat())
        return None
    log.info("idle sweep at %s: %s", now.isoformat(), counts)
    return counts


def _add_jobs(scheduler, rt: Runtime, settings: Settings) -> None:
    scheduler.add_job(
        sweep_job,
        "interval",
        args=[rt],
        seconds=settings.sweep.interval_seconds,
        id="idle-sweep",
        coalesce=True,
        max_instances=1,
        misfire_grace_time=int(settings.sweep.interval_seconds),
        next_run_time=rt.clock(),
    )


def start_background(rt: Runtime, settings: Settings) -> BackgroundScheduler:
    """Start the jobs on a background thread (the chat runs in the foreground)."""
    scheduler = BackgroundScheduler(timezone="UTC")
    _add_jobs(scheduler, rt, settings)
    scheduler.start()
    return scheduler


def run_sweeps_forever(rt: Runtime, settings: Settings) -> None:
    """Run the sweep every ``settings.sweep.interval_seconds`` in the foreground until killed."""
    scheduler = BlockingScheduler(timezone="UTC")
    _add_jobs(scheduler, rt, settings)
    scheduler.start()
