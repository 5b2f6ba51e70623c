"""The usage ledger keeps the GPUs' energy.

Revision ID: 0012_ledger_energy
Revises: 0011_slack_request_seen
Create Date: 2026-11-28

``usage_hour`` and ``usage_day`` gain ``energy_kwh`` (kWh drawn at the GPU; a ``capacity`` row:
all the node's GPUs), ``idle_energy_kwh`` (the part in idle steps) and ``energy_gpu_hours`` (the
GPU-hours whose energy was measured). Rows written before this revision read 0 in all three
(server default): not measured, which ``energy_gpu_hours`` 0 tells apart from a measured 0 kWh.
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_ledger_energy"
down_revision: str | Sequence[str] | None = "0011_slack_request_seen"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("usage_hour", "usage_day")
COLUMNS = ("energy_kwh", "idle_energy_kwh", "energy_gpu_hours")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            for column in COLUMNS:
                batch.add_column(sa.Column(column, sa.Float(), nullable=False, server_default="0"))


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            for column in reversed(COLUMNS):
                batch.drop_column(column)
