"""Many action requests in a few statements: what one sweep does to every open request at once.

A sweep of a large fleet looks up, refreshes and re-renders every open request. Done one request
at a time that is a handful of statements and transactions per request: 2.9 s for 824 findings
(benchmarks/sweep.py, part 4). Each function here makes, for every request it is given, exactly
the change its one-request counterpart in :class:`~actions.store.database.Store` makes (named in its
docstring), in one transaction of a few statements whatever the number of requests.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Iterable, Iterator, Mapping, Sequence, TypeVar

import sqlalchemy as sa
from sqlmodel import col, select

from actions.store.audit import AuditEvent, detail_json
from actions.store.database import Store
from actions.store.requests import ActionRequest, NewRequest, clean_fields
from actions.store.schema import as_utc
from actions.store.states import OPEN_STATES, SYSTEM_ACTOR

# Ids or keys per IN list: under the 999 host parameters of SQLite builds before 3.32.
CHUNK = 500

T = TypeVar("T")


def _chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def open_for_keys(store: Store, keys: Iterable[str]) -> dict[str, ActionRequest]:
    """:meth:`Store.open_for_key` for many keys: key -> the request holding it (in an open
    state); keys no request holds are absent. One SELECT per :data:`CHUNK` keys."""
    wanted = sorted(set(keys))
    out: dict[str, ActionRequest] = {}
    with store._session() as session:
        for chunk in _chunks(wanted):
            query = select(ActionRequest).where(
                col(ActionRequest.key).in_(chunk), col(ActionRequest.state).in_(sorted(OPEN_STATES))
            )
            out.update((r.key, r) for r in session.exec(query).all())
    return out


def keys_in_state(store: Store, state: str) -> list[sa.Row]:
    """``(id, key, kind, cluster)`` of every request in ``state``, oldest first (the order of
    :meth:`Store.list_requests`): what a sweep needs to find the proposals its findings no longer
    hold, without loading every request's finding. One SELECT."""
    table = ActionRequest.__table__
    query = (
        sa.select(table.c.id, table.c.key, table.c.kind, table.c.cluster)
        .where(table.c.state == state)
        .order_by(table.c.created_at, table.c.id)
    )
    with store.engine.connect() as connection:
        return list(connection.execute(query).all())


def proposed_ids(store: Store) -> dict[str, int]:
    """Finding key -> id of its request awaiting approval (``proposed``), from keys and ids alone: a
    fleet holds thousands of proposals, each with its finding's JSON."""
    return {r.key: r.id for r in keys_in_state(store, "proposed")}


def requests_by_id(store: Store, ids: Iterable[int]) -> dict[int, ActionRequest]:
    """:meth:`Store.get` for many ids: id -> request, ids of no request absent."""
    wanted = sorted(set(ids))
    with store._session() as session:
        return {r.id: r for chunk in _chunks(wanted) for r in _select_ids(session, chunk)}


def versions(store: Store, ids: Iterable[int]) -> dict[int, int]:
    """Each request's ``version`` by id (ids of no request absent): whether it changed since it
    was read, without loading it."""
    table = ActionRequest.__table__
    wanted = sorted(set(ids))
    with store.engine.connect() as connection:
        return {
            request_id: version for chunk in _chunks(wanted)
            for request_id, version in connection.execute(
                sa.select(table.c.id, table.c.version).where(table.c.id.in_(chunk))
            ).all()
        }


def _select_ids(session: Any, ids: Sequence[int]) -> list[ActionRequest]:
    query = select(ActionRequest).where(col(ActionRequest.id).in_(ids)).execution_options(populate_existing=True)
    return list(session.exec(query).all())


