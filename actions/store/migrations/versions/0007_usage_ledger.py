"""The usage ledger: each finished hour's GPU usage, and which hours are written.

Revision ID: 0007_usage_ledger
Revises: 0006
Create Date: 2026-11-26

- ``usage_hour``: GPU-hours held (and idle) per hour, cluster, namespace, workload owner, node,
  GPU model and flavor, and each node's GPU capacity, with the node's pricing facts and the price
  in force; indexed by (cluster, hour) and (cluster, namespace, hour), the report's access paths;
- ``usage_day``: the same summed per UTC day as hours are written (a month's report reads 30 rows
  per key, not 720), unique per (cluster, day, key digest);
- ``usage_hour_filled``: per (cluster, hour) whether it is written (``filled``, ``partial``,
  ``empty``), how many rows, and when.
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_usage_ledger"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "usage_hour",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("measure", sa.String(), nullable=False),
        sa.Column("namespace", sa.String(), nullable=False),
        sa.Column("namespace_team", sa.String(), nullable=True),
        sa.Column("owner_kind", sa.String(), nullable=False),
        sa.Column("owner_name", sa.String(), nullable=False),
        sa.Column("queue", sa.String(), nullable=True),
        sa.Column("node", sa.String(), nullable=False),
        sa.Column("node_pool", sa.String(), nullable=True),
        sa.Column("instance_type", sa.String(), nullable=True),
        sa.Column("capacity_type", sa.String(), nullable=True),
        sa.Column("gpu_product", sa.String(), nullable=True),
        sa.Column("replicas", sa.Integer(), nullable=False),
        sa.Column("gpu_model", sa.String(), nullable=True),
        sa.Column("flavor", sa.String(), nullable=True),
        sa.Column("gpu_hours", sa.Float(), nullable=False),
        sa.Column("idle_gpu_hours", sa.Float(), nullable=False),
        sa.Column("usd_per_gpu_hour", sa.Float(), nullable=True),
        sa.Column("price_source", sa.String(), nullable=True),
        sa.CheckConstraint("measure IN ('capacity', 'held')", name=op.f("ck_usage_hour_measure")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_usage_hour")),
    )
    op.create_index("ix_usage_hour_cluster_hour", "usage_hour", ["cluster", "hour"])
    op.create_index("ix_usage_hour_cluster_namespace_hour", "usage_hour", ["cluster", "namespace", "hour"])
    op.create_table(
        "usage_day",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("key_hash", sa.String(length=40), nullable=False),
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("measure", sa.String(), nullable=False),
        sa.Column("namespace", sa.String(), nullable=False),
        sa.Column("namespace_team", sa.String(), nullable=True),
        sa.Column("owner_kind", sa.String(), nullable=False),
        sa.Column("owner_name", sa.String(), nullable=False),
        sa.Column("queue", sa.String(), nullable=True),
        sa.Column("node", sa.String(), nullable=False),
        sa.Column("node_pool", sa.String(), nullable=True),
        sa.Column("instance_type", sa.String(), nullable=True),
        sa.Column("capacity_type", sa.String(), nullable=True),
        sa.Column("gpu_product", sa.String(), nullable=True),
        sa.Column("replicas", sa.Integer(), nullable=False),
        sa.Column("gpu_model", sa.String(), nullable=True),
        sa.Column("flavor", sa.String(), nullable=True),
        sa.Column("last_hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("hours", sa.Integer(), nullable=False),
        sa.Column("gpu_hours", sa.Float(), nullable=False),
        sa.Column("idle_gpu_hours", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_usage_day")),
        sa.UniqueConstraint("cluster", "day", "key_hash", name=op.f("uq_usage_day_cluster_day_key_hash")),
    )
    op.create_table(
        "usage_hour_filled",
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.CheckConstraint("status IN ('empty', 'filled', 'partial')", name=op.f("ck_usage_hour_filled_status")),
        sa.PrimaryKeyConstraint("cluster", "hour", name=op.f("pk_usage_hour_filled")),
    )


def downgrade() -> None:
    op.drop_table("usage_hour_filled")
    op.drop_table("usage_day")
    op.drop_index("ix_usage_hour_cluster_namespace_hour", table_name="usage_hour")
    op.drop_index("ix_usage_hour_cluster_hour", table_name="usage_hour")
    op.drop_table("usage_hour")
