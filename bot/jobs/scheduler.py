"""The scheduler that runs the jobs (APScheduler 3), their state in the database, and who runs them.

A job is a :class:`ScheduledJob`: an id, its trigger, and ``run(scheduled_at)`` with everything it
needs already bound (``bot.wiring.jobs.scheduled_jobs`` builds the list; each job's module is in this
package). The scheduler knows no job's body.

Where the state lives: APScheduler's ``SQLAlchemyJobStore`` (table ``apscheduler_jobs``) in the
bot's database, so a restart or a new leader carries on from the stored next run time instead of
starting the schedule afresh. The table holds only picklable references: the textual function
reference ``bot.jobs.scheduler:run_scheduled`` and the job id. The job itself is handed in at run
time by this replica's executor, which knows the jobs it was started with.

Neither skipped nor run twice:

- ``coalesce=True`` folds the runs missed while no scheduler ran (a restart, a failover) into one,
  and ``misfire_grace_time`` (default None: however late) lets that one run rather than be dropped;
- a job whose schedule is unchanged keeps its stored next run time when a scheduler starts, so the
  run that fell due meanwhile is still due;
- before running, each run is claimed in the ``job_run`` table by (job id, scheduled fire time)
  (:meth:`actions.store.database.Store.claim_job_run`): if two schedulers ever fire the same run (a leader
  that stalled past its lease and the replica that took over), the second finds it claimed and
  skips it.

Time: the scheduler reads it from the clock it is given (default :func:`actions.model.times.utc_now`,
the system's): which runs are due, how missed runs coalesce, when a run misfired, the next run
after them, and the claims' timestamps. APScheduler 3 reads the system clock itself, so which runs
fall due is decided by :class:`bot.jobs.clocked.ClockedScheduler`, a new job's first run time is
computed here, and the executor judges misfires. It sleeps until the next run as the clock says;
a clock that jumps (a test's) is noticed at the next :meth:`BackgroundJobs.wakeup`.

Who runs them: with ``leader_election.enabled`` only the replica holding the Lease runs a
scheduler (:mod:`bot.service.leader`); it starts one when it takes the Lease and shuts it down,
waiting for the job in flight, when it stops leading. Without election the scheduler starts at once.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Callable, Mapping, Sequence

from apscheduler.events import EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.executors.base import BaseExecutor, run_job
from apscheduler.job import Job
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger

from actions.model.times import utc_now
from actions.sources.kube.lease import lease_client
from actions.store.database import Store
from bot.jobs.clocked import ClockedScheduler
from bot.service.leader import ElectionTiming, LeaderElector, lease_namespace, replica_identity
from bot.service.process import run_until_signalled
from bot.settings import KubernetesSettings, LeaderElectionSettings

log = logging.getLogger(__name__)

JOBSTORE_TABLE = "apscheduler_jobs"
# The one function the job store refers to; the job id is its only stored argument.
RUN_SCHEDULED_REF = "bot.jobs.scheduler:run_scheduled"


@dataclass(frozen=True)
class ScheduledJob:
    """One scheduled job.

    ``id`` names it in the job store and in ``job_run`` claims; ``trigger`` is its APScheduler
    trigger (interval, cron in a time zone, ...); ``run(scheduled_at)`` does the work for the run
    due at ``scheduled_at`` (aware UTC) and raises on failure (recorded as the run's ``error``
    outcome). ``misfire_grace_seconds``: how late a run may start and still run (None: however
    late; coalescing makes it one run). ``first_run_at_start``: when the job is new to the job
    store, run it at once rather than at its first trigger time.
    """

    id: str
    trigger: BaseTrigger
    run: Callable[[datetime], None]
    misfire_grace_seconds: float | None = None
    first_run_at_start: bool = False


# --- running one scheduled run --------------------------------------------------------------------


@dataclass(frozen=True)
class JobBinding:
    """What this replica runs ``job`` with: the ``store`` its runs are claimed in, under the
    ``holder`` name, at times read from ``clock``. Never stored; the executor attaches it to each
    run."""

    job: ScheduledJob
    store: Store
    holder: str
    clock: Callable[[], datetime] = utc_now


def run_scheduled(job_id: str, *, scheduled_at: datetime | None = None, binding: JobBinding | None = None) -> str:
    """Run ``binding.job``'s run due at ``scheduled_at`` once across replicas: claim it in
    ``job_run``, run it, record the outcome. Returns ``ran``, ``failed`` or ``claimed-elsewhere``.

    Called by the scheduler's executor, which supplies ``scheduled_at`` and ``binding`` (they
    default to None only because APScheduler checks the stored call against the signature, and the
    store holds just ``job_id``). Raises TypeError when either is missing; otherwise never raises
    (a failed run is recorded and logged, and the next run is due as scheduled)."""
    if scheduled_at is None or binding is None:
        raise TypeError(f"run {job_id!r} through the scheduler's executor, which supplies scheduled_at and binding")
    store, clock = binding.store, binding.clock
    try:
        run_id = store.claim_job_run(job_id, scheduled_at, binding.holder, clock())
    except Exception:  # noqa: BLE001 - the database may be down; the next run tries again
        log.exception("could not claim run %s of %s", scheduled_at.isoformat(), job_id)
        return "failed"
    if run_id is None:
        log.info("run %s of %s was claimed by another scheduler; skipping", scheduled_at.isoformat(), job_id)
        return "claimed-elsewhere"
    try:
        binding.job.run(scheduled_at)
    except Exception as e:  # noqa: BLE001 - recorded, and the schedule goes on
        log.exception("run %s of %s failed", scheduled_at.isoformat(), job_id)
        outcome, detail, result = "error", f"{type(e).__name__}: {e}", "failed"
    else:
        outcome, detail, result = "ok", None, "ran"
    try:
        store.finish_job_run(run_id, outcome, clock(), detail)
    except Exception:  # noqa: BLE001 - the run happened; only its record is incomplete
        log.exception("could not record the outcome of run %s of %s", scheduled_at.isoformat(), job_id)
    return result


def _with_run_kwargs(job: Job, **kwargs: object) -> Job:
    # A private copy for this one run: the scheduler keeps using (and storing) the original. Its
    # misfire was checked against the binding's clock already (APScheduler's run_job would check
    # it again against the system clock).
    clone = Job.__new__(Job)
    clone.__setstate__({**job.__getstate__(), "kwargs": {**job.kwargs, **kwargs}, "misfire_grace_time": None})
    return clone


class _BindingExecutor(BaseExecutor):
    """A thread pool executor that gives each run its scheduled fire time and this replica's
    binding of the job (APScheduler's own executors call the function with the stored arguments
    only). Events are APScheduler's, through its ``run_job``; a misfire (a run later than the
    job's ``misfire_grace_time``) is judged as ``run_job`` judges it, by the binding's clock."""

    def __init__(self, bindings: Mapping[str, JobBinding]):
        super().__init__()
        self._bindings = dict(bindings)
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, len(self._bindings)), thread_name_prefix="scheduled-job"
        )

    def _do_submit_job(self, job: Job, run_times: list[datetime]) -> None:
        binding = self._bindings.get(job.id)
        if binding is None:
            raise LookupError(f"job {job.id!r} is in the job store but not declared in this process")

        # The job's store alias is set by the scheduler on every job it hands over; APScheduler's
        # own pool executors read it the same way.
        alias = job._jobstore_alias

        def run() -> list:
            events = []
            for run_time in run_times:
                if job.misfire_grace_time is not None:
                    late = binding.clock() - run_time
                    if late > timedelta(seconds=job.misfire_grace_time):
                        events.append(JobExecutionEvent(EVENT_JOB_MISSED, job.id, alias, run_time))
                        self._logger.warning('Run time of job "%s" was missed by %s', job, late)
                        continue
                one = _with_run_kwargs(job, scheduled_at=run_time.astimezone(timezone.utc), binding=binding)
                events.extend(run_job(one, alias, [run_time], self._logger.name))
            return events

        def done(f: concurrent.futures.Future) -> None:
            error = f.exception()
            if error is not None:
                self._run_job_error(job.id, error, error.__traceback__)
            else:
                self._run_job_success(job.id, f.result())

        self._pool.submit(run).add_done_callback(done)

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait)


class _SharedEngineJobStore(SQLAlchemyJobStore):
    """The job store on the Store's own engine (one pool, the same SQLite pragmas; an in-memory
    SQLite database exists only on that engine's connection)."""

    def shutdown(self) -> None:
        # The engine belongs to the Store, which outlives this scheduler.
        pass


