"""How money and durations are written wherever the bot writes them (alerts, messages, reports)."""

from __future__ import annotations


def usd(amount: float) -> str:
    """``1234.5`` (USD) -> ``"$1,234.50"``."""
    return f"${amount:,.2f}"


def duration(seconds: float) -> str:
    """``93784`` (seconds) -> ``"1d 2h"``, ``5400`` -> ``"1h 30m"``, ``300`` -> ``"5m"``."""
    minutes = int(seconds // 60)
    days, rem = divmod(minutes, 1440)
    hours, mins = divmod(rem, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {mins}m"
    return f"{mins}m"
