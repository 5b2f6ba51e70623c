"""Ledgers for the ledger tests: hours rolled up by two backfills side by side
(:func:`two_backfills`), and a ledger copied into a PostgreSQL database of its own, each hour
written as the hourly job writes one (:func:`postgres_copy`), to compare SQLite and PostgreSQL on
the same hours."""

from __future__ import annotations

import concurrent.futures
import uuid
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Callable, Iterator

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from actions.ledger.rollup import LedgerRollup, Rolled
from actions.policy.rules import Policy
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


def two_backfills(rollup: Callable[[], LedgerRollup], start: datetime, end: datetime, policy: Policy,
                  early_hours: int) -> list[Rolled]:
    """The hours ``[start, end)`` rolled up by two backfills side by side, each with its own
    client (``rollup()`` makes one): the first ``early_hours`` as the first backfill's ``limit``,
    the rest by the second, so each hour is written by one of them, hour after hour, as by one
    backfill. Returns the first's hours, then the second's."""
    split = start + timedelta(hours=early_hours)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        early = pool.submit(rollup().backfill, start, end, policy, limit=early_hours)
        late = pool.submit(rollup().backfill, split, end, policy)
        return early.result() + late.result()
