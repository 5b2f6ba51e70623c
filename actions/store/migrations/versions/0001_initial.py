"""Action requests and the audit trail.

Revision ID: 0001
Revises:
Create Date: 2026-05-01

Written out in full rather than imported from actions.store, so that this migration keeps meaning
what it meant when later revisions change the models.
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OPEN_STATES = ("approved", "denied", "done", "exempt", "proposed", "restoring", "snoozed")
_ALL_STATES = _OPEN_STATES + ("expired", "failed", "restored", "superseded")
_OPEN_KEY_WHERE = "state IN ({})".format(", ".join(f"'{s}'" for s in sorted(_OPEN_STATES)))
_STATE_CHECK = "state IN ({})".format(", ".join(f"'{s}'" for s in sorted(_ALL_STATES)))


def upgrade() -> None:
    op.create_table(
        "action_request",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("team", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("namespace", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("verb", sa.String(), nullable=False),
        sa.Column("target_api_version", sa.String(), nullable=False),
        sa.Column("target_kind", sa.String(), nullable=False),
        sa.Column("target_name", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("finding_json", sa.Text(), nullable=False),
        sa.Column("usd_per_hour", sa.Float(), nullable=False),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("channel", sa.String(), nullable=True),
        sa.Column("message_ts", sa.String(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decided_by", sa.String(), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("undo_json", sa.Text(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_action_request")),
        sa.CheckConstraint(_STATE_CHECK, name=op.f("ck_action_request_state")),
    )
    op.create_index(op.f("ix_action_request_key"), "action_request", ["key"])
    op.create_index(op.f("ix_action_request_team"), "action_request", ["team"])
    op.create_index(op.f("ix_action_request_state"), "action_request", ["state"])
    # At most one open request per key, enforced where replicas cannot race past it.
    op.create_index(
        "uq_action_request_open_key",
        "action_request",
        ["key"],
        unique=True,
        sqlite_where=sa.text(_OPEN_KEY_WHERE),
        postgresql_where=sa.text(_OPEN_KEY_WHERE),
    )

    op.create_table(
        "audit_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.Integer(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(), nullable=False),
        sa.Column("event", sa.String(), nullable=False),
        sa.Column("detail_json", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["action_request.id"],
            name=op.f("fk_audit_event_request_id_action_request"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_event")),
    )
    op.create_index(op.f("ix_audit_event_request_id"), "audit_event", ["request_id"])
    op.create_index(op.f("ix_audit_event_at"), "audit_event", ["at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_audit_event_at"), table_name="audit_event")
    op.drop_index(op.f("ix_audit_event_request_id"), table_name="audit_event")
    op.drop_table("audit_event")
    op.drop_index("uq_action_request_open_key", table_name="action_request")
    op.drop_index(op.f("ix_action_request_state"), table_name="action_request")
    op.drop_index(op.f("ix_action_request_team"), table_name="action_request")
    op.drop_index(op.f("ix_action_request_key"), table_name="action_request")
    op.drop_table("action_request")
