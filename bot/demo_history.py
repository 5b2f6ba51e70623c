"""The demo's 30 days of history, generated from bot/demo_data/history.json: the usage the cost
reports, budgets and the chart read (hour by hour, rolled into the demo's usage ledger by the
production :class:`~actions.ledger.rollup.LedgerRollup`), and the history advice is made from.

The file is small on purpose: each consumer of the demo fleet names a mix of phases of a real
H100 capture (their peak engine activity, mean power and peak framebuffer are the capture's)
and when it ran (days of the 30, UTC hours, weekdays only or not). Everything else follows from
those facts, deterministically: a GPU-hour of a mix is idle in the share of the capture's
samples of that mix at or under the idle threshold, and its GPUs are busy at once in the share
of the other samples. No randomness: the same file gives the same figures on every run.

Units: GPU-hours in physical-GPU equivalents (a MIG ``1g.10gb`` of an H100 is 1/7), engine
activity percent 0-100, watts, kWh (a GPU-hour of a mix draws the capture's mean power of it),
MiB, times aware UTC.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Mapping, Sequence

from actions.hardware.gpus import gpu_family, mig_fraction
from actions.ledger.rows import owner_for
from actions.model.history import AdviceHistory, PodHistory, TeamHistory
from actions.model.kube import CapacityType
from actions.model.telemetry import GPU_UTIL
from actions.model.times import floor_hour, hours_between, parse_time
from actions.model.usage import NodeInfo, PodUsage, UsageData
from actions.policy.advice import AdvicePolicy
from actions.policy.rules import Policy

STEP_SECONDS = 300  # what a Prometheus usage source reads at; the ledger records it


@dataclass(frozen=True)
class Phase:
    """One phase of the real capture: ``rows`` samples, their peak engine activity (percent
    0-100), mean power (W) and peak framebuffer (MiB)."""

    rows: int
    peak_engine_pct: float
    mean_power_w: float
    peak_fb_mib: float


@dataclass(frozen=True)
class Consumer:
    """One pod of the demo's history: its owner (``kind``/``name``, Kueue ``queue``), node,
    whole GPUs (``gpus``) or one MIG instance (``mig``), its ``mix`` of phases, and when it ran:
    days ``[first, last)`` of the 30, UTC ``hours`` ``[from, to)`` (wrapping past midnight when
    ``from`` > ``to``; None: all day), ``weekdays`` only or every day."""

    namespace: str
    pod: str
    kind: str
    name: str
    node: str
    gpus: int
    mix: str
    days: tuple[int, int]
    hours: tuple[int, int] | None = None
    weekdays: bool = False
    mig: str | None = None
    queue: str | None = None


class DemoHistory:
    """The demo's history (see module doc). ``start``/``end``: the 30 days it covers."""

    def __init__(self, data: Mapping[str, Any]):
        self.end: datetime = parse_time(data["end"])
        self.start: datetime = self.end - timedelta(days=int(data["days"]))
        self.gpu_model: str = data["gpu_model"]
        self.phases = {k: Phase(**v) for k, v in data["phases"].items()}
        self.mixes: dict[str, list[str]] = {k: list(v) for k, v in data["mixes"].items()}
        self.nodes = {
            name: NodeInfo(name, n["instance_type"], CapacityType(n["capacity_type"]), self.gpu_model)
            for name, n in data["nodes"].items()
        }
        self.consumers = [
            Consumer(**{**c, "days": tuple(c["days"]), "hours": tuple(c["hours"]) if "hours" in c else None})
            for c in data["consumers"]
        ]
        for c in self.consumers:
            if c.mix not in self.mixes or c.node not in self.nodes:
                raise ValueError(f"{c.namespace}/{c.pod}: unknown mix {c.mix!r} or node {c.node!r}")

    @classmethod
    def from_file(cls, path: str | Path) -> "DemoHistory":
        """Read ``path`` (JSON as bot/demo_data/history.json). Raises OSError, ValueError, KeyError."""
        return cls(json.loads(Path(path).read_text()))

    # --- facts of a consumer -------------------------------------------------------------------

    def equivalents(self, c: Consumer) -> float:
        """Physical-GPU equivalents ``c`` requests."""
        return mig_fraction(c.mig, gpu_family(self.gpu_model)) if c.mig else float(c.gpus)

    def runs(self, c: Consumer, hour: datetime) -> bool:
        """Whether ``c`` ran during the hour starting at ``hour``."""
        day = (hour - self.start) // timedelta(days=1)
        if not c.days[0] <= day < c.days[1] or (c.weekdays and hour.weekday() >= 5):
            return False
        if c.hours is None:
            return True
        a, b = c.hours
        return a <= hour.hour < b if a <= b else (hour.hour >= a or hour.hour < b)

    def _phases(self, c: Consumer) -> list[Phase]:
        return [self.phases[p] for p in self.mixes[c.mix]]

    def idle_share(self, c: Consumer, idle_pct: float) -> float:
        """Share (ratio 0-1) of ``c``'s samples at or under ``idle_pct`` (percent 0-100)."""
        phases = self._phases(c)
        return sum(p.rows for p in phases if p.peak_engine_pct <= idle_pct) / sum(p.rows for p in phases)

    def kw_per_gpu(self, c: Consumer, idle_pct: float | None = None) -> float:
        """``c``'s mix's mean power per GPU-hour in kW, sample-weighted: over all its samples, or
        (``idle_pct``) over the idle ones counted against all, so GPU-hours x it is the idle kWh."""
        phases = self._phases(c)
        chosen = [p for p in phases if idle_pct is None or p.peak_engine_pct <= idle_pct]
        return sum(p.mean_power_w * p.rows for p in chosen) / sum(p.rows for p in phases) / 1000

    # --- usage, as a usage source hands it to the ledger ---------------------------------------

    def usage(self, start: datetime, end: datetime, policy: Policy) -> UsageData:
        """The fleet's usage over the whole hours of ``[start, end)``."""
        hours = hours_between(floor_hour(start), end)
        pods = []
        for c in self.consumers:
            ran = sum(1 for h in hours if self.runs(c, h))
            if ran:
                gpu_hours = ran * self.equivalents(c)
                pods.append(PodUsage(
                    c.namespace, c.pod, c.node, gpu_hours, gpu_hours * self.idle_share(c, policy.engine_idle_pct),
                    self.gpu_model, f"MIG {c.mig}" if c.mig else None,
                    # A MIG instance's GPU-hours are its share of the GPU: so is its energy.
                    energy_kwh=gpu_hours * self.kw_per_gpu(c),
                    idle_energy_kwh=gpu_hours * self.kw_per_gpu(c, policy.engine_idle_pct),
                    energy_gpu_hours=gpu_hours,
                ))
        owners = {(c.namespace, c.pod): owner_for(c.namespace, c.pod, c.kind, c.name, c.queue) for c in self.consumers}
        return UsageData(start, end, STEP_SECONDS, tuple(pods), nodes=self.nodes, owners=owners,
                         idle_threshold_pct=policy.engine_idle_pct)

    # --- advice history ------------------------------------------------------------------------

    def pod_history(self, c: Consumer, at: datetime, policy: AdvicePolicy) -> PodHistory | None:
        """``c`` over ``policy.window_seconds`` ending at ``at``; None when it did not run then."""
        marks = hours_between(floor_hour(at - timedelta(seconds=policy.window_seconds)), at)
        ran = sum(1 for h in marks if self.runs(c, h))
        if not ran:
            return None
        phases = self._phases(c)
        rows = sum(p.rows for p in phases)
        # All of a pod's GPUs run the same phase: as many are busy at once as it has, in the
        # share of busy samples, so the quantile is all of them or none.
        busy_share = 1 - self.idle_share(c, policy.busy_engine_pct)
        busy = float(c.gpus) if busy_share >= 1 - policy.busy_quantile else 0.0
        return PodHistory(
            c.namespace, c.pod, self.gpu_model,
            peak_fb_mib=max(p.peak_fb_mib for p in phases),
            peak_engine_pct=max(p.peak_engine_pct for p in phases),
            engine_signal=GPU_UTIL,
            gpu_hours=ran * self.equivalents(c),
            busy_gpus=busy,
            mean_power_w=sum(p.mean_power_w * p.rows for p in phases) / rows,
        )

    def team_history(self, team: str, namespaces: Sequence[str], at: datetime, policy: AdvicePolicy) -> TeamHistory | None:
        """``team``'s whole GPUs (MIG left out) at the hourly marks of the commitment window
        ending at ``at``; None when it had none."""
        whole = [c for c in self.consumers if c.namespace in namespaces and not c.mig]
        marks = hours_between(floor_hour(at - timedelta(seconds=policy.commitment_window_seconds)), at)
        counts = sorted(float(sum(c.gpus for c in whole if self.runs(c, h))) for h in marks)
        if not any(counts):
            return None
        return TeamHistory(team, self.gpu_model, _quantile(counts, policy.baseline_quantile),
                           float(sum(1 for n in counts if n)), counts[-1])


