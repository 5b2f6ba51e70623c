"""The usage ledger keeps what advice needs per hour.

Revision ID: 0014_advice_hours
Revises: 0013_budget_rule
Create Date: 2026-11-27

- ``advice_pod_hour``: per cluster, hour and pod its peaks, GPU-steps, busy GPUs at each 5-minute
  step (one character a step), mean power at the hour mark and its containers' busy steps.
- ``advice_namespace_hour``: per namespace and GPU model the whole GPUs at the hour mark.
- ``advice_node_hour``: per node and GPU model its GPUs and the idle ones at the mark.
- ``advice_hour_filled``: which hours are written, with the busy threshold they were read with.
Hours written before this revision have none: the backfill fills them while Prometheus keeps them.
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_advice_hours"
down_revision: str | Sequence[str] | None = "0013_budget_rule"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _key() -> list[sa.Column]:
    return [sa.Column("cluster", sa.String(), nullable=False), sa.Column("hour", sa.DateTime(timezone=True), nullable=False)]


def upgrade() -> None:
    op.create_table(
        "advice_pod_hour",
        *_key(),
        sa.Column("namespace", sa.String(), nullable=False),
        sa.Column("pod", sa.String(), nullable=False),
        sa.Column("model_name", sa.String(), nullable=False),
        sa.Column("peak_fb_mib", sa.Float(), nullable=True),
        sa.Column("peak_engine_pct", sa.Float(), nullable=True),
        sa.Column("engine_signal", sa.String(), nullable=True),
        sa.Column("gpu_steps", sa.Integer(), nullable=False),
        sa.Column("busy", sa.Text(), nullable=False),
        sa.Column("power_w", sa.Float(), nullable=True),
        sa.Column("containers", sa.Text(), nullable=True),
    )
    op.create_index("ix_advice_pod_hour_cluster_hour", "advice_pod_hour", ["cluster", "hour"])
    op.create_table(
        "advice_namespace_hour",
        *_key(),
        sa.Column("namespace", sa.String(), nullable=False),
        sa.Column("model_name", sa.String(), nullable=False),
        sa.Column("gpus", sa.Integer(), nullable=False),
    )
    op.create_index("ix_advice_namespace_hour_cluster_hour", "advice_namespace_hour", ["cluster", "hour"])
    op.create_table(
        "advice_node_hour",
        *_key(),
        sa.Column("node", sa.String(), nullable=False),
        sa.Column("model_name", sa.String(), nullable=False),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("idle", sa.Integer(), nullable=False),
    )
    op.create_index("ix_advice_node_hour_cluster_node_hour", "advice_node_hour", ["cluster", "node", "hour"])
    op.create_table(
        "advice_hour_filled",
        sa.Column("cluster", sa.String(), nullable=False),
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("busy_engine_pct", sa.Float(), nullable=False),
        sa.Column("pods", sa.Integer(), nullable=False),
        sa.Column("written_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("cluster", "hour", name=op.f("pk_advice_hour_filled")),
    )


def downgrade() -> None:
    op.drop_table("advice_hour_filled")
    for table, index in (("advice_node_hour", "ix_advice_node_hour_cluster_node_hour"),
                         ("advice_namespace_hour", "ix_advice_namespace_hour_cluster_hour"),
                         ("advice_pod_hour", "ix_advice_pod_hour_cluster_hour")):
        op.drop_index(index, table_name=table)
        op.drop_table(table)
