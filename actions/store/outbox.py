"""Each request's Slack message as desired state: the store holds the version a message must
show; housekeeping claims the due ones, writes them and records what Slack shows, retrying with
backoff after a failure.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select

from actions.store.audit import AuditEvent, detail_json
from actions.store.requests import ActionRequest
from actions.store.schema import StoreBase, as_utc
from actions.store.states import (
    SYSTEM_ACTOR,
)


class MessageOutbox(StoreBase):
    """Each request's Slack message as desired state: which messages are due, who writes one, and
    whether Slack shows it."""

    def messages_due(self, now: datetime, changed_since: datetime, limit: int = 100) -> list[ActionRequest]:
        """Requests whose message does not show their current ``version`` yet, changed at or
        after ``changed_since``, whose retry time (``sync_due_at``) has come and that no sync
        holds (``sync_lease_until``), oldest change first, at most ``limit``."""
        now, since = as_utc(now), as_utc(changed_since, "changed_since")
        r = ActionRequest
        query = (
            select(r)
            .where(
                sa.or_(col(r.shown_version).is_(None), col(r.shown_version) != col(r.version)),
                col(r.updated_at) >= since,
                sa.or_(col(r.sync_due_at).is_(None), col(r.sync_due_at) <= now),
                sa.or_(col(r.sync_lease_until).is_(None), col(r.sync_lease_until) <= now),
            )
            .order_by(col(r.updated_at), col(r.id))
            .limit(limit)
        )
        with self._session() as session:
            return list(session.exec(query).all())

    def claim_message(self, request_id: int, now: datetime, lease_seconds: float) -> ActionRequest | None:
        """Hold the request's message for ``lease_seconds`` so that only this caller writes it
        (two writers could leave an older rendering last). Returns the request as it is now, or
        None when another caller holds it (or there is no such request). Changes neither
        ``version`` nor ``updated_at``."""
        now = as_utc(now)
        table = ActionRequest.__table__
        free = sa.or_(table.c.sync_lease_until.is_(None), table.c.sync_lease_until <= now)
        statement = (
            sa.update(table)
            .where(table.c.id == request_id, free)
            .values(sync_lease_until=now + timedelta(seconds=lease_seconds))
        )
        with self._session() as session, session.begin():
            if session.connection().execute(statement).rowcount != 1:
                return None
            return session.get(ActionRequest, request_id)

    def message_posting(self, request_id: int, now: datetime) -> None:
        """Record that a first post of the request's message is about to be sent (kept when one
        was already recorded: the earliest attempt bounds the search for a post whose answer was
        lost)."""
        table = ActionRequest.__table__
        with self._session() as session, session.begin():
            session.connection().execute(
                sa.update(table)
                .where(table.c.id == request_id, table.c.post_started_at.is_(None))
                .values(post_started_at=as_utc(now))
            )

    def message_shown(
        self, request_id: int, version: int, now: datetime, *, channel: str | None = None, ts: str | None = None,
        found: bool = False,
    ) -> None:
        """The channel now shows ``version`` of the request: record it, clear the retry state and
        release the hold. With ``channel`` and ``ts`` the message was just posted (audited as
        ``posted``), or with ``found`` found where an earlier post whose answer was lost put it
        (audited as ``post-found``). Changes neither ``version`` nor ``updated_at``."""
        now = as_utc(now)
        table = ActionRequest.__table__
        values: dict[str, Any] = dict(shown_version=version, sync_failures=0, sync_due_at=None, sync_lease_until=None)
        if channel and ts:
            values.update(channel=channel, message_ts=ts)
        with self._session() as session, session.begin():
            session.connection().execute(sa.update(table).where(table.c.id == request_id).values(**values))
            if channel and ts:
                session.add(
                    AuditEvent(
                        request_id=request_id, at=now, actor=SYSTEM_ACTOR, event="post-found" if found else "posted",
                        detail_json=detail_json({"channel": channel, "ts": ts}),
                    )
                )

    def message_failed(self, request_id: int, retry_at: datetime) -> int:
        """Writing the message failed: count it, retry at ``retry_at`` (aware UTC) and release the
        hold. Returns the failures so far (0 when there is no such request)."""
        table = ActionRequest.__table__
        with self._session() as session, session.begin():
            session.connection().execute(
                sa.update(table)
                .where(table.c.id == request_id)
                .values(
                    sync_failures=table.c.sync_failures + 1,
                    sync_due_at=as_utc(retry_at, "retry_at"),
                    sync_lease_until=None,
                )
            )
            failures = session.connection().execute(
                sa.select(table.c.sync_failures).where(table.c.id == request_id)
            ).scalar()
        return int(failures or 0)