def _same_schedule(a: BaseTrigger, b: BaseTrigger) -> bool:
    # str() names the type and its fields (interval length, cron fields) but not the start date,
    # which an interval trigger sets to "now" each time it is built.
    return type(a) is type(b) and str(a) == str(b) and str(getattr(a, "timezone", "")) == str(getattr(b, "timezone", ""))


def _sync_jobs(scheduler: BackgroundScheduler, jobs: Sequence[ScheduledJob], now: datetime) -> None:
    """Make the job store hold exactly ``jobs``, keeping the next run time of each whose schedule
    is unchanged."""
    declared = {j.id for j in jobs}
    for stored in scheduler.get_jobs():
        if stored.id not in declared:
            log.info("removing job %s: no longer declared", stored.id)
            scheduler.remove_job(stored.id)
    for j in jobs:
        trigger = j.trigger
        options = dict(
            coalesce=True, max_instances=1, misfire_grace_time=j.misfire_grace_seconds, name=j.id,
            args=[j.id], kwargs={},
        )
        stored = scheduler.get_job(j.id)
        if stored is not None and stored.next_run_time is not None and _same_schedule(stored.trigger, trigger):
            scheduler.modify_job(j.id, func=RUN_SCHEDULED_REF, **options)
            log.info("job %s: next run %s (kept from the job store)", j.id, stored.next_run_time.isoformat())
            continue
        # As APScheduler computes it when none is given, but at ``now`` (the scheduler's clock).
        first = now if j.first_run_at_start else trigger.get_next_fire_time(None, now)
        added = scheduler.add_job(
            RUN_SCHEDULED_REF, trigger=trigger, id=j.id, replace_existing=True, next_run_time=first, **options
        )
        log.info("job %s: scheduled %s, next run %s", j.id, trigger, added.next_run_time)


