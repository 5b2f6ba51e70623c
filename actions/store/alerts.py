"""The alerts already sent (``alert_record``): one row per team, kind and period, claimed before
posting so each alert fires once across replicas, with its message and snooze.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, Session, col, select

from actions.store.audit import AuditEvent, detail_json
from actions.store.schema import StoreBase, StoreModel, UTCDateTime, as_utc, valid_id

ALERT_KINDS: frozenset[str] = frozenset(
    {
        "budget-50",
        "budget-80",
        "budget-100",
        "budget-forecast",
        "queue-wait",
        "idle-on-demand",
        "spot-ratio",
        # A recommendation posted to a team channel; its period key is "<key>#<fingerprint>", so
        # the same advice on unchanged use is claimed once and posted once.
        "advice",
    }
)


class AlertRecord(StoreModel, table=True):
    """One alert that fired, so that it fires once: at most one row per (team, kind, period_key).

    ``kind`` is one of ``ALERT_KINDS``; ``period_key`` says what the alert is about: the month
    (``"2026-11"``) for budget thresholds, a Workload uid or ClusterQueue name for queue waits.
    ``channel``/``message_ts`` locate the Slack message once posted; ``snoozed_until`` (aware UTC)
    silences follow-ups until then.
    """

    __tablename__ = "alert_record"
    __table_args__ = (sa.UniqueConstraint("team", "kind", "period_key"),)

    id: int | None = Field(default=None, primary_key=True)
    team: str = Field(sa_type=sa.String)
    kind: str = Field(sa_type=sa.String)
    period_key: str = Field(sa_type=sa.String)
    fired_at: datetime = Field(sa_type=UTCDateTime)
    channel: str | None = Field(default=None, sa_type=sa.String, nullable=True)
    message_ts: str | None = Field(default=None, sa_type=sa.String, nullable=True)
    snoozed_until: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)


class AlertLog(StoreBase):
    """Claiming, snoozing and reading the alerts sent."""

    def record_alert(
        self,
        team: str,
        kind: str,
        period_key: str,
        now: datetime,
        channel: str | None = None,
        message_ts: str | None = None,
    ) -> bool:
        """Claim the alert ``(team, kind, period_key)``: True when this call recorded it, False when
        it was already recorded (by this or another replica; the database decides, so of callers
        racing for the same alert exactly one gets True). Call it before posting and post only on
        True; then :meth:`set_alert_message` records where the message went.

        Raises ValueError for a ``kind`` not in ``ALERT_KINDS`` or an empty team or period key.
        """
        now = as_utc(now)
        if kind not in ALERT_KINDS:
            raise ValueError(f"unknown alert kind {kind!r}; kinds are {sorted(ALERT_KINDS)}")
        if not team or not period_key:
            raise ValueError("team and period_key must not be empty")
        statement = (
            self._insert(AlertRecord.__table__)
            .values(
                team=team,
                kind=kind,
                period_key=period_key,
                fired_at=now,
                channel=channel,
                message_ts=message_ts,
            )
            .on_conflict_do_nothing(index_elements=["team", "kind", "period_key"])
        )
        with self._session() as session, session.begin():
            return session.connection().execute(statement).rowcount == 1

    def alert(self, team: str, kind: str, period_key: str) -> AlertRecord | None:
        """The recorded alert ``(team, kind, period_key)``, or None."""
        with self._session() as session:
            return session.exec(
                select(AlertRecord).where(
                    AlertRecord.team == team,
                    AlertRecord.kind == kind,
                    AlertRecord.period_key == period_key,
                )
            ).first()

    def get_alert(self, alert_id: int) -> AlertRecord | None:
        """The alert with this id, or None (also for an id no database column can hold)."""
        if not valid_id(alert_id):
            return None
        with self._session() as session:
            return session.get(AlertRecord, alert_id)

    def set_alert_message(self, alert_id: int, channel: str, message_ts: str) -> AlertRecord | None:
        """Record the Slack message an alert was posted as. Returns the updated alert, or None when
        there is no alert ``alert_id``."""
        with self._session() as session, session.begin():
            return self._update_alert(session, alert_id, channel=channel, message_ts=message_ts)

    def snooze_alert(
        self, alert_id: int, until: datetime, actor: str, now: datetime
    ) -> AlertRecord | None:
        """Silence an alert's follow-ups until ``until`` (aware UTC) and audit it as
        ``alert-snoozed`` (by ``actor``, a Slack user id), in one transaction. Returns the updated
        alert, or None (writing nothing) when there is no alert ``alert_id``. Raises ValueError for
        naive datetimes."""
        if not valid_id(alert_id):
            return None
        now = as_utc(now)
        until = as_utc(until, "until")
        with self._session() as session, session.begin():
            record = self._update_alert(session, alert_id, snoozed_until=until)
            if record is None:
                return None
            session.add(
                AuditEvent(
                    at=now,
                    actor=actor,
                    event="alert-snoozed",
                    detail_json=detail_json(
                        {
                            "alert_id": alert_id,
                            "team": record.team,
                            "kind": record.kind,
                            "period_key": record.period_key,
                            "until": until,
                        }
                    ),
                )
            )
            return record

    def alerts(self, team: str | None = None) -> list[AlertRecord]:
        """Recorded alerts, oldest first (``fired_at``, then id), optionally only ``team``'s."""
        query = select(AlertRecord)
        if team is not None:
            query = query.where(AlertRecord.team == team)
        query = query.order_by(col(AlertRecord.fired_at), col(AlertRecord.id))
        with self._session() as session:
            return list(session.exec(query).all())

    @staticmethod
    def _update_alert(session: Session, alert_id: int, **values: Any) -> AlertRecord | None:
        table = AlertRecord.__table__
        result = session.connection().execute(sa.update(table).where(table.c.id == alert_id).values(**values))
        if result.rowcount != 1:
            return None
        return session.exec(
            select(AlertRecord).where(AlertRecord.id == alert_id).execution_options(populate_existing=True)
        ).one()
