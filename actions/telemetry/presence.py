"""At which sample steps of the window each series set was seen, kept in memory between sweeps,
so a sweep asks Prometheus only about the steps since the last one.

A step is a multiple of ``step`` seconds since the epoch (Prometheus aligns subquery steps so),
named by its index ``n`` (time ``n * step``). Per series set, bit ``n - base`` of a number is set
when the set was seen at step ``n`` (a range query's points over the same steps). The window's
coverage is then the number of bits set, as ``count_over_time`` over the same steps counts them;
the first and last seen step of a lookback span are the lowest and highest bits at its steps.

Pure: no clock, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Mapping


def step_range(start: float, end: float, step: float) -> tuple[int, int]:
    """``(first, last)``: the indices of the steps in ``[start, end]`` (both inclusive, as
    Prometheus 2.x bounds a subquery)."""
    return math.ceil(start / step), math.floor(end / step)


@dataclass(frozen=True)
class Presence:
    """Per series set, bit ``i`` of ``bits`` set when it was seen at step ``base + i``; every
    step from ``base`` to ``last`` is known."""

    base: int
    last: int
    bits: Mapping[Hashable, int]


def advance(known: Presence | None, first: int, last: int, new: Mapping[Hashable, int], new_first: int) -> Presence:
    """What is known of the steps ``[first, last]``: ``new`` (bits from ``new_first`` on, which
    it replaces) over what ``known`` held of the steps before ``new_first``. ``known`` must hold
    every step from its base (or ``first``, if later) to ``new_first - 1``; the result's base is
    the later of the two. Series sets seen at none of the steps are dropped."""
    base = new_first if known is None else max(first, min(known.base, new_first))
    out: dict[Hashable, int] = {}
    keep = (1 << (new_first - base)) - 1
    if known is not None:
        for key, bits in known.bits.items():
            shift = base - known.base
            old = (bits >> shift if shift >= 0 else bits << -shift) & keep
            if old:
                out[key] = old
    for key, bits in new.items():
        merged = out.get(key, 0) | (bits << (new_first - base))
        if merged:
            out[key] = merged
    return Presence(base, last, out)


def step_mask(base: int, lo: int, hi: int, every: int) -> int:
    """The bits (from step ``base`` on) of the steps in ``[lo, hi]`` that are multiples of ``every``."""
    start = max(lo, base)
    start += (-start) % every
    mask = 0
    for n in range(start, hi + 1, every):
        mask |= 1 << (n - base)
    return mask


def first_last(bits: int, base: int) -> tuple[int, int] | None:
    """The first and last step index set in ``bits`` (from step ``base`` on); None when none is."""
    if not bits:
        return None
    return base + (bits & -bits).bit_length() - 1, base + bits.bit_length() - 1
