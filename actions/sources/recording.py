"""Telemetry replayed from a recording instead of queried from Prometheus.

A recording is JSON: either one TelemetrySnapshot (``to_jsonable`` form) or an object whose
values are snapshots (``{"sweep": {...}, "recheck": {...}}``). ``fetch(at)`` answers with the
latest snapshot taken at or before ``at``, so a replay moves through time like the real source.
A recording is of its own time (:attr:`RecordedTelemetry.recorded_at`): whoever replays it says
so (:func:`describe_recording`), never passing it off as live.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from actions.model.codec import telemetry_from_jsonable
from actions.model.telemetry import TelemetrySnapshot
from actions.model.times import format_time
from actions.policy.rules import Policy


class RecordingError(ValueError):
    """The recording is malformed or holds nothing for the time asked."""


class RecordedTelemetry:
    """Replays recorded TelemetrySnapshots (see module doc)."""

    def __init__(self, snapshots: list[TelemetrySnapshot]):
        if not snapshots:
            raise RecordingError("the telemetry recording holds no snapshot")
        self.snapshots = sorted(snapshots, key=lambda s: s.at)

    @classmethod
    def from_file(cls, path: str | Path) -> "RecordedTelemetry":
        """Load a recording. Raises RecordingError naming the file and the problem."""
        try:
            data = json.loads(Path(path).read_text())
            items = [data] if "gpus" in data else list(data.values())
            return cls([telemetry_from_jsonable(d) for d in items])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise RecordingError(f"{path}: not a telemetry recording: {e}") from None

    @property
    def recorded_at(self) -> datetime:
        """When the recording ends: its latest snapshot's time (aware UTC)."""
        return self.snapshots[-1].at

    def fetch(self, at: datetime, policy: Policy) -> TelemetrySnapshot:
        """The latest snapshot at or before ``at``. Raises RecordingError if all are later."""
        usable = [s for s in self.snapshots if s.at <= at]
        if not usable:
            raise RecordingError(
                f"the recording starts at {format_time(self.snapshots[0].at)}, after {format_time(at)}"
            )
        return usable[-1]


def describe_recording(recording: RecordedTelemetry, at: datetime | None) -> str:
    """One line saying that telemetry is a recording and of when: read at ``at`` (aware UTC), or,
    when ``at`` is None, replayed as if it were now (the bot's clock runs on)."""
    of = f"a recording of {format_time(recording.recorded_at)}"
    if at is None:
        return f"telemetry: {of}, shown as if now (not live)"
    if at == recording.recorded_at:
        return f"telemetry: {of}, read at its own time (--at chooses another; not live)"
    return f"telemetry: {of}, read at {format_time(at)} (not live)"
