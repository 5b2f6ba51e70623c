"""APScheduler's BackgroundScheduler reading the time from a given clock (:class:`ClockedScheduler`).

APScheduler 3 has no clock to inject: ``BaseScheduler._process_jobs`` reads ``datetime.now``
to find the due runs, coalesce missed ones, compute the next run and the sleep until it. The
subclass here is that method with the reading replaced; the rest (the loop on its own thread,
job stores, executors, events) is APScheduler's. With the system's UTC time as the clock it
behaves as BackgroundScheduler.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Callable

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_SUBMITTED, JobSubmissionEvent
from apscheduler.executors.base import MaxInstancesReachedError
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import STATE_PAUSED


class ClockedScheduler(BackgroundScheduler):
    """APScheduler's BackgroundScheduler with the time read from ``clock`` (aware datetimes)
    rather than from the system clock.

    ``_process_jobs`` below is APScheduler 3.11's, where ``datetime.now(self.timezone)`` is
    ``self._now()``; it is the one place APScheduler 3 reads the time to decide what runs (the
    executor's misfire check and a new job's first run time are the caller's: see
    :mod:`bot.jobs.scheduler`). The loop is APScheduler's: it sleeps for the
    seconds this returns, or until :meth:`wakeup`."""

    def __init__(self, clock: Callable[[], datetime], **options: object):
        self._clock = clock
        super().__init__(**options)

    def _now(self) -> datetime:
        return self._clock().astimezone(self.timezone)

    def _process_jobs(self) -> float | None:
        if self.state == STATE_PAUSED:
            self._logger.debug("Scheduler is paused -- not processing jobs")
            return None

        self._logger.debug("Looking for jobs to run")
        now = self._now()
        next_wakeup_time = None
        events = []

        with self._jobstores_lock:
            for jobstore_alias, jobstore in self._jobstores.items():
                try:
                    due_jobs = jobstore.get_due_jobs(now)
                except Exception as e:  # noqa: BLE001 - as APScheduler: retry after jobstore_retry_interval
                    self._logger.warning("Error getting due jobs from job store %r: %s", jobstore_alias, e)
                    retry_wakeup_time = now + timedelta(seconds=self.jobstore_retry_interval)
                    if not next_wakeup_time or next_wakeup_time > retry_wakeup_time:
                        next_wakeup_time = retry_wakeup_time
                    continue

                for job in due_jobs:
                    try:
                        executor = self._lookup_executor(job.executor)
                    except BaseException:
                        self._logger.error(
                            'Executor lookup ("%s") failed for job "%s" -- removing it from the job store',
                            job.executor, job,
                        )
                        self.remove_job(job.id, jobstore_alias)
                        continue

                    run_times = job._get_run_times(now)
                    run_times = run_times[-1:] if run_times and job.coalesce else run_times
                    if run_times:
                        try:
                            executor.submit_job(job, run_times)
                        except MaxInstancesReachedError:
                            self._logger.warning(
                                'Execution of job "%s" skipped: maximum number of running instances reached (%d)',
                                job, job.max_instances,
                            )
                            events.append(JobSubmissionEvent(EVENT_JOB_MAX_INSTANCES, job.id, jobstore_alias, run_times))
                        except BaseException:
                            self._logger.exception('Error submitting job "%s" to executor "%s"', job, job.executor)
                        else:
                            events.append(JobSubmissionEvent(EVENT_JOB_SUBMITTED, job.id, jobstore_alias, run_times))

                        # Update the job if it has a next execution time; otherwise remove it.
                        job_next_run = job.trigger.get_next_fire_time(run_times[-1], now)
                        if job_next_run:
                            job._modify(next_run_time=job_next_run)
                            jobstore.update_job(job)
                        else:
                            self.remove_job(job.id, jobstore_alias)

                # The earliest next run time of any job store is the next wake-up.
                jobstore_next_run_time = jobstore.get_next_run_time()
                if jobstore_next_run_time and (next_wakeup_time is None or jobstore_next_run_time < next_wakeup_time):
                    next_wakeup_time = jobstore_next_run_time.astimezone(self.timezone)

        for event in events:
            self._dispatch_event(event)

        if self.state == STATE_PAUSED:
            self._logger.debug("Scheduler is paused; waiting until resume() is called")
            return None
        if next_wakeup_time is None:
            self._logger.debug("No jobs; waiting until a job is added")
            return None
        wait_seconds = min(max(next_wakeup_time.timestamp() - self._now().timestamp(), 0), threading.TIMEOUT_MAX)
        self._logger.debug("Next wakeup is due at %s (in %f seconds)", next_wakeup_time, wait_seconds)
        return wait_seconds