def _quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (ratio 0-1) of sorted ``values``, as PromQL's ``quantile`` interpolates."""
    rank = q * (len(values) - 1)
    lo, hi = math.floor(rank), math.ceil(rank)
    return values[lo] + (values[hi] - values[lo]) * (rank - lo)


class DemoUsage:
    """The demo's usage as an hourly usage source (:class:`actions.ports.HourlyUsageSource`) for
    :class:`~actions.ledger.rollup.LedgerRollup`: it holds data from ``history.start`` on."""

    step_seconds = STEP_SECONDS

    def __init__(self, history: DemoHistory):
        self.history = history

    def fetch(self, start: datetime, end: datetime, policy: Policy) -> UsageData:
        """Usage over the whole hours of ``[start, end)``."""
        return self.history.usage(start, end, policy)

    def first_data_hour(self, since: datetime, until: datetime) -> datetime | None:
        """The first hour in ``[since, until)`` the history covers, None when none is."""
        first = max(floor_hour(since), self.history.start)
        return first if first < min(until, self.history.end) else None


class DemoAdviceHistory:
    """The demo's history as the history source advice reads (:class:`actions.ports.HistorySource`)."""

    def __init__(self, history: DemoHistory):
        self.history = history

    def fetch(
        self, at: datetime, policy: AdvicePolicy, consumers: Mapping[str, tuple[str, Sequence[str]]],
        teams: Mapping[str, Sequence[str]], reserved_nodes: Sequence[str] = (),
        container_pods: Sequence[tuple[str, str]] = (),
    ) -> AdviceHistory:
        """The demo's history over the windows of ``policy`` ending at ``at`` (never past the
        history's end): every pod that ran, and ``teams``' whole GPUs at hourly marks. Every
        consumer of the demo is one pod and one container, and no node is reserved: ``consumers``,
        ``reserved_nodes`` and ``container_pods`` have nothing to add."""
        h = self.history
        end = min(at, h.end)  # after the history ends there is nothing more to read
        pods = tuple(p for c in h.consumers if (p := h.pod_history(c, end, policy)) is not None)
        team_rows = tuple(t for team, namespaces in teams.items()
                          if (t := h.team_history(team, namespaces, end, policy)) is not None)
        return AdviceHistory(at, policy.window_seconds, policy.commitment_window_seconds, pods, {}, team_rows)
