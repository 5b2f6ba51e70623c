"""An action request's GPUs as physical-GPU equivalents: a MIG slice or a shared replica is a
fraction of a GPU (1/7 for a 1g slice of an H100), so the column becomes a float.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # batch mode: SQLite cannot ALTER a column's type in place, so alembic copies the table.
    with op.batch_alter_table("action_request") as batch:
        batch.alter_column("gpus", existing_type=sa.Integer(), type_=sa.Float(), existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("action_request") as batch:
        batch.alter_column("gpus", existing_type=sa.Float(), type_=sa.Integer(), existing_nullable=False)
