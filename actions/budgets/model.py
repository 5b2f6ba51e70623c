"""A budget: GPU-hours or USD per month, week or a custom period, for a team, a Kueue LocalQueue or
a ClusterQueue, and what happens when it is used up (``on_exhausted``). Plain immutable data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

TEAM, LOCALQUEUE, CLUSTERQUEUE = "team", "localqueue", "clusterqueue"
SCOPES = (TEAM, LOCALQUEUE, CLUSTERQUEUE)
USD, GPU_HOURS = "usd", "gpu_hours"
UNITS = (USD, GPU_HOURS)
WARN, ASK, AUTO = "warn", "ask", "auto"
ON_EXHAUSTED = (WARN, ASK, AUTO)
HOLD, HOLD_AND_DRAIN = "Hold", "HoldAndDrain"  # Kueue LocalQueue spec.stopPolicy values
PERIOD = re.compile(r"^(?:month|week|(?P<days>[1-9]\d{0,2})d)$")
EXHAUSTED = "budget-exhausted"  # the finding kind of a hold a budget asks for


@dataclass(frozen=True)
class Budget:
    """A budget of ``amount`` (USD, or GPU-hours in physical-GPU equivalents: ``unit``) per
    ``period`` (``month`` and ``week``, Monday first, in the budget's time zone; ``"14d"``: every
    14 days from ``anchor``) for one ``scope``: a team (``name`` the team), a LocalQueue
    (``"namespace/name"``) or a ClusterQueue (its name). ``on_exhausted`` at 100%: ``warn`` (an
    alert only), ``ask`` (a request to hold the LocalQueues for the approvers) or ``auto`` (the
    hold is taken after ``grace_seconds`` unless someone stops it). ``stop_policy`` is the Kueue
    ``spec.stopPolicy`` the hold sets: ``Hold`` (running Workloads finish, none is admitted) or,
    only when configured, ``HoldAndDrain``. ``cluster`` names the cluster of ``clusters:`` it
    is kept in (``""``: a bot of one). ``source`` says where it was set (``"config"``, or
    ``"chat by U0123"``)."""

    scope: str
    name: str
    amount: float
    unit: str = USD
    period: str = "month"
    anchor: date | None = None
    on_exhausted: str = WARN
    stop_policy: str = HOLD
    grace_seconds: float = 4 * 3600
    cluster: str = ""
    source: str = "config"

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"budget scope {self.scope!r} is none of {', '.join(SCOPES)}")
        if self.unit not in UNITS:
            raise ValueError(f"budget unit {self.unit!r} is none of {', '.join(UNITS)}")
        if not self.amount > 0:
            raise ValueError(f"a budget must be more than 0, got {self.amount:g}")
        if not PERIOD.match(self.period):
            raise ValueError(f"budget period {self.period!r} is not month, week or a number of days like 14d")
        if self.period.endswith("d") and self.anchor is None:
            raise ValueError(f"a period of {self.period} needs the day it starts from (anchor), e.g. 2026-11-02")
        if self.on_exhausted not in ON_EXHAUSTED:
            raise ValueError(f"on_exhausted {self.on_exhausted!r} is none of {', '.join(ON_EXHAUSTED)}")
        if self.stop_policy not in (HOLD, HOLD_AND_DRAIN):
            raise ValueError(f"stop_policy {self.stop_policy!r} is neither {HOLD} nor {HOLD_AND_DRAIN}")
        if self.scope == LOCALQUEUE and self.name.count("/") != 1:
            raise ValueError(f"a LocalQueue budget names namespace/localqueue, got {self.name!r}; e.g. training/training-queue")

    @property
    def key(self) -> str:
        """``"localqueue:training/training-queue"``: the budget's identity (cluster aside)."""
        return f"{self.scope}:{self.name}"

    def describe(self) -> str:
        """``"2,000 GPU-hours per month"``, ``"$5,000.00 per week"``."""
        amount = f"${self.amount:,.2f}" if self.unit == USD else f"{self.amount:,.0f} GPU-hours"
        per = f"every {self.period[:-1]} days from {self.anchor}" if self.period.endswith("d") else f"per {self.period}"
        return f"{amount} {per}"

    def subject(self) -> str:
        """``"LocalQueue training/training-queue"``, ``"team research"``, ``"ClusterQueue cq-h100"``."""
        return {TEAM: "team", LOCALQUEUE: "LocalQueue", CLUSTERQUEUE: "ClusterQueue"}[self.scope] + f" {self.name}"
