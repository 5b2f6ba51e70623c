"""The period a budget runs in at a moment: a calendar month or an ISO week in the budget's time
zone, or a run of N days from an anchor day. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

from actions.budgets.model import Budget


@dataclass(frozen=True)
class Period:
    """One period of a budget: ``key`` (``"2026-11"``, ``"2026-W48"``, ``"2026-11-02+14d"``) and
    its ``[start, end)`` in aware UTC."""

    key: str
    start: datetime
    end: datetime

    def fraction(self, now: datetime) -> float:
        """Ratio 0-1 of the period gone by at ``now``."""
        whole = (self.end - self.start).total_seconds()
        return min(1.0, max(0.0, (now - self.start).total_seconds() / whole))


def period_of(budget: Budget, now: datetime, tz: str = "UTC") -> Period:
    """The period of ``budget`` that holds ``now`` (aware), in time zone ``tz`` (IANA). Raises
    ValueError for a naive ``now`` and ``zoneinfo.ZoneInfoNotFoundError`` for an unknown zone."""
    if now.tzinfo is None:
        raise ValueError("now needs a time zone")
    zone = ZoneInfo(tz)
    local = now.astimezone(zone)
    if budget.period == "month":
        start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        end = (start + timedelta(days=32)).replace(day=1)
        key = f"{start:%Y-%m}"
    elif budget.period == "week":
        start = (local - timedelta(days=local.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
        end = start + timedelta(days=7)
        year, week, _ = start.date().isocalendar()
        key = f"{year}-W{week:02d}"
    else:
        assert budget.anchor is not None  # the model checks it
        days = int(budget.period[:-1])
        n = (local.date() - budget.anchor).days // days
        first = budget.anchor + timedelta(days=n * days)
        start = datetime.combine(first, time(), zone)
        end = datetime.combine(first + timedelta(days=days), time(), zone)
        key = f"{first}+{days}d"
    # Local midnights go through UTC so a change of summer time is counted.
    return Period(key, start.astimezone(timezone.utc), end.astimezone(timezone.utc))
