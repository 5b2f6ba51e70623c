"""Reads of single hours of the usage ledger (:mod:`actions.store.ledger`'s tables, read only):
which of some hours are held, the requested GPU-hours of those hours summed per namespace,
consumer, GPU model and pricing facts (the node left out), and the first day each namespace and
LocalQueue spent in a span of days. What a spend-anomaly judgement
(:mod:`actions.alerts.anomalies`) reads: a handful of hours, each one indexed query on
``(cluster, hour)``, however long the ledger is.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Iterable

import sqlalchemy as sa

from actions.model.ledger import REQUESTED, LedgerRow
from actions.store.database import Store
from actions.store.ledger import usage_day, usage_hour, usage_hour_filled

# Grouped per hour and key but the node: the price of a row depends on these, not on the node.
_KEY = ("hour", "namespace", "owner_kind", "owner_name", "queue", "namespace_team", "gpu_model",
        "instance_type", "capacity_type", "gpu_product")


class LedgerHours:
    """Single hours of the ledger in ``store``'s database. Methods let SQLAlchemy's
    OperationalError through when the database cannot be reached."""

    def __init__(self, store: Store):
        self.engine = store.engine

    def held(self, cluster: str, start: datetime, end: datetime) -> list[datetime]:
        """The hours of ``cluster`` written in ``[start, end)`` (any status), oldest first."""
        t = usage_hour_filled
        q = sa.select(t.c.hour).where(t.c.cluster == cluster, t.c.hour >= start, t.c.hour < end).order_by(t.c.hour)
        with self.engine.connect() as connection:
            return list(connection.execute(q).scalars())

    def held_of(self, cluster: str, hours: Iterable[datetime]) -> set[datetime]:
        """Those of ``hours`` written for ``cluster``."""
        wanted = sorted(set(hours))
        if not wanted:
            return set()
        t = usage_hour_filled
        q = sa.select(t.c.hour).where(t.c.cluster == cluster, t.c.hour.in_(wanted))
        with self.engine.connect() as connection:
            return set(connection.execute(q).scalars())

    def requested(self, cluster: str, hours: Iterable[datetime]) -> list[LedgerRow]:
        """The requested GPU-hours of ``cluster``'s ``hours``, summed per hour, namespace, consumer,
        LocalQueue, team label, GPU model and the node's pricing facts (``node`` empty). One
        aggregate query."""
        wanted = sorted(set(hours))
        if not wanted:
            return []
        t = usage_hour
        q = (
            sa.select(*[t.c[c] for c in _KEY], sa.func.sum(t.c.gpu_hours), sa.func.sum(t.c.idle_gpu_hours))
            .where(t.c.cluster == cluster, t.c.hour.in_(wanted), t.c.measure == REQUESTED)
            .group_by(*[t.c[c] for c in _KEY])
        )
        with self.engine.connect() as connection:
            result = connection.execute(q).all()
        return [
            LedgerRow(hour, cluster, REQUESTED, ns, kind, name, "", hh or 0.0, idle or 0.0, queue=queue,
                      namespace_team=team, gpu_model=model, instance_type=itype, capacity_type=capacity,
                      gpu_product=product)
            for hour, ns, kind, name, queue, team, model, itype, capacity, product, hh, idle in result
        ]

    def first_days(self, cluster: str, first: date, last: date) -> dict[tuple[str, str | None], date]:
        """``(namespace, LocalQueue or None)`` -> the first UTC day in ``[first, last]`` it had
        requested GPU-hours (from the day sums: one row per day and key)."""
        d = usage_day
        q = (
            sa.select(d.c.namespace, d.c.queue, sa.func.min(d.c.day))
            .where(d.c.cluster == cluster, d.c.measure == REQUESTED, d.c.day >= first, d.c.day <= last,
                   d.c.gpu_hours > 0)
            .group_by(d.c.namespace, d.c.queue)
        )
        with self.engine.connect() as connection:
            return {(ns, queue): day for ns, queue, day in connection.execute(q).all()}
