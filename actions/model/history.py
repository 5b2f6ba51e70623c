"""The GPU history advice is made from, as a history source hands it over: per pod
(:class:`PodHistory`), per team and GPU family (:class:`TeamHistory`), per reserved node
(:class:`ReservedHistory`), together an :class:`AdviceHistory`. Plain data, no I/O.

Units: framebuffer MiB, engine activity percent 0-100, power watts, GPUs as counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Mapping


@dataclass(frozen=True)
class PodHistory:
    """One pod's GPUs over the advice window (units as the module docstring; ``None`` when the
    series is missing)."""

    namespace: str
    pod: str
    model_name: str = ""
    peak_fb_mib: float | None = None
    peak_engine_pct: float | None = None
    engine_signal: str | None = None
    gpu_hours: float | None = None
    busy_gpus: float | None = None
    mean_power_w: float | None = None


@dataclass(frozen=True)
class TeamHistory:
    """One team's whole GPUs of one model at hourly marks: ``baseline_gpus`` (the quantile),
    ``hours_in_use`` (marks with any), ``peak_gpus`` (the most)."""

    team: str
    model_name: str
    baseline_gpus: float
    hours_in_use: float
    peak_gpus: float | None = None


@dataclass(frozen=True)
class ReservedHistory:
    """Reserved GPUs of one model: how many (``gpus``) and ``idle_share`` (ratio 0-1) of their
    hourly marks idle."""

    model_name: str
    gpus: float
    idle_share: float


@dataclass(frozen=True)
class AdviceHistory:
    """What one fetch read, evaluated at ``at``: per pod, per multi-pod consumer (key -> GPUs
    busy at once, the quantile) and per team and model."""

    at: datetime
    window_seconds: float
    commitment_window_seconds: float
    pods: tuple[PodHistory, ...] = ()
    consumer_busy: Mapping[str, float] = field(default_factory=dict)
    teams: tuple[TeamHistory, ...] = ()
    reserved: tuple[ReservedHistory, ...] = ()
    # (namespace, pod, container) -> the container's GPUs busy at once (the quantile), for pods
    # of several GPU containers.
    container_busy: Mapping[tuple[str, str, str], float] = field(default_factory=dict)
    # What the source could not read as asked (hours a ledger lacks), for the advice to say.
    warnings: tuple[str, ...] = ()
