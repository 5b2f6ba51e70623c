"""The activity state in the bot's database (:mod:`actions.telemetry.activity`), per cluster and lookback
policy:

- ``activity_seen``: per telemetry key, the rows of :func:`actions.telemetry.activity.encode` (first
  sample, last sample, last busy, and whether seen or busy at the last step);
- ``activity_mark``: the sweep time the rows are known up to (``as_of``).

A write moves the mark from the ``as_of`` it read to the new one and, in the same transaction,
changes only the rows that changed: a GPU that stays seen and idle (or busy) is not rewritten.
Rows read or written are kept in memory while the mark says no one else wrote since, so a bot
that sweeps every few minutes reads them once. Works on SQLite and PostgreSQL; importing this
module registers the tables with :data:`actions.store.schema.metadata` (the migrations' models).
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Mapping

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from actions.store.database import Store
from actions.store.schema import UTCDateTime, metadata
from actions.telemetry.activity import Key, Row

# The telemetry key's columns, in the order of actions.sources.prometheus.promql.GROUP_LABELS.
KEY_COLUMNS = ("uuid", "gpu", "gpu_i_id", "gpu_i_profile", "hostname", "model_name", "namespace", "pod")
ROW_COLUMNS = ("first_sample", "last_sample", "seen_now", "last_active", "busy_now")

activity_seen = sa.Table(
    "activity_seen",
    metadata,
    sa.Column("cluster", sa.String(), primary_key=True),
    sa.Column("policy", sa.String(), primary_key=True),
    *[sa.Column(c, sa.String(), primary_key=True) for c in KEY_COLUMNS],
    sa.Column("first_sample", UTCDateTime(), nullable=True),
    sa.Column("last_sample", UTCDateTime(), nullable=True),
    sa.Column("seen_now", sa.Boolean(), nullable=False),
    sa.Column("last_active", UTCDateTime(), nullable=True),
    sa.Column("busy_now", sa.Boolean(), nullable=False),
)

activity_mark = sa.Table(
    "activity_mark",
    metadata,
    sa.Column("cluster", sa.String(), primary_key=True),
    sa.Column("policy", sa.String(), primary_key=True),
    sa.Column("as_of", UTCDateTime(), nullable=False),
)


def _time(unix: float | None) -> datetime | None:
    return None if unix is None else datetime.fromtimestamp(unix, tz=timezone.utc)


def _unix(t: datetime | None) -> float | None:
    return None if t is None else t.timestamp()


def _values(cluster: str, policy: str, key: Key, row: Row) -> dict:
    first, last, seen, active, busy = row
    return {"cluster": cluster, "policy": policy, **dict(zip(KEY_COLUMNS, key)), "first_sample": _time(first),
            "last_sample": _time(last), "seen_now": seen, "last_active": _time(active), "busy_now": busy}


class ActivityStore:
    """The activity state of every cluster in ``store``'s database (migrated by
    :meth:`actions.store.database.Store.migrate`). ``policy`` names what the answers depend on besides
    the series (the idle threshold, the lookback and its step, e.g. ``"1%/604800s/300s"``).
    Methods let SQLAlchemy's OperationalError through when the database cannot be reached."""

    def __init__(self, store: Store):
        self.engine = store.engine
        # (cluster, policy) -> (the mark's as_of, the rows as of it): what this process last read or wrote.
        self._known: dict[tuple[str, str], tuple[datetime, dict[Key, Row]]] = {}
        self._lock = threading.Lock()

    def read(self, cluster: str, policy: str) -> tuple[float | None, dict[Key, Row]]:
        """``(as_of, rows)`` of ``cluster`` under ``policy``: unix seconds the rows are known up
        to (None, and no rows: no state) and the rows per telemetry key (unix seconds)."""
        m, t = activity_mark, activity_seen
        with self.engine.connect() as connection:
            as_of = connection.execute(
                sa.select(m.c.as_of).where(m.c.cluster == cluster, m.c.policy == policy)
            ).scalar_one_or_none()
            if as_of is None:
                return None, {}
            with self._lock:
                known = self._known.get((cluster, policy))
            if known is not None and known[0] == as_of:
                return as_of.timestamp(), dict(known[1])
            q = sa.select(*[t.c[c] for c in KEY_COLUMNS], *[t.c[c] for c in ROW_COLUMNS])
            result = connection.execute(q.where(t.c.cluster == cluster, t.c.policy == policy)).all()
        n = len(KEY_COLUMNS)
        rows: dict[Key, Row] = {
            tuple(r[:n]): (_unix(r[n]), _unix(r[n + 1]), bool(r[n + 2]), _unix(r[n + 3]), bool(r[n + 4]))
            for r in result
        }
        with self._lock:
            self._known[(cluster, policy)] = (as_of, rows)
        return as_of.timestamp(), dict(rows)

    def write(self, cluster: str, policy: str, read_as_of: float | None, as_of: float, rows: Mapping[Key, Row]) -> bool:
        """Replace ``cluster``'s rows under ``policy`` by ``rows`` known up to ``as_of`` (unix
        seconds), given the ``read_as_of`` they were merged from (:meth:`read`'s, None: no
        state). One transaction; only the rows that changed are written. False (nothing
        changed) when another sweep moved the mark since: its state is as valid, and the next
        sweep reads it."""
        with self._lock:
            known = self._known.get((cluster, policy))
        # The mark as read (the datetime itself: a float does not always come back to the same microsecond).
        same = known is not None and read_as_of is not None and abs(known[0].timestamp() - read_as_of) < 1e-6
        before, mark = (known[1], known[0]) if same else (None, _time(read_as_of))
        when = _time(as_of)
        try:
            return self._write(cluster, policy, mark, when, before, rows)
        except IntegrityError:
            # Two first writes at once: the other's mark went in first.
            return False

    def _write(
        self, cluster: str, policy: str, mark: datetime | None, when: datetime, before: Mapping[Key, Row] | None,
        rows: Mapping[Key, Row],
    ) -> bool:
        m, t = activity_mark, activity_seen
        where = (m.c.cluster == cluster, m.c.policy == policy)
        with self.engine.begin() as connection:
            if mark is None:
                # A state someone else wrote since the read keeps the mark; ours goes.
                if connection.execute(sa.select(m.c.as_of).where(*where)).first() is not None:
                    return False
                connection.execute(m.insert().values(cluster=cluster, policy=policy, as_of=when))
            else:
                moved = sa.update(m).where(*where, m.c.as_of == mark).values(as_of=when)
                if connection.execute(moved).rowcount != 1:
                    return False
            key_match = [t.c.cluster == cluster, t.c.policy == policy,
                         *[t.c[c] == sa.bindparam(f"k_{c}") for c in KEY_COLUMNS]]
            if before is None:
                connection.execute(sa.delete(t).where(t.c.cluster == cluster, t.c.policy == policy))
                gone, changed = [], list(rows)
            else:
                gone = [k for k in before if k not in rows]
                changed = [k for k, row in rows.items() if before.get(k) != row]
                # A changed row is deleted and inserted again: the same on both backends, and few.
                gone += [k for k in changed if k in before]
            if gone:
                connection.execute(sa.delete(t).where(*key_match),
                                   [{f"k_{c}": v for c, v in zip(KEY_COLUMNS, k)} for k in gone])
            if changed:
                connection.execute(t.insert(), [_values(cluster, policy, k, rows[k]) for k in changed])
        with self._lock:
            self._known[(cluster, policy)] = (when, dict(rows))
        return True
