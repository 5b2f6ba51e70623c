"""The activity state in the bot's database (``activity_seen``): per cluster, lookback policy and
telemetry key, when the GPU was first seen, last seen and last busy within the lookback, and the
sweep time those answers are known up to (:mod:`actions.activity`).

One sweep replaces a (cluster, policy)'s rows in one transaction, so keys that left the lookback
go with it. Works on SQLite and PostgreSQL; importing this module registers the table with
:data:`actions.store.metadata` (the migrations' models).
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Mapping

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from actions.activity import Key, Seen
from actions.store import Store, UTCDateTime, metadata

log = logging.getLogger(__name__)

# The telemetry key's columns, in the order of actions.sources.prometheus.GROUP_LABELS.
KEY_COLUMNS = ("uuid", "gpu", "gpu_i_id", "gpu_i_profile", "hostname", "model_name", "namespace", "pod")

activity_seen = sa.Table(
    "activity_seen",
    metadata,
    sa.Column("cluster", sa.String(), primary_key=True),
    sa.Column("policy", sa.String(), primary_key=True),
    *[sa.Column(c, sa.String(), primary_key=True) for c in KEY_COLUMNS],
    sa.Column("first_sample", UTCDateTime(), nullable=True),
    sa.Column("last_sample", UTCDateTime(), nullable=True),
    sa.Column("last_active", UTCDateTime(), nullable=True),
    sa.Column("as_of", UTCDateTime(), nullable=False),
)


def _time(unix: float | None) -> datetime | None:
    return None if unix is None else datetime.fromtimestamp(unix, tz=timezone.utc)


def _unix(t: datetime | None) -> float | None:
    return None if t is None else t.timestamp()


class ActivityStore:
    """The activity state of every cluster in ``store``'s database (migrated by
    :meth:`actions.store.Store.migrate`). ``policy`` names what the answers depend on besides
    the series (the idle threshold and the lookback, e.g. ``"1%/604800s"``). Methods let
    SQLAlchemy's OperationalError through when the database cannot be reached."""

    def __init__(self, store: Store):
        self.engine = store.engine

    def read(self, cluster: str, policy: str) -> tuple[float | None, dict[Key, Seen]]:
        """``(as_of, answers)`` of ``cluster`` under ``policy``: unix seconds the answers are
        known up to (None: no state) and the answers per telemetry key (unix seconds)."""
        t = activity_seen
        q = sa.select(*[t.c[c] for c in KEY_COLUMNS], t.c.first_sample, t.c.last_sample, t.c.last_active, t.c.as_of)
        q = q.where(t.c.cluster == cluster, t.c.policy == policy)
        n = len(KEY_COLUMNS)
        with self.engine.connect() as connection:
            rows = connection.execute(q).all()
        if not rows:
            return None, {}
        # One sweep writes one as_of; the earliest is the safe one should they ever differ.
        as_of = min(r[-1] for r in rows).timestamp()
        return as_of, {tuple(r[:n]): Seen(_unix(r[n]), _unix(r[n + 1]), _unix(r[n + 2])) for r in rows}

    def write(self, cluster: str, policy: str, as_of: float, answers: Mapping[Key, Seen]) -> bool:
        """Replace ``cluster``'s state under ``policy`` by ``answers`` known up to ``as_of`` (unix
        seconds), in one transaction. False (nothing changed) when another writer stored its
        state at the same moment: that state is as valid, and the next sweep reads it."""
        t = activity_seen
        when = _time(as_of)
        rows = [
            {"cluster": cluster, "policy": policy, **dict(zip(KEY_COLUMNS, key)),
             "first_sample": _time(s.first_sample), "last_sample": _time(s.last_sample),
             "last_active": _time(s.last_active), "as_of": when}
            for key, s in answers.items()
        ]
        try:
            with self.engine.begin() as connection:
                connection.execute(sa.delete(t).where(t.c.cluster == cluster, t.c.policy == policy))
                if rows:
                    connection.execute(t.insert(), rows)
        except IntegrityError:
            log.info("activity state of %s (%s) written by another sweep at the same time; kept theirs", cluster, policy)
            return False
        return True
