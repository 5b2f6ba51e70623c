"""APScheduler's job store table, created here rather than by APScheduler.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23

APScheduler's SQLAlchemyJobStore creates its table on first start when missing; replicas starting
at once would race to create it. Created under the migration lock instead, with the columns and
index APScheduler 3 declares, so its own create is a no-op. The table is not one of the store's
models (env.py leaves it out of autogenerate).
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "apscheduler_jobs"


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("id", sa.Unicode(191), primary_key=True),
        sa.Column("next_run_time", sa.Float(25), nullable=True),
        sa.Column("job_state", sa.LargeBinary(), nullable=False),
    )
    op.create_index(f"ix_{TABLE}_next_run_time", TABLE, ["next_run_time"])


def downgrade() -> None:
    op.drop_index(f"ix_{TABLE}_next_run_time", table_name=TABLE)
    op.drop_table(TABLE)
