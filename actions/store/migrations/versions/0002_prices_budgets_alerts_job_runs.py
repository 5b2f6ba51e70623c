"""Live price cache, team budgets, alerts already sent, and claimed runs of scheduled jobs.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23

The unique constraints on alert_record and job_run are what make an alert fire once and a job run
once when several replicas race for them.
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0002'
down_revision: str | Sequence[str] | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('alert_record',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('team', sa.String(), nullable=False),
    sa.Column('kind', sa.String(), nullable=False),
    sa.Column('period_key', sa.String(), nullable=False),
    sa.Column('fired_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('channel', sa.String(), nullable=True),
    sa.Column('message_ts', sa.String(), nullable=True),
    sa.Column('snoozed_until', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_record')),
    sa.UniqueConstraint('team', 'kind', 'period_key', name=op.f('uq_alert_record_team_kind_period_key'))
    )
    op.create_table('job_run',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.String(), nullable=False),
    sa.Column('scheduled_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('holder', sa.String(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('outcome', sa.String(), nullable=True),
    sa.Column('detail', sa.Text(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job_run')),
    sa.UniqueConstraint('job_id', 'scheduled_at', name=op.f('uq_job_run_job_id_scheduled_at'))
    )
    op.create_table('price_cache',
    sa.Column('instance_type', sa.String(), nullable=False),
    sa.Column('capacity_type', sa.String(), nullable=False),
    sa.Column('region', sa.String(), nullable=False),
    sa.Column('usd_per_hour', sa.Float(), nullable=False),
    sa.Column('source', sa.Text(), nullable=False),
    sa.Column('as_of', sa.DateTime(timezone=True), nullable=False),
    sa.Column('fetched_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('instance_type', 'capacity_type', 'region', name=op.f('pk_price_cache'))
    )
    op.create_table('team_budget',
    sa.Column('team', sa.String(), nullable=False),
    sa.Column('usd_per_month', sa.Float(), nullable=False),
    sa.Column('set_by', sa.String(), nullable=False),
    sa.Column('set_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('team', name=op.f('pk_team_budget'))
    )


def downgrade() -> None:
    op.drop_table('team_budget')
    op.drop_table('price_cache')
    op.drop_table('job_run')
    op.drop_table('alert_record')
