"""Time as the bot writes and reads it: aware UTC datetimes, RFC 3339 text, and the hours a
month and a year have when clouds bill them.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

HOURS_PER_MONTH = 730.0  # cloud billing convention: 8,760 h / 12
HOURS_PER_YEAR = 8_760.0  # 365 days x 24 h
HOUR = timedelta(hours=1)


def utc_now() -> datetime:
    """The current time, aware UTC. Only the edges call it (a CLI command, a scheduled run, a
    button press) and pass the result down as ``now``; decisions never read the clock."""
    return datetime.now(timezone.utc)


def format_time(t: datetime) -> str:
    """RFC 3339 in UTC with a ``Z`` suffix."""
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    """Parse RFC 3339 (``Z`` or an offset) into an aware UTC datetime.

    Raises ValueError when ``text`` is not RFC 3339 with a time zone.
    """
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if t.tzinfo is None:
        raise ValueError(f"time {text!r} has no time zone; write it like 2026-11-23T09:00:00Z")
    return t.astimezone(timezone.utc)


def floor_hour(t: datetime) -> datetime:
    """``t`` (aware) rounded down to the hour, in UTC. Raises ValueError for a naive ``t``."""
    if t.tzinfo is None:
        raise ValueError(f"{t!r} has no time zone; pass an aware UTC datetime")
    return t.astimezone(timezone.utc).replace(minute=0, second=0, microsecond=0)


def ceil_hour(t: datetime) -> datetime:
    """``t`` (aware) rounded up to the hour, in UTC."""
    floor = floor_hour(t)
    return floor if floor == t else floor + HOUR


def hours_between(start: datetime, end: datetime) -> list[datetime]:
    """The starts of the whole hours inside ``[start, end)``, oldest first."""
    h, last, out = ceil_hour(start), floor_hour(end), []
    while h < last:
        out.append(h)
        h += HOUR
    return out