def start_scheduler(
    store: Store, jobs: Sequence[ScheduledJob], holder: str, clock: Callable[[], datetime] = utc_now
) -> BackgroundScheduler:
    """A running BackgroundScheduler for ``jobs`` with its job store in ``store``'s database;
    runs fall due, and are claimed as ``holder``, at times read from ``clock``. Stop it with
    :func:`stop_scheduler`. Raises ValueError for duplicate job ids, SQLAlchemy errors when the
    database cannot be reached."""
    if len({j.id for j in jobs}) != len(jobs):
        raise ValueError(f"job ids must be unique, got {[j.id for j in jobs]}")
    bindings = {j.id: JobBinding(j, store, holder, clock) for j in jobs}
    scheduler = ClockedScheduler(
        clock,
        _BindingExecutor(bindings),
        jobstores={"default": _SharedEngineJobStore(engine=store.engine, tablename=JOBSTORE_TABLE)},
        timezone=timezone.utc,
    )
    # Paused until the store matches the declaration, so nothing runs on a stale schedule.
    scheduler.start(paused=True)
    try:
        _sync_jobs(scheduler, jobs, clock())
    except BaseException:
        scheduler.shutdown(wait=False)
        raise
    scheduler.resume()
    return scheduler


def stop_scheduler(scheduler: BackgroundScheduler, wait: bool = True) -> None:
    """Stop firing runs, then (``wait``) let the run in flight finish."""
    # Paused first: a wake-up racing the shutdown then submits nothing, where a submission to an
    # executor already shut down would fail and still move the stored next run time on (a lost run).
    scheduler.pause()
    scheduler.shutdown(wait=wait)


