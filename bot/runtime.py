"""The running bot's parts, assembled once and passed to every job and handler.

Nothing here reads settings or the environment by itself: ``bot.cli`` builds a Runtime from
:class:`~bot.settings.Settings` (or from bundled data for the demo) and hands it down.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Protocol

from actions.executors import ClusterWriter
from actions.idle import detect_idle
from actions.model import ClusterSnapshot, Finding, TelemetrySnapshot
from actions.policy import Policy, TeamDirectory
from actions.prices import PriceBook
from actions.sources.kubernetes import ClusterReadError
from actions.store import Store
from bot.chat import Chat
from bot.metrics import BotMetrics
from bot.reports import CostSetup


class ClusterReader(Protocol):
    def snapshot(self, now: datetime) -> ClusterSnapshot:
        """The cluster's GPU pods and their owners as of ``now``."""


class TelemetrySource(Protocol):
    def fetch(self, at: datetime, policy: Policy) -> TelemetrySnapshot:
        """Per-GPU telemetry over ``policy.window_seconds`` ending at ``at``."""


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class ActionsInFlight:
    """The action requests this process is applying or restoring right now, so that a shutdown can
    stop new ones and wait for the running ones. Thread-safe: presses run on Bolt's worker threads.
    """

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


@dataclass
class Runtime:
    """Everything a sweep, a button press or a slash command needs.

    ``clock`` returns the current time (tests and the demo pass a controllable one);
    ``group_members`` expands a Slack user group id into user ids (empty set when unknown);
    ``metrics``, when set, records sweeps, actions and API errors (see :mod:`bot.metrics`);
    ``inflight`` tracks the actions being applied or restored, for a graceful shutdown.
    """

    store: Store
    chat: Chat
    cluster: ClusterReader
    telemetry: TelemetrySource
    writer: ClusterWriter
    prices: PriceBook
    teams: TeamDirectory
    policy: Policy
    dry_run: bool
    clock: Callable[[], datetime] = utc_now
    group_members: Callable[[str], set[str]] = lambda group: set()
    metrics: BotMetrics | None = None
    inflight: ActionsInFlight = field(default_factory=ActionsInFlight)
    # Cost reports (bot.reports.team_reports); None when no usage source is configured.
    costs: CostSetup | None = None

    def find_idle(self, now: datetime) -> list[Finding]:
        """A sweep's detection: :meth:`detect` at ``now``, recorded in ``metrics`` as the sweep's
        ``detect`` phase (seconds), or as a failed sweep when it raises (the error propagates)."""
        started = time.perf_counter()
        try:
            findings = self.detect(now)
        except Exception:
            if self.metrics:
                self.metrics.sweep_finished("error")
            raise
        if self.metrics:
            self.metrics.sweep_phase("detect", time.perf_counter() - started)
        return findings

    def detect(self, now: datetime) -> list[Finding]:
        """Read the cluster and telemetry at ``now`` and run the idle detector. Not a sweep of its
        own: the re-check before acting calls this, so it does not count as one."""
        try:
            snapshot = self.cluster.snapshot(now)
        except ClusterReadError:
            if self.metrics:
                self.metrics.kubernetes_error("read")
            raise
        telemetry = self.telemetry.fetch(now, self.policy)
        return detect_idle(snapshot, telemetry, self.prices, self.policy, self.teams, now)
