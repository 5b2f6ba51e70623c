"""The Slack requests already taken, so a replay is not handled twice.

Revision ID: 0011_slack_request_seen
Revises: 0010_store_facts
Create Date: 2026-11-27

- ``slack_request_seen``: a request's key (its signature, ``trigger_id`` or ``event_id``;
  primary key) and when it may be forgotten (``expires_at``, indexed: expired keys are deleted as
  new ones are claimed).
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_slack_request_seen"
down_revision: str | Sequence[str] | None = "0010_store_facts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "slack_request_seen",
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_slack_request_seen")),
    )
    op.create_index(op.f("ix_slack_request_seen_expires_at"), "slack_request_seen", ["expires_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_slack_request_seen_expires_at"), table_name="slack_request_seen")
    op.drop_table("slack_request_seen")
