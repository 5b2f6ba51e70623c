"""Leader election over a coordination.k8s.io/v1 Lease, with client-go's leaderelection semantics.

Every replica runs a :class:`LeaderElector` thread. A candidate tries every ``retry_period`` (plus
up to 20% jitter, so replicas do not stampede) to take the Lease; it may when the Lease does not
exist, was released (empty ``holderIdentity``), or has not changed for ``leaseDurationSeconds`` as
measured on this replica's own monotonic clock from the moment it *observed* the last change (so
clock skew between replicas does not matter, only the rate of time). The leader renews every
``retry_period``; when no renewal succeeded for ``renew_deadline`` it stops leading. Because
``renew_deadline < lease_duration``, a leader that cannot reach the API server stops its jobs
before any other replica may take the Lease. On shutdown the leader first stops its jobs, then
releases the Lease by clearing ``holderIdentity``, so another replica takes over at once.

Writes are replaces with the ``resourceVersion`` that was read: of two candidates racing for the
same Lease the API server lets exactly one through.

Timing fields in seconds throughout. The decisions (:func:`next_record`, :func:`released`,
:func:`observed_expired`) are pure; :class:`LeaderElector` is the loop around them.
"""

from __future__ import annotations

import logging
import math
import os
import random
import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable, Protocol

from actions.model.times import utc_now
from actions.sources.kube.lease import Lease, LeaseConflict, LeaseError, LeaseRecord
from bot.settings import LeaderElectionSettings

log = logging.getLogger(__name__)

# Where a pod finds its own namespace (mounted with the service account token).
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
JITTER = 0.2


class LeaseAccess(Protocol):
    """What the elector needs of a Lease: :class:`actions.sources.kube.lease.LeaseClient` provides it."""

    def get(self, *, timeout: float) -> Lease | None: ...

    def create(self, record: LeaseRecord, *, timeout: float) -> Lease: ...

    def update(self, current: Lease, record: LeaseRecord, *, timeout: float) -> Lease: ...


@dataclass(frozen=True)
class ElectionTiming:
    """``lease_duration``: how long others wait after the last renewal they saw before taking
    over; ``renew_deadline``: how long the leader keeps leading without a successful renewal;
    ``retry_period``: how often candidates try and the leader renews. Seconds; raises ValueError
    unless ``0 < retry_period < renew_deadline < lease_duration``."""

    lease_duration: float
    renew_deadline: float
    retry_period: float

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "need 0 < retry_period < renew_deadline < lease_duration, got "
                f"{self.retry_period:g} / {self.renew_deadline:g} / {self.lease_duration:g}"
            )

    @property
    def lease_duration_seconds(self) -> int:
        """The duration written to the Lease (an integer there), rounded up."""
        return max(1, math.ceil(self.lease_duration))


# --- identity and namespace ----------------------------------------------------------------------


def replica_identity(settings: LeaderElectionSettings) -> str:
    """This replica's name: ``settings.identity``, else ``HOSTNAME`` (the pod name in a pod), else
    the host name."""
    return settings.identity or os.environ.get("HOSTNAME") or socket.gethostname()


def lease_namespace(settings: LeaderElectionSettings, sa_namespace_file: Path = SERVICE_ACCOUNT_NAMESPACE) -> str:
    """Where the Lease lives: ``settings.namespace``, else the pod's own namespace (its service
    account's namespace file, else ``POD_NAMESPACE``). Raises ValueError when none is known."""
    if settings.namespace:
        return settings.namespace
    try:
        own = sa_namespace_file.read_text().strip()
    except OSError:
        own = ""
    namespace = own or os.environ.get("POD_NAMESPACE", "").strip()
    if not namespace:
        raise ValueError(
            "leader_election.namespace is not set and this is not a pod (no service account "
            "namespace file, no POD_NAMESPACE): set leader_election.namespace"
        )
    return namespace


# --- decisions ------------------------------------------------------------------------------------


def observed_expired(record: LeaseRecord, observed_at: float, now: float) -> bool:
    """Whether a Lease whose ``record`` this replica saw change at monotonic time ``observed_at``
    has expired at monotonic ``now`` (seconds): ``leaseDurationSeconds`` have passed since."""
    return now >= observed_at + record.lease_duration_seconds


def next_record(
    current: LeaseRecord | None,
    identity: str,
    lease_duration_seconds: int,
    now: datetime,
    *,
    expired: bool,
) -> LeaseRecord | None:
    """The record ``identity`` should write to take or keep the Lease at ``now`` (aware), or None
    when another replica holds it and it has not ``expired``.

    A renewal keeps ``acquire_time`` and ``transitions``; taking the Lease over (from nobody, a
    released Lease or an expired holder) sets ``acquire_time`` to ``now`` and counts a transition.
    """
    if current is None:
        return LeaseRecord(identity, lease_duration_seconds, now, now, 0)
    if current.holder == identity:
        return LeaseRecord(
            identity, lease_duration_seconds, current.acquire_time or now, now, current.transitions
        )
    if current.holder and not expired:
        return None
    return LeaseRecord(identity, lease_duration_seconds, now, now, current.transitions + 1)


def released(current: LeaseRecord, now: datetime) -> LeaseRecord:
    """The record a leader writes on shutdown: no holder, so any candidate may take it at once
    (duration 1 s as client-go writes it; ``transitions`` unchanged)."""
    return LeaseRecord("", 1, now, now, current.transitions)