def create_requests(store: Store, new: Sequence[NewRequest], now: datetime) -> list[int]:
    """:meth:`~actions.store.database.Store.create_request` for many requests (each built with :func:`~actions.store.requests.new_request`),
    each audited ``proposed`` by the system, in one transaction; returns their ids in the order
    given (read them with :func:`requests_by_id`). Raises DuplicateOpenRequest as
    :meth:`Store.create_request` when a key is already held: the whole batch is then rolled back
    and made again one by one, so the requests before the duplicate are still created, as one
    by one they would be."""
    from sqlalchemy.exc import IntegrityError

    now = as_utc(now)
    rows = [n.values for n in new]
    if not rows:
        return []
    table = ActionRequest.__table__
    try:
        with store._session() as session, session.begin():
            connection = session.connection()
            connection.execute(sa.insert(table), rows)
            # An open key names one request (the partial unique index), so the keys give back the
            # ids: SQLite would send a multi-row INSERT ... RETURNING one row at a time.
            ids = {}
            for chunk in _chunks([r["key"] for r in rows]):
                found = sa.select(table.c.key, table.c.id).where(table.c.key.in_(chunk), table.c.state == "proposed")
                ids.update(connection.execute(found).all())
            made = [ids[r["key"]] for r in rows]
            connection.execute(sa.insert(AuditEvent.__table__), [
                {"request_id": request_id, "at": now, "actor": SYSTEM_ACTOR, "event": "proposed",
                 "detail_json": detail_json(None)}
                for request_id in made
            ])
        return made
    except IntegrityError:
        pass
    return [store.add_request(n).id for n in new]


def update_requests(
    store: Store, changes: Sequence[tuple[int, Mapping[str, Any]]], *, now: datetime, actor: str, event: str
) -> list[int]:
    """:meth:`Store.update_fields` (without ``in_states``) for many requests: each
    ``(request_id, fields)`` sets its fields, bumps ``version``, sets ``updated_at = now`` and is
    audited as ``event`` by ``actor``, all in one transaction: one executemany UPDATE per
    distinct set of field names, one INSERT of the audit events, one SELECT of ids per
    :data:`CHUNK`. Returns the ids of the updated requests in the order given (ids of no
    request left out; read them with :func:`requests_by_id`, which a sweep needs only for those
    whose message it writes). Raises ValueError like :meth:`Store.update_fields`."""
    now = as_utc(now)
    cleaned = [(request_id, clean_fields(fields)) for request_id, fields in changes]
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for request_id, values in cleaned:
        groups.setdefault(tuple(sorted(values)), []).append(
            {"b_id": request_id, **{f"b_{name}": value for name, value in values.items()}}
        )
    table = ActionRequest.__table__
    ids = [request_id for request_id, _ in cleaned]
    with store._session() as session, session.begin():
        connection = session.connection()
        for names, params in groups.items():
            statement = (
                sa.update(table)
                .where(table.c.id == sa.bindparam("b_id"))
                .values({**{name: sa.bindparam(f"b_{name}") for name in names}, "updated_at": now,
                         "version": table.c.version + 1})
            )
            connection.execute(statement, params)
        found = {
            request_id for chunk in _chunks(ids)
            for request_id in connection.execute(sa.select(table.c.id).where(table.c.id.in_(chunk))).scalars()
        }
        audit = [
            {"request_id": request_id, "at": now, "actor": actor, "event": event, "detail_json": detail_json(None)}
            for request_id in ids if request_id in found
        ]
        if audit:
            connection.execute(sa.insert(AuditEvent.__table__), audit)
    return [request_id for request_id in ids if request_id in found]


def claim_messages(store: Store, ids: Sequence[int], now: datetime, lease_seconds: float) -> list[ActionRequest]:
    """:meth:`Store.claim_message` for many requests: hold the messages no one else holds for
    ``lease_seconds``; returns the requests claimed (as they are now), in the order of ``ids``. One
    ``UPDATE ... RETURNING`` and one SELECT per :data:`CHUNK`."""
    now = as_utc(now)
    table = ActionRequest.__table__
    free = sa.or_(table.c.sync_lease_until.is_(None), table.c.sync_lease_until <= now)
    claimed: list[ActionRequest] = []
    with store._session() as session, session.begin():
        connection = session.connection()
        for chunk in _chunks(sorted(set(ids))):
            statement = (
                sa.update(table)
                .where(table.c.id.in_(chunk), free)
                .values(sync_lease_until=now + timedelta(seconds=lease_seconds))
                .returning(table.c.id)
            )
            got = sorted(row[0] for row in connection.execute(statement))
            if got:
                claimed += _select_ids(session, got)
    order = {request_id: k for k, request_id in enumerate(ids)}
    return sorted(claimed, key=lambda r: order[r.id])


