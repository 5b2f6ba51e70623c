"""Two bot processes, one PostgreSQL, one Lease on the wire-level fake Kubernetes API.

Each process is a replica as deployed: it migrates the database at start (both at once), campaigns
for the Lease, and runs the scheduled jobs only while it holds it. The job here records every run
in a table of its own. The leader is killed with SIGKILL (no release, no clean shutdown): the other
replica waits out the Lease, takes over, and carries on the schedule from the job store, so the
run that fell due during the failover runs once, on the new leader, and no run ever runs twice.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from apscheduler.triggers.interval import IntervalTrigger

from actions.sources.kube.lease import parse_micro_time
from actions.store.database import Store
from bot.jobs.scheduler import ScheduledJob, run_jobs_forever
from bot.service.leader import JITTER
from bot.settings import Settings
from tests.support.demo_world import settings_runtime
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.kubeconfig import write_kubeconfig
from tests.support.paths import ROOT
from tests.support.processes import python_env
from tests.support.waiting import wait_for

pytestmark = pytest.mark.process

NAMESPACE, LEASE = "gpu-cost", "gpu-cost-bot"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 3, 2, 0.5
INTERVAL = timedelta(seconds=1)
PROBE = "replica-probe"
UTC = timezone.utc


# --- the replica process -------------------------------------------------------------------------------


def record_run(store: Store, holder: str):
    """The scheduled job: one row per time its body runs (no uniqueness here, so a double run shows)."""

    def run(scheduled_at: datetime) -> None:
        with store.engine.begin() as connection:
            connection.execute(
                sa.text("INSERT INTO probe_run (holder, scheduled_at) VALUES (:holder, :at)"),
                {"holder": holder, "at": scheduled_at},
            )

    return run


def replica_main() -> None:
    """A replica: ``python -c 'from tests.bot.service.test_replicas import replica_main; replica_main()'
    DATABASE_URL KUBECONFIG IDENTITY``. Runs until SIGTERM (clean: releases the Lease) or SIGKILL."""
    database_url, kubeconfig, identity = sys.argv[1:4]
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format=f"%(asctime)s {identity} %(name)s: %(message)s"
    )
    settings = Settings(
        database_url=database_url,
        kubernetes={"kubeconfig": kubeconfig},
        leader_election={
            "enabled": True, "namespace": NAMESPACE, "lease_name": LEASE, "identity": identity,
            "lease_duration_seconds": LEASE_DURATION, "renew_deadline_seconds": RENEW_DEADLINE,
            "retry_period_seconds": RETRY_PERIOD,
        },
    )
    store = settings_runtime(settings).store
    job = ScheduledJob(PROBE, IntervalTrigger(seconds=INTERVAL.total_seconds(), timezone=UTC), record_run(store, identity))
    run_jobs_forever(store, [job], settings.leader_election, settings.kubernetes)


# --- the test ------------------------------------------------------------------------------------------


def _spawn(identity: str, database_url: str, kubeconfig: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", "from tests.bot.service.test_replicas import replica_main; replica_main()",
         database_url, str(kubeconfig), identity],
        cwd=ROOT, env=python_env(), stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )


def _probe_rows(engine: sa.Engine) -> list[tuple[str, datetime]]:
    with engine.connect() as connection:
        return [
            (h, t.astimezone(UTC))
            for h, t in connection.execute(sa.text("SELECT holder, scheduled_at FROM probe_run ORDER BY id"))
        ]


def _job_runs(engine: sa.Engine) -> list[tuple[str, datetime, str | None]]:
    with engine.connect() as connection:
        return [
            (h, t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC), o)
            for h, t, o in connection.execute(
                sa.text("SELECT holder, scheduled_at, outcome FROM job_run WHERE job_id = :j ORDER BY scheduled_at"),
                {"j": PROBE},
            )
        ]


@pytest.mark.postgres
def test_kill_the_leader_and_the_other_takes_over_running_each_run_once(postgres_url, tmp_path):
    engine = sa.create_engine(postgres_url, poolclass=sa.pool.NullPool)
    with engine.begin() as connection:
        connection.execute(sa.text(
            "CREATE TABLE probe_run (id SERIAL PRIMARY KEY, holder TEXT NOT NULL, scheduled_at TIMESTAMPTZ NOT NULL)"
        ))
    logs = {name: tmp_path / f"{name}.log" for name in ("replica-a", "replica-b")}
    procs: dict[str, subprocess.Popen] = {}
    try:
        with FakeKubeApi() as kube:
            kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", kube.url)

            def spec() -> dict:
                return (kube.get("Lease", NAMESPACE, LEASE) or {}).get("spec", {})

            procs = {name: _spawn(name, postgres_url, kubeconfig, log) for name, log in logs.items()}
            leader = wait_for(lambda: spec().get("holderIdentity"), "a leader", timeout=60)  # two processes starting on a loaded machine
            follower = next(name for name in procs if name != leader)
            wait_for(lambda: len(_probe_rows(engine)) >= 3, "three runs by the leader", timeout=30)
            assert spec()["holderIdentity"] == leader
            assert {h for h, _ in _probe_rows(engine)} == {leader}  # the follower runs nothing
            assert all(p.poll() is None for p in procs.values())

            procs[leader].send_signal(signal.SIGKILL)
            procs[leader].wait()
            last_renew = parse_micro_time(spec()["renewTime"])  # nothing renews it any more

            taken = wait_for(lambda: spec() if spec().get("holderIdentity") == follower else None, "the takeover", timeout=30)
            acquired = parse_micro_time(taken["acquireTime"])
            assert taken["leaseTransitions"] == 1
            # The follower waited out the Lease after the last renewal it saw, and not much longer.
            assert acquired - last_renew >= timedelta(seconds=LEASE_DURATION)
            assert acquired - last_renew <= timedelta(seconds=LEASE_DURATION + 2 * RETRY_PERIOD * (1 + JITTER) + 1)

            wait_for(lambda: sum(h == follower for h, _ in _probe_rows(engine)) >= 2, "two runs by the new leader", timeout=30)
            procs[follower].send_signal(signal.SIGTERM)
            assert procs[follower].wait(timeout=30) == 0
            released = spec()
        assert released["holderIdentity"] == ""  # a clean shutdown hands the Lease back
    except BaseException:
        for name, log in logs.items():
            if log.exists():
                sys.stderr.write(f"--- {name} ---\n{log.read_text()[-6000:]}\n")
        raise
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()

    rows = _probe_rows(engine)
    times = [t for _, t in rows]
    assert len(times) == len(set(times)), f"a run ran twice: {rows}"
    by_leader = [t for h, t in rows if h == leader]
    by_follower = [t for h, t in rows if h == follower]
    assert max(by_leader) < min(by_follower)

    # One schedule across both processes: every fire time is on the grid the job store holds, which
    # a schedule started afresh on the new leader would not be.
    origin = min(times)
    assert all((t - origin) % INTERVAL == timedelta(0) for t in times)

    # The runs that fell due while nobody led were folded into one, which ran on the new leader as
    # soon as it started (before the next fire time after its takeover), and once.
    first_after = min(by_follower)
    assert first_after - max(by_leader) > INTERVAL  # some fire times were due during the failover
    assert first_after < acquired + INTERVAL
    assert times.count(first_after) == 1
    assert not [t for t in times if max(by_leader) < t < first_after]

    # Every body run was claimed first, by the process that ran it; a claim without a finished run
    # can only be the killed leader's run in flight.
    claims = _job_runs(engine)
    assert {(h, t) for h, t, _ in claims} >= set(rows)
    assert len({t for _, t, _ in claims}) == len(claims)
    assert all(h == leader for h, _, outcome in claims if outcome is None)
    engine.dispose()
