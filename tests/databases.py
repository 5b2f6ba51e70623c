"""Real databases for tests: a SQLite file and a PostgreSQL database of their own.

Use them by importing all of them (fixtures find the fixtures they depend on by name in the test
module) or by naming this module in ``pytest_plugins`` of the top-level conftest::

    from tests.databases import *  # noqa: F403

- ``sqlite_url``: a fresh SQLite file in the test's ``tmp_path``.
- ``postgres_url``: an empty PostgreSQL database for each test. A database is created per test
  module (uniquely named, so parallel runs never collide) and dropped when the module finishes;
  between tests its ``public`` schema is dropped and recreated.
- ``database_url``: parametrized over both; the PostgreSQL case carries the ``postgres`` marker.
- ``store``: a migrated ``actions.store.database.Store`` on ``database_url``, closed after the test.

PostgreSQL is the server at ``127.0.0.1:5432`` (user ``postgres``, trust auth, maintenance database
``test``), or the server URL in ``GPU_COST_BOT_TEST_POSTGRES``. When it cannot be reached the
PostgreSQL tests are skipped, unless ``TESTS_REQUIRE_POSTGRES=1``, which makes them fail (CI
sets it so a broken database service cannot pass as green).

The URLs are plain strings; nothing has been created in the databases (``store`` migrates its own).
"""

from __future__ import annotations

import os
import uuid
from typing import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from actions.store.database import Store

__all__ = ["database_url", "postgres_database", "postgres_server", "postgres_url", "sqlite_url", "store"]

# psycopg2 named explicitly: SQLAlchemy 2.1 reads a bare postgresql:// as psycopg 3.
DEFAULT_POSTGRES_SERVER = "postgresql+psycopg2://postgres@127.0.0.1:5432/test"


def _admin_url() -> sa.URL:
    return make_url(os.environ.get("GPU_COST_BOT_TEST_POSTGRES") or DEFAULT_POSTGRES_SERVER)


def _postgres_required() -> bool:
    return os.environ.get("TESTS_REQUIRE_POSTGRES", "") == "1"


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    """A SQLAlchemy URL of a new SQLite file in ``tmp_path``."""
    return f"sqlite:///{tmp_path / 'gpu-cost-bot.db'}"


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[sa.Engine]:
    """An AUTOCOMMIT engine on the server's maintenance database (CREATE/DROP DATABASE cannot run
    in a transaction). Skips, or fails under TESTS_REQUIRE_POSTGRES=1, when unreachable."""
    try:
        engine = sa.create_engine(
            _admin_url(),
            isolation_level="AUTOCOMMIT",
            poolclass=sa.pool.NullPool,
            connect_args={"connect_timeout": 5},
        )
        with engine.connect() as connection:
            connection.execute(sa.text("SELECT 1"))
    except Exception as e:  # no driver, no server, no login: all mean "no PostgreSQL here"
        message = f"PostgreSQL at {_admin_url().render_as_string()} is unreachable: {e}"
        if _postgres_required():
            pytest.fail(message + " (TESTS_REQUIRE_POSTGRES=1)", pytrace=False)
        pytest.skip(message)
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def postgres_database(postgres_server: sa.Engine) -> Iterator[str]:
    """The URL of this test module's own PostgreSQL database; prefer ``postgres_url``, which also
    empties it before each test."""
    name = f"gpu_cost_bot_test_{uuid.uuid4().hex[:16]}"
    with postgres_server.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(postgres_server.url).set(database=name).render_as_string(hide_password=False)
    finally:
        with postgres_server.connect() as connection:
            # FORCE ends connections a test left open (an engine that was never disposed).
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def postgres_url(postgres_database: str) -> str:
    """A SQLAlchemy URL of an empty PostgreSQL database (see the module docstring)."""
    engine = sa.create_engine(
        postgres_database, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool
    )
    try:
        with engine.connect() as connection:
            # A connection left idle in a transaction by an earlier test would block the DROP
            # forever; fail loudly instead.
            connection.execute(sa.text("SET lock_timeout = '10s'"))
            connection.execute(sa.text("DROP SCHEMA public CASCADE"))
            connection.execute(sa.text("CREATE SCHEMA public"))
    finally:
        engine.dispose()
    return postgres_database


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def database_url(request: pytest.FixtureRequest) -> str:
    """An empty database's URL, once for SQLite and once for PostgreSQL."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_url")
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    """A Store on ``database_url`` at the latest schema."""
    s = Store(database_url)
    s.migrate()
    yield s
    s.close()
