"""Budgets set in chat: a team's USD per month (``team_budget``, ``/gpu budget set research
5000/month``; it overrides the config's ``monthly_budget_usd``), and any other budget
(``budget_rule``: a team, LocalQueue or ClusterQueue, in USD or GPU-hours, per month, week or N
days, with what to do when used up; :class:`actions.budgets.model.Budget`), who set each and when.
"""

from __future__ import annotations

from datetime import date, datetime

import sqlalchemy as sa
from sqlmodel import Field, col, select

from actions.budgets.model import Budget
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


class BudgetRule(StoreModel, table=True):
    """A budget set in chat (:class:`~actions.budgets.model.Budget`'s fields), per cluster
    (``""``: a bot of one), scope and name, who set it (a Slack user id) and when (aware UTC)."""

    __tablename__ = "budget_rule"

    cluster: str = Field(sa_type=sa.String, primary_key=True)
    scope: str = Field(sa_type=sa.String, primary_key=True)
    name: str = Field(sa_type=sa.String, primary_key=True)
    unit: str = Field(sa_type=sa.String)
    amount: float = Field(sa_type=sa.Float)
    period: str = Field(sa_type=sa.String)
    anchor: date | None = Field(default=None, sa_type=sa.Date, nullable=True)
    on_exhausted: str = Field(sa_type=sa.String)
    stop_policy: str = Field(sa_type=sa.String)
    grace_seconds: float = Field(sa_type=sa.Float)
    set_by: str = Field(sa_type=sa.String)
    set_at: datetime = Field(sa_type=UTCDateTime)

    def budget(self) -> Budget:
        """The budget this row holds."""
        return Budget(self.scope, self.name, self.amount, self.unit, self.period, self.anchor, self.on_exhausted,
                      self.stop_policy, self.grace_seconds, self.cluster, f"chat by {self.set_by}")


class Budgets(StoreBase):
    """Setting, removing and reading budgets."""

    def set_rule(self, budget: Budget, by: str, now: datetime) -> BudgetRule:
        """Set ``budget`` (replacing the one of its cluster, scope and name), recording who and
        when, audited as ``budget-set`` with the amount it replaced."""
        now = as_utc(now)
        value = dict(cluster=budget.cluster, scope=budget.scope, name=budget.name, unit=budget.unit,
                     amount=float(budget.amount), period=budget.period, anchor=budget.anchor,
                     on_exhausted=budget.on_exhausted, stop_policy=budget.stop_policy,
                     grace_seconds=float(budget.grace_seconds), set_by=by, set_at=now)
        table = BudgetRule.__table__
        with self._session() as session, session.begin():
            previous = session.get(BudgetRule, (budget.cluster, budget.scope, budget.name))
            before = previous.budget().describe() if previous else None
            statement = self._insert(table).values(**value)
            session.connection().execute(statement.on_conflict_do_update(
                index_elements=["cluster", "scope", "name"],
                set_={k: statement.excluded[k] for k in value if k not in ("cluster", "scope", "name")},
            ))
            session.add(AuditEvent(at=now, actor=by, event="budget-set", detail_json=detail_json(
                {"budget": budget.key, "cluster": budget.cluster, "set": budget.describe(),
                 "on_exhausted": budget.on_exhausted, "previous": before})))
        return BudgetRule(**value)

    def remove_rule(self, cluster: str, scope: str, name: str, by: str, now: datetime) -> bool:
        """Remove a budget set in chat, audited as ``budget-removed``. False when there was none."""
        now = as_utc(now)
        table = BudgetRule.__table__
        with self._session() as session, session.begin():
            result = session.connection().execute(sa.delete(table).where(
                table.c.cluster == cluster, table.c.scope == scope, table.c.name == name))
            if result.rowcount != 1:
                return False
            session.add(AuditEvent(at=now, actor=by, event="budget-removed",
                                   detail_json=detail_json({"budget": f"{scope}:{name}", "cluster": cluster})))
        return True

    def rules(self) -> list[BudgetRule]:
        """Every budget set in chat, by cluster, scope and name."""
        with self._session() as session:
            return list(session.exec(select(BudgetRule).order_by(
                col(BudgetRule.cluster), col(BudgetRule.scope), col(BudgetRule.name))).all())

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
