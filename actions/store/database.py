"""The bot's database as one object: :class:`Store`, every table group's methods on one engine
(requests and their state machine, message outbox, audit, price cache, budgets, alerts, job runs,
facts, Slack requests seen),
and the schema's migrations (alembic, ``migrations/``), run at start under a lock.

Works on SQLite (a file, or in memory for demos) and PostgreSQL. All datetimes are timezone-aware
UTC going in and coming out; the store never reads the clock, every method that writes takes ``now``.
"""
from __future__ import annotations

import importlib.util
import threading
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.pool import StaticPool

from actions.store.alerts import AlertLog
from actions.store.audit import AuditTrail
from actions.store.budgets import Budgets
from actions.store.facts import StoreFacts
from actions.store.job_runs import JobRuns
from actions.store.outbox import MessageOutbox
from actions.store.price_cache import PriceCacheTable
from actions.store.schema import MIGRATIONS_DIR, VERSION_TABLE
from actions.store.seen import SeenRequests
from actions.store.state_machine import RequestStateMachine

if TYPE_CHECKING:
    from alembic.config import Config


# alembic keeps the running migration's context in module globals, so two migrations in one process
# must not overlap; between processes the PostgreSQL advisory lock in env.py takes over.
_MIGRATE_LOCK = threading.Lock()


# --- the store -------------------------------------------------------------------------------------


class Store(
    RequestStateMachine, MessageOutbox, AuditTrail, PriceCacheTable, Budgets, AlertLog, JobRuns, StoreFacts,
    SeenRequests,
):
    """Action requests, audit events, cached prices, budgets, alert records, the store's own
    facts (:mod:`actions.store.facts`) and the Slack requests taken (:mod:`actions.store.seen`) in
    a SQL database.

    ``url`` is a SQLAlchemy URL: ``sqlite:///relative.db``, ``sqlite:////abs/path.db``,
    ``sqlite://`` (in memory, one connection: demos and single-threaded use only) or
    ``postgresql://user@host/db`` (psycopg2 when installed; ``postgresql+psycopg://`` for
    psycopg 3). The store is safe to share between threads.

    Call ``migrate()`` once at start-up before anything else. Methods raise ValueError/TypeError for
    bad arguments (unknown states or fields, naive datetimes, text that is not JSON) and let
    ``sqlalchemy.exc.OperationalError`` through when the database cannot be reached.
    """

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = make_url(url)
        self.engine: Engine = _create_engine(self.url, echo=echo)

    def close(self) -> None:
        """Close every pooled connection. The store can still be used (it reconnects)."""
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema --

    def migrate(self) -> None:
        """Bring the schema up to the newest migration (``alembic upgrade head``).

        A no-op when already at head. Concurrent callers are serialised: within a process by a lock,
        and on PostgreSQL across processes (several replicas starting at once) by an advisory lock
        taken in the migration environment, so each migration runs once. Raises alembic/SQLAlchemy
        errors when a migration fails; the failed migration's transaction is rolled back where the
        backend has transactional DDL.
        """
        from alembic import command

        with _MIGRATE_LOCK, self.engine.begin() as connection:
            config = alembic_config(self.url.render_as_string(hide_password=False))
            # env.py uses this connection rather than building an engine of its own, so the
            # store's engine settings (SQLite pragmas, pool) apply to migrations too.
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def schema_status(self) -> tuple[str | None, str]:
        """``(applied, newest)``: the migration revision the database is at (None when it has
        none yet) and the newest one this version of the bot has. Raises SQLAlchemy errors when
        the database cannot be reached."""
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        script = ScriptDirectory.from_config(alembic_config(self.url.render_as_string(hide_password=False)))
        with self.engine.connect() as connection:
            applied = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE}).get_current_revision()
        return applied, script.get_current_head() or ""


def alembic_config(url: str) -> Config:
    """An alembic ``Config`` for the bot's migrations at ``url``, built in code so it works from an
    installed package (no ``alembic.ini`` or working directory needed). Useful for
    ``alembic.command.revision(config, autogenerate=True, ...)`` when writing a new migration."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("file_template", "%%(rev)s_%%(slug)s")
    # ConfigParser interpolation would read a "%" in a URL-encoded password as a reference.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def _create_engine(url: sa.URL, *, echo: bool) -> Engine:
    backend = url.get_backend_name()
    if backend == "sqlite":
        in_memory = url.database in (None, "", ":memory:")
        engine = sa.create_engine(
            url,
            echo=echo,
            # timeout is SQLite's busy timeout (seconds): a writer waits for another writer's lock
            # instead of failing at once with "database is locked".
            connect_args={"check_same_thread": False, "timeout": 30},
            # An in-memory database exists per connection; keep exactly one.
            poolclass=StaticPool if in_memory else None,
        )

        @sa.event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute("PRAGMA foreign_keys=ON")
                if not in_memory:
                    # Readers no longer block the writer (and vice versa), which matters with a
                    # scheduler thread and Slack handler threads sharing one file.
                    cursor.execute("PRAGMA journal_mode=WAL")
                    cursor.execute("PRAGMA synchronous=NORMAL")
            finally:
                cursor.close()

        return engine
    if backend == "postgresql":
        if url.drivername == "postgresql" and importlib.util.find_spec("psycopg2") is not None:
            # SQLAlchemy 2.1 reads a bare postgresql:// as psycopg 3, but the driver this project
            # installs (the "postgres" extra) is psycopg2.
            url = url.set(drivername="postgresql+psycopg2")
        return sa.create_engine(
            url,
            echo=echo,
            # A database host that does not answer must fail a press in seconds ("not recorded,
            # press again"), not after the kernel's TCP connect timeout of minutes.
            connect_args={"connect_timeout": 10} if url.get_driver_name() == "psycopg2" else {},
            pool_size=5,
            max_overflow=5,
            pool_timeout=30,
            # Connections dropped by a proxy or a database failover are replaced, not handed out.
            pool_pre_ping=True,
            pool_recycle=1800,
        )
    return sa.create_engine(url, echo=echo, pool_pre_ping=True)
