"""The usage-ledger job: every ``ledger.interval_seconds`` the scheduler's leader rolls the
finished hours not yet in the ledger up from Prometheus, oldest first and at most
``ledger.hours_per_run`` of them (each one set of PromQL queries over one hour, so no query holds
Prometheus longer than an hour's worth), back to ``ledger.backfill_days`` or the first data
Prometheus holds; then drops rows (and advice facts) older than ``ledger.retention_days``. A first start and any gap
(the bot was down, Prometheus unreachable) are filled by the same runs. Each run is claimed like
every scheduled run (:mod:`bot.jobs.scheduler`), and each hour by its own row
(:meth:`actions.store.ledger.LedgerStore.write_hour`), so no hour is written twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable

from actions.ledger.rollup import LedgerRollup, Rolled, retention_cutoff
from actions.model.times import floor_hour
from actions.policy.rules import Policy
from actions.store.ledger import LedgerStore
from bot.settings import LedgerSettings

log = logging.getLogger(__name__)

JOB_ID = "usage-ledger"


@dataclass(frozen=True)
class LedgerRun:
    """What one run did: the hours ``rolled`` up and the rows ``dropped`` by retention."""

    rolled: tuple[Rolled, ...]
    dropped: int


@dataclass
class LedgerJob:
    """The ledger job over ``rollup`` (Prometheus into the ledger) with ``settings`` (the
    ``ledger`` section) and ``policy`` (its idle threshold); ``clock`` gives now (aware UTC)."""

    rollup: LedgerRollup
    ledger: LedgerStore
    settings: LedgerSettings
    policy: Policy
    clock: Callable[[], datetime]

    def run(self, now: datetime) -> LedgerRun:
        """Roll up at most ``hours_per_run`` missing finished hours before ``now``, oldest first,
        then apply retention. Raises TelemetryError when Prometheus fails (hours already written
        stay written; the next run goes on from there)."""
        since = floor_hour(now) - timedelta(days=self.settings.backfill_days)
        rolled = self.rollup.backfill(since, now, self.policy, limit=self.settings.hours_per_run)
        cutoff = retention_cutoff(now, self.settings.retention_days)
        dropped = self.ledger.drop_before(cutoff)
        if self.rollup.advice is not None:
            self.rollup.advice.table.drop_before(cutoff)
        if rolled or dropped:
            log.info(
                "usage ledger: rolled up %d hour(s) (%s to %s), dropped %d row(s) past retention",
                len(rolled), rolled[0].hour.isoformat() if rolled else "-", rolled[-1].hour.isoformat() if rolled else "-",
                dropped,
            )
        return LedgerRun(tuple(rolled), dropped)

    def scheduled(self, scheduled_at: datetime) -> None:
        """The scheduler's run: :meth:`run` at ``clock()`` (the hours finished by now, whenever
        the run was due)."""
        self.run(self.clock())
