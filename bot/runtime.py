"""The running bot's parts, assembled once and passed to every job and handler.

Nothing here reads settings or the environment by itself: ``bot.cli`` builds a Runtime from
:class:`~bot.settings.Settings` (or from bundled data for the demo) and hands it down.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Protocol

from actions.executors import ClusterWriter
from actions.idle import detect_idle
from actions.model import ClusterSnapshot, Finding, TelemetrySnapshot
from actions.policy import Policy, TeamDirectory
from actions.prices import PriceBook
from actions.store import Store
from bot.chat import Chat


class ClusterReader(Protocol):
    def snapshot(self, now: datetime) -> ClusterSnapshot:
        """The cluster's GPU pods and their owners as of ``now``."""


class TelemetrySource(Protocol):
    def fetch(self, at: datetime, policy: Policy) -> TelemetrySnapshot:
        """Per-GPU telemetry over ``policy.window_seconds`` ending at ``at``."""


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class Runtime:
    """Everything a sweep, a button press or a slash command needs.

    ``clock`` returns the current time (tests and the demo pass a controllable one);
    ``group_members`` expands a Slack user group id into user ids (empty set when unknown).
    """

    store: Store
    chat: Chat
    cluster: ClusterReader
    telemetry: TelemetrySource
    writer: ClusterWriter
    prices: PriceBook
    teams: TeamDirectory
    policy: Policy
    dry_run: bool
    clock: Callable[[], datetime] = utc_now
    group_members: Callable[[str], set[str]] = lambda group: set()

    def find_idle(self, now: datetime) -> list[Finding]:
        """Read the cluster and telemetry at ``now`` and run the idle detector."""
        snapshot = self.cluster.snapshot(now)
        telemetry = self.telemetry.fetch(now, self.policy)
        return detect_idle(snapshot, telemetry, self.prices, self.policy, self.teams, now)
