"""The ledger's advice facts per hour (:class:`~actions.model.advice_hours.AdviceHour`), beside the
usage rows of :mod:`actions.store.ledger` (SQLAlchemy core, on the Store's engine):

- ``advice_pod_hour``: per cluster, hour and pod its peaks, GPU-steps, busy GPUs at each step
  (encoded, one character a step), mean power at the hour mark and, for pods of several GPU
  containers, each container's busy steps;
- ``advice_namespace_hour``: per namespace and GPU model the whole GPUs at the hour mark;
- ``advice_node_hour``: per node and GPU model its GPUs and the idle ones at the mark;
- ``advice_hour_filled``: which hours are written, with the busy threshold they were read with.
  An hour's rows are written in one transaction by whoever inserts this row.

Reads add the hours up per pod in the database (peaks, sums, the busy steps concatenated), so a
30-day read returns one row per pod, not 720. Works on SQLite and PostgreSQL; importing this module
registers the tables with :data:`actions.store.schema.metadata`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Iterable, Sequence

import sqlalchemy as sa

from actions.ledger.advice_tally import AdviceTally
from actions.model.advice_hours import STEP_SECONDS, AdviceHour
from actions.model.times import HOUR, floor_hour
from actions.store.database import Store
from actions.store.ledger import BATCH_ROWS, _insert
from actions.store.schema import UTCDateTime, metadata


def _key() -> list[sa.Column]:
    return [sa.Column("cluster", sa.String(), nullable=False), sa.Column("hour", UTCDateTime(), nullable=False)]


advice_pod_hour = sa.Table(
    "advice_pod_hour",
    metadata,
    *_key(),
    sa.Column("namespace", sa.String(), nullable=False),
    sa.Column("pod", sa.String(), nullable=False),
    sa.Column("model_name", sa.String(), nullable=False),
    sa.Column("peak_fb_mib", sa.Float(), nullable=True),
    sa.Column("peak_engine_pct", sa.Float(), nullable=True),
    sa.Column("engine_signal", sa.String(), nullable=True),
    sa.Column("gpu_steps", sa.Integer(), nullable=False),
    sa.Column("busy", sa.Text(), nullable=False),
    sa.Column("power_w", sa.Float(), nullable=True),
    sa.Column("containers", sa.Text(), nullable=True),
    sa.Index("ix_advice_pod_hour_cluster_hour", "cluster", "hour"),
)
advice_namespace_hour = sa.Table(
    "advice_namespace_hour",
    metadata,
    *_key(),
    sa.Column("namespace", sa.String(), nullable=False),
    sa.Column("model_name", sa.String(), nullable=False),
    sa.Column("gpus", sa.Integer(), nullable=False),
    sa.Index("ix_advice_namespace_hour_cluster_hour", "cluster", "hour"),
)
advice_node_hour = sa.Table(
    "advice_node_hour",
    metadata,
    *_key(),
    sa.Column("node", sa.String(), nullable=False),
    sa.Column("model_name", sa.String(), nullable=False),
    sa.Column("gpus", sa.Integer(), nullable=False),
    sa.Column("idle", sa.Integer(), nullable=False),
    sa.Index("ix_advice_node_hour_cluster_node_hour", "cluster", "node", "hour"),
)
advice_hour_filled = sa.Table(
    "advice_hour_filled",
    metadata,
    sa.Column("cluster", sa.String(), primary_key=True),
    sa.Column("hour", UTCDateTime(), primary_key=True),
    sa.Column("busy_engine_pct", sa.Float(), nullable=False),
    sa.Column("pods", sa.Integer(), nullable=False),
    sa.Column("written_at", UTCDateTime(), nullable=False),
)
# Kubernetes container names are DNS labels, so neither separator can occur in one.
_PAIR, _NAME = ";", "="


def _containers(pairs: Sequence[tuple[str, str]]) -> str | None:
    return _PAIR.join(f"{name}{_NAME}{busy}" for name, busy in pairs) or None


def _where(t: sa.Table, cluster: str, ranges: Sequence[tuple[datetime, datetime]]) -> list:
    return [t.c.cluster == cluster, sa.or_(*[sa.and_(t.c.hour >= a, t.c.hour < b) for a, b in ranges])]


class AdviceHourStore:
    """The advice facts in ``store``'s database (migrated by
    :meth:`actions.store.database.Store.migrate`). Methods raise ValueError for a piece that is
    not a whole hour and let SQLAlchemy's OperationalError through when the database cannot be
    reached."""

    def __init__(self, store: Store):
        self.store = store
        self.engine = store.engine

    def write_hour(self, cluster: str, hour: AdviceHour, now: datetime) -> bool:
        """Write the whole hour ``hour`` (``(h, h + 1h]``); False (nothing written) when it was
        written before. Raises ValueError for another piece."""
        start = hour.start
        if hour.end - start != HOUR or start != floor_hour(start):
            raise ValueError(f"the ledger keeps whole hours, got {start.isoformat()} to {hour.end.isoformat()}")
        claim = (
            _insert(self.engine, advice_hour_filled)
            .values(cluster=cluster, hour=start, busy_engine_pct=hour.busy_engine_pct, pods=len(hour.pods), written_at=now)
            .on_conflict_do_nothing(index_elements=["cluster", "hour"])
        )
        pods = [dict(cluster=cluster, hour=start, namespace=p.namespace, pod=p.pod, model_name=p.model_name,
                     peak_fb_mib=p.peak_fb_mib, peak_engine_pct=p.peak_engine_pct, engine_signal=p.engine_signal,
                     gpu_steps=p.gpu_steps, busy=p.busy, power_w=p.power_w, containers=_containers(p.containers))
                for p in hour.pods]
        spaces = [dict(cluster=cluster, hour=start, namespace=m.namespace, model_name=m.model_name, gpus=m.gpus)
                  for m in hour.namespaces]
        nodes = [dict(cluster=cluster, hour=start, node=n.node, model_name=n.model_name, gpus=n.gpus, idle=n.idle)
                 for n in hour.nodes]
        with self.engine.begin() as connection:
            if connection.execute(claim).rowcount != 1:
                return False
            for table, values in ((advice_pod_hour, pods), (advice_namespace_hour, spaces), (advice_node_hour, nodes)):
                for i in range(0, len(values), BATCH_ROWS):
                    connection.execute(table.insert(), values[i : i + BATCH_ROWS])
        return True

    def held(self, cluster: str, start: datetime, end: datetime, busy_engine_pct: float | None = None) -> set[datetime]:
        """The hours in ``[start, end)`` written, only those read with ``busy_engine_pct``
        (percent 0-100) when given."""
        t = advice_hour_filled
        q = sa.select(t.c.hour).where(t.c.cluster == cluster, t.c.hour >= start, t.c.hour < end)
        if busy_engine_pct is not None:
            q = q.where(t.c.busy_engine_pct == busy_engine_pct)
        with self.engine.connect() as connection:
            return set(connection.execute(q).scalars())

    def add_pods(self, tally: AdviceTally, cluster: str, ranges: Sequence[tuple[datetime, datetime]]) -> None:
        """Add the pods' facts of the hours in ``ranges`` (``[first, end)`` hour starts) to
        ``tally``: summed per pod and signal by the database, steps one by one for the pods of
        consumers of several, containers for ``tally.container_pods``."""
        if not ranges:
            return
        t = advice_pod_hour
        joined = (sa.func.string_agg(t.c.busy, sa.literal_column("''")) if self.engine.dialect.name == "postgresql"
                  else sa.func.group_concat(t.c.busy, ""))
        sums = sa.select(
            t.c.namespace, t.c.pod, t.c.engine_signal, sa.func.max(t.c.model_name), sa.func.max(t.c.peak_fb_mib),
            sa.func.max(t.c.peak_engine_pct), sa.func.sum(t.c.gpu_steps), sa.func.coalesce(sa.func.sum(t.c.power_w), 0.0),
            sa.func.count(t.c.power_w), joined,
        ).where(*_where(t, cluster, ranges)).group_by(t.c.namespace, t.c.pod, t.c.engine_signal)
        with self.engine.connect() as connection:
            for ns, pod, signal, model, fb, engine, steps, power, marks, busy in connection.execute(sums):
                peaks = {signal or "": engine} if engine is not None else {}
                tally.add_pod(ns, pod, model or "", fb, peaks, int(steps or 0), float(power), int(marks), busy or "")
            stepped = sorted({(ns, p) for ns, pods in tally.consumers.values() for p in pods})
            for ns, pod, hour, busy in self._picked(connection, t.c.busy, cluster, ranges, stepped):
                tally.add_steps(ns, pod, hour + timedelta(seconds=STEP_SECONDS), busy)
            for ns, pod, _, text in self._picked(connection, t.c.containers, cluster, ranges, tally.container_pods):
                for pair in (text or "").split(_PAIR):
                    if pair:
                        name, _, busy = pair.partition(_NAME)
                        tally.add_container(ns, pod, name, busy)

    @staticmethod
    def _picked(connection, column, cluster: str, ranges, pods: Iterable[tuple[str, str]]):
        """``(namespace, pod, hour, column)`` of ``pods`` only: filtered by namespace and pod name
        in the database (a superset), exactly here."""
        wanted = set(pods)
        if not wanted:
            return
        t = advice_pod_hour
        q = sa.select(t.c.namespace, t.c.pod, t.c.hour, column).where(
            *_where(t, cluster, ranges), t.c.namespace.in_(sorted({ns for ns, _ in wanted})),
            t.c.pod.in_(sorted({p for _, p in wanted})), column.is_not(None))
        for row in connection.execute(q):
            if (row[0], row[1]) in wanted:
                yield row

    def add_marks(self, tally: AdviceTally, cluster: str, ranges: Sequence[tuple[datetime, datetime]]) -> None:
        """Add the hour marks of the hours in ``ranges`` to ``tally``: the teams' whole GPUs, and
        the reserved nodes' GPUs and idle ones summed per model by the database."""
        if not ranges:
            return
        t, n = advice_namespace_hour, advice_node_hour
        teams = sa.select(t.c.hour, t.c.namespace, t.c.model_name, t.c.gpus).where(
            *_where(t, cluster, ranges), t.c.namespace.in_(sorted({ns for v in tally.teams.values() for ns in v})))
        with self.engine.connect() as connection:
            for hour, ns, model, gpus in connection.execute(teams):
                tally.add_namespace_mark(hour + HOUR, ns, model, gpus)
            if not tally.reserved_nodes:
                return
            reserved = sa.select(n.c.hour, n.c.model_name, sa.func.sum(n.c.gpus), sa.func.sum(n.c.idle)).where(
                *_where(n, cluster, ranges), n.c.node.in_(sorted(tally.reserved_nodes))
            ).group_by(n.c.hour, n.c.model_name)
            for hour, model, gpus, idle in connection.execute(reserved):
                tally.add_reserved(model, int(gpus), int(idle))
                tally.add_last_mark(model, hour + HOUR, int(gpus))

    def drop_before(self, cutoff: datetime) -> int:
        """Delete every cluster's advice facts older than ``cutoff``; the pod rows deleted."""
        with self.engine.begin() as connection:
            n = connection.execute(sa.delete(advice_pod_hour).where(advice_pod_hour.c.hour < cutoff)).rowcount
            for table in (advice_namespace_hour, advice_node_hour, advice_hour_filled):
                connection.execute(sa.delete(table).where(table.c.hour < cutoff))
        return n
