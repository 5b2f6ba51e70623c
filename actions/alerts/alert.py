"""An alert and its identity: :class:`Alert` (team, kind, period key, text), the kinds the bot
sends, the family a Snooze holds back, and an alert's keys per cluster.

Pure: every alert decision takes data and an explicit ``now`` and returns Alerts. Each alert is
identified by ``(team, kind, period_key)``; the caller claims that triple in the store before
posting (``Store.record_alert``), so an alert goes out once however often it is decided, and
from one replica only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Sequence

from actions.detect.clusters import cluster_key
from actions.text import gpu_amount, plain

FORECAST = "budget-forecast"
QUEUE_WAIT = "queue-wait"
IDLE_ON_DEMAND = "idle-on-demand"
SPOT_RATIO = "spot-ratio"


@dataclass(frozen=True)
class Alert:
    """One alert to post to ``team``'s channel.

    ``title`` is one line; ``text`` mrkdwn; ``fields`` (label, value) pairs shown side by side;
    ``usd`` the dollar figure the alert is about (USD for budgets, USD per hour for idle GPUs;
    ``None`` when it has none). ``also_claims`` are kinds this alert makes redundant for the same
    period (a 100% budget alert covers the 50% and 80% ones not yet sent). ``approve_all`` are the
    proposals that together free enough GPUs for a waiting Workload (:mod:`actions.kueue.freeing`).
    ``cluster`` is the cluster the alert is about (empty: a bot of one cluster, or an alert
    about a team across every cluster).
    """

    team: str
    kind: str
    period_key: str
    title: str
    text: str
    fields: tuple[tuple[str, str], ...] = ()
    usd: float | None = None
    also_claims: tuple[str, ...] = ()
    approve_all: tuple[int, ...] = ()  # request ids one "Approve all" button approves together
    cluster: str = ""

    @property
    def family(self) -> str:
        """Alerts a snooze silences together: every budget alert of a team, else the kind."""
        return snooze_family(self.kind)


def snooze_family(kind: str) -> str:
    """``"budget"`` for every budget kind (thresholds and forecast), else ``kind`` itself."""
    return "budget" if kind.startswith("budget-") else kind


def in_cluster(alerts: Sequence[Alert], cluster: str, first: bool) -> list[Alert]:
    """``alerts`` decided in ``cluster`` (one of several): each names it (title, a ``Cluster``
    field, :attr:`Alert.cluster`) and its period key is :func:`~actions.detect.clusters.cluster_key`'s,
    unchanged when ``first`` (the home cluster, claimed as a bot of one claims), else ``"<cluster>:<key>"``."""
    return [
        dataclasses.replace(
            a, cluster=cluster, period_key=cluster_key(a.period_key, cluster, first),
            title=f"{a.title} (cluster {cluster})", fields=(("Cluster", plain(cluster)), *a.fields),
        )
        for a in alerts
    ]


def gpus_text(n: float) -> str:
    """``"1 GPU"``, ``"8 GPUs"``, ``"0.14 GPUs"`` (physical-GPU equivalents)."""
    return f"{gpu_amount(n)} GPU" if n == 1 else f"{gpu_amount(n)} GPUs"


def utc(now: datetime) -> datetime:
    if now.tzinfo is None:
        raise ValueError(f"now={now!r} has no time zone; pass an aware UTC datetime")
    return now.astimezone(timezone.utc)


def day_key(now: datetime) -> str:
    """The UTC day of ``now``: ``"2026-11-23"``."""
    return utc(now).strftime("%Y-%m-%d")
