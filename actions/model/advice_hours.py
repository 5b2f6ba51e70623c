"""What advice needs of one piece of time, as the ledger keeps it per hour
(:class:`AdviceHour`): per pod its peaks, GPU-steps, busy GPUs at each 5-minute step and mean
power at the hour mark; per namespace the whole GPUs requested at the mark; per node its GPUs and
the idle ones at the mark. Plain data, no I/O.

A piece is ``(start, end]``. Its steps are the multiples of :data:`STEP_SECONDS` in it, as a
PromQL subquery ``[w:5m]`` takes them; its mark, the hour boundary in it (at most one: pieces are
at most an hour and end on the hour or at the advice's ``at``), as ``[w:1h]`` takes it. A pod's
``busy`` is one character per step from :attr:`AdviceHour.first_step` on: :func:`encode_steps`.

Units: framebuffer MiB, engine activity percent 0-100, power watts, GPUs as counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Sequence

from actions.model.times import floor_hour

STEP_SECONDS = 300
ABSENT = "."  # a step at which the pod had no activity sample
_ZERO = ord("0")


def encode_steps(values: Sequence[int | None]) -> str:
    """Busy-GPU counts per step (None: no sample) as text, one character a step (``"0"`` + the
    count; :data:`ABSENT` for None), so a database can concatenate a pod's hours and a histogram
    can be counted in C. Raises ValueError for a negative count."""
    out = []
    for v in values:
        if v is None:
            out.append(ABSENT)
        elif v < 0:
            raise ValueError(f"a busy-GPU count cannot be negative, got {v}")
        else:
            out.append(chr(_ZERO + v))
    return "".join(out)


def step_value(c: str) -> int:
    """One encoded step's count (not :data:`ABSENT`)."""
    return ord(c) - _ZERO


def steps_in(start: datetime, end: datetime) -> list[datetime]:
    """The multiples of :data:`STEP_SECONDS` (epoch-aligned, as Prometheus aligns a subquery's
    steps) in ``(start, end]``."""
    first = int(start.timestamp()) // STEP_SECONDS * STEP_SECONDS + STEP_SECONDS
    last = int(end.timestamp())
    zero = start - timedelta(seconds=start.timestamp() - first)
    return [zero + timedelta(seconds=s) for s in range(0, last - first + 1, STEP_SECONDS)] if first <= last else []


def mark_in(start: datetime, end: datetime) -> datetime | None:
    """The hour boundary in ``(start, end]``, or None."""
    mark = floor_hour(end)
    return mark if mark > start else None


@dataclass(frozen=True)
class PodHour:
    """One pod's GPUs over a piece: ``model_name`` (DCGM ``modelName``), ``peak_fb_mib`` (MiB),
    ``peak_engine_pct`` (percent 0-100) read from ``engine_signal`` (the DCGM field),
    ``gpu_steps`` (GPU series with an activity sample, summed over the steps), ``busy`` (GPUs
    above the busy threshold at each step, encoded), ``power_w`` (the highest of its GPUs' mean
    ``DCGM_FI_DEV_POWER_USAGE`` over the hour ending at the mark, watts; None without a mark or
    samples) and ``containers`` ((container, its own ``busy``) for pods of several GPU
    containers)."""

    namespace: str
    pod: str
    model_name: str = ""
    peak_fb_mib: float | None = None
    peak_engine_pct: float | None = None
    engine_signal: str | None = None
    gpu_steps: int = 0
    busy: str = ""
    power_w: float | None = None
    containers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class NamespaceMark:
    """Whole GPUs (not MIG instances) of one model the pods of ``namespace`` held at the mark."""

    namespace: str
    model_name: str
    gpus: int


@dataclass(frozen=True)
class NodeMark:
    """One node's GPUs of one model at the mark (``node``: DCGM ``Hostname``): how many had a
    sample, and how many of them were at or under the busy threshold."""

    node: str
    model_name: str
    gpus: int
    idle: int


@dataclass(frozen=True)
class AdviceHour:
    """The advice facts of ``(start, end]`` (aware UTC), read with ``busy_engine_pct`` (percent
    0-100) as the busy threshold. ``first_step`` is the first step of the pods' ``busy`` (None:
    no step in the piece); ``mark`` the hour boundary in the piece (None: none)."""

    start: datetime
    end: datetime
    busy_engine_pct: float
    first_step: datetime | None
    mark: datetime | None
    pods: tuple[PodHour, ...] = ()
    namespaces: tuple[NamespaceMark, ...] = ()
    nodes: tuple[NodeMark, ...] = ()

