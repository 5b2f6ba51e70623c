"""Requests carry the cluster their finding was made in and their action goes to.

Revision ID: 0008_cluster_column
Revises: 0007_usage_ledger
Create Date: 2026-11-26

``cluster`` is empty for the only cluster of a bot of one, and for the first of several: every
request stored before this revision was made in that one, so existing stores stay valid as they
are (their keys keep their form too).
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_cluster_column"
down_revision: str | Sequence[str] | None = "0007_usage_ledger"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("action_request") as batch:
        batch.add_column(sa.Column("cluster", sa.String(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("action_request") as batch:
        batch.drop_column("cluster")
