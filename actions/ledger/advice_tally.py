"""Advice's history added up from pieces of time (:class:`AdviceTally`): the ledger's hours, summed
per pod by the database, and the pieces read live from Prometheus, into the
:class:`~actions.model.history.AdviceHistory` the queries of
:mod:`actions.sources.prometheus.history` give over the whole window. Pure.

Busy GPUs are whole numbers at each 5-minute step, so a pod's steps kept as a histogram give its
quantile exactly; a consumer of several pods sums its pods' steps first (the quantile of a sum is
not the sum of quantiles). :func:`quantile` is Prometheus's ``quantile_over_time``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Mapping, Sequence

from actions.model.advice_hours import ABSENT, STEP_SECONDS, AdviceHour, step_value
from actions.model.history import AdviceHistory, PodHistory, ReservedHistory, TeamHistory
from actions.model.telemetry import ENGINE_ACTIVE


def quantile(phi: float, counts: Mapping[int, int]) -> float | None:
    """The ``phi`` quantile (ratio 0-1) of the values ``counts`` holds (value -> how many times),
    interpolated between the two nearest ranks as Prometheus's ``quantile_over_time`` does
    (rank ``phi x (n - 1)``); None when there are none."""
    n = sum(counts.values())
    if n == 0:
        return None
    rank = phi * (n - 1)
    lower = max(0, math.floor(rank))
    upper = min(n - 1, lower + 1)
    weight = rank - math.floor(rank)
    lo = hi = None
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if lo is None and lower < seen:
            lo = value
        if upper < seen:
            hi = value
            break
    assert lo is not None and hi is not None
    return lo * (1 - weight) + hi * weight


def histogram(busy: str) -> Counter:
    """Encoded steps (:func:`~actions.model.advice_hours.encode_steps`, any number of them
    concatenated) as value -> steps."""
    chars = Counter(busy)
    chars.pop(ABSENT, None)
    return Counter({step_value(c): n for c, n in chars.items()})


@dataclass
class PodTally:
    """One pod's facts summed over pieces: peaks (MiB; percent 0-100 per DCGM signal),
    GPU-steps, power at the marks (watts, summed, and how many marks) and busy steps."""

    model_name: str = ""
    peak_fb_mib: float | None = None
    peak_engine: dict[str, float] = field(default_factory=dict)
    gpu_steps: int = 0
    power_sum: float = 0.0
    power_marks: int = 0
    busy: Counter = field(default_factory=Counter)


def _most(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


@dataclass
class AdviceTally:
    """What advice's history is made of, added up piece by piece. ``consumers`` (key ->
    (namespace, pods)) are the consumers of several pods, ``container_pods`` the (namespace,
    pod) whose containers are asked about, ``teams`` team -> namespaces, ``reserved_nodes`` the
    nodes of reserved capacity (DCGM ``Hostname``)."""

    consumers: Mapping[str, tuple[str, Sequence[str]]]
    container_pods: Sequence[tuple[str, str]]
    teams: Mapping[str, Sequence[str]]
    reserved_nodes: Sequence[str]
    pods: dict[tuple[str, str], PodTally] = field(default_factory=lambda: defaultdict(PodTally))
    # consumer key -> step (epoch seconds // STEP_SECONDS) -> its pods' busy GPUs summed
    steps: dict[str, dict[int, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    containers: dict[tuple[str, str, str], Counter] = field(default_factory=lambda: defaultdict(Counter))
    team_marks: dict[tuple[str, str], dict[datetime, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    reserved: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    last_mark: dict[str, tuple[datetime, int]] = field(default_factory=dict)

    def __post_init__(self):
        self._stepped = {(ns, p): key for key, (ns, pods) in self.consumers.items() for p in pods}
        self._team_of = {ns: team for team, namespaces in self.teams.items() for ns in namespaces}
        self._reserved = set(self.reserved_nodes)

    def wants_steps(self, namespace: str, pod: str) -> bool:
        """Whether ``pod``'s steps are kept one by one (it is one of a consumer's several)."""
        return (namespace, pod) in self._stepped

    # --- adding pieces -------------------------------------------------------------------------

    def add_pod(self, namespace: str, pod: str, model_name: str, peak_fb_mib: float | None,
                peaks: Mapping[str, float], gpu_steps: int, power_sum: float, power_marks: int, busy: str) -> None:
        """One pod's facts over some pieces (``peaks``: DCGM signal -> peak, percent 0-100;
        ``busy`` the steps concatenated, their order not needed)."""
        t = self.pods[(namespace, pod)]
        t.model_name = t.model_name or model_name
        t.peak_fb_mib = _most(t.peak_fb_mib, peak_fb_mib)
        for signal, v in peaks.items():
            t.peak_engine[signal] = max(v, t.peak_engine.get(signal, v))
        t.gpu_steps += gpu_steps
        t.power_sum += power_sum
        t.power_marks += power_marks
        t.busy.update(histogram(busy))

    def add_steps(self, namespace: str, pod: str, first_step: datetime, busy: str) -> None:
        """A pod's busy steps from ``first_step`` on, added to its consumer's at the same steps."""
        at = self.steps[self._stepped[(namespace, pod)]]
        first = int(first_step.timestamp()) // STEP_SECONDS
        for i, c in enumerate(busy):
            if c != ABSENT:
                at[first + i] += step_value(c)

    def add_container(self, namespace: str, pod: str, container: str, busy: str) -> None:
        """A container's busy steps (concatenated)."""
        self.containers[(namespace, pod, container)].update(histogram(busy))

    def add_namespace_mark(self, mark: datetime, namespace: str, model_name: str, gpus: int) -> None:
        """Whole GPUs of ``namespace`` at ``mark``, counted to its team."""
        team = self._team_of.get(namespace)
        if team is not None and gpus > 0:
            self.team_marks[(team, model_name)][mark] += gpus

    def add_reserved(self, model_name: str, gpus: int, idle: int) -> None:
        """GPU-marks (``gpus``) and idle ones of reserved GPUs of ``model_name``, summed over marks."""
        r = self.reserved[model_name]
        r[0] += gpus
        r[1] += idle

    def add_last_mark(self, model_name: str, mark: datetime, gpus: int) -> None:
        """Reserved GPUs of ``model_name`` at ``mark``; the latest mark wins."""
        if model_name not in self.last_mark or self.last_mark[model_name][0] < mark:
            self.last_mark[model_name] = (mark, gpus)

    def add_hour(self, hour: AdviceHour, *, pods: bool = True, marks: bool = True) -> None:
        """A piece read live: its pods' facts (``pods``) and its mark's (``marks``)."""
        if pods:
            for p in hour.pods:
                peaks = {p.engine_signal or "": p.peak_engine_pct} if p.peak_engine_pct is not None else {}
                self.add_pod(p.namespace, p.pod, p.model_name, p.peak_fb_mib, peaks, p.gpu_steps,
                             p.power_w or 0.0, int(p.power_w is not None), p.busy)
                if hour.first_step is not None and self.wants_steps(p.namespace, p.pod):
                    self.add_steps(p.namespace, p.pod, hour.first_step, p.busy)
                for name, busy in p.containers:
                    self.add_container(p.namespace, p.pod, name, busy)
        if marks and hour.mark is not None:
            for m in hour.namespaces:
                self.add_namespace_mark(hour.mark, m.namespace, m.model_name, m.gpus)
            per_model: dict[str, int] = defaultdict(int)
            for n in hour.nodes:
                if n.node in self._reserved:
                    self.add_reserved(n.model_name, n.gpus, n.idle)
                    per_model[n.model_name] += n.gpus
            for model, gpus in per_model.items():
                self.add_last_mark(model, hour.mark, gpus)

    # --- the history ---------------------------------------------------------------------------

    def history(self, at: datetime, busy_quantile: float, baseline_quantile: float, window_seconds: float,
                commitment_window_seconds: float) -> AdviceHistory:
        """The history the tally adds up to (quantiles ratios 0-1)."""
        asked = set(self.container_pods)
        return AdviceHistory(
            at, window_seconds, commitment_window_seconds, self._pod_history(busy_quantile),
            self._consumer_busy(busy_quantile),
            tuple(TeamHistory(team, model, quantile(baseline_quantile, Counter(marks.values())) or 0.0,
                              float(len(marks)), float(max(marks.values())))
                  for (team, model), marks in sorted(self.team_marks.items()) if marks),
            tuple(ReservedHistory(model, float(self.last_mark.get(model, (at, 0))[1]), idle / gpus)
                  for model, (gpus, idle) in sorted(self.reserved.items()) if gpus),
            {k: q for k, c in self.containers.items() if k[:2] in asked
             and (q := quantile(busy_quantile, c)) is not None},
        )

    def _pod_history(self, phi: float) -> tuple[PodHistory, ...]:
        out = []
        for (ns, pod), t in sorted(self.pods.items()):
            signal = ENGINE_ACTIVE if ENGINE_ACTIVE in t.peak_engine else next(iter(sorted(t.peak_engine)), None)
            out.append(PodHistory(
                ns, pod, t.model_name, t.peak_fb_mib, t.peak_engine.get(signal) if signal is not None else None,
                signal or None, t.gpu_steps * (STEP_SECONDS / 3600) if t.gpu_steps else None, quantile(phi, t.busy),
                t.power_sum / t.power_marks if t.power_marks else None,
            ))
        return tuple(out)

    def _consumer_busy(self, phi: float) -> dict[str, float]:
        out = {}
        for key, summed in self.steps.items():
            q = quantile(phi, Counter(summed.values()))
            if q is not None:
                out[key] = q
        return out

