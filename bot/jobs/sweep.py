"""The idle sweep: one pipeline for the scheduled sweep, ``sweep --once``, ``sweep --json`` and the
demo.

Two stages: :meth:`Sweep.detection` reads the cluster and the telemetry and runs the idle detector
(``detect``, :meth:`bot.runtime.runtime.Runtime.detection` in the bot), with warnings of what the data
lacked; :meth:`Sweep.run` then brings the proposals in line with the findings
(:meth:`bot.chat.proposals.Proposals.reconcile`). ``sweep --json`` stops after the first stage and
needs no database. With ``metrics`` each sweep is recorded: its phases' seconds, its outcome, the
findings by kind and the requests by state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from actions.detect.clusters import FleetDetection
from actions.detect.detection import Detection
from actions.model.times import utc_now
from bot.chat.auto import AutoActions
from bot.chat.proposals import Proposals
from bot.service.metrics import BotMetrics

log = logging.getLogger(__name__)

JOB_ID = "idle-sweep"


@dataclass(frozen=True)
class SweepOutcome:
    """What one sweep did: ``counts`` by what happened to the proposals (see
    :meth:`~bot.chat.proposals.Proposals.reconcile`) and the ``warnings`` of what the data lacked."""

    counts: dict[str, int]
    warnings: tuple[str, ...] = ()


@dataclass
class Sweep:
    """``detect(now)`` returns the idle findings at ``now`` and what the data lacked (raises when
    a source cannot be read); ``proposals`` reconciles the findings with the store and the
    channels (None: detect only); ``auto`` then acts on the requests of teams in mode auto whose
    grace is over (None: nothing acts on its own); ``verify`` then judges what done actions did
    (:meth:`bot.chat.verify.Verifier.run`; None where the process's housekeeping does it);
    ``clock`` gives the time a scheduled sweep runs at."""

    detect: Callable[[datetime], Detection]
    proposals: Proposals | None = None
    metrics: BotMetrics | None = None
    clock: Callable[[], datetime] = utc_now
    auto: AutoActions | None = None
    verify: Callable[[datetime], Mapping[str, int]] | None = None

    def detection(self, now: datetime) -> Detection:
        """The idle findings at ``now`` and the data's warnings (each logged). Recorded as the
        ``detect`` phase, or as a failed sweep when a source raises (the error propagates)."""
        started = time.perf_counter()
        try:
            found = self.detect(now)
        except Exception:
            if self.metrics:
                self.metrics.sweep_finished("error")
            raise
        if self.metrics:
            self.metrics.sweep_phase("detect", time.perf_counter() - started)
        for warning in found.warnings:
            log.warning("idle sweep at %s: %s", now.isoformat(), warning)
        return found

    def run(self, now: datetime) -> SweepOutcome:
        """Detect at ``now``, then reconcile. Raises what either stage raises (the sweep is then
        recorded as failed) and ValueError without ``proposals``."""
        if self.proposals is None:
            raise ValueError("a sweep that posts proposals needs Proposals (this one only detects)")
        found = self.detection(now)
        findings = found.findings
        started = time.perf_counter()
        try:
            # A cluster that could not be read says nothing about its requests: they stay.
            unreachable = found.unreachable if isinstance(found, FleetDetection) else {}
            counts = self.proposals.reconcile(findings, now, unreachable=unreachable)
            if self.auto is not None:
                counts.update(self.auto.act_due(now, unreachable))
        except Exception:
            if self.metrics:
                self.metrics.sweep_finished("error")
            raise
        if self.metrics:
            self.metrics.sweep_phase("reconcile", time.perf_counter() - started)
            self.metrics.sweep_finished("ok")
            self.metrics.set_findings(findings, unreachable)
        self.proposals.refresh_metrics()
        if self.verify is not None:
            try:
                verified = self.verify(now)
            except Exception:  # noqa: BLE001 - what the sweep proposed stands; the next sweep judges again
                log.exception("verifying done actions at %s failed", now.isoformat())
            else:
                if set(verified) - {"waiting"}:
                    log.info("idle sweep at %s: verified %s", now.isoformat(), verified)
        return SweepOutcome(counts, found.warnings)

    def once(self) -> dict[str, int] | None:
        """One sweep at ``clock()``: the counts, or None when it failed (the error is logged, so
        one failed sweep never stops the next)."""
        now = self.clock()
        try:
            counts = self.run(now).counts
        except Exception:  # noqa: BLE001 - one failed sweep must not stop the next
            log.exception("idle sweep at %s failed", now.isoformat())
            return None
        log.info("idle sweep at %s: %s", now.isoformat(), counts)
        return counts

    def scheduled(self, scheduled_at: datetime) -> None:
        """The scheduler's run: one sweep at ``clock()`` (the data is read as of now, whenever
        the run was due). Raises RuntimeError when it failed, so the run is recorded as failed."""
        if self.once() is None:
            raise RuntimeError("the idle sweep failed; its error is logged above")
