"""When a pending Workload will likely start: a range from its place in the queue, the quota, what
runs now and how long such Workloads ran before. Pure: numbers in, an estimate out.

The rule (:func:`estimate_start`), in hours from now:

- The ClusterQueue's GPU quota (``capacity``: the ``nominalQuota`` of its GPU resource summed over
  its GPU flavors) holds what runs now; each running Workload frees its GPUs when it ends.
- The Workloads ahead of it (the visibility API's order) start first, strictly in that order, each
  as soon as the GPUs it asks for are free; it starts once they all have and its own GPUs are free.
- Two scenarios give the range: in the first every run lasts its LocalQueue's p50, in the second
  its p90. A running Workload that has run ``e`` hours lasts the p50 (p90) of what the history's
  runs longer than ``e`` had left after ``e`` (0 when none ran that long: it is overdue); one not
  yet started lasts the p50 (p90) of all runs.
- ``now`` when nothing is ahead and it fits in the quota left free; ``unknown`` with the reason
  when it asks more than the quota, when its place in the queue is unknown or when the ledger holds
  no finished run to time them by.
- Without a known quota the running GPUs are taken as the quota (a queue that holds a Workload back
  is full), and the estimate says so.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Iterable, Sequence

NOW, RANGE, UNKNOWN = "now", "range", "unknown"
LOW_Q, HIGH_Q = 0.5, 0.9


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, interpolated between the two nearest ranks.
    Raises ValueError when ``values`` is empty."""
    xs = sorted(values)
    if not xs:
        raise ValueError("the quantile of no values")
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class RunTimes:
    """How long a LocalQueue's Workloads ran (hours, each a finished run in the usage ledger)."""

    durations: tuple[float, ...]

    @classmethod
    def of(cls, hours: Iterable[float]) -> RunTimes | None:
        """The run times of ``hours`` (those > 0), or None when there is none."""
        kept = tuple(sorted(h for h in hours if h > 0))
        return cls(kept) if kept else None

    @property
    def p50(self) -> float:
        return quantile(self.durations, 0.5)

    @property
    def p90(self) -> float:
        return quantile(self.durations, 0.9)

    def total(self, q: float) -> float:
        """A run's length at quantile ``q``, hours."""
        return quantile(self.durations, q)

    def remaining(self, elapsed_hours: float, q: float) -> float:
        """What a run that has lasted ``elapsed_hours`` has left at quantile ``q``, from the runs
        that lasted longer; 0 when none did (it is overdue, likely to end any time)."""
        left = [d - elapsed_hours for d in self.durations if d > elapsed_hours]
        return quantile(left, q) if left else 0.0


@dataclass(frozen=True)
class Running:
    """An admitted Workload: its GPUs, hours it has run, its LocalQueue's run times (None: the
    pending Workload's are used)."""

    gpus: float
    elapsed_hours: float
    runs: RunTimes | None = None


@dataclass(frozen=True)
class Queued:
    """A Workload Kueue admits first: its GPUs and its LocalQueue's run times (None: the pending
    Workload's)."""

    gpus: float
    runs: RunTimes | None = None


@dataclass(frozen=True)
class Admitting:
    """What would admit the Workload now: approving ``request_ids`` (``consumers`` idle consumers
    of kind ``what``, in ``scope``: ``"this cohort"`` or ``"this ClusterQueue"``) frees ``gpus``
    GPUs of ``family``."""

    request_ids: tuple[int, ...]
    consumers: int
    what: str
    gpus: float
    family: str
    scope: str

    def sentence(self) -> str:
        """``"approving the 2 idle notebooks in this cohort frees 8 H100s (requests #1, #2)"``."""
        n = self.consumers
        noun = self.what if n == 1 else f"{self.what}s"
        gpus = f"{self.gpus:g}"
        ids = ", ".join(f"#{i}" for i in self.request_ids)
        return (
            f"approving {'the' if n == 1 else f'the {n}'} idle {noun} in {self.scope} frees {gpus} "
            f"{self.family}{'' if self.gpus == 1 else 's'} (request{'' if len(self.request_ids) == 1 else 's'} {ids})"
        )


