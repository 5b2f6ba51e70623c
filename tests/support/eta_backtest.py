"""The start estimate's back-test: a generated history replayed against the estimator.

30 days of Workloads arrive in one LocalQueue whose ClusterQueue has a quota of 8 GPUs (Poisson
arrivals, 1, 2 or 4 GPUs each, run times log-normal around 3 h; all from one seeded generator), and
are admitted strictly FIFO by the quota. Each finished run is written as the usage ledger would
hold it (GPU-hours per clock hour) and read back as :mod:`actions.store.ledger_runs` reads it, once
the ledger holds the hour after its last one. At each arrival after the first 3 days the estimate
is made from what was known then: the runs the ledger held, what ran (GPUs, hours run), who was
ahead; it is compared with when the Workload actually started.
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from actions.kueue.eta import NOW, Queued, Running, RunTimes, estimate_start
from actions.store.ledger_runs import runs_of

QUOTA = 8
DAYS = 30
WARM_UP_HOURS = 72.0
T0 = datetime(2026, 10, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Job:
    """One generated Workload: hours from the start of the history."""

    name: str
    gpus: int
    arrival: float
    start: float
    end: float


@dataclass(frozen=True)
class BackTest:
    """The figures: ``estimates`` Workloads estimated, ``median_abs_error_hours`` of the p50-based
    start against the actual one, ``in_range`` the share whose actual start fell in the range,
    ``unknown`` those without an estimate; ``median_wait_hours`` the actual waits' median."""

    estimates: int
    median_abs_error_hours: float
    in_range: float
    unknown: int
    now_right: float
    median_wait_hours: float


def generate(seed: int = 7, days: int = DAYS, rate_per_hour: float = 0.9) -> list[Job]:
    """The history: arrivals, asks and run times from ``seed``; starts strictly FIFO by the quota."""
    rng = random.Random(seed)
    jobs: list[Job] = []
    running: list[tuple[float, int]] = []  # (end, gpus)
    t, last_start = 0.0, 0.0
    while True:
        t += rng.expovariate(rate_per_hour)
        if t > days * 24:
            return jobs
        gpus = rng.choice((1, 1, 2, 2, 4))
        lasts = min(24.0, rng.lognormvariate(math.log(3.0), 0.6))
        start = max(t, last_start)
        running.sort()
        while QUOTA - sum(g for e, g in running if e > start) < gpus:
            start = min(e for e, _ in running if e > start)
        running.append((start + lasts, gpus))
        last_start = start
        jobs.append(Job(f"job-{len(jobs)}", gpus, t, start, start + lasts))


def ledger_hours(job: Job) -> list[tuple[datetime, float]]:
    """The GPU-hours of each clock hour ``job`` ran in, as the ledger holds them."""
    out = []
    h = math.floor(job.start)
    while h < job.end:
        overlap = min(job.end, h + 1) - max(job.start, h)
        out.append((T0 + timedelta(hours=h), job.gpus * overlap))
        h += 1
    return out


def ledger_run(job: Job) -> float:
    """``job``'s run time as the ledger reads it back (hours)."""
    rows = [(("ml", "Workload", job.name, "team-a"), hour, g) for hour, g in ledger_hours(job)]
    runs = runs_of(rows, T0 - timedelta(hours=2), T0 + timedelta(days=DAYS * 2))
    return runs[("ml", "Workload", job.name, "team-a")][0]


def replay(jobs: list[Job], ignore_position: bool = False) -> BackTest:
    """Estimate each Workload's start at its arrival and compare (``ignore_position``: as if
    nothing were ahead of it, the broken estimator the bound must catch)."""
    known = sorted((math.floor(j.end) + 2, ledger_run(j)) for j in jobs)  # (hour the ledger holds it by, hours)
    errors, hits, unknown, now_right, now_total, waits = [], 0, 0, 0, 0, []
    for job in jobs:
        if job.arrival < WARM_UP_HOURS:
            continue
        runs = RunTimes.of(h for ready, h in known if ready <= job.arrival)
        running = [Running(o.gpus, job.arrival - o.start) for o in jobs if o.start <= job.arrival < o.end]
        ahead = [] if ignore_position else [
            Queued(o.gpus) for o in jobs if o.arrival < job.arrival and o.start > job.arrival]
        est = estimate_start(job.gpus, ahead, running, QUOTA, runs)
        wait = job.start - job.arrival
        waits.append(wait)
        if est.low_hours is None or est.high_hours is None:
            unknown += 1
            continue
        if est.status == NOW:
            now_total += 1
            now_right += wait < 1e-9
        errors.append(abs(est.low_hours - wait))
        hits += est.low_hours - 1e-9 <= wait <= est.high_hours + 1e-9
    return BackTest(
        estimates=len(errors),
        median_abs_error_hours=statistics.median(errors),
        in_range=hits / len(errors),
        unknown=unknown,
        now_right=now_right / now_total if now_total else 1.0,
        median_wait_hours=statistics.median(waits),
    )
