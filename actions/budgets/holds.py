"""What a budget's spend means at a moment: its alerts at the thresholds and the forecast, the
holds it asks for at 100% (``on_exhausted`` ``ask`` or ``auto``: a request per LocalQueue to set
Kueue's ``spec.stopPolicy``), and when a hold is to be released (a new period, a raised or removed
budget). Pure: spend, queues and ``now`` are parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Sequence

from actions.alerts.alert import FORECAST, Alert
from actions.alerts.budgets import budget_kind
from actions.budgets.model import AUTO, EXHAUSTED, HOLD_AND_DRAIN, USD, WARN, Budget
from actions.budgets.periods import Period
from actions.model.findings import ActionVerb, Finding, Handling, ProposedAction
from actions.model.kube import CapacityType, ObjectRef
from actions.model.kueue import LocalQueue
from actions.model.quote import PriceQuote
from actions.text import plain, usd

KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta1"  # when the cluster's served Kueue version is not known


@dataclass(frozen=True)
class BudgetState:
    """``budget`` in ``period`` at ``at``: ``spent`` in its unit, ``used`` ratio 0-1 (may pass 1),
    ``forecast`` the period's spend at this pace (None at its very start)."""

    budget: Budget
    period: Period
    spent: float
    at: datetime

    @property
    def used(self) -> float:
        return self.spent / self.budget.amount

    @property
    def forecast(self) -> float | None:
        gone = self.period.fraction(self.at)
        return self.spent / gone if gone > 0 else None

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.budget.amount

    def amount(self, value: float) -> str:
        return usd(value) if self.budget.unit == USD else f"{value:,.1f} GPU-hours"

    def describe(self) -> str:
        """``"1,840.0 GPU-hours of 2,000 GPU-hours per month (92%) in 2026-11"``."""
        return f"{self.amount(self.spent)} of {self.budget.describe()} ({self.used:.0%}) in {self.period.key}"


def alert_key(state: BudgetState) -> str:
    """The period key a budget's alerts are claimed under: one per budget and period."""
    return f"{state.budget.key}@{state.period.key}"


def state_alerts(state: BudgetState, team: str, thresholds_percent: Sequence[float] = (50.0, 80.0, 100.0),
                 min_forecast_fraction: float = 0.1) -> list[Alert]:
    """At most two alerts for ``team``'s channel: the highest threshold (percent 0-100) reached,
    claiming the lower ones, and the forecast when the pace passes the budget before it is used
    up (only after ``min_forecast_fraction`` of the period: a first hour's pace is noise)."""
    b, used_pct = state.budget, 100 * state.used
    reached = sorted((float(t), budget_kind(t)) for t in thresholds_percent if used_pct >= t)
    forecast = state.forecast
    fields = (("Budget", b.describe()), ("Spent", f"{state.amount(state.spent)} ({used_pct:.0f}%)"),
              ("Forecast", "n/a" if forecast is None else state.amount(forecast)))
    then = {WARN: "", "ask": " A hold of its LocalQueue(s) is asked of the approvers.",
            AUTO: " Its LocalQueue(s) will be held after the grace unless an approver stops it."}
    out = []
    if reached:
        threshold, kind = reached[-1]
        exhausted = then[b.on_exhausted] if state.exhausted else ""
        out.append(Alert(
            team=team, kind=kind, period_key=alert_key(state),
            title=f"{b.subject()} has used {used_pct:.0f}% of its GPU budget for {state.period.key}",
            text=f"*{plain(b.subject())}* has used {plain(state.describe())}, past the {threshold:g}% mark.{exhausted}",
            fields=fields, usd=state.spent if b.unit == USD else None,
            also_claims=tuple(k for _, k in reached[:-1]),
        ))
    if forecast is not None and forecast > b.amount and not state.exhausted \
            and state.period.fraction(state.at) >= min_forecast_fraction:
        out.append(Alert(
            team=team, kind=FORECAST, period_key=alert_key(state),
            title=f"{b.subject()} is on course to pass its GPU budget for {state.period.key}",
            text=(f"At this pace *{plain(b.subject())}* ends {state.period.key} at about {state.amount(forecast)}, "
                  f"over its {plain(b.describe())}."),
            fields=fields, usd=forecast if b.unit == USD else None,
        ))
    return out


