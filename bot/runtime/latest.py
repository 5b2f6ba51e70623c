"""The idle findings of each cluster's latest detection and when it was made, for the queue views
(the alerts job and ``/gpu queue``) to show instead of detecting again: the alerts job runs beside
the sweep, often at the same moment, and a second detection of every cluster cost as much as the
sweep's own (benchmarks/ten_clusters.py). A re-check before acting never reads them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from actions.detect.clusters import FleetDetection
from actions.model.findings import Finding


@dataclass
class LatestFindings:
    """Cluster name -> its latest detection's findings (keyed as a sweep keys them), given for a
    time within ``reuse_seconds`` of when they were made (0: never)."""

    reuse_seconds: float = 0.0
    _kept: dict[str, tuple[datetime, list[Finding]]] = field(default_factory=dict, repr=False)

    def keep(self, cluster: str, at: datetime, findings: list[Finding]) -> None:
        """``cluster``'s findings detected at ``at``."""
        self._kept[cluster] = (at, findings)

    def keep_fleet(self, clusters: Iterable[str], at: datetime, found: FleetDetection) -> None:
        """Each of ``clusters`` that ``found`` answered for: its own findings."""
        for name in clusters:
            if name not in found.unreachable:
                self.keep(name, at, [f for f in found.findings if f.cluster == name])

    def near(self, cluster: str, now: datetime) -> list[Finding] | None:
        """``cluster``'s findings when detected within :attr:`reuse_seconds` of ``now``; else None."""
        kept = self._kept.get(cluster)
        if self.reuse_seconds <= 0 or kept is None:
            return None
        at, findings = kept
        return findings if abs((now - at).total_seconds()) <= self.reuse_seconds else None
