"""The audit trail: one ``audit_event`` row per press, decision and action on a request, written
in the same transaction as the change it records.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Mapping

import sqlalchemy as sa
from sqlmodel import Field, col, select

from actions.model.codec import to_jsonable
from actions.store.schema import StoreBase, StoreModel, UTCDateTime, as_utc


class AuditEvent(StoreModel, table=True):
    """One thing that happened, who did it and when.

    ``request_id`` is None for events not tied to a request (e.g. an unauthorised click on a
    request id that does not exist). ``actor`` is a Slack user id or ``"system"``; ``event`` a short
    verb such as ``proposed``, ``approved``, ``approve-rejected``, ``applied``, ``restored``;
    ``detail_json`` a JSON object. ``at`` is aware UTC.
    """

    __tablename__ = "audit_event"

    id: int | None = Field(default=None, primary_key=True)
    request_id: int | None = Field(
        default=None, foreign_key="action_request.id", index=True, nullable=True
    )
    at: datetime = Field(sa_type=UTCDateTime, index=True)
    actor: str = Field(sa_type=sa.String)
    event: str = Field(sa_type=sa.String)
    detail_json: str = Field(default="{}", sa_type=sa.Text)

    def detail(self) -> dict[str, Any]:
        """``detail_json`` parsed."""
        return json.loads(self.detail_json)


def detail_json(detail: Mapping[str, Any] | None) -> str:
    return json.dumps(to_jsonable(dict(detail or {})), sort_keys=True, separators=(",", ":"))


class AuditTrail(StoreBase):
    """Writing and reading the audit trail."""

    def audit(
        self,
        request_id: int | None,
        *,
        actor: str,
        event: str,
        now: datetime,
        detail: Mapping[str, Any] | None = None,
    ) -> AuditEvent:
        """Record an event that changes no request (a rejected click, a failed Slack post).

        ``request_id`` may be None for events not tied to a request. ``detail`` must be
        JSON-serialisable after ``model.to_jsonable``. Returns the stored event. Raises
        sqlalchemy.exc.IntegrityError when ``request_id`` names no request (SQLite enforces this
        because the store turns foreign keys on).
        """
        event_row = AuditEvent(
            request_id=request_id, at=as_utc(now), actor=actor, event=event, detail_json=detail_json(detail)
        )
        with self._session() as session, session.begin():
            session.add(event_row)
        return event_row

    def events(self, request_id: int) -> list[AuditEvent]:
        """A request's audit events, in the order they happened (``at``, then id)."""
        query = (
            select(AuditEvent)
            .where(AuditEvent.request_id == request_id)
            .order_by(col(AuditEvent.at), col(AuditEvent.id))
        )
        with self._session() as session:
            return list(session.exec(query).all())

    def all_events(self) -> list[AuditEvent]:
        """Every audit event, in the order they happened (``at``, then id)."""
        query = select(AuditEvent).order_by(col(AuditEvent.at), col(AuditEvent.id))
        with self._session() as session:
            return list(session.exec(query).all())
