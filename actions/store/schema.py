"""What every table of the bot's database shares: the base model and its metadata (with explicit
constraint names), aware-UTC datetimes on both backends, the migrations' location and version
table, row ids, and :class:`StoreBase`, the engine and sessions each table group's methods use.

Works on SQLite (a file, or in memory for demos) and PostgreSQL. All datetimes are timezone-aware
UTC going in and coming out; the store never reads the clock, every method that writes takes ``now``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel

from actions.store.states import StoreError

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Named after the bot rather than alembic's default so the bot can share a database with other
# alembic-managed applications without both fighting over one version table.
VERSION_TABLE = "gpu_cost_bot_alembic_version"

# The largest id a BIGINT (PostgreSQL) or INTEGER (SQLite) primary key holds; a button or a typed
# command can carry any number, and a larger one must read as "no such request", not overflow.
MAX_ID = 2**63 - 1


def valid_id(value: int) -> bool:
    """Whether ``value`` can be the id of a row (1 to :data:`MAX_ID`)."""
    return 0 < value <= MAX_ID


# Tables the migrations create for a library (APScheduler's job store) rather than for a model
# here; autogenerate must neither drop them nor compare them.
FOREIGN_TABLES: frozenset[str] = frozenset({"apscheduler_jobs"})


def include_object(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
    """Alembic's ``include_object`` hook: leaves :data:`FOREIGN_TABLES` out of autogenerate."""
    table = getattr(obj, "table", obj) if type_ in ("index", "column") else obj
    return getattr(table, "name", name) not in FOREIGN_TABLES


# Any fixed 64-bit number works, as long as every replica uses the same one and nothing else in
# the database uses it: it is "gpucost" in ASCII.
MIGRATION_LOCK_ID = 0x67707563_6F7374


# --- types -----------------------------------------------------------------------------------------


class UTCDateTime(sa.types.TypeDecorator):
    """A timezone-aware UTC datetime on every backend.

    PostgreSQL stores ``timestamptz``; SQLite, which has no time zones, stores the UTC wall time.
    Either way the value read back is aware and in UTC. Binding a naive datetime raises
    ValueError: a naive time is ambiguous, and guessing would silently shift deadlines.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}")
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value!r}: pass a timezone-aware UTC datetime")
        value = value.astimezone(timezone.utc)
        # SQLite would write the offset into the text, and "+00:00" strings then sort and compare
        # differently from values written without one; store one canonical form instead.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def as_utc(value: datetime, name: str = "now") -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} is naive ({value!r}); pass a timezone-aware UTC datetime")
    return value.astimezone(timezone.utc)


# --- tables ----------------------------------------------------------------------------------------

# Explicit constraint names, so that later migrations can refer to them on every backend (SQLite
# batch migrations need a name to drop or recreate a constraint).
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class StoreModel(SQLModel):
    """Base of the store's tables, with metadata of their own so that tables defined elsewhere in
    the process never leak into the migrations or into the migration-drift check."""

    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


metadata = StoreModel.metadata


class StoreBase:
    """The engine and the short-lived sessions every table group's methods use."""

    engine: Engine

    def _insert(self, table: sa.Table) -> Any:
        # Both backends can resolve a conflict inside the INSERT itself, which is what lets
        # replicas race for the same row without one of them seeing an IntegrityError.
        backend = self.engine.dialect.name
        if backend == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        elif backend == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:
            raise StoreError(f"upserts need PostgreSQL or SQLite, not {backend}")
        return insert(table)

    def _session(self) -> Session:
        # Rows are handed to callers after the session closes; keep their loaded attributes.
        return Session(self.engine, expire_on_commit=False)
