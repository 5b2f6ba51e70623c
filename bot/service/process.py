"""The long-running process: start its parts in order, serve until SIGTERM, then drain.

:class:`Process` starts, in order: it settles what a previous life of the bot left half-done
(``recover``), serves ``/healthz``, ``/readyz``, ``/metrics`` and whatever the chat mounts (Slack's
HTTP mode: ``/slack/events``), connects the chat (Socket Mode), then starts the background (the
scheduled jobs) and the housekeeping. On SIGTERM or SIGINT, :meth:`Process.stop` drains:
``/readyz`` turns 503 and the chat's requests are refused first, new approvals and restores are
refused (:class:`ActionsInFlight`), queued chat work is cancelled, the background stops after its
running job, and actions in flight get ``grace_seconds`` to finish; any that does not is handed
to ``settle``, which marks its outcome unknown for the next replica or start to read back (never
left half-done, never guessed). Only then do the HTTP servers close.

It knows neither Slack nor Kueue: the chat comes in as a :class:`ChatConnection` and its mounted
WSGI apps, the jobs as a function that starts them.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from actions.store.database import Store
from bot.service.http import HttpOptions, HttpServer, serve_http, wsgi_app
from bot.service.metrics import BotMetrics
from bot.service.work import Periodic, WorkerPool

if TYPE_CHECKING:
    from wsgiref.types import WSGIApplication

log = logging.getLogger(__name__)


class ActionsInFlight:
    """The action requests this process is applying or restoring right now, so that a shutdown can
    stop new ones and wait for the running ones. Thread-safe: presses run on the chat's worker
    threads."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running: set[int] = set()
        self._closed = False

    def start(self, request_id: int) -> bool:
        """Mark ``request_id`` as being acted on; False (and nothing marked) once :meth:`close`
        was called."""
        with self._changed:
            if self._closed:
                return False
            self._running.add(request_id)
            return True

    def finish(self, request_id: int) -> None:
        """``request_id`` is no longer being acted on (whatever the outcome)."""
        with self._changed:
            self._running.discard(request_id)
            self._changed.notify_all()

    def close(self) -> None:
        """Refuse every later :meth:`start`; the running ones go on."""
        with self._changed:
            self._closed = True

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def running(self) -> set[int]:
        """The request ids being acted on now."""
        with self._changed:
            return set(self._running)

    def wait(self, timeout_seconds: float) -> set[int]:
        """Wait up to ``timeout_seconds`` for every running action to finish; returns the ids
        still running when the time ran out (empty when all finished)."""
        with self._changed:
            self._changed.wait_for(lambda: not self._running, timeout=timeout_seconds)
            return set(self._running)


class Background(Protocol):
    """The scheduled jobs as the process sees them (``bot.jobs.scheduler.BackgroundJobs``)."""

    @property
    def running(self) -> bool:
        """Whether the jobs' machinery is alive."""

    def shutdown(self, wait: bool = True) -> None:
        """Stop; ``wait``: let the job in flight finish."""


class ChatConnection(Protocol):
    """A chat that holds a connection of its own (Slack's Socket Mode); a chat that only receives
    webhooks has none."""

    name: str

    def connect(self) -> None:
        """Connect; raises when the chat cannot be reached."""

    def connected(self) -> bool:
        """Whether the connection is up now."""

    def close(self) -> None:
        """Disconnect."""


class Readiness:
    """What ``/readyz`` answers: ``(True, "ok")``, or ``(False, reason)`` when the process is
    shutting down, the database does not answer a cheap query, the chat is not connected
    (``chat_connected`` returns False; ``chat`` names it in the reason) or the scheduler is not
    running.

    ``scheduler`` is set once started (None until then: not ready); an object without a
    ``running`` attribute counts as running.
    """

    def __init__(self, store: Store, chat_connected: Callable[[], bool] = lambda: True, chat: str = "the chat"):
        self.store = store
        self.chat_connected = chat_connected
        self.chat = chat
        self.scheduler: Any = None
        self.stopping = threading.Event()

    def __call__(self) -> tuple[bool, str]:
        if self.stopping.is_set():
            return False, "shutting down"
        try:
            self.store.count_by_state()
        except Exception as e:  # noqa: BLE001 - any database failure means not ready
            return False, f"database not reachable: {str(e).splitlines()[0]}"
        if not self.chat_connected():
            return False, f"not connected to {self.chat}"
        if self.scheduler is None or not getattr(self.scheduler, "running", True):
            return False, "scheduler not running"
        return True, "ok"