def hold_key(budget: Budget, period: Period, queue: LocalQueue) -> str:
    """The request key of a hold: one per budget, period and LocalQueue."""
    return f"budget:{budget.key}@{period.key}:{queue.namespace}/{queue.name}"


def held_period(key: str) -> str | None:
    """The period key a hold's request key (:func:`hold_key`) was made in; None for another key."""
    if not key.startswith("budget:") or "@" not in key:
        return None
    return key.split("@", 1)[1].rsplit(":", 1)[0]


def hold_findings(state: BudgetState, queues: Sequence[LocalQueue], team: str, *, api_version: str | None,
                  handling: Handling, pods: dict[tuple[str, str], tuple[str, ...]] | None = None) -> list[Finding]:
    """At 100% of a budget whose ``on_exhausted`` is ``ask`` or ``auto``: a hold of each of
    ``queues`` not held already, under ``handling`` (its mode set from the budget: ``auto`` acts
    after the budget's grace). ``pods`` (namespace, LocalQueue) -> the pods of its admitted
    Workloads: a ``HoldAndDrain`` evicts them, so the gate checks their do-not-disrupt."""
    b = state.budget
    if b.on_exhausted == WARN or not state.exhausted:
        return []
    verb = ActionVerb.DRAIN_LOCALQUEUE if b.stop_policy == HOLD_AND_DRAIN else ActionVerb.HOLD_LOCALQUEUE
    mode = replace(handling, mode="auto" if b.on_exhausted == AUTO else "ask", grace_seconds=b.grace_seconds,
                   source=f"budget {b.key} ({b.source})")
    effect = ("admitted Workloads are evicted, none is admitted" if verb is ActionVerb.DRAIN_LOCALQUEUE
              else "running Workloads finish, none is admitted")
    out = []
    for q in queues:
        if q.held:
            continue
        target = ObjectRef(api_version or KUEUE_API_VERSION, "LocalQueue", q.namespace, q.name)
        out.append(Finding(
            kind=EXHAUSTED, key=hold_key(b, state.period, q), namespace=q.namespace, name=q.name, team=team,
            consumer_kind="LocalQueue",
            pods=(pods or {}).get((q.namespace, q.name), ()) if verb is ActionVerb.DRAIN_LOCALQUEUE else (),
            node=None, gpus=0.0, gpu_model="", idle_seconds=0.0, usd_per_hour=0.0,
            price=PriceQuote(0.0, CapacityType.UNKNOWN, f"budget {b.key}", "", "budget"),
            evidence=(), detected_at=state.at, window_seconds=(state.at - state.period.start).total_seconds(),
            action=ProposedAction(verb, target, f"set spec.stopPolicy {verb.stop_policy} on LocalQueue "
                                                f"{q.namespace}/{q.name} ({effect})"),
            handling=mode, cluster=b.cluster,
            notes=(f"{b.subject()}: {state.describe()}", f"ClusterQueue {q.cluster_queue}"),
        ))
    return out


def release_reason(key: str, state: BudgetState | None) -> str | None:
    """Why the hold made under request ``key`` is to be lifted now, given its budget's current
    ``state`` (None: the budget is gone): a new period began, the budget was removed, or it was
    raised (or its spend corrected) so it is no longer used up. None: the hold stands."""
    if state is None:
        return "its budget was removed"
    made_in = held_period(key)
    if made_in is not None and made_in != state.period.key:
        return f"a new budget period began ({state.period.key})"
    if not state.exhausted:
        return f"the budget is no longer used up: {state.describe()}"
    return None
