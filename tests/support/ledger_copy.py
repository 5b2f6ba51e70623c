"""A usage ledger copied into a PostgreSQL database of its own, each hour written as the hourly job
writes one: how the ledger tests compare SQLite and PostgreSQL on the same hours."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from typing import Iterator

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from actions.store.database import Store
from actions.store.ledger import LedgerStore


@contextmanager
def postgres_copy(postgres_server: sa.Engine, source: Store, cluster: str) -> Iterator[Store]:
    """A migrated PostgreSQL store holding ``source``'s ledger hours of ``cluster``; the database
    is dropped on exit."""
    name = f"gpu_cost_bot_ledger_{uuid.uuid4().hex[:12]}"
    with postgres_server.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    store = Store(make_url(postgres_server.url).set(database=name).render_as_string(hide_password=False))
    try:
        store.migrate()
        rows, target = LedgerStore(source), LedgerStore(store)
        for hour, status, _, written_at, detail in rows.hours(cluster):
            assert target.write_hour(cluster, hour, rows.rows(cluster, hour), status, written_at, detail)
        yield store
    finally:
        store.close()
        with postgres_server.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
