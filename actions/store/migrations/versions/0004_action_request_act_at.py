"""When the policy acts on a request of a team in mode auto.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24

``act_at`` is NULL for every request made before, and for teams in mode ask or report: only an
approver's Approve acts on those. Indexed, as every sweep asks for the requests whose time came.
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("action_request") as batch:
        batch.add_column(sa.Column("act_at", sa.DateTime(timezone=True), nullable=True))
        batch.create_index(batch.f("ix_action_request_act_at"), ["act_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("action_request") as batch:
        batch.drop_index(batch.f("ix_action_request_act_at"))
        batch.drop_column("act_at")
