"""When each GPU was first seen, last seen and last busy over the activity lookback, kept between
sweeps so a sweep asks Prometheus only about the minutes since the last one.

A lookback answer is a function of the subquery steps inside ``[at - lookback, at]`` (steps at
multiples of ``step`` seconds since the epoch, as Prometheus aligns them; the start is inclusive
as in Prometheus 2.x): the last busy step, the first and the last step at which a sample was
visible. A state known up to ``as_of`` and the answers over ``[as_of - step, at]`` (one step of
overlap, so a step evaluated before its last samples arrived is evaluated again) together hold
every step of ``[as_of - lookback, at]``, a superset of the lookback at ``at``: :func:`merge`
takes the max and min and drops what fell out of the lookback, and :func:`lookback_answers` clamps first
samples to it, giving the full query's answer. The store keeps the state as :func:`encode` rows,
which stay the same from sweep to sweep for a GPU whose figures did not change.

One case differs: a key whose first sample fell out of the lookback answers the lookback's first
step, where the full query would answer its first step with a sample after the lookback start
(they differ only when the key's telemetry had a gap across the lookback start).

Times are unix seconds (floats, as Prometheus answers them). Pure: no clock, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

Key = tuple[str, ...]


@dataclass(frozen=True)
class Seen:
    """One key's lookback answers, unix seconds: the first and the last step at which a sample
    was visible, the last step it was busy (None: not in the lookback)."""

    first_sample: float | None = None
    last_sample: float | None = None
    last_active: float | None = None


NOT_SEEN = Seen()


def span_seconds(as_of: float | None, at: float, lookback: float, step: float) -> float | None:
    """The subquery range a sweep at ``at`` asks Prometheus about, in whole seconds: from one
    ``step`` before ``as_of`` (when the state was last known) to ``at``. None when the full
    lookback must be asked: no state, a state from after ``at`` (a sweep of the past), or one
    at or before the lookback start (the bot was down longer than the lookback)."""
    if as_of is None or as_of > at or as_of <= at - lookback:
        return None
    return math.ceil(at - as_of) + step


def first_step(at: float, lookback: float, step: float) -> float:
    """The first subquery step of the lookback at ``at``: the first multiple of ``step`` at or
    after ``at - lookback``."""
    return math.ceil((at - lookback) / step) * step


def _max(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


def _min(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def merge(known: Mapping[Key, Seen], new: Mapping[Key, Seen], at: float, lookback: float) -> dict[Key, Seen]:
    """The state at ``at`` from the state ``known`` (up to an ``as_of`` that :func:`span_seconds`
    accepted) and ``new`` (the answers over the span since): last times are the later of the two,
    first samples the earlier; a last busy time before the lookback start is None, and keys
    neither seen nor busy within the lookback are dropped. First samples are kept as they were
    (:func:`lookback_answers` clamps them), so a long-lived key's row does not change every sweep."""
    start = at - lookback
    out: dict[Key, Seen] = {}
    for key in known.keys() | new.keys():
        k, n = known.get(key, NOT_SEEN), new.get(key, NOT_SEEN)
        last = _max(k.last_sample, n.last_sample)
        active = _max(k.last_active, n.last_active)
        if active is not None and active < start:
            active = None
        if last is not None and last < start:
            last = None
        if last is None and active is None:
            continue
        out[key] = Seen(_min(k.first_sample, n.first_sample) if last is not None else None, last, active)
    return out


def lookback_answers(state: Mapping[Key, Seen], at: float, lookback: float, step: float) -> dict[Key, Seen]:
    """The lookback answers at ``at`` of a :func:`merge`'d ``state``: a first sample before the
    lookback start is the lookback's :func:`first_step`."""
    start, first = at - lookback, first_step(at, lookback, step)
    return {
        key: s if s.first_sample is None or s.first_sample >= start else Seen(first, s.last_sample, s.last_active)
        for key, s in state.items()
    }


# A key's row as the store keeps it: (first_sample, last_sample, seen at the last step,
# last_active, busy at the last step); a last time at the state's last step is kept as the flag
# alone, so a GPU that stays seen (or busy) keeps the same row from sweep to sweep.
Row = tuple[float | None, float | None, bool, float | None, bool]


def last_step(as_of: float, step: float) -> float:
    """The last subquery step at or before ``as_of``."""
    return math.floor(as_of / step) * step


def encode(state: Mapping[Key, Seen], as_of: float, step: float) -> dict[Key, Row]:
    """``state`` as rows (:data:`Row`) known up to ``as_of``; :func:`decode` reverses it."""
    now = last_step(as_of, step)
    rows: dict[Key, Row] = {}
    for key, s in state.items():
        seen, busy = s.last_sample == now, s.last_active == now
        rows[key] = (s.first_sample, None if seen else s.last_sample, seen, None if busy else s.last_active, busy)
    return rows


def decode(rows: Mapping[Key, Row], as_of: float, step: float) -> dict[Key, Seen]:
    """The state that :func:`encode` made ``rows`` of, with the same ``as_of`` and ``step``."""
    now = last_step(as_of, step)
    return {
        key: Seen(first, now if seen else last, now if busy else active)
        for key, (first, last, seen, active, busy) in rows.items()
    }
