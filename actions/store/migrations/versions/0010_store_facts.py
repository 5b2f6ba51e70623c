"""Facts the bot records about its store once: which cluster requests without a cluster's name
were made in.

Revision ID: 0010_store_facts
Revises: 0009_activity_seen
Create Date: 2026-11-27

- ``store_fact``: a fact's ``name`` (primary key), its ``value`` and when it was recorded.

Until this revision a request made in the only cluster of a bot of one, or in the first of
several, was stored with an empty ``cluster``, and whichever cluster was first when it was acted
on took it. A migration cannot know the config, so this one leaves those requests as they are:
the bot names them at its next start (``home_cluster``: the only cluster, or the first of
``clusters:`` at that start, recorded here once; see ``bot/runtime/identity.py``).
"""

from __future__ import annotations

from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_store_facts"
down_revision: str | Sequence[str] | None = "0009_activity_seen"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "store_fact",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("value", sa.String(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_store_fact")),
    )


def downgrade() -> None:
    op.drop_table("store_fact")
