"""A clock a test moves by hand."""

from __future__ import annotations

from datetime import datetime, timezone

# The demo recording's end (bot/demo_data/telemetry.json), when its sweeps run.
T0 = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)


class Clock:
    """``clock()`` answers ``clock.now`` (an aware UTC datetime), which starts at ``now`` (default
    :data:`T0`) and moves only when a test sets it."""

    def __init__(self, now: datetime = T0):
        self.now = now

    def __call__(self) -> datetime:
        return self.now
