"""Kueue's queues with when each pending Workload likely starts: :meth:`QueueStarts.read_queues`
is :meth:`bot.runtime.runtime.Runtime.read_queues` (same arguments, same answer) with the report's
``starts`` filled (:func:`actions.kueue.starts.with_starts`) from the usage ledger's run times of
the last :attr:`QueueStarts.history_days` days. A ledger that cannot be read is logged and the
queues are shown with their starts unknown."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from actions.kueue.queues import QueueReport
from actions.kueue.starts import with_starts
from actions.model.findings import Finding
from actions.model.snapshot import ClusterSnapshot
from actions.store import bulk as store_bulk
from actions.store.ledger_runs import LedgerRuns
from bot.runtime.runtime import Runtime

log = logging.getLogger(__name__)

HISTORY_DAYS = 30.0


def nominal_quotas(snapshot: ClusterSnapshot) -> dict[str, float]:
    """ClusterQueue -> the GPU ``nominalQuota`` the cluster reader read of it (those setting one)."""
    return {c.name: c.gpu_quota for c in snapshot.cluster_queues if c.gpu_quota is not None}


@dataclass
class QueueStarts:
    """``rt``'s queues with their likely starts. ``quotas`` gives a snapshot's ClusterQueue ->
    GPU quota (default: the ``nominalQuota`` the cluster reader read of each ClusterQueue's GPU
    resources; one that sets none is unknown, see :mod:`actions.kueue.eta`)."""

    rt: Runtime
    history_days: float = HISTORY_DAYS
    quotas: Callable[[ClusterSnapshot], Mapping[str, float]] | None = None

    def __post_init__(self) -> None:
        if self.quotas is None:
            self.quotas = nominal_quotas

    def read_queues(
        self, now: datetime, team: str | None = None, cluster: str | None = None,
    ) -> tuple[ClusterSnapshot, list[Finding], QueueReport]:
        """As :meth:`Runtime.read_queues`, with ``starts`` filled; raises what it raises."""
        snapshot, findings, report = self.rt.read_queues(now, team=team, cluster=cluster)
        if not report.pending:
            return snapshot, findings, report
        name = cluster or self.rt.cluster_names()[0]
        try:
            runs = LedgerRuns(self.rt.store).run_times(name, now - timedelta(days=self.history_days), now)
        except Exception:  # noqa: BLE001 - the queues are worth showing without their starts
            log.exception("usage ledger unreadable at %s; queue starts unknown", now.isoformat())
            runs = {}
        quotas = self.quotas(snapshot) if self.quotas else None
        report = with_starts(report, snapshot, runs, quotas=quotas, findings=findings,
                             open_requests=store_bulk.proposed_ids(self.rt.store))
        return snapshot, findings, report