@dataclass(frozen=True)
class StartEstimate:
    """When a pending Workload likely starts: ``status`` ``now``, ``range`` (``low_hours`` the
    p50-based start, ``high_hours`` the p90-based) or ``unknown`` (``reason``); ``gpus_ahead`` what
    the Workloads ahead ask; ``capacity`` the GPU quota used (``capacity_assumed``: the running GPUs
    stood in for an unknown quota); ``admitting`` what would admit it now, when something would."""

    status: str
    low_hours: float | None = None
    high_hours: float | None = None
    reason: str | None = None
    gpus_ahead: float = 0
    capacity: float | None = None
    capacity_assumed: bool = False
    admitting: Admitting | None = None

    def text(self) -> str:
        """``"now"``, ``"likely in 2-5 h"`` or ``"unknown (no finished run ...)"``."""
        if self.status == NOW:
            return "now"
        if self.status == UNKNOWN or self.low_hours is None or self.high_hours is None:
            return f"unknown ({self.reason or 'no estimate'})"
        return f"likely in {hours_range(self.low_hours, self.high_hours)}"


def _half_hours(h: float) -> str:
    return f"{round(h * 2) / 2:g}" if h < 10 else f"{round(h):d}"


def hours_range(low: float, high: float) -> str:
    """``"2-5 h"``, ``"10-40 min"`` (both under an hour), ``"~3 h"`` (the same once rounded)."""
    if high < 1:
        lo, hi = (max(5, 5 * round(x * 12)) for x in (low, high))
        return f"~{lo} min" if lo == hi else f"{lo}-{hi} min"
    lo, hi = _half_hours(low), _half_hours(high)
    return f"~{hi} h" if lo == hi else f"{lo}-{hi} h"


def _start(capacity: float, running: Sequence[tuple[float, float]], queue: Sequence[tuple[float, float]], ask: float) -> float:
    """Hours until ``ask`` GPUs start after the ``queue`` ((GPUs, hours it runs), in order), with
    ``running`` ((GPUs, hours left)) holding quota now; each start strictly after the one before."""
    ends = [(left, gpus) for gpus, left in running]
    heapq.heapify(ends)
    used = sum(g for g, _ in running)
    t = 0.0
    for gpus, lasts in [*queue, (ask, 0.0)]:
        while capacity - used < gpus - 1e-9 and ends:
            end, g = heapq.heappop(ends)
            t, used = max(t, end), used - g
        heapq.heappush(ends, (t + lasts, gpus))
        used += gpus
    return t


def estimate_start(
    ask: float,
    ahead: Sequence[Queued] | None,
    running: Sequence[Running],
    capacity: float | None,
    runs: RunTimes | None,
) -> StartEstimate:
    """When a Workload asking ``ask`` GPUs likely starts, behind ``ahead`` (None: its place is
    unknown), with ``running`` holding the ClusterQueue's quota ``capacity`` (GPUs; None: unknown)
    and ``runs`` its LocalQueue's run times. See the module notes for the rule."""
    gpus_ahead = sum(q.gpus for q in ahead or ())
    used = sum(r.gpus for r in running)
    assumed = capacity is None
    cap = max(used, ask) if capacity is None else capacity
    base = dict(gpus_ahead=gpus_ahead, capacity=cap, capacity_assumed=assumed)
    if ask > cap:
        return StartEstimate(UNKNOWN, reason=f"asks {ask:g} GPUs, more than the quota of {cap:g}", **base)
    if ahead is None:
        return StartEstimate(UNKNOWN, reason="its place in the ClusterQueue is unknown", **base)
    if not ahead and cap - used >= ask:
        if assumed:  # nothing runs, nothing is ahead, and yet it waits: its quota is what keeps it
            return StartEstimate(UNKNOWN, reason="the ClusterQueue's GPU quota is unknown", **base)
        return StartEstimate(NOW, low_hours=0.0, high_hours=0.0, **base)
    timed = [r.runs or runs for r in running] + [q.runs or runs for q in ahead]
    if any(t is None for t in timed) or (runs is None and not timed):
        return StartEstimate(UNKNOWN, reason="no finished run of this LocalQueue in the usage ledger", **base)
    starts = []
    for q in (LOW_Q, HIGH_Q):
        now_running = [(r.gpus, (r.runs or runs).remaining(r.elapsed_hours, q)) for r in running]  # type: ignore[union-attr]
        queue = [(a.gpus, (a.runs or runs).total(q)) for a in ahead]  # type: ignore[union-attr]
        starts.append(_start(cap, now_running, queue, ask))
    low, high = min(starts), max(starts)
    return StartEstimate(RANGE, low_hours=low, high_hours=high, **base)
