"""Budgets set in chat beyond a team's USD per month: per team, LocalQueue or ClusterQueue, in USD
or GPU-hours, per month, week or N days, and what to do when used up.

Revision ID: 0013_budget_rule
Revises: 0012_ledger_energy
Create Date: 2026-11-27

- ``budget_rule``: one row per (cluster, scope, name) (primary key) with its unit, amount, period
  (and its anchor day), ``on_exhausted``, ``stop_policy``, ``grace_seconds``, who set it and when.
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_budget_rule"
down_revision: str | Sequence[str] | None = "0012_ledger_energy"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "budget_rule",
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("scope", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("unit", sa.String(), nullable=False),
        sa.Column("amount", sa.Float(), nullable=False),
        sa.Column("period", sa.String(), nullable=False),
        sa.Column("anchor", sa.Date(), nullable=True),
        sa.Column("on_exhausted", sa.String(), nullable=False),
        sa.Column("stop_policy", sa.String(), nullable=False),
        sa.Column("grace_seconds", sa.Float(), nullable=False),
        sa.Column("set_by", sa.String(), nullable=False),
        sa.Column("set_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("cluster", "scope", "name", name=op.f("pk_budget_rule")),
    )


def downgrade() -> None:
    op.drop_table("budget_rule")
