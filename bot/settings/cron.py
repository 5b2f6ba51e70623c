"""Crontab lines as people write them, read into APScheduler triggers in a time zone."""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo

from apscheduler.triggers.cron import CronTrigger

_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


# --- when (pure) -----------------------------------------------------------------------------------


def _crontab_days(field: str) -> str:
    """A crontab day-of-week field in APScheduler's terms. Crontab counts 0 (and 7) as Sunday,
    1 as Monday; APScheduler 3's ``from_crontab`` reads numbers as 0 = Monday, which would move
    ``0 9 * * 1`` to Tuesday. Numbers, ranges and steps become day names; names pass through."""
    out: list[str] = []
    for item in field.split(","):
        base, _, step = item.partition("/")
        if not re.fullmatch(r"\*|\d(-\d)?", base):
            out.append(item)  # names such as mon-fri: APScheduler reads those as crontab does
            continue
        if base == "*":
            if not step:
                out.append("*")
                continue
            lo, hi = 0, 6
        else:
            lo_s, _, hi_s = base.partition("-")
            lo, hi = int(lo_s), int(hi_s or (lo_s if not step else "6"))
            if not (0 <= lo <= 7 and 0 <= hi <= 7 and lo <= hi):
                raise ValueError(f"day of week {item!r} is not a crontab day range (0-7, 0 and 7 are Sunday)")
        days = range(lo, hi + 1, int(step) if step else 1)
        out.extend(_DAY_NAMES[d % 7] for d in days)
    return ",".join(dict.fromkeys(out))


def time_zone(tz: str) -> ZoneInfo:
    """The IANA zone ``tz``; ValueError naming it when there is no such zone."""
    try:
        return ZoneInfo(tz)
    except (KeyError, ValueError) as e:  # ZoneInfoNotFoundError is a KeyError
        raise ValueError(f"timezone {tz!r} is not an IANA time zone name: {e}") from None


def digest_trigger(cron: str, tz: str = "UTC") -> CronTrigger:
    """An APScheduler trigger for a five-field crontab line (``"0 9 * * mon"``; days of the week
    numbered as crontab does, 0 or 7 Sunday) in the IANA zone ``tz``. Raises ValueError naming
    the problem for a malformed line or an unknown zone."""
    fields = cron.split()
    if len(fields) != 5:
        raise ValueError(f"cron {cron!r} needs 5 fields (minute hour day month day-of-week), got {len(fields)}")
    zone = time_zone(tz)
    minute, hour, day, month, dow = fields
    try:
        return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=_crontab_days(dow), timezone=zone)
    except ValueError as e:
        raise ValueError(f"cron {cron!r}: {e}") from None
