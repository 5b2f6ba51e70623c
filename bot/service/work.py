"""Work done after a request is answered: bounded worker pools, one computation shared by callers
asking the same thing at once, and a task repeated on a fixed period.

Slack wants every slash command and button acknowledged within 3 seconds, so the chat answers
first and hands the work to a :class:`WorkerPool`: a fixed number of threads and a bounded queue,
so a burst of slow cost reports cannot hold a press, and a full pool says so at once instead of
queueing a press that would run minutes after the person saw an error.

The threads are daemon threads on purpose: ``concurrent.futures`` joins its workers when the
interpreter exits, so one Prometheus query still running would hold a SIGTERM past its grace
period. A shutdown cancels what is queued (each task's ``on_cancel`` tells its requester) and
leaves the running tasks to finish or die with the process; actions in flight are tracked and
waited for separately (:class:`bot.service.process.ActionsInFlight`).
"""

from __future__ import annotations

import contextvars
import logging
import queue
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class _Task:
    run: Callable[[], object]
    on_cancel: Callable[[], object] | None
    context: contextvars.Context


class WorkerPool:
    """``workers`` daemon threads named ``name-N`` taking tasks from a queue of at most
    ``queue_size`` waiting tasks. Each task runs in a copy of the submitter's contextvars (the
    request id stays on its log lines). ``on_refused(name)`` is called for each task refused
    because the pool was full (e.g. to count it). Thread-safe. Raises ValueError for ``workers``
    < 1 or ``queue_size`` < 0."""

    def __init__(
        self, name: str, workers: int, queue_size: int, on_refused: Callable[[str], object] | None = None,
    ):
        if workers < 1 or queue_size < 0:
            raise ValueError(f"{name}: need workers >= 1 and queue_size >= 0, got {workers} and {queue_size}")
        self.name = name
        self.workers = workers
        self.on_refused = on_refused
        # Room for every worker's task plus the waiting ones: a task counts from submit to its end.
        self._slots = threading.BoundedSemaphore(workers + queue_size)
        self._queue: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._busy = 0
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, run: Callable[[], object], on_cancel: Callable[[], object] | None = None) -> bool:
        """Queue ``run()``; False, and nothing queued, when the pool is full or shut down.
        ``on_cancel()`` is called instead of ``run()`` when a shutdown drops the task before it
        started. Exceptions from either are logged, never raised to the submitter."""
        if self._closed:
            return False
        if not self._slots.acquire(blocking=False):
            if self.on_refused is not None:
                self.on_refused(self.name)
            return False
        self._queue.put(_Task(run, on_cancel, contextvars.copy_context()))
        return True

    @property
    def closed(self) -> bool:
        """True once :meth:`shutdown` was called."""
        return self._closed

    @property
    def busy(self) -> int:
        """How many tasks are running now."""
        return self._busy

    def shutdown(self) -> int:
        """Take no more tasks and cancel the queued ones (their ``on_cancel`` runs here). Running
        tasks go on; returns how many were cancelled."""
        with self._lock:
            self._closed = True
        cancelled = 0
        while True:
            try:
                task = self._queue.get_nowait()
            except queue.Empty:
                break
            if task is None:
                continue
            cancelled += 1
            self._slots.release()
            if task.on_cancel is not None:
                _guarded(f"{self.name}: on_cancel", task.context, task.on_cancel)
        for _ in self._threads:
            self._queue.put(None)
        if cancelled:
            log.warning("%s: %d queued task(s) cancelled by the shutdown", self.name, cancelled)
        return cancelled

    def _work(self) -> None:
        while True:
            task = self._queue.get()
            if task is None:
                return
            with self._lock:
                self._busy += 1
            try:
                _guarded(self.name, task.context, task.run)
            finally:
                with self._lock:
                    self._busy -= 1
                self._slots.release()


def _guarded(what: str, context: contextvars.Context, fn: Callable[[], object]) -> None:
    try:
        context.run(fn)
    except Exception:  # noqa: BLE001 - a failing task must not kill its worker
        log.exception("%s: task failed", what)


class SingleFlight(Generic[T]):
    """Callers asking for the same ``key`` while its computation runs wait for that computation
    and share its result (or its exception) instead of starting their own; a result is also
    handed to callers for ``keep_seconds`` after it was computed (one that waited in a queue
    behind the computation still shares it). Exceptions are not kept. Thread-safe."""

    def __init__(self, keep_seconds: float = 0.0, clock: Callable[[], float] = time.monotonic):
        self.keep_seconds = keep_seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._running: dict[Hashable, Future[T]] = {}
        self._kept: dict[Hashable, tuple[float, T]] = {}

    def do(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``'s result, computed once for all callers of ``key`` that overlap with it
        or come within ``keep_seconds`` after it. Raises what ``compute`` raised, to each caller
        that shared that computation."""
        with self._lock:
            now = self.clock()
            self._kept = {k: v for k, v in self._kept.items() if now - v[0] < self.keep_seconds}
            if key in self._kept:
                return self._kept[key][1]
            running = self._running.get(key)
            leader = running is None
            if leader:
                running = self._running[key] = Future()
        if not leader:
            return running.result()
        try:
            result = compute()
        except BaseException as e:
            running.set_exception(e)
            raise
        else:
            running.set_result(result)
            with self._lock:
                if self.keep_seconds > 0:
                    self._kept[key] = (self.clock(), result)
            return result
        finally:
            with self._lock:
                del self._running[key]


class Periodic:
    """Calls ``fn()`` every ``seconds`` on a daemon thread named ``name`` until :meth:`stop`; an
    exception is logged and the next round comes as usual."""

    def __init__(self, name: str, seconds: float, fn: Callable[[], object]):
        self.name, self.seconds, self.fn = name, seconds, fn
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> "Periodic":
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the round in progress, waiting up to ``timeout`` seconds for it."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.wait(self.seconds):
            try:
                self.fn()
            except Exception:  # noqa: BLE001 - one failed round must not stop the next
                log.exception("%s failed", self.name)
