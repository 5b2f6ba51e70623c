"""Team budgets set in chat (``team_budget``, ``/gpu budget set``): USD per month per team, who
set it and when; they override the config's ``monthly_budget_usd``.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, col, select

from actions.store.audit import AuditEvent, detail_json
from actions.store.schema import StoreBase, StoreModel, UTCDateTime, as_utc


class TeamBudget(StoreModel, table=True):
    """A team's monthly GPU budget in USD per calendar month, who set it (a Slack user id) and when
    (aware UTC)."""

    __tablename__ = "team_budget"

    team: str = Field(sa_type=sa.String, primary_key=True)
    usd_per_month: float = Field(sa_type=sa.Float)
    set_by: str = Field(sa_type=sa.String)
    set_at: datetime = Field(sa_type=UTCDateTime)


class Budgets(StoreBase):
    """Setting, removing and reading team budgets."""

    def set_budget(self, team: str, usd: float, by: str, now: datetime) -> TeamBudget:
        """Set ``team``'s budget to ``usd`` USD per calendar month (replacing any), recording who
        and when, and audit it as ``budget-set``. Returns the stored budget. Raises ValueError for
        an empty team or ``usd`` not > 0."""
        now = as_utc(now)
        if not team:
            raise ValueError("team is empty")
        if not usd > 0:
            raise ValueError(f"a budget must be more than 0 USD per month, got {usd}")
        value = dict(team=team, usd_per_month=float(usd), set_by=by, set_at=now)
        table = TeamBudget.__table__
        with self._session() as session, session.begin():
            previous = session.get(TeamBudget, team)
            before = previous.usd_per_month if previous else None
            statement = self._insert(table).values(**value)
            session.connection().execute(
                statement.on_conflict_do_update(
                    index_elements=["team"],
                    set_={k: statement.excluded[k] for k in value if k != "team"},
                )
            )
            session.add(
                AuditEvent(
                    at=now,
                    actor=by,
                    event="budget-set",
                    detail_json=detail_json(
                        {"team": team, "usd_per_month": float(usd), "previous_usd_per_month": before}
                    ),
                )
            )
        return TeamBudget(**value)

    def remove_budget(self, team: str, by: str, now: datetime) -> bool:
        """Remove ``team``'s budget, audited as ``budget-removed``. False when it had none."""
        now = as_utc(now)
        table = TeamBudget.__table__
        with self._session() as session, session.begin():
            result = session.connection().execute(sa.delete(table).where(table.c.team == team))
            if result.rowcount != 1:
                return False
            session.add(
                AuditEvent(at=now, actor=by, event="budget-removed", detail_json=detail_json({"team": team}))
            )
        return True

    def budget(self, team: str) -> TeamBudget | None:
        """``team``'s budget, or None when none is set."""
        with self._session() as session:
            return session.get(TeamBudget, team)

    def budgets(self) -> list[TeamBudget]:
        """Every team's budget, by team name."""
        with self._session() as session:
            return list(session.exec(select(TeamBudget).order_by(col(TeamBudget.team))).all())
