"""The usage ledger's tables and their reads and writes (SQLAlchemy core, on the Store's engine).

- ``usage_hour``: one row per hour, cluster, measure (``held``/``capacity``), namespace, workload
  owner, node, GPU model and flavor (:class:`actions.ledger.LedgerRow`), with the node's pricing
  facts and the price in force when written. Indexed for the report's access paths: by
  (cluster, hour) for a period, and by (cluster, namespace, hour) for one team's namespaces.
- ``usage_hour_filled``: which hours are written (``filled``, ``partial`` or ``empty``) and when.
  An hour's rows and its filled row are written in one transaction, and only by whoever inserts
  the filled row: an hour is final once written, and two writers never write it twice.

Works on SQLite and PostgreSQL; importing this module registers the tables with
:data:`actions.store.metadata` (the migrations' models).
"""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Iterable, Mapping, Sequence

import sqlalchemy as sa

from actions.ledger import HOUR_STATUSES, DaySum, LedgerRow
from actions.store import Store, UTCDateTime, metadata

usage_hour = sa.Table(
    "usage_hour",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("hour", UTCDateTime(), nullable=False),
    sa.Column("day", sa.Date(), nullable=False),
    sa.Column("cluster", sa.String(), nullable=False),
    sa.Column("measure", sa.String(), nullable=False),
    sa.Column("namespace", sa.String(), nullable=False),
    sa.Column("namespace_team", sa.String(), nullable=True),
    sa.Column("owner_kind", sa.String(), nullable=False),
    sa.Column("owner_name", sa.String(), nullable=False),
    sa.Column("queue", sa.String(), nullable=True),
    sa.Column("node", sa.String(), nullable=False),
    sa.Column("node_pool", sa.String(), nullable=True),
    sa.Column("instance_type", sa.String(), nullable=True),
    sa.Column("capacity_type", sa.String(), nullable=True),
    sa.Column("gpu_product", sa.String(), nullable=True),
    sa.Column("replicas", sa.Integer(), nullable=False),
    sa.Column("gpu_model", sa.String(), nullable=True),
    sa.Column("flavor", sa.String(), nullable=True),
    sa.Column("gpu_hours", sa.Float(), nullable=False),
    sa.Column("idle_gpu_hours", sa.Float(), nullable=False),
    sa.Column("usd_per_gpu_hour", sa.Float(), nullable=True),
    sa.Column("price_source", sa.String(), nullable=True),
    sa.CheckConstraint("measure IN ('capacity', 'held')", name="measure"),
    sa.Index("ix_usage_hour_cluster_hour", "cluster", "hour"),
    sa.Index("ix_usage_hour_cluster_namespace_hour", "cluster", "namespace", "hour"),
)

usage_hour_filled = sa.Table(
    "usage_hour_filled",
    metadata,
    sa.Column("cluster", sa.String(), primary_key=True),
    sa.Column("hour", UTCDateTime(), primary_key=True),
    sa.Column("status", sa.String(), nullable=False),
    sa.Column("rows", sa.Integer(), nullable=False),
    sa.Column("written_at", UTCDateTime(), nullable=False),
    sa.Column("detail", sa.Text(), nullable=True),
    sa.CheckConstraint("status IN ('empty', 'filled', 'partial')", name="status"),
)

_ROW_FIELDS = [f.name for f in fields(LedgerRow)]
# The key a period's sum is taken over: everything but the hour and the figures.
_KEY = [c for c in _ROW_FIELDS if c not in ("hour", "gpu_hours", "idle_gpu_hours", "usd_per_gpu_hour", "price_source")]
BATCH_ROWS = 5000


def _insert(engine: sa.Engine):
    # An INSERT that resolves a conflict itself, so racing writers see no IntegrityError.
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(usage_hour_filled)


