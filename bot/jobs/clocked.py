"""APScheduler's BackgroundScheduler with its runs falling due by a given clock
(:class:`ClockedScheduler`).

APScheduler 3 reads the system clock inside its loop and takes no clock of its own. Everything
else of it is kept (its thread, job store, executor, wake-ups); what falls due when is decided
here, through its public job and executor API, and is small because every job of the bot
coalesces and runs one instance at a time (:func:`bot.jobs.scheduler.start_scheduler`).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Callable

from apscheduler.executors.base import BaseExecutor, MaxInstancesReachedError
from apscheduler.job import Job
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import STATE_RUNNING

log = logging.getLogger(__name__)


class ClockedScheduler(BackgroundScheduler):
    """A BackgroundScheduler whose jobs fall due at the times ``clock`` (aware datetimes) gives.

    At each wake-up, every job whose next run time is at or before ``clock()`` runs once, for the
    latest of its fire times that passed (missed runs coalesce into it), on ``executor``, and its
    next run time moves to its trigger's next fire time after ``clock()``. It then sleeps until the
    earliest next run time as the clock tells it, or until :meth:`wakeup` (a clock that jumps, as a
    test's does, is noticed there). Only while running: a wake-up racing a pause or a shutdown
    submits nothing and moves no next run time, so that run stays due for the next scheduler.
    ``options`` are BackgroundScheduler's; ``executor`` must be among its executors, as ``default``."""

    def __init__(self, clock: Callable[[], datetime], executor: BaseExecutor, **options: object):
        self._clock = clock
        self._executor = executor
        super().__init__(executors={"default": executor}, **options)

    def _process_jobs(self) -> float | None:
        # BackgroundScheduler's thread calls this at each wake-up and sleeps for what it returns
        # (None: until woken).
        if self.state != STATE_RUNNING:
            return None
        now = self._clock().astimezone(self.timezone)
        try:
            for job in self.get_jobs():
                if job.next_run_time is not None and job.next_run_time <= now:
                    self._run_once(job, now)
            upcoming = [j.next_run_time for j in self.get_jobs() if j.next_run_time is not None]
        except Exception as e:  # noqa: BLE001 - an exception here would end the scheduler's thread
            log.warning("the job store could not be read (%s); looking again in %ss", e, self.jobstore_retry_interval)
            return self.jobstore_retry_interval
        if not upcoming:
            return None
        wait = (min(upcoming) - self._clock().astimezone(self.timezone)).total_seconds()
        return min(max(wait, 0.0), threading.TIMEOUT_MAX)

    def _run_once(self, job: Job, now: datetime) -> None:
        fire = job.next_run_time
        while (later := job.trigger.get_next_fire_time(fire, now)) is not None and later <= now:
            fire = later
        try:
            self._executor.submit_job(job, [fire])
        except MaxInstancesReachedError:
            log.warning("job %s: the run of %s skipped, the previous one still runs", job.id, fire.isoformat())
        except Exception:  # noqa: BLE001 - one job's failure to start must not stop the others
            log.exception("job %s: the run of %s could not be started", job.id, fire.isoformat())
        following = job.trigger.get_next_fire_time(fire, now)
        try:
            if following is None:
                self.remove_job(job.id)
            else:
                job.modify(next_run_time=following)
        except JobLookupError:
            pass  # removed meanwhile (its scheduler is stopping, or it was declared no more)
