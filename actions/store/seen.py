"""The Slack requests already taken (``slack_request_seen``), so a replayed one is not handled
again: each request is claimed under its keys (its signature, its ``trigger_id`` or the Events
API's ``event_id``) until Slack's replay window is over, by whichever replica takes it first.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, col, delete

from actions.store.schema import StoreBase, StoreModel, UTCDateTime, as_utc


class SlackRequestSeen(StoreModel, table=True):
    """One key of a Slack request taken (``sig:<hex>``, ``trigger:<id>``, ``event:<id>``), kept
    until ``expires_at`` (aware UTC), after which Slack's own timestamp check refuses it anyway."""

    __tablename__ = "slack_request_seen"

    key: str = Field(sa_type=sa.String, primary_key=True)
    expires_at: datetime = Field(sa_type=UTCDateTime, index=True)


class SeenRequests(StoreBase):
    """Claiming Slack requests once."""

    def first_sight(self, keys: Sequence[str], now: datetime, until: datetime) -> bool:
        """Claim ``keys`` (one request's) until ``until``; True when none of them was claimed
        before (the request is new), False when any was (a replay, or Slack's retry of a request
        already taken). Keys that ran out before ``now`` are forgotten first. Of replicas racing
        for the same request, the database lets one win. Raises ValueError without keys."""
        if not keys:
            raise ValueError("a request is claimed under at least one key")
        now, until = as_utc(now), as_utc(until)
        table = SlackRequestSeen.__table__
        statement = (
            self._insert(table).values([{"key": k, "expires_at": until} for k in keys])
            .on_conflict_do_nothing(index_elements=["key"]).returning(table.c.key)
        )
        with self._session() as session, session.begin():
            session.execute(delete(SlackRequestSeen).where(col(SlackRequestSeen.expires_at) < now))
            claimed = session.connection().execute(statement).scalars().all()
        return len(claimed) == len(set(keys))