class LedgerStore:
    """The ledger in ``store``'s database (migrated by :meth:`actions.store.Store.migrate`).
    Methods raise ValueError for naive datetimes and let SQLAlchemy's OperationalError through
    when the database cannot be reached."""

    def __init__(self, store: Store):
        self.store = store
        self.engine = store.engine

    def write_hour(
        self, cluster: str, hour: datetime, rows: Sequence[LedgerRow], status: str, now: datetime,
        detail: str | None = None,
    ) -> bool:
        """Write one hour's ``rows`` and mark it ``status`` (``filled``/``partial``/``empty``),
        in one transaction; False (and nothing written) when the hour was already written.
        Rows go in batches of :data:`BATCH_ROWS`. Raises ValueError for an unknown status or a
        row of another hour or cluster."""
        if status not in HOUR_STATUSES:
            raise ValueError(f"status must be one of {', '.join(HOUR_STATUSES)}, got {status!r}")
        for r in rows:
            if r.hour != hour or r.cluster != cluster:
                raise ValueError(f"a row of {r.cluster} {r.hour.isoformat()} among {cluster} {hour.isoformat()}'s")
        claim = (
            _insert(self.engine)
            .values(cluster=cluster, hour=hour, status=status, rows=len(rows), written_at=now, detail=detail)
            .on_conflict_do_nothing(index_elements=["cluster", "hour"])
        )
        with self.engine.begin() as connection:
            if connection.execute(claim).rowcount != 1:
                return False
            values = [{**{k: getattr(r, k) for k in _ROW_FIELDS}, "day": r.day} for r in rows]
            for i in range(0, len(values), BATCH_ROWS):
                connection.execute(usage_hour.insert(), values[i : i + BATCH_ROWS])
        return True

    def held_hours(self, cluster: str, start: datetime, end: datetime) -> dict[datetime, str]:
        """Hour start -> status of the hours written in ``[start, end)``."""
        t = usage_hour_filled
        q = sa.select(t.c.hour, t.c.status).where(t.c.cluster == cluster, t.c.hour >= start, t.c.hour < end)
        with self.engine.connect() as connection:
            return {h: s for h, s in connection.execute(q)}

    def hours(self, cluster: str) -> list[tuple[datetime, str, int, datetime, str | None]]:
        """Every written hour of ``cluster``: ``(hour, status, rows, written_at, detail)``, oldest first."""
        t = usage_hour_filled
        q = sa.select(t.c.hour, t.c.status, t.c.rows, t.c.written_at, t.c.detail).where(t.c.cluster == cluster)
        with self.engine.connect() as connection:
            return [tuple(r) for r in connection.execute(q.order_by(t.c.hour))]  # type: ignore[misc]

    def rows(self, cluster: str, hour: datetime) -> list[LedgerRow]:
        """The rows written for ``cluster``'s hour starting at ``hour``, as written."""
        t = usage_hour
        q = sa.select(*[t.c[k] for k in _ROW_FIELDS]).where(t.c.cluster == cluster, t.c.hour == hour)
        with self.engine.connect() as connection:
            return [LedgerRow(**dict(r._mapping)) for r in connection.execute(q.order_by(t.c.id))]

    def sums(
        self, cluster: str, ranges: Iterable[tuple[datetime, datetime]], namespaces: Sequence[str] | None = None
    ) -> tuple[list[LedgerRow], list[DaySum]]:
        """The rows of the hours in ``ranges`` (``[first, end)`` each) summed per key, each with
        the latest hour its key was seen, and per (UTC day, namespace, node); ``namespaces``
        narrows to those (the team index). Two aggregate queries per range, summed in the database."""
        t = usage_hour
        rows: dict[tuple, list] = {}
        days: dict[tuple, list[float]] = {}
        with self.engine.connect() as connection:
            for first, end in ranges:
                where = [t.c.cluster == cluster, t.c.hour >= first, t.c.hour < end]
                if namespaces is not None:
                    where.append(t.c.namespace.in_(list(namespaces)) | (t.c.measure == "capacity"))
                key = [t.c[k] for k in _KEY]
                q = sa.select(*key, sa.func.max(t.c.hour), sa.func.sum(t.c.gpu_hours), sa.func.sum(t.c.idle_gpu_hours))
                for r in connection.execute(q.where(*where).group_by(*key)):
                    k, (hour, hours, idle) = tuple(r[: len(_KEY)]), r[len(_KEY) :]
                    acc = rows.setdefault(k, [hour, 0.0, 0.0])
                    acc[0], acc[1], acc[2] = max(acc[0], hour), acc[1] + hours, acc[2] + idle
                dkey = [t.c.day, t.c.namespace, t.c.node]
                q = sa.select(*dkey, sa.func.sum(t.c.gpu_hours), sa.func.sum(t.c.idle_gpu_hours))
                for day, ns, node, hours, idle in connection.execute(
                    q.where(*where, t.c.measure == "held").group_by(*dkey)
                ):
                    acc2 = days.setdefault((day, ns, node), [0.0, 0.0])
                    acc2[0] += hours
                    acc2[1] += idle
        out = [
            LedgerRow(hour=hour, gpu_hours=hours, idle_gpu_hours=idle, **dict(zip(_KEY, k)))
            for k, (hour, hours, idle) in rows.items()
        ]
        return out, [DaySum(d, ns, node, h, i) for (d, ns, node), (h, i) in days.items()]

    def drop_before(self, cutoff: datetime) -> int:
        """Delete every cluster's rows and hour marks older than ``cutoff``; the rows deleted."""
        with self.engine.begin() as connection:
            n = connection.execute(sa.delete(usage_hour).where(usage_hour.c.hour < cutoff)).rowcount
            connection.execute(sa.delete(usage_hour_filled).where(usage_hour_filled.c.hour < cutoff))
        return n

    def counts(self, cluster: str) -> Mapping[str, object]:
        """Rows, oldest and newest hour held for ``cluster``."""
        t = usage_hour
        q = sa.select(sa.func.count(), sa.func.min(t.c.hour), sa.func.max(t.c.hour)).where(t.c.cluster == cluster)
        with self.engine.connect() as connection:
            n, oldest, newest = connection.execute(q).one()
        return {"rows": n, "oldest": oldest, "newest": newest}
