"""Alembic environment for gpu-cost-bot's store.

Run in two ways: by ``Store.migrate()``, which hands over an open connection in
``config.attributes["connection"]``, or by the ``alembic`` command with this directory's
``alembic.ini`` and the database URL given as ``-x url=...``.
"""

from __future__ import annotations

import logging.config

import sqlalchemy as sa
from alembic import context

import actions.store.activity  # noqa: F401 - registers the activity state table with the models' metadata
import actions.store.advice_hours  # noqa: F401 - registers the ledger's advice tables
import actions.store.database  # noqa: F401 - registers the requests', audit's, prices', budgets', alerts' and job runs' tables
import actions.store.ledger  # noqa: F401 - registers the ledger's tables with the models' metadata
from actions.store.schema import MIGRATION_LOCK_ID, VERSION_TABLE, UTCDateTime, include_object, metadata

config = context.config
target_metadata = metadata


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise RuntimeError("no database URL: pass -x url=... to alembic, or use Store.migrate()")
    return url


def _render_item(type_: str, obj: object, autogen_context: object) -> str | bool:
    # A new migration must not import actions.store (the models move on, the migration must not),
    # and UTCDateTime is a Python-side conversion over a plain timestamptz column.
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _configure(connection: sa.Connection | None = None, url: str | None = None) -> None:
    dialect = connection.dialect.name if connection is not None else sa.make_url(url).get_backend_name()
    context.configure(
        connection=connection,
        url=url,
        target_metadata=target_metadata,
        version_table=VERSION_TABLE,
        compare_type=True,
        render_item=_render_item,
        include_object=include_object,
        # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=dialect == "sqlite",
        literal_binds=connection is None,
    )


def run_migrations_offline() -> None:
    _configure(url=_url())
    with context.begin_transaction():
        context.run_migrations()


def _run(connection: sa.Connection) -> None:
    _configure(connection=connection)
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            # Replicas starting together would otherwise all see the old version and race to run
            # the same DDL. The lock is released when this transaction ends, so a replica that
            # waited reads the new version and has nothing left to do.
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:id)"), {"id": MIGRATION_LOCK_ID})
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = sa.create_engine(_url(), poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            _run(connection)
            connection.commit()
    finally:
        engine.dispose()


# Only the alembic command configures logging from the ini file; inside the bot, the bot's own
# logging setup must not be replaced (fileConfig would disable every existing logger).
if config.config_file_name is not None and config.attributes.get("connection") is None:
    logging.config.fileConfig(config.config_file_name, disable_existing_loggers=False)

if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
