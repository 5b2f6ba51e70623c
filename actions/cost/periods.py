"""Report periods as people ask for them (``7d``, ``30d``, ``mtd``, ``last-month``) turned into
aware UTC ``[start, end]``, and the days a period covers. Pure: ``now`` is a parameter.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

from actions.model.usage import DEFAULT_STEP_SECONDS

# --- periods ---------------------------------------------------------------------------------------

PERIOD_EXAMPLES = ("7d", "30d", "mtd", "last-month")
_PERIOD = re.compile(r"^(\d{1,3})([hdw])$")


class PeriodError(ValueError):
    """A period that cannot be read; the message shows the forms that can."""


def floor_time(t: datetime, step_seconds: float) -> datetime:
    """``t`` rounded down to a multiple of ``step_seconds`` since the Unix epoch (aware UTC)."""
    ts = t.timestamp()
    return datetime.fromtimestamp(ts - ts % step_seconds, tz=timezone.utc)


def parse_period(
    text: str, now: datetime, tz: str = "UTC", step_seconds: float = DEFAULT_STEP_SECONDS
) -> tuple[datetime, datetime]:
    """``(start, end)`` in aware UTC for a period word, ending at ``now`` floored to the step.

    ``Nd``/``Nw``/``Nh`` (``7d``, ``30d``, ``2w``, ``12h``): the last N days, weeks or hours;
    ``mtd``: since the first of this month 00:00 in ``tz``; ``last-month``: the whole previous
    month in ``tz``. Raises PeriodError (a ValueError) otherwise.
    """
    word = text.strip().lower()
    end = floor_time(now, step_seconds)
    zone = ZoneInfo(tz)
    m = _PERIOD.match(word)
    if m:
        n, unit = int(m.group(1)), m.group(2)
        if n == 0:
            raise PeriodError(f"period {text!r} is empty; try {', '.join(PERIOD_EXAMPLES)}")
        delta = {"h": timedelta(hours=n), "d": timedelta(days=n), "w": timedelta(weeks=n)}[unit]
        return end - delta, end
    local = now.astimezone(zone)
    month_start = datetime.combine(local.date().replace(day=1), time(0), tzinfo=zone)
    if word == "mtd":
        return month_start.astimezone(timezone.utc), end
    if word in ("last-month", "lastmonth", "last_month"):
        prev = (month_start.date() - timedelta(days=1)).replace(day=1)
        start = datetime.combine(prev, time(0), tzinfo=zone).astimezone(timezone.utc)
        return start, month_start.astimezone(timezone.utc)
    raise PeriodError(
        f"{text!r} is not a period I know; use one of {', '.join(PERIOD_EXAMPLES)} (or 12h, 2w)"
    )


def day_buckets(start: datetime, end: datetime) -> list[tuple[date, datetime, datetime]]:
    """The UTC days ``[start, end)`` touches as ``(day, bucket_start, bucket_end)``, clipped to
    the period (the first and last may be partial)."""
    out = []
    cursor = start
    while cursor < end:
        nxt = min(datetime.combine(cursor.date() + timedelta(days=1), time(0), tzinfo=timezone.utc), end)
        out.append((cursor.date(), cursor, nxt))
        cursor = nxt
    return out