def messages_posting(store: Store, ids: Sequence[int], now: datetime) -> None:
    """:meth:`Store.message_posting` for many requests: record that their first posts are about
    to be sent (kept where one was already recorded). One UPDATE per :data:`CHUNK`."""
    table = ActionRequest.__table__
    with store._session() as session, session.begin():
        for chunk in _chunks(sorted(set(ids))):
            session.connection().execute(
                sa.update(table)
                .where(table.c.id.in_(chunk), table.c.post_started_at.is_(None))
                .values(post_started_at=as_utc(now))
            )


def messages_shown(
    store: Store, shown: Sequence[tuple[int, int]], now: datetime, posted: Sequence[tuple[int, int, str, str]] = ()
) -> None:
    """:meth:`Store.message_shown` for many requests, in one transaction: each ``(request_id,
    version)`` of ``shown`` (a message updated in place) and each ``(request_id, version,
    channel, ts)`` of ``posted`` (just posted; audited ``posted`` at ``now``) records that
    version shown, clears the retry state and releases the hold. One executemany UPDATE each,
    and one INSERT of the audit events."""
    if not shown and not posted:
        return
    table = ActionRequest.__table__
    released = dict(sync_failures=0, sync_due_at=None, sync_lease_until=None)
    with store._session() as session, session.begin():
        connection = session.connection()
        if shown:
            statement = (
                sa.update(table).where(table.c.id == sa.bindparam("b_id"))
                .values(shown_version=sa.bindparam("b_version"), **released)
            )
            connection.execute(statement, [{"b_id": i, "b_version": v} for i, v in shown])
        if posted:
            statement = (
                sa.update(table).where(table.c.id == sa.bindparam("b_id"))
                .values(shown_version=sa.bindparam("b_version"), channel=sa.bindparam("b_channel"),
                        message_ts=sa.bindparam("b_ts"), **released)
            )
            connection.execute(statement, [{"b_id": i, "b_version": v, "b_channel": c, "b_ts": t} for i, v, c, t in posted])
            at = as_utc(now)
            connection.execute(sa.insert(AuditEvent.__table__), [
                {"request_id": i, "at": at, "actor": SYSTEM_ACTOR, "event": "posted",
                 "detail_json": detail_json({"channel": c, "ts": t})}
                for i, _, c, t in posted
            ])


def done_without_events(store: Store, events: Sequence[str]) -> list[tuple[ActionRequest, datetime | None]]:
    """Every ``done`` request that is no dry run and whose audit holds none of ``events``, oldest
    first, each with the time of its latest ``applied`` or ``recovered`` event (None when it has
    neither): what the outcome verifier (:mod:`bot.chat.verify`) has still to judge. Two SELECTs."""
    audit = AuditEvent.__table__
    seen = sa.select(audit.c.request_id).where(audit.c.request_id == ActionRequest.id, audit.c.event.in_(list(events)))
    query = (
        select(ActionRequest)
        .where(ActionRequest.state == "done", ActionRequest.dry_run == sa.false(), ~sa.exists(seen))
        .order_by(col(ActionRequest.updated_at), col(ActionRequest.id))
    )
    with store._session() as session:
        found = list(session.exec(query).all())
        applied: dict[int, datetime] = {}
        for chunk in _chunks([r.id for r in found]):
            times = sa.select(audit.c.request_id, sa.func.max(audit.c.at)).where(
                audit.c.request_id.in_(chunk), audit.c.event.in_(["applied", "recovered"])
            ).group_by(audit.c.request_id)
            applied.update((rid, as_utc(at)) for rid, at in session.execute(times).all())
    return [(r, applied.get(r.id)) for r in found]
