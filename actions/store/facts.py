"""Facts the bot records about its own store once and then keeps (``store_fact``): what no
migration can know because it lives in the config, such as which cluster the requests of an older
version, stored without a cluster's name, were made in (:data:`HOME_CLUSTER`).
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field

from actions.store.audit import AuditEvent, detail_json
from actions.store.schema import StoreBase, StoreModel, UTCDateTime, as_utc
from actions.store.states import SYSTEM_ACTOR

# The cluster whose request keys and alert period keys have the form a bot of one cluster gives
# them, and where the requests of a version that stored no cluster's name were made: recorded at
# the first start that knows it (the first cluster of the config then), never changed afterwards.
HOME_CLUSTER = "home_cluster"


class StoreFact(StoreModel, table=True):
    """One fact about the store: its ``name`` (e.g. :data:`HOME_CLUSTER`), its ``value`` and
    when it was recorded (aware UTC). A fact is written once; the first writer wins."""

    __tablename__ = "store_fact"

    name: str = Field(sa_type=sa.String, primary_key=True)
    value: str = Field(sa_type=sa.String)
    recorded_at: datetime = Field(sa_type=UTCDateTime)


class StoreFacts(StoreBase):
    """Recording and reading the store's facts."""

    def fact(self, name: str) -> StoreFact | None:
        """The fact ``name`` as recorded, or None when it never was."""
        with self._session() as session:
            return session.get(StoreFact, name)

    def record_fact(self, name: str, value: str, now: datetime) -> StoreFact:
        """Record ``name`` = ``value`` at ``now`` unless it is recorded already, and return the
        fact as stored: the value given when this call recorded it (audited as ``fact-recorded``
        in the same transaction), else the one recorded before, unchanged (of replicas racing to
        record it, the database lets one win). Raises ValueError for an empty name or value."""
        now = as_utc(now)
        if not name or not value:
            raise ValueError(f"a fact needs a name and a value, got {name!r} = {value!r}")
        table = StoreFact.__table__
        statement = (
            self._insert(table).values(name=name, value=value, recorded_at=now)
            .on_conflict_do_nothing(index_elements=["name"]).returning(table.c.name)
        )
        with self._session() as session, session.begin():
            if session.connection().execute(statement).scalar() is not None:
                session.add(AuditEvent(
                    at=now, actor=SYSTEM_ACTOR, event="fact-recorded", detail_json=detail_json({"name": name, "value": value}),
                ))
        stored = self.fact(name)
        assert stored is not None  # recorded now or before; facts are never deleted
        return stored