# --- the loop -------------------------------------------------------------------------------------


class LeaderElector:
    """Runs the election for ``identity`` on a daemon thread (``start()``/``stop()``).

    ``on_started_leading`` is called (on the elector's thread) when this replica takes the Lease;
    ``on_stopped_leading`` when it stops leading, whether the renew deadline passed, another
    replica took the Lease, or ``stop()`` was called. Both should return promptly;
    ``on_stopped_leading`` may wait for work in flight. A replica that lost the Lease goes back to
    being a candidate. ``clock`` gives the wall time written to the Lease, ``monotonic`` the
    seconds the timing is measured in.
    """

    def __init__(
        self,
        lease: LeaseAccess,
        identity: str,
        timing: ElectionTiming,
        *,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        clock: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        if not identity:
            raise ValueError("identity is empty")
        self.identity = identity
        self.timing = timing
        self._lease = lease
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._monotonic = monotonic
        self._stop = threading.Event()
        self._leading = threading.Event()
        self._thread: threading.Thread | None = None
        # What this replica last saw of the Lease and when (monotonic), for the expiry rule.
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._current: Lease | None = None

    @property
    def is_leader(self) -> bool:
        """Whether this replica leads now."""
        return self._leading.is_set()

    @property
    def alive(self) -> bool:
        """Whether the election thread runs (started, not stopped)."""
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def wait_until_leading(self, timeout: float | None = None) -> bool:
        """Block until this replica leads (True) or ``timeout`` seconds pass (False)."""
        return self._leading.wait(timeout)

    def start(self) -> "LeaderElector":
        """Start campaigning on a daemon thread. Raises RuntimeError when already started."""
        if self._thread is not None:
            raise RuntimeError("the elector was started already")
        self._thread = threading.Thread(target=self._run, name=f"leader-election-{self.identity}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Stop campaigning; if leading, call ``on_stopped_leading`` and then release the Lease.
        Returns when done or after ``timeout`` seconds."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    # -- internals --

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._acquire():
                return
            self._lead()

    def _acquire(self) -> bool:
        """Campaign until this replica holds the Lease (True) or stop() was called (False)."""
        while not self._stop.is_set():
            if self._try_acquire_or_renew(self.timing.renew_deadline):
                log.info("%s took Lease %s", self.identity, self._describe())
                return True
            self._stop.wait(self.timing.retry_period * (1 + JITTER * random.random()))
        return False

    def _lead(self) -> None:
        self._leading.set()
        last_renewed = self._monotonic()
        try:
            self._on_started()
        except Exception:  # noqa: BLE001 - a leader that cannot start its jobs must not keep the Lease
            log.exception("%s could not start leading; releasing the Lease", self.identity)
            self._leading.clear()
            self._release()
            self._stop.wait(self.timing.retry_period)
            return
        lost = False
        while not self._stop.wait(self.timing.retry_period):
            attempt = self._monotonic()
            remaining = self.timing.renew_deadline - (attempt - last_renewed)
            if remaining > 0 and self._try_acquire_or_renew(remaining):
                last_renewed = attempt
                continue
            if self._monotonic() - last_renewed >= self.timing.renew_deadline:
                log.warning(
                    "%s could not renew Lease %s for %gs: no longer leading",
                    self.identity, self._describe(), self.timing.renew_deadline,
                )
                lost = True
                break
        self._leading.clear()
        try:
            self._on_stopped()
        except Exception:  # noqa: BLE001 - releasing matters more than the callback's failure
            log.exception("%s: stopping the leader's work failed", self.identity)
        if not lost:
            self._release()

    def _observe(self, lease: Lease | None) -> None:
        record = lease.record if lease else None
        if record != self._observed:
            self._observed, self._observed_at = record, self._monotonic()
        self._current = lease

    def _try_acquire_or_renew(self, timeout: float) -> bool:
        try:
            current = self._lease.get(timeout=timeout)
            self._observe(current)
            if current is None:
                record = next_record(None, self.identity, self.timing.lease_duration_seconds, self._clock(), expired=True)
                assert record is not None
                self._observe(self._lease.create(record, timeout=timeout))
                return True
            expired = observed_expired(current.record, self._observed_at, self._monotonic())
            record = next_record(
                current.record, self.identity, self.timing.lease_duration_seconds, self._clock(), expired=expired
            )
            if record is None:
                return False
            self._observe(self._lease.update(current, record, timeout=timeout))
            return True
        except LeaseConflict as e:
            log.info("%s lost a race for the Lease: %s", self.identity, e)
        except LeaseError as e:
            log.warning("%s: %s", self.identity, e)
        return False

    def _release(self) -> None:
        """Clear ``holderIdentity`` if this replica still holds the Lease."""
        try:
            current = self._lease.get(timeout=self.timing.renew_deadline)
            if current is None or current.record.holder != self.identity:
                return
            self._observe(self._lease.update(current, released(current.record, self._clock()), timeout=self.timing.renew_deadline))
            log.info("%s released Lease %s", self.identity, self._describe())
        except LeaseError as e:
            # The Lease then expires by itself after its duration.
            log.warning("%s could not release the Lease: %s", self.identity, e)

    def _describe(self) -> str:
        return f"{self._current.namespace}/{self._current.name}" if self._current else "(unknown)"
