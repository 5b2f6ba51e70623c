"""Karpenter's controls over voluntary disruption, as the bot honours them before it acts.

- ``karpenter.sh/do-not-disrupt``: on a pod ``"true"``, or a Go duration after the pod's start at
  which the protection ends (``"30m"``); on a node or NodeClaim ``"true"`` (karpenter.sh
  reference, "Well-Known Annotations": "On a Pod, the value may also be a duration (e.g. 5m)
  after the Pod's start time at which the protection ends").
- A NodePool's ``spec.disruption.budgets``: ``nodes`` (a count or a percentage), ``reasons``
  (``Underutilized``, ``Empty``, ``Drifted``; none listed: every reason) and an optional
  ``schedule`` (cron, UTC, with Karpenter's macros such as ``@daily``) with the ``duration`` the
  budget is active for after each firing (kubernetes-sigs/karpenter pkg/apis/v1 nodepool.go,
  ``Budget``).

Times are aware UTC datetimes. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from croniter import croniter

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# Karpenter's disruption reasons a budget may be scoped to.
UNDERUTILIZED, EMPTY, DRIFTED = "Underutilized", "Empty", "Drifted"
# A "true" protection: it holds until someone removes the annotation.
FOREVER = datetime.max.replace(tzinfo=timezone.utc)

_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration_seconds(text: str | None) -> float | None:
    """Seconds in a Go duration as ``time.ParseDuration`` reads it (``"30m"``, ``"1h30m"``,
    ``"1.5h"``, ``"90s"``; units ns, us, ms, s, m, h); None for anything else, a bare number
    included (Go requires a unit but for ``"0"``, which is 0)."""
    if text is None:
        return None
    s = text.strip()
    if s == "0":
        return 0.0
    if not s or _GO_PART.sub("", s):
        return None
    return sum(float(n) * _GO_UNIT_SECONDS[u] for n, u in _GO_PART.findall(s))


def protected_until(value: str | None, started: datetime | None, *, on_pod: bool = True) -> datetime | None:
    """Until when a ``karpenter.sh/do-not-disrupt`` value protects its object: :data:`FOREVER` for
    ``"true"``; on a pod, ``started`` plus a duration value (a pod not started yet: FOREVER, its
    clock has not begun); None when the value protects nothing (``"false"``, a typo, or a duration
    on a node, which Karpenter reads only on pods)."""
    if value is None:
        return None
    v = value.strip()
    if v == "true":
        return FOREVER
    seconds = go_duration_seconds(v) if on_pod else None
    if seconds is None:
        return None
    return FOREVER if started is None else started + timedelta(seconds=seconds)


@dataclass(frozen=True)
class DisruptionBudget:
    """One of a NodePool's ``spec.disruption.budgets``: at most ``nodes`` (``"0"``, ``"10%"``)
    disrupted at once for ``reasons`` (empty: every reason), while active: always, or for
    ``duration`` (a Go duration) after each firing of the cron ``schedule`` (UTC)."""

    nodes: str = "10%"
    reasons: tuple[str, ...] = ()
    schedule: str | None = None
    duration: str | None = None

    def active(self, now: datetime) -> bool:
        """Whether the budget applies at ``now``: it has no schedule, or ``now`` is within
        ``duration`` of its latest firing. A schedule that cannot be read counts as active, so
        an unreadable budget never lets the bot disrupt what it was meant to guard."""
        if not self.schedule:
            return True
        seconds = go_duration_seconds(self.duration)
        try:
            # croniter's get_prev is strictly before its start: start a second later so a firing
            # at exactly ``now`` counts.
            fired = croniter(self.schedule, now + timedelta(seconds=1)).get_prev(datetime)
        except (ValueError, KeyError):
            return True
        if seconds is None:
            return True
        return fired <= now < fired + timedelta(seconds=seconds)

    def forbids(self, reason: str, now: datetime) -> bool:
        """Whether it allows no node at all to be disrupted for ``reason`` at ``now``."""
        zero = self.nodes.strip() in ("0", "0%")
        return zero and (not self.reasons or reason in self.reasons) and self.active(now)

    def describe(self) -> str:
        """The budget as a person reads it: ``nodes: "0" for Underutilized (@daily for 8h)``."""
        why = f" for {', '.join(self.reasons)}" if self.reasons else ""
        when = f" ({self.schedule} for {self.duration})" if self.schedule else ""
        return f'nodes: "{self.nodes}"{why}{when}'
