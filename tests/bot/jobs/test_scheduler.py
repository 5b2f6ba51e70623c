"""The scheduled jobs on real databases (SQLite and PostgreSQL): runs claimed once by their fire time,
the schedule kept in the job store across restarts so a missed run runs once, and the scheduler
gated by leader election against the wire-level fake Kubernetes API.

Where runs fall due over time, the scheduler reads a :class:`SteppedClock` the test moves (as the
bot's scheduler reads the clock it is given), so no test waits for an interval to pass."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from bot.jobs.scheduler import JOBSTORE_TABLE, BackgroundJobs, JobBinding, ScheduledJob, run_scheduled
from bot.runtime.runtime import Runtime
from bot.settings import Settings
from bot.wiring.jobs import background_for, scheduled_jobs
from tests.support.demo_world import settings_runtime
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.kubeconfig import write_kubeconfig
from tests.support.waiting import wait_for

UTC = timezone.utc
# Where a SteppedClock starts.
START = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


class SteppedClock:
    """A clock that stands still until the test moves it (:meth:`advance`); each move wakes the
    schedulers that :meth:`follow` it, which then run what fell due at the new time."""

    def __init__(self, start: datetime = START):
        self._now = start
        self._lock = threading.Lock()
        self._followers: list[BackgroundJobs] = []

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def follow(self, background: BackgroundJobs) -> BackgroundJobs:
        self._followers.append(background)
        return background

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            now = self._now
        for background in self._followers:
            background.wakeup()
        return now


def finished_runs(rt: Runtime, job_id: str) -> list:
    return [r for r in rt.store.job_runs(job_id) if r.outcome]


class Probe:
    """A job body that notes each (replica, scheduled_at) it ran for; ``fail`` makes it raise.
    ``probe.on(replica)`` is the body as that replica runs it."""

    def __init__(self, fail: bool = False):
        self.runs: list[tuple[str, datetime]] = []
        self.fail = fail
        self._lock = threading.Lock()

    def on(self, replica: str):
        def run(scheduled_at: datetime) -> None:
            with self._lock:
                self.runs.append((replica, scheduled_at))
            if self.fail:
                raise ValueError("the digest renderer broke")

        return run

    def times(self) -> list[datetime]:
        with self._lock:
            return [t for _, t in self.runs]


def stored_jobs(rt: Runtime) -> dict[str, tuple[str, datetime | None]]:
    """What the job store holds: id -> (trigger, next run time). Read from the store itself: a
    scheduler started to list them would, on its shutdown, process the runs due by the system
    clock (APScheduler 3's loop runs once more when woken to stop), and the SteppedClock's runs
    are in the system clock's past."""
    jobstore = SQLAlchemyJobStore(engine=rt.store.engine, tablename=JOBSTORE_TABLE)
    jobstore.start(BackgroundScheduler(), "default")
    return {j.id: (str(j.trigger), j.next_run_time) for j in jobstore.get_all_jobs()}


@pytest.fixture
def settings(database_url) -> Settings:
    return Settings(database_url=database_url, leader_election={"identity": "replica-a"})


# --- declared jobs ----------------------------------------------------------------------------------


def test_the_idle_sweep_is_declared_with_the_configured_interval(settings):
    configured = settings.model_copy(update={"sweep": settings.sweep.model_copy(update={"interval_seconds": 600})})
    (sweep,) = [j for j in scheduled_jobs(settings_runtime(settings), configured) if j.id == "idle-sweep"]
    assert isinstance(sweep.trigger, IntervalTrigger) and sweep.trigger.interval == timedelta(seconds=600)
    assert sweep.first_run_at_start


def test_the_idle_sweep_runs_as_a_claimed_job(settings):
    rt = settings_runtime(settings)
    background = background_for(rt, settings)
    try:
        assert background.running and background.scheduling  # no election: this replica schedules
        run = wait_for(lambda: [r for r in rt.store.job_runs("idle-sweep") if r.outcome], "the first sweep")[0]
    finally:
        background.shutdown(wait=True)
    assert not background.running
    assert run.outcome == "ok" and run.holder == "replica-a"
    # The sweep really ran: the demo fleet's idle notebook was proposed.
    assert rt.store.list_requests()


# --- runs, claims and outcomes ------------------------------------------------------------------------


def test_each_run_is_claimed_with_its_fire_time_and_outcome_and_failures_do_not_stop_the_schedule(settings):
    clock = SteppedClock()
    rt = settings_runtime(settings, clock)
    probe, broken = Probe(), Probe(fail=True)
    every = IntervalTrigger(seconds=0.5, start_date=START + timedelta(seconds=0.5), timezone=UTC)
    jobs = [
        ScheduledJob("probe", every, probe.on("replica-a")),
        ScheduledJob("digest", every, broken.on("replica-a")),
    ]
    background = clock.follow(background_for(rt, settings, jobs))
    try:
        # Each step goes past a fire time (0.5 s, then 1 s after the start), and waits for both
        # runs to finish before the next.
        for n in (1, 2):
            clock.advance(0.6)
            wait_for(lambda: len(finished_runs(rt, "probe")) >= n, f"run {n}")
            wait_for(lambda: len(finished_runs(rt, "digest")) >= n, f"failing run {n} to finish")
    finally:
        background.shutdown(wait=True)
    times = probe.times()
    assert times[1] - times[0] == timedelta(seconds=0.5)  # nominal fire times, not when the thread woke
    runs = rt.store.job_runs("probe")
    assert [r.scheduled_at for r in runs] == times
    assert {(r.holder, r.outcome) for r in runs} == {("replica-a", "ok")}
    assert all(r.finished_at is not None and r.finished_at >= r.started_at for r in runs)
    failed = [r for r in rt.store.job_runs("digest") if r.outcome]
    assert {r.outcome for r in failed} == {"error"}
    assert all(r.detail == "ValueError: the digest renderer broke" for r in failed)


def test_a_run_claimed_by_one_replica_is_not_run_by_another(settings):
    rt = settings_runtime(settings)
    probe = Probe()
    trigger = CronTrigger.from_crontab("0 9 * * mon", timezone=UTC)
    due = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    a = JobBinding(ScheduledJob("weekly-digest", trigger, probe.on("a")), rt.store, "a", rt.clock)
    b = JobBinding(ScheduledJob("weekly-digest", trigger, probe.on("b")), rt.store, "b", rt.clock)
    assert run_scheduled("weekly-digest", scheduled_at=due, binding=a) == "ran"
    assert run_scheduled("weekly-digest", scheduled_at=due, binding=b) == "claimed-elsewhere"
    assert run_scheduled("weekly-digest", scheduled_at=due + timedelta(days=7), binding=b) == "ran"
    assert probe.runs == [("a", due), ("b", due + timedelta(days=7))]
    assert [(r.holder, r.scheduled_at) for r in rt.store.job_runs("weekly-digest")] == [("a", due), ("b", due + timedelta(days=7))]


def test_racing_replicas_run_a_scheduled_run_once(settings):
    rt = settings_runtime(settings)
    probe = Probe()
    job = ScheduledJob("alerts", IntervalTrigger(seconds=900, timezone=UTC), probe.on("replica-a"))
    due = datetime(2026, 11, 23, 9, 15, tzinfo=UTC)
    bindings = [JobBinding(job, rt.store, f"replica-{i}", rt.clock) for i in range(6)]
    results: list[str] = []
    barrier = threading.Barrier(len(bindings))

    def race(binding):
        barrier.wait()
        results.append(run_scheduled("alerts", scheduled_at=due, binding=binding))

    threads = [threading.Thread(target=race, args=(b,)) for b in bindings]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["claimed-elsewhere"] * 5 + ["ran"]
    assert len(probe.runs) == 1 and len(rt.store.job_runs("alerts")) == 1


# --- the job store across restarts ---------------------------------------------------------------------


def _hourly_from(start: datetime) -> IntervalTrigger:
    # A new trigger object each time it is built, as from the settings on each start; only its
    # first fire time is under the test's control.
    return IntervalTrigger(hours=1, start_date=start, timezone=UTC)


def test_a_run_due_while_no_scheduler_ran_runs_once_at_the_next_start(settings):
    clock = SteppedClock()
    rt = settings_runtime(settings, clock)
    probe = Probe()
    due = clock() + timedelta(seconds=1.5)
    job = ScheduledJob("digest", _hourly_from(due), probe.on("replica-a"))
    background_for(rt, settings, [job]).shutdown(wait=True)  # stored, then the replica goes away
    assert stored_jobs(rt)["digest"][1] == due
    clock.advance(1.8)  # the run falls due while no scheduler runs

    # The next start builds the trigger again (its start date now in the past): the stored next
    # run time wins, so the missed run is still due, and runs.
    restarted = ScheduledJob("digest", _hourly_from(clock()), probe.on("replica-a"))
    background = background_for(rt, settings, [restarted])
    try:
        wait_for(lambda: probe.times(), "the missed run")
    finally:
        background.shutdown(wait=True)
    assert probe.times() == [due]
    assert stored_jobs(rt)["digest"][1] == due + timedelta(hours=1)

    # And once only: starting again finds it claimed and the next run an hour away.
    again = background_for(rt, settings, [restarted])
    again.shutdown(wait=True)
    assert probe.times() == [due]
    assert [r.scheduled_at for r in rt.store.job_runs("digest")] == [due]


def test_missed_runs_are_coalesced_into_the_latest(settings):
    clock = SteppedClock()
    rt = settings_runtime(settings, clock)
    probe = Probe()
    first = clock() + timedelta(seconds=0.8)
    job = ScheduledJob("sweep", IntervalTrigger(seconds=0.5, start_date=first, timezone=UTC), probe.on("replica-a"))
    background_for(rt, settings, [job]).shutdown(wait=True)
    clock.advance(0.8 + 1.25)  # three runs missed: at first, first + 0.5 s and first + 1 s
    background = background_for(rt, settings, [job])
    try:
        wait_for(lambda: probe.times(), "the coalesced run")
    finally:
        background.shutdown(wait=True)
    latest_due = probe.times()[0]
    assert latest_due >= first + timedelta(seconds=1)  # not the oldest missed run: the latest
    assert len(set(probe.times())) == len(probe.times())


def test_a_changed_schedule_replaces_the_stored_one_and_undeclared_jobs_go(settings):
    rt = settings_runtime(settings)
    later = datetime.now(UTC) + timedelta(days=1)
    old = [
        ScheduledJob("digest", IntervalTrigger(hours=1, start_date=later, timezone=UTC), Probe().on("replica-a")),
        ScheduledJob("retired", IntervalTrigger(hours=1, start_date=later, timezone=UTC), Probe().on("replica-a")),
    ]
    background_for(rt, settings, old).shutdown(wait=True)
    assert set(stored_jobs(rt)) == {"digest", "retired"}
    new = [ScheduledJob("digest", settings.costs.digest_trigger(), Probe().on("replica-a"))]
    background_for(rt, settings, new).shutdown(wait=True)
    stored = stored_jobs(rt)
    assert set(stored) == {"digest"}
    trigger, next_run = stored["digest"]
    assert trigger.startswith("cron[") and next_run.weekday() == 0 and next_run.hour == 9


def test_the_price_refresh_is_scheduled_only_when_live_prices_are_enabled(settings):
    assert "prices-refresh" not in {j.id for j in scheduled_jobs(settings_runtime(settings), settings)}
    enabled = Settings(database_url=settings.database_url, prices={"aws": {"enabled": True}})
    (refresh,) = [j for j in scheduled_jobs(settings_runtime(enabled), enabled) if j.id == "prices-refresh"]
    assert refresh.trigger.interval == timedelta(seconds=enabled.prices.aws.refresh_seconds)
    assert refresh.first_run_at_start


def test_job_ids_must_be_unique(settings):
    rt = settings_runtime(settings)
    job = ScheduledJob("x", IntervalTrigger(hours=1, timezone=UTC), Probe().on("replica-a"))
    with pytest.raises(ValueError, match="unique"):
        background_for(rt, settings, [job, job])


# --- leader election gates the scheduler -----------------------------------------------------------------


def test_only_the_lease_holder_runs_the_jobs_and_a_release_hands_them_over(database_url, tmp_path):
    # The Lease runs on real time (its durations below); the jobs' runs fall due on the clock.
    clock = SteppedClock()
    probe = Probe()
    trigger = IntervalTrigger(seconds=0.5, start_date=START + timedelta(seconds=0.5), timezone=UTC)
    with FakeKubeApi() as kube:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", kube.url)

        def replica(identity: str) -> Settings:
            return Settings(
                database_url=database_url,
                kubernetes={"kubeconfig": str(kubeconfig)},
                leader_election={
                    "enabled": True, "namespace": "gpu-cost", "identity": identity,
                    "lease_duration_seconds": 2, "renew_deadline_seconds": 1, "retry_period_seconds": 0.1,
                },
            )

        sa, sb = replica("replica-a"), replica("replica-b")
        rt = settings_runtime(sa, clock)
        a = clock.follow(background_for(rt, sa, [ScheduledJob("probe", trigger, probe.on("replica-a"))]))
        b = None
        try:
            assert a.elector.wait_until_leading(10)
            b = clock.follow(background_for(rt, sb, [ScheduledJob("probe", trigger, probe.on("replica-b"))]))
            for n in (1, 2):
                clock.advance(0.5)
                wait_for(lambda: len(finished_runs(rt, "probe")) >= n, f"run {n} by the leader")
            assert a.scheduling and not b.scheduling and not b.elector.is_leader
            assert a.running and b.running  # both alive (and ready for Slack), one leads
            assert {h for h, _ in probe.runs} == {"replica-a"}

            a.shutdown(wait=True)  # stops its scheduler, then releases the Lease
            assert not a.scheduling and not a.running
            assert b.elector.wait_until_leading(10)
            wait_for(lambda: b.scheduling, "the new leader's scheduler")
            clock.advance(0.5)
            wait_for(lambda: any(h == "replica-b" for h, _ in probe.runs), "a run by the new leader")
            assert b.scheduling
        finally:
            a.shutdown(wait=True)
            if b is not None:
                b.shutdown(wait=True)
        lease = kube.get("Lease", "gpu-cost", "gpu-cost-bot")
    assert lease["spec"]["holderIdentity"] == "" and lease["spec"]["leaseTransitions"] == 1
    times = probe.times()
    assert len(times) == len(set(times))
    holders = [h for h, _ in probe.runs]
    # a's runs all come before b's: never both at once.
    assert holders == sorted(holders)
    assert [(r.holder, r.scheduled_at) for r in rt.store.job_runs("probe")] == [
        (h, t) for h, t in probe.runs
    ]
