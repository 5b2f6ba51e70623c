"""Which hours of a report's period the ledger holds, which come live from Prometheus and which
neither has (:class:`PeriodPlan`), and the warnings that name the missing ones. Pure.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable, Mapping

from actions.model.ledger import EMPTY, PARTIAL
from actions.model.times import HOUR, ceil_hour, floor_hour, hours_between

# --- which hours a period needs -------------------------------------------------------------------


@dataclass(frozen=True)
class PeriodPlan:
    """How a report over ``[start, end]`` is read: ``ledger`` the whole hours the ledger holds
    (as ``(first, end)`` ranges), ``live`` the pieces read from Prometheus now (the partial hours
    at either end and the current hour), ``missing`` the pieces neither covers (ranges, aware
    UTC)."""

    start: datetime
    end: datetime
    ledger: tuple[tuple[datetime, datetime], ...] = ()
    live: tuple[tuple[datetime, datetime], ...] = ()
    missing: tuple[tuple[datetime, datetime], ...] = ()
    statuses: Mapping[str, int] = field(default_factory=dict)

    @property
    def missing_hours(self) -> float:
        """Hours of the period nobody holds."""
        return sum((b - a).total_seconds() for a, b in self.missing) / 3600


def ranges(hours: Iterable[datetime]) -> list[tuple[datetime, datetime]]:
    """Consecutive hour starts as ``(first, end)`` ranges, oldest first."""
    out: list[list[datetime]] = []
    for h in sorted(hours):
        if out and out[-1][1] == h:
            out[-1][1] = h + HOUR
        else:
            out.append([h, h + HOUR])
    return [(a, b) for a, b in out]


def plan_period(
    start: datetime, end: datetime, held: Mapping[datetime, str], *, live: bool
) -> PeriodPlan:
    """Split ``[start, end]`` into what the ledger holds (``held``: hour start -> status), what is
    read from Prometheus when ``live`` (the partial hours at either end, and the last whole hour
    when the ledger does not hold it yet: the rollup runs a few minutes after an hour ends), and
    what is missing. Pure."""
    whole = hours_between(start, end)
    have = [h for h in whole if h in held]
    lacking = [h for h in whole if h not in held]
    edges = []
    if start < min(ceil_hour(start), end):
        edges.append((start, min(ceil_hour(start), end)))
    if floor_hour(end) < end and floor_hour(end) >= start and (not edges or edges[0][1] <= floor_hour(end)):
        edges.append((max(floor_hour(end), start), end))
    live_pieces: list[tuple[datetime, datetime]] = []
    if live:
        live_pieces = list(edges)
        if lacking and lacking[-1] == whole[-1]:
            live_pieces.append((lacking[-1], lacking[-1] + HOUR))
            lacking = lacking[:-1]
        missing = ranges(lacking)
    else:
        missing = sorted(ranges(lacking) + edges)
    statuses: dict[str, int] = defaultdict(int)
    for h in have:
        statuses[held[h]] += 1
    return PeriodPlan(
        start, end, tuple(ranges(have)), tuple(sorted(live_pieces)), tuple(missing), dict(statuses)
    )


def plan_warnings(plan: PeriodPlan) -> tuple[str, ...]:
    """What a report over ``plan`` must say: the hours the ledger does not hold (and so are
    left out) and the hours written with incomplete data."""
    out = []
    if plan.missing:
        total = (plan.end - plan.start).total_seconds() / 3600
        shown = ", ".join(f"{a:%Y-%m-%d %H:%M}-{b:%H:%M}" for a, b in plan.missing[:5])
        more = len(plan.missing) - 5
        out.append(
            f"the usage ledger does not hold {plan.missing_hours:g} of the {total:g} hours of this period "
            f"({shown}{f' and {more} more' if more > 0 else ''} UTC): they are left out; "
            "`gpu-cost-bot ledger backfill --since DATE` fills them while Prometheus still keeps them"
        )
    if plan.statuses.get(PARTIAL):
        out.append(f"{plan.statuses[PARTIAL]} hour(s) of this period were rolled up with incomplete data (see `gpu-cost-bot ledger status`)")
    if plan.statuses.get(EMPTY):
        out.append(f"{plan.statuses[EMPTY]} hour(s) of this period had no kube-state-metrics series in Prometheus when rolled up")
    return tuple(out)
