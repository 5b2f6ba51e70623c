"""The run times of each LocalQueue's Workloads, read from the usage ledger's ``usage_hour`` rows
(actions.store.ledger_runs) on real SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from actions.model.ledger import CAPACITY, FILLED, REQUESTED, LedgerRow
from actions.store.ledger import LedgerStore
from actions.store.ledger_runs import LedgerRuns

UTC = timezone.utc
CLUSTER = "eu-1"
H0 = datetime(2026, 11, 10, tzinfo=UTC)


def held(hour, name, gpu_hours, *, queue="team-a", node="n1", kind="Workload", ns="ml") -> LedgerRow:
    return LedgerRow(hour, CLUSTER, REQUESTED, ns, kind, name, node, gpu_hours, queue=queue)


def test_runs_are_consecutive_hours_of_a_consumer_as_long_as_its_gpu_hours_over_its_gpus(store):
    hours: dict[int, list[LedgerRow]] = {h: [] for h in range(0, 12)}
    # train-1: 4 GPUs for hours 1-2 (on two nodes in hour 1) and half of hour 3: 2.5 h.
    hours[1] += [held(H0 + timedelta(hours=1), "train-1", 2.0), held(H0 + timedelta(hours=1), "train-1", 2.0, node="n2")]
    hours[2] += [held(H0 + timedelta(hours=2), "train-1", 4.0)]
    hours[3] += [held(H0 + timedelta(hours=3), "train-1", 2.0)]
    # train-2 ran hours 2 and 4 (a gap): two runs of 1 h.
    hours[2] += [held(H0 + timedelta(hours=2), "train-2", 1.0)]
    hours[4] += [held(H0 + timedelta(hours=4), "train-2", 1.0)]
    # Left out: a pod with no LocalQueue, a capacity row, one in another LocalQueue's stats, and
    # runs touching the first (0) and the last hour (11) held: they may have run longer.
    hours[5] += [held(H0 + timedelta(hours=5), "notebook", 1.0, queue=None, kind="Notebook")]
    hours[5] += [LedgerRow(H0 + timedelta(hours=5), CLUSTER, CAPACITY, "", "", "", "n1", 8.0)]
    hours[6] += [held(H0 + timedelta(hours=6), "eval", 1.0, queue="team-b")]
    hours[0] += [held(H0, "early", 1.0)]
    hours[11] += [held(H0 + timedelta(hours=11), "late", 1.0)]
    ledger = LedgerStore(store)
    for h, rows in hours.items():
        assert ledger.write_hour(CLUSTER, H0 + timedelta(hours=h), rows, FILLED, H0 + timedelta(days=1))

    runs = LedgerRuns(store)
    got = runs.run_hours(CLUSTER, H0 - timedelta(days=1), H0 + timedelta(days=1))
    assert got == {
        ("ml", "Workload", "train-1", "team-a"): [2.5],
        ("ml", "Workload", "train-2", "team-a"): [1.0, 1.0],
        ("ml", "Workload", "eval", "team-b"): [1.0],
    }
    times = runs.run_times(CLUSTER, H0 - timedelta(days=1), H0 + timedelta(days=1))
    assert times[("ml", "team-a")].durations == (1.0, 1.0, 2.5)
    assert times[("ml", "team-a")].p50 == 1.0
    assert runs.run_times("other-cluster", H0, H0 + timedelta(days=1)) == {}
