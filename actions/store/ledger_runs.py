"""How long each LocalQueue's Workloads ran, read from the usage ledger (``usage_hour``, see
:mod:`actions.store.ledger`). Read-only; SQLite and PostgreSQL.

A consumer's run is a stretch of consecutive hours in which it held GPU-hours, the consumer being
(namespace, consumer kind and name, LocalQueue) as the ledger's ``held`` rows name it; only rows
with a LocalQueue (``queue``) count. A run lasts its GPU-hours over the GPUs it held in its
busiest hour: 4 GPUs for 2 hours then 4 GPUs for half an hour is 2.5 hours, not 3. A run that
reaches the last hour the ledger holds may still be going on, and one that starts in the first
hour read may have started before it: both are left out, so the times are of finished runs.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Iterable

import sqlalchemy as sa

from actions.kueue.eta import RunTimes
from actions.model.ledger import REQUESTED
from actions.store.database import Store
from actions.store.ledger import usage_hour, usage_hour_filled

HOUR = timedelta(hours=1)
Consumer = tuple[str, str, str, str]  # namespace, kind, name, LocalQueue


def runs_of(hours: Iterable[tuple[Consumer, datetime, float]], first: datetime, last: datetime) -> dict[Consumer, list[float]]:
    """Each consumer's finished runs (hours), from ``(consumer, hour, GPU-hours)`` sorted by
    consumer and hour; ``first``/``last`` the first and last hour read (runs touching them are
    left out)."""
    out: dict[Consumer, list[float]] = {}
    run: list[tuple[datetime, float]] = []
    key: Consumer | None = None

    def close() -> None:
        if key is None or not run or run[0][0] <= first or run[-1][0] >= last:
            return
        peak = max(g for _, g in run)
        if peak > 0:
            out.setdefault(key, []).append(sum(g for _, g in run) / peak)

    for consumer, hour, gpu_hours in hours:
        if consumer != key or not run or hour - run[-1][0] != HOUR:
            close()
            key, run = consumer, []
        run.append((hour, gpu_hours))
    close()
    return out


class LedgerRuns:
    """The run times of the ledger in ``store``'s database."""

    def __init__(self, store: Store):
        self.engine = store.engine

    def run_hours(self, cluster: str, since: datetime, until: datetime) -> dict[Consumer, list[float]]:
        """Each consumer's finished runs (hours) among ``cluster``'s hours in ``[since, until)``."""
        t, f = usage_hour, usage_hour_filled
        held = sa.select(sa.func.min(f.c.hour), sa.func.max(f.c.hour)).where(
            f.c.cluster == cluster, f.c.hour >= since, f.c.hour < until)
        q = (
            sa.select(t.c.namespace, t.c.owner_kind, t.c.owner_name, t.c.queue, t.c.hour, sa.func.sum(t.c.gpu_hours))
            .where(t.c.cluster == cluster, t.c.measure == REQUESTED, t.c.queue.is_not(None), t.c.queue != "",
                   t.c.gpu_hours > 0, t.c.hour >= since, t.c.hour < until)
            .group_by(t.c.namespace, t.c.owner_kind, t.c.owner_name, t.c.queue, t.c.hour)
            .order_by(t.c.namespace, t.c.owner_kind, t.c.owner_name, t.c.queue, t.c.hour)
        )
        with self.engine.connect() as connection:
            first, last = connection.execute(held).one()
            if first is None:
                return {}
            rows = connection.execute(q)
            return runs_of((((ns, k, n, lq), h, g) for ns, k, n, lq, h, g in rows), first, last)

    def run_times(self, cluster: str, since: datetime, until: datetime) -> dict[tuple[str, str], RunTimes]:
        """(namespace, LocalQueue) -> the run times of its consumers' finished runs."""
        by_queue: dict[tuple[str, str], list[float]] = {}
        for (ns, _, _, lq), runs in self.run_hours(cluster, since, until).items():
            by_queue.setdefault((ns, lq), []).extend(runs)
        return {k: r for k, v in by_queue.items() if (r := RunTimes.of(v)) is not None}