class BackgroundJobs:
    """This replica's share of the scheduled jobs: a scheduler that runs while this replica leads
    (or always, without ``election.enabled``), its job store and claims in ``store``. The Lease is
    read through ``kubernetes`` (kubeconfig and context). Build it with :func:`start_background`."""

    def __init__(
        self,
        store: Store,
        jobs: Sequence[ScheduledJob],
        election: LeaderElectionSettings,
        kubernetes: KubernetesSettings,
        clock: Callable[[], datetime] = utc_now,
    ):
        self._store, self._jobs, self._clock = store, tuple(jobs), clock
        self._election, self._kubernetes = election, kubernetes
        self.holder = replica_identity(election)
        self._lock = threading.Lock()
        self._scheduler: BackgroundScheduler | None = None
        self._wait_on_stop = True
        self.elector: LeaderElector | None = None

    @property
    def scheduling(self) -> bool:
        """Whether this replica runs the scheduled jobs now (with election: whether it leads)."""
        with self._lock:
            return self._scheduler is not None

    @property
    def running(self) -> bool:
        """Whether the background machinery is alive: the scheduler without election; with it, the
        elector (which runs the scheduler while leading). A replica that does not lead is still
        running, and ready to answer Slack."""
        if self.elector is not None:
            return self.elector.alive
        return self.scheduling

    def wakeup(self) -> None:
        """Have the scheduler (if this replica runs it) look for due runs now rather than when its
        clock next has one due: for a clock that jumps ahead, as a test's does."""
        with self._lock:
            if self._scheduler is not None:
                self._scheduler.wakeup()

    def start(self) -> "BackgroundJobs":
        """Start campaigning for the Lease (election enabled) or the scheduler (disabled). Raises
        ValueError when the Lease's namespace is unknown,
        :class:`~actions.sources.kube.reader.ClusterConfigError` when there is no cluster
        configuration."""
        le = self._election
        if not le.enabled:
            self._start_scheduler()
            return self
        namespace = lease_namespace(le)
        lease = lease_client(
            namespace, le.lease_name,
            kubeconfig=self._kubernetes.kubeconfig, context=self._kubernetes.context,
        )
        timing = ElectionTiming(le.lease_duration_seconds, le.renew_deadline_seconds, le.retry_period_seconds)
        self.elector = LeaderElector(
            lease, self.holder, timing,
            on_started_leading=self._start_scheduler,
            on_stopped_leading=lambda: self._stop_scheduler(self._wait_on_stop),
        )
        log.info("%s campaigning for Lease %s/%s", self.holder, namespace, le.lease_name)
        self.elector.start()
        return self

    def shutdown(self, wait: bool = True) -> None:
        """Stop the scheduler (``wait``: let the job in flight finish) and, when leading, release
        the Lease so another replica takes over at once."""
        self._wait_on_stop = wait
        if self.elector is not None:
            self.elector.stop()
        self._stop_scheduler(wait)

    def _start_scheduler(self) -> None:
        with self._lock:
            if self._scheduler is None:
                self._scheduler = start_scheduler(self._store, self._jobs, self.holder, self._clock)
                log.info("%s runs the scheduled jobs", self.holder)

    def _stop_scheduler(self, wait: bool = True) -> None:
        with self._lock:
            scheduler, self._scheduler = self._scheduler, None
        if scheduler is not None:
            stop_scheduler(scheduler, wait)
            log.info("%s no longer runs the scheduled jobs", self.holder)


def start_background(
    store: Store,
    jobs: Sequence[ScheduledJob],
    election: LeaderElectionSettings,
    kubernetes: KubernetesSettings,
    clock: Callable[[], datetime] = utc_now,
) -> BackgroundJobs:
    """Run ``jobs`` on background threads (the chat runs in the foreground): at once, or with
    ``election.enabled`` whenever this replica holds the Lease. Call ``.shutdown(wait=True)`` on
    the result before exiting."""
    return BackgroundJobs(store, jobs, election, kubernetes, clock).start()


def run_jobs_forever(
    store: Store, jobs: Sequence[ScheduledJob], election: LeaderElectionSettings, kubernetes: KubernetesSettings,
    clock: Callable[[], datetime] = utc_now,
) -> None:
    """Run ``jobs`` in the background of this otherwise idle process until SIGINT or SIGTERM, then
    shut down cleanly (the Lease, if held, is released). Call from the main thread."""
    background: list[BackgroundJobs] = []
    run_until_signalled(
        lambda: background.append(start_background(store, jobs, election, kubernetes, clock)),
        lambda: [b.shutdown(wait=True) for b in background],
    )