def _join(thread: threading.Thread, deadline: float) -> bool:
    thread.join(max(0.0, deadline - time.monotonic()))
    return not thread.is_alive()


@dataclass
class Process:
    """The bot as a process: build it, :meth:`start` it, :meth:`stop` it (what SIGTERM does).

    ``store`` is checked by ``/readyz``; ``inflight`` tracks the actions being applied;
    ``metrics`` is what ``/metrics`` serves. ``mounted`` (path -> WSGI app) is served on
    ``events_port`` (the chat's webhook receivers; none in Socket Mode), the probes and metrics on
    ``probe_port``, and on ``events_port`` too when there are receivers (one server when the two
    ports are equal). ``connection`` is the chat's own connection, if it holds one.
    ``start_background()`` starts the scheduled jobs; ``recover()`` settles what a previous life
    left half-done and returns counts by state; ``settle(request_ids, why)`` records actions
    still running when the grace ran out and returns counts by state. ``grace_seconds`` bounds
    the drain; ``host`` is where the HTTP servers bind, with ``http`` (threads, backlog, body
    limit). ``pools`` are the chat's worker pools, whose queued work a shutdown cancels;
    ``housekeeping()``, when given, runs every ``housekeeping_seconds`` from start to stop
    (settling actions whose outcome is unknown, keeping messages in step). ``watches`` (each with
    ``start()`` and ``stop(timeout)``: the clusters' watch caches) run from start to stop.
    """

    store: Store
    inflight: ActionsInFlight
    metrics: BotMetrics
    start_background: Callable[[], Background]
    recover: Callable[[], Mapping[str, int]] = dict
    settle: Callable[[set[int], str], Mapping[str, int]] = lambda ids, why: {}
    mounted: Mapping[str, "WSGIApplication"] = field(default_factory=dict)
    connection: ChatConnection | None = None
    events_port: int = 3000
    probe_port: int = 8080
    grace_seconds: float = 25.0
    host: str = "0.0.0.0"
    http: HttpOptions = field(default_factory=HttpOptions)
    pools: Sequence[WorkerPool] = ()
    housekeeping: Callable[[], object] | None = None
    housekeeping_seconds: float = 5.0
    watches: Sequence[Any] = ()

    def __post_init__(self) -> None:
        connection = self.connection
        self.readiness = Readiness(
            self.store,
            (lambda: connection.connected()) if connection is not None else (lambda: True),
            connection.name if connection is not None else "the chat",
        )
        self.servers: list[HttpServer] = []
        self.scheduler: Background | None = None
        self.keeper: Periodic | None = None

    @property
    def url(self) -> str:
        """Base URL of the first HTTP server (the mounted receivers are there when any)."""
        return self.servers[0].url

    def start(self) -> "Process":
        """Settle what was left half-done, serve HTTP, connect the chat, then start the scheduled
        jobs. Raises OSError when a port cannot be bound, and whatever the chat's ``connect``
        raises."""
        counts = self.recover()
        if counts:
            log.warning("settled requests interrupted by the last shutdown: %s", dict(counts), extra={"recovered": dict(counts)})
        probes = wsgi_app(None, metrics=self.metrics, ready=self.readiness)
        if self.mounted:
            receivers = wsgi_app(
                self.mounted, metrics=self.metrics, ready=self.readiness,
                accepting=lambda: not self.readiness.stopping.is_set(),
            )
            self.servers.append(serve_http(receivers, self.host, self.events_port, self.http))
            if self.probe_port != self.events_port:
                self.servers.append(serve_http(probes, self.host, self.probe_port, self.http))
        else:
            self.servers.append(serve_http(probes, self.host, self.probe_port, self.http))
        if self.connection is not None:
            self.connection.connect()
            log.info("connected to %s", self.connection.name)
        # Before the jobs: the first sweep lists for itself while the caches fill.
        for watch in self.watches:
            watch.start()
        self.scheduler = self.start_background()
        self.readiness.scheduler = self.scheduler
        if self.housekeeping is not None:
            self.keeper = Periodic("housekeeping", self.housekeeping_seconds, self.housekeeping).start()
        return self

    def stop(self) -> dict[str, int]:
        """Drain and stop within ``grace_seconds``: not ready and no new chat requests, no new
        actions, the scheduler stopped after its running job, actions in flight finished, or
        settled from the cluster's state when the grace runs out. Returns the counts of such
        settled requests by the state they moved to (empty when all finished)."""
        grace = self.grace_seconds
        deadline = time.monotonic() + grace
        self.readiness.stopping.set()
        self.inflight.close()
        # Queued work is cancelled (each requester is told); running work is not waited for,
        # except actions, below. Telling the requesters may be slow, so it does not hold the drain.
        cancelling = [
            threading.Thread(target=pool.shutdown, name=f"{pool.name}-stop", daemon=True) for pool in self.pools
        ]
        for thread in cancelling:
            thread.start()
        if self.keeper is not None:
            self.keeper.stop(timeout=max(0.0, min(5.0, deadline - time.monotonic())))
        if self.connection is not None:
            try:
                self.connection.close()
            except Exception as e:  # noqa: BLE001 - a broken connection must not stop the drain
                log.warning("closing the connection to %s failed: %s", self.connection.name, e)
        stopper = None
        if self.scheduler is not None:
            stopper = threading.Thread(target=self.scheduler.shutdown, kwargs={"wait": True}, name="scheduler-stop", daemon=True)
            stopper.start()
        unfinished = self.inflight.wait(max(0.0, deadline - time.monotonic()))
        settled: dict[str, int] = {}
        if unfinished:
            log.warning("%d action(s) still running after %g s; recording them from the cluster", len(unfinished), grace)
            settled = dict(self.settle(unfinished, f"The bot shut down ({grace:g} s grace period over)"))
        if stopper is not None and not _join(stopper, deadline):
            log.warning("the running scheduled job did not finish within %g s; stopping anyway", grace)
        if not all(_join(thread, deadline) for thread in cancelling):
            log.warning("telling the requesters of cancelled work took longer than %g s; stopping anyway", grace)
        for watch in self.watches:
            watch.stop(timeout=max(0.0, min(5.0, deadline - time.monotonic())))
        for server in self.servers:
            server.shutdown()
        log.info("stopped", extra={"settled": settled} if settled else None)
        return settled


def _on_signal(stop: threading.Event) -> Callable[[int, Any], None]:
    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if stop.is_set():
            log.warning("%s again: already shutting down", name)
        else:
            log.info("%s: shutting down", name)
        stop.set()

    return handler


def exit_now(code: int = 0) -> None:
    """End the process with ``code`` without waiting for threads still running (a cost report's
    Prometheus query, a scheduled job past the grace period): ``concurrent.futures`` would join
    them at interpreter exit, holding a SIGTERM far past its grace. Logs flushed first. Call
    once the drain is done, from the main thread."""
    lingering = [
        t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()
    ]
    if lingering:
        log.warning("exiting with %d thread(s) still running: %s", len(lingering), ", ".join(sorted(lingering)[:10]))
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_until_signalled(start: Callable[[], Any], stop: Callable[[], Any]) -> None:
    """Call ``start()``, wait for SIGTERM or SIGINT, then call ``stop()`` (also when ``start``
    raised). Call from the main thread. A second signal during the drain is logged, not fatal."""
    stopping = threading.Event()
    previous = {sig: signal.signal(sig, _on_signal(stopping)) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        start()
        while not stopping.wait(1.0):  # a timed wait, so the handler's Event is seen promptly
            pass
    finally:
        try:
            stop()
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)
