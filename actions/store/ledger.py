"""The usage ledger's tables and their reads and writes (SQLAlchemy core, on the Store's engine).

- ``usage_hour``: one row per hour, cluster, measure (``held``/``capacity``), namespace, consumer,
  node, GPU model and sharing (:class:`actions.model.ledger.LedgerRow`), with the node's pricing
  facts and the price in force when written, and the GPUs' energy (kWh, the part in idle steps and
  the GPU-hours it was measured over; 0 in rows written before the ledger kept it). Indexed for
  the report's access paths: by (cluster, hour) for a period, and by (cluster, namespace, hour)
  for one team's namespaces.
- ``usage_day``: the same rows summed per UTC day as the hours are written (in the same
  transaction), so a month's report sums 30 rows per key instead of 720; a period's whole days are
  read from it, its partial days from ``usage_hour``.
- ``usage_hour_filled``: which hours are written (``filled``, ``partial`` or ``empty``) and when.
  An hour's rows and its filled row are written in one transaction, and only by whoever inserts
  the filled row: an hour is final once written, and two writers never write it twice.

Works on SQLite and PostgreSQL; importing this module registers the tables with
:data:`actions.store.schema.metadata` (the migrations' models).
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from dataclasses import fields
from datetime import date, datetime, timedelta, timezone
from typing import Iterable, Iterator, Mapping, Sequence

import sqlalchemy as sa

from actions.model.ledger import HOUR_STATUSES, REQUESTED, LedgerRow
from actions.model.usage import DailyUsage
from actions.store.database import Store
from actions.store.schema import UTCDateTime, metadata

# The energy figures of a row (LedgerRow's field names and the columns'); rows written before the
# ledger kept energy read them as 0 (server default): not measured.
ENERGY = ("energy_kwh", "idle_energy_kwh", "energy_gpu_hours")


def _energy_columns() -> list[sa.Column]:
    return [sa.Column(c, sa.Float(), nullable=False, server_default="0") for c in ENERGY]


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
    *_energy_columns(),
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

# LedgerRow fields whose usage_hour/usage_day column keeps its published name.
_COLUMN_OF = {"consumer_kind": "owner_kind", "consumer_name": "owner_name", "sharing": "flavor"}
_ROW_FIELDS = [f.name for f in fields(LedgerRow)]
_ROW_COLUMNS = [_COLUMN_OF.get(f, f) for f in _ROW_FIELDS]
# The key a period's sum is taken over: everything but the hour and the figures.
_FIGURES = ("hour", "gpu_hours", "idle_gpu_hours", "usd_per_gpu_hour", "price_source", *ENERGY)
_KEY_FIELDS = [f for f in _ROW_FIELDS if f not in _FIGURES]
_KEY_COLUMNS = [_COLUMN_OF.get(f, f) for f in _KEY_FIELDS]

# The figures summed per key (and per day in usage_day).
_SUMMED = ("gpu_hours", "idle_gpu_hours", *ENERGY)
# A period's sums in LedgerRow's field order: the latest hour, the key, the sums; the price
# columns (not summed) are selected as NULL, so each row is still built positionally.
_SUM_COLUMNS = _ROW_COLUMNS
_AT_SUMMED = [_SUM_COLUMNS.index(c) for c in _SUMMED]
_NOT_SUMMED = ("usd_per_gpu_hour", "price_source")

usage_day = sa.Table(
    "usage_day",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
    sa.Column("day", sa.Date(), nullable=False),
    sa.Column("key_hash", sa.String(40), nullable=False),
    *[sa.Column(c.name, c.type, nullable=c.nullable) for c in usage_hour.columns if c.name in _KEY_COLUMNS],
    sa.Column("last_hour", UTCDateTime(), nullable=False),
    sa.Column("hours", sa.Integer(), nullable=False),
    sa.Column("gpu_hours", sa.Float(), nullable=False),
    sa.Column("idle_gpu_hours", sa.Float(), nullable=False),
    *_energy_columns(),
    sa.UniqueConstraint("cluster", "day", "key_hash"),
)
# daily_sums' figures, in DailyUsage's order after the key.
_DAILY = ("gpu_hours", "idle_gpu_hours", "energy_kwh", "idle_energy_kwh")
BATCH_ROWS = 5000
# A session's own node -> group map for daily_sums (a temporary table: never migrated, never shared).
_GROUPS = sa.Table("ledger_node_group", sa.MetaData(), sa.Column("node", sa.Text()), sa.Column("grp", sa.Text()))


def _insert(engine: sa.Engine, table: sa.Table = usage_hour_filled):
    # An INSERT that resolves a conflict itself, so racing writers see no IntegrityError.
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


def key_hash(row: LedgerRow) -> str:
    """A stable digest of a row's key (:data:`_KEY_FIELDS`): the day table's unique key, since a unique
    index over nullable columns would let NULLs differ."""
    text = "\x1f".join("\x00" if getattr(row, k) is None else str(getattr(row, k)) for k in _KEY_FIELDS)
    return hashlib.sha1(text.encode()).hexdigest()


def day_rows(rows: Sequence[LedgerRow]) -> list[dict]:
    """``usage_day`` values of one hour's ``rows``: per key, that hour's sums."""
    out: dict[str, dict] = {}
    for r in rows:
        k = key_hash(r)
        if k in out:
            for f in _SUMMED:
                out[k][f] += getattr(r, f)
            continue
        key = {c: getattr(r, f) for f, c in zip(_KEY_FIELDS, _KEY_COLUMNS)}
        out[k] = {"day": r.day, "key_hash": k, **key, "last_hour": r.hour, "hours": 1,
                  **{f: getattr(r, f) for f in _SUMMED}}
    return list(out.values())


def _whole_days(first: datetime, end: datetime) -> tuple[date, date]:
    """``(d0, d1)``: the UTC days ``[d0, d1)`` that lie whole inside ``[first, end)``."""
    d0 = first.astimezone(timezone.utc).date()
    if datetime(d0.year, d0.month, d0.day, tzinfo=timezone.utc) < first:
        d0 += timedelta(days=1)
    d1 = end.astimezone(timezone.utc).date()
    return d0, max(d0, d1)


def _midnight(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=timezone.utc)


class LedgerStore:
    """The ledger in ``store``'s database (migrated by :meth:`actions.store.database.Store.migrate`).
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
            values = [{**{c: getattr(r, f) for f, c in zip(_ROW_FIELDS, _ROW_COLUMNS)}, "day": r.day} for r in rows]
            for i in range(0, len(values), BATCH_ROWS):
                connection.execute(usage_hour.insert(), values[i : i + BATCH_ROWS])
            days = day_rows(rows)
            if days:
                ins = _insert(self.engine, usage_day)
                d = usage_day.c
                upsert = ins.on_conflict_do_update(
                    index_elements=["cluster", "day", "key_hash"],
                    set_={
                        **{f: d[f] + ins.excluded[f] for f in _SUMMED},
                        "hours": d.hours + ins.excluded.hours,
                        "last_hour": sa.case((ins.excluded.last_hour > d.last_hour, ins.excluded.last_hour),
                                             else_=d.last_hour),
                    },
                )
                for i in range(0, len(days), BATCH_ROWS):
                    connection.execute(upsert, days[i : i + BATCH_ROWS])
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
        q = sa.select(*[t.c[c] for c in _ROW_COLUMNS]).where(t.c.cluster == cluster, t.c.hour == hour)
        with self.engine.connect() as connection:
            return [LedgerRow(*r) for r in connection.execute(q.order_by(t.c.id))]

    def key_sums(
        self, cluster: str, ranges: Iterable[tuple[datetime, datetime]], namespaces: Sequence[str] | None = None
    ) -> list[LedgerRow]:
        """The rows of the hours in ``ranges`` (``[first, end)`` each, hours the ledger holds)
        summed per key, each with the latest hour its key was seen; ``namespaces`` narrows to
        those (the team index). Whole days come from ``usage_day``, the hours around them from
        ``usage_hour``; each is one aggregate query summed in the database."""
        spans = []
        with self._connection() as connection:
            for t, where, last in self._spans(cluster, ranges, namespaces):
                figures = {"hour": sa.func.max(last), **{f: sa.null() for f in _NOT_SUMMED},
                           **{f: sa.func.sum(t.c[f]) for f in _SUMMED}}
                q = sa.select(*[figures[f] if f in figures else t.c[f] for f in _SUM_COLUMNS]).where(*where)
                # .all(): one fetchall, not a fetchone per row (a month of a large fleet is 100,000s of rows).
                spans.append(connection.execute(q.group_by(*[t.c[k] for k in _KEY_COLUMNS])).all())
        if len(spans) == 1:
            # Columns in LedgerRow's field order: each row is built positionally, no dict per row.
            return [LedgerRow(*r) for r in spans[0]]
        at = [_SUM_COLUMNS.index(k) for k in _KEY_COLUMNS]
        rows: dict[tuple, list] = {}
        for result in spans:
            for r in result:
                k = tuple(r[i] for i in at)
                acc = rows.get(k)
                if acc is None:
                    rows[k] = list(r)
                    continue
                acc[0] = max(acc[0], r[0])
                for i in _AT_SUMMED:
                    acc[i] += r[i]
        return [LedgerRow(*r) for r in rows.values()]

    def daily_sums(
        self, cluster: str, ranges: Iterable[tuple[datetime, datetime]], namespaces: Sequence[str] | None = None,
        groups: Mapping[str, str] | None = None,
    ) -> list[DailyUsage]:
        """The requested GPU-hours of the hours in ``ranges`` per (UTC day, namespace, node), idle at
        most the GPU-hours, with their energy (kWh, idle kWh); ``namespaces`` narrows to those.
        With ``groups`` (node -> the node it is priced as, :func:`actions.ledger.rows.price_groups`)
        the nodes of a group are summed under their group's node in the database: a month of a
        large fleet is then a few thousand rows instead of 100,000s, priced the same. One
        aggregate query per span."""
        days: dict[tuple, list[float]] = {}
        with self._connection() as connection:
            if groups:
                # A temporary table: its creation is rolled back with the read on PostgreSQL, and
                # dropped by hand where DDL is outside the transaction (SQLite).
                connection.execute(sa.text(f"CREATE TEMPORARY TABLE IF NOT EXISTS {_GROUPS.name} (node TEXT, grp TEXT)"))
                connection.execute(_GROUPS.delete())
                connection.execute(_GROUPS.insert(), [{"node": n, "grp": g} for n, g in groups.items()])
            for t, where, _ in self._spans(cluster, ranges, namespaces):
                node: sa.ColumnElement = t.c.node
                joined: sa.FromClause = t
                if groups:
                    joined = t.outerjoin(_GROUPS, _GROUPS.c.node == t.c.node)
                    node = sa.func.coalesce(_GROUPS.c.grp, t.c.node)
                q = (
                    sa.select(t.c.day, t.c.namespace, node, *[sa.func.sum(t.c[f]) for f in _DAILY])
                    .select_from(joined)
                    .where(*where, t.c.measure == REQUESTED)
                    .group_by(t.c.day, t.c.namespace, node)
                )
                for day, ns, n, *sums in connection.execute(q).all():
                    acc = days.get((day, ns, n))
                    if acc is None:
                        days[(day, ns, n)] = sums
                    else:
                        for i, x in enumerate(sums):
                            acc[i] += x
            if groups:
                connection.execute(sa.text(f"DROP TABLE IF EXISTS {_GROUPS.name}"))
            connection.rollback()
        return [DailyUsage(day, ns, n, hh, min(i, hh), e, ie) for (day, ns, n), (hh, i, e, ie) in days.items()]

    @contextmanager
    def _connection(self) -> Iterator[sa.Connection]:
        with self.engine.connect() as connection:
            if connection.dialect.name == "postgresql":
                # A month of a large fleet groups 100,000s of rows: hash them in memory, not in batches on disk.
                connection.execute(sa.text("SET LOCAL work_mem = '64MB'"))
            yield connection

    @staticmethod
    def _spans(
        cluster: str, ranges: Iterable[tuple[datetime, datetime]], namespaces: Sequence[str] | None
    ) -> Iterator[tuple[sa.Table, list, sa.ColumnElement]]:
        """``(table, where, last-hour column)`` per piece of ``ranges``: whole UTC days from
        ``usage_day``, the hours around them from ``usage_hour``."""
        h, d = usage_hour, usage_day

        def span(t: sa.Table, where: list, last) -> tuple[sa.Table, list, sa.ColumnElement]:
            where = [t.c.cluster == cluster, *where]
            if namespaces is not None:
                where.append(t.c.namespace.in_(list(namespaces)) | (t.c.measure == "capacity"))
            return t, where, last

        for first, end in ranges:
            d0, d1 = _whole_days(first, end)
            if d0 == d1:
                yield span(h, [h.c.hour >= first, h.c.hour < end], h.c.hour)
                continue
            yield span(d, [d.c.day >= d0, d.c.day < d1], d.c.last_hour)
            for a, b in ((first, _midnight(d0)), (_midnight(d1), end)):
                if a < b:
                    yield span(h, [h.c.hour >= a, h.c.hour < b], h.c.hour)

    def drop_before(self, cutoff: datetime) -> int:
        """Delete every cluster's rows and hour marks older than ``cutoff``; the rows deleted."""
        with self.engine.begin() as connection:
            n = connection.execute(sa.delete(usage_hour).where(usage_hour.c.hour < cutoff)).rowcount
            # A day the cutoff splits keeps its day rows; it is no longer whole, so reads take its hours.
            connection.execute(sa.delete(usage_day).where(usage_day.c.day < cutoff.astimezone(timezone.utc).date()))
            connection.execute(sa.delete(usage_hour_filled).where(usage_hour_filled.c.hour < cutoff))
        return n

    def counts(self, cluster: str) -> Mapping[str, object]:
        """Rows, oldest and newest hour held for ``cluster``."""
        t = usage_hour
        q = sa.select(sa.func.count(), sa.func.min(t.c.hour), sa.func.max(t.c.hour)).where(t.c.cluster == cluster)
        with self.engine.connect() as connection:
            n, oldest, newest = connection.execute(q).one()
        return {"rows": n, "oldest": oldest, "newest": newest}
