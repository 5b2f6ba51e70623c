"""The activity state: when each GPU was first seen, last seen and last busy within the lookback.

Revision ID: 0009_activity_seen
Revises: 0008_cluster_column
Create Date: 2026-11-26

- ``activity_seen``: per cluster, lookback policy (idle threshold, lookback and step) and
  telemetry key (GPU identity, namespace and pod), the first and last step a sample was seen and
  the last busy step within the lookback (a last time at the state's last step kept as a flag,
  ``seen_now``/``busy_now``, so unchanged GPUs keep their rows);
- ``activity_mark``: per cluster and policy, the sweep time those rows are known up to; a sweep
  then asks Prometheus only about the span since, not the whole lookback.
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_activity_seen"
down_revision: str | Sequence[str] | None = "0008_cluster_column"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEY = ("cluster", "policy", "uuid", "gpu", "gpu_i_id", "gpu_i_profile", "hostname", "model_name", "namespace", "pod")


def upgrade() -> None:
    op.create_table(
        "activity_seen",
        *[sa.Column(c, sa.String(), nullable=False) for c in KEY],
        sa.Column("first_sample", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_sample", sa.DateTime(timezone=True), nullable=True),
        sa.Column("seen_now", sa.Boolean(), nullable=False),
        sa.Column("last_active", sa.DateTime(timezone=True), nullable=True),
        sa.Column("busy_now", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint(*KEY, name=op.f("pk_activity_seen")),
    )
    op.create_table(
        "activity_mark",
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("policy", sa.String(), nullable=False),
        sa.Column("as_of", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("cluster", "policy", name=op.f("pk_activity_mark")),
    )


def downgrade() -> None:
    op.drop_table("activity_mark")
    op.drop_table("activity_seen")
