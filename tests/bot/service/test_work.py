"""bot.service.work on real threads: a full pool refuses at once, a shutdown cancels what waits,
one computation is shared and its failure is not kept."""

from __future__ import annotations

import threading

import pytest

from bot.service.work import SingleFlight, WorkerPool
from tests.support.waiting import wait_for


def test_a_full_pool_refuses_at_once_and_a_shutdown_cancels_what_waits():
    release, refused, cancelled, ran = threading.Event(), [], [], []
    pool = WorkerPool("t", workers=1, queue_size=1, on_refused=refused.append)
    assert pool.submit(release.wait)
    assert pool.submit(lambda: ran.append(1), on_cancel=lambda: cancelled.append(1))
    assert not pool.submit(lambda: ran.append(2)) and refused == ["t"]
    wait_for(lambda: pool.busy == 1, "the first task to run")
    assert pool.shutdown() == 1 and cancelled == [1]
    assert not pool.submit(lambda: ran.append(3)) and pool.closed
    release.set()
    assert ran == []


def test_one_computation_is_shared_and_a_failure_is_not_kept():
    flight: SingleFlight[int] = SingleFlight(keep_seconds=60)
    started, release, calls = threading.Event(), threading.Event(), []

    def slow() -> int:
        calls.append(1)
        started.set()
        release.wait(5)
        return 42

    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(flight.do("k", slow))) for _ in range(5)]
    threads[0].start()
    started.wait(5)
    for t in threads[1:]:
        t.start()
    release.set()
    for t in threads:
        t.join(5)
    assert results == [42] * 5 and calls == [1]
    assert flight.do("k", lambda: 0) == 42  # kept for a minute

    def broken() -> int:
        raise RuntimeError("prometheus down")

    with pytest.raises(RuntimeError):
        flight.do("other", broken)
    assert flight.do("other", lambda: 7) == 7
