"""Actions whose outcome is unknown, and each request's Slack message as desired state.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23

- state ``uncertain`` (open: it holds its key): a patch that timed out or lost its connection may
  still land, so the request is read back from the cluster until ``deadline_at``;
- ``deadline_at``: by when an acting replica is done (``approved``/``restoring``), or the end of
  the read-back window (``uncertain``);
- ``shown_version``, ``sync_due_at``, ``sync_failures``, ``sync_lease_until``,
  ``post_started_at``: what the channel last showed and the message sync's retry state.

Existing requests count as shown as they are, so upgrading posts and updates nothing.
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_OPEN = ("approved", "denied", "done", "exempt", "proposed", "restoring", "snoozed")
_NEW_OPEN = _OLD_OPEN + ("uncertain",)
_CLOSED = ("expired", "failed", "restored", "superseded")
_COLUMNS = ("post_started_at", "sync_lease_until", "sync_failures", "sync_due_at", "shown_version", "deadline_at")


def _in(states: Sequence[str]) -> str:
    return "state IN ({})".format(", ".join(f"'{s}'" for s in sorted(states)))


def _swap_states(open_states: Sequence[str]) -> None:
    op.drop_index("uq_action_request_open_key", table_name="action_request")
    with op.batch_alter_table("action_request") as batch:
        batch.drop_constraint(op.f("ck_action_request_state"), type_="check")
        batch.create_check_constraint(op.f("ck_action_request_state"), _in(tuple(open_states) + _CLOSED))
    op.create_index(
        "uq_action_request_open_key",
        "action_request",
        ["key"],
        unique=True,
        sqlite_where=sa.text(_in(open_states)),
        postgresql_where=sa.text(_in(open_states)),
    )


def upgrade() -> None:
    with op.batch_alter_table("action_request") as batch:
        batch.add_column(sa.Column("deadline_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("shown_version", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("sync_due_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("sync_failures", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("sync_lease_until", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("post_started_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE action_request SET shown_version = version")
    _swap_states(_NEW_OPEN)


def downgrade() -> None:
    # An uncertain request cannot be represented before this revision; failed is the honest
    # closed state for it (its target must be checked by hand).
    op.execute("UPDATE action_request SET state = 'failed' WHERE state = 'uncertain'")
    _swap_states(_OLD_OPEN)
    with op.batch_alter_table("action_request") as batch:
        for column in _COLUMNS:
            batch.drop_column(column)
