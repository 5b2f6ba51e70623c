"""actions.store.bulk on SQLite and PostgreSQL: each batched operation leaves the database exactly
as its one-request counterpart in Store does, and its statements do not grow with the requests."""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from actions.model.findings import ActionVerb
from actions.store import bulk as store_bulk
from actions.store.database import Store
from actions.store.requests import ActionRequest, new_request
from actions.store.states import DuplicateOpenRequest

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc)
# Columns that differ between two requests made the same way: their identity.
IDENTITY = {"id", "key", "name", "finding_json", "target_name"}


def _args(key: str, **overrides: Any) -> dict[str, Any]:
    args: dict[str, Any] = dict(
        key=key, team="ml-research", kind="idle-notebook", namespace="ml-research", name=key.rsplit("/", 1)[-1],
        verb=ActionVerb.STOP_NOTEBOOK, target=("kubeflow.org/v1", "Notebook", key.rsplit("/", 1)[-1]),
        finding_json=json.dumps({"key": key, "usd_per_hour": 6.88}), usd_per_hour=6.88, gpus=1, dry_run=True,
        now=T0, ttl_seconds=86400, cluster="default",
    )
    args.update(overrides)
    return args


def _row(req: ActionRequest) -> dict[str, Any]:
    return {k: v for k, v in req.model_dump().items() if k not in IDENTITY}


def _events(store: Store, req: ActionRequest) -> list[tuple]:
    return [(e.at, e.actor, e.event, e.detail_json) for e in store.events(req.id)]


@contextmanager
def _statements(store: Store) -> Iterator[list[str]]:
    """The SQL statements sent while the block runs (an executemany counts once)."""
    sent: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001 - SQLAlchemy's signature
        sent.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)


def _data(sent: list[str]) -> list[str]:
    """The statements that read or write rows (not BEGIN/COMMIT/pings)."""
    return [s for s in sent if s.split(None, 1)[0].upper() in ("SELECT", "INSERT", "UPDATE", "DELETE")]


def test_create_requests_stores_what_create_request_stores(store: Store) -> None:
    one = store.create_request(**_args("idle-notebook/a/nb-1", act_at=T0 + timedelta(hours=4)))
    (bulk_id,) = store_bulk.create_requests(
        store, [new_request(**_args("idle-notebook/b/nb-1", act_at=T0 + timedelta(hours=4)))], T0
    )
    assert bulk_id is not None and bulk_id != one.id
    bulk = store.get(bulk_id)
    assert _row(bulk) == _row(store.get(one.id))
    assert _events(store, bulk) == _events(store, one) == [(T0, "system", "proposed", "{}")]


def test_create_requests_keeps_the_order_given_and_takes_a_few_statements(store: Store) -> None:
    keys = [f"idle-notebook/ns/nb-{i:03d}" for i in range(300)]
    with _statements(store) as sent:
        made = store_bulk.create_requests(store, [new_request(**_args(k)) for k in keys], T0)
    assert [r.key for r in store_bulk.requests_by_id(store, made).values()] == keys
    assert made == sorted(made)  # ids in the order given
    assert sorted(r.key for r in store.list_requests(states=["proposed"])) == keys
    assert len(_data(sent)) <= 12, _data(sent)  # one by one it is 600 INSERTs


def test_a_key_already_held_fails_the_batch_as_one_by_one_would(store: Store) -> None:
    held = store.create_request(**_args("idle-notebook/ns/nb-2"))
    batch = [new_request(**_args(f"idle-notebook/ns/nb-{i}")) for i in (1, 2, 3)]
    with pytest.raises(DuplicateOpenRequest) as caught:
        store_bulk.create_requests(store, batch, T0)
    assert caught.value.existing == held.id
    # As create_request one by one: nb-1 was made before nb-2 failed; nb-3 never was.
    assert sorted(r.key for r in store.list_requests()) == ["idle-notebook/ns/nb-1", "idle-notebook/ns/nb-2"]


def test_new_request_checks_as_create_request_does() -> None:
    with pytest.raises(ValueError, match="needs a target"):
        new_request(**_args("k/a/b", target=None))
    with pytest.raises(ValueError, match="ttl_seconds must be > 0"):
        new_request(**_args("k/a/b", ttl_seconds=0))


def test_open_for_keys_finds_open_requests_only(store: Store) -> None:
    reqs = [store.create_request(**_args(f"idle-notebook/ns/nb-{i}")) for i in range(3)]
    store.transition(reqs[1].id, from_states=["proposed"], to_state="expired", now=T0, actor="system", event="expired")
    found = store_bulk.open_for_keys(store, [r.key for r in reqs] + ["idle-notebook/ns/none"])
    assert {k: r.id for k, r in found.items()} == {reqs[0].key: reqs[0].id, reqs[2].key: reqs[2].id}
    many = [store.create_request(**_args(f"idle-notebook/many/nb-{i}")).key for i in range(store_bulk.CHUNK + 5)]
    assert set(store_bulk.open_for_keys(store, many)) == set(many)  # more keys than one IN list holds


def test_update_requests_changes_what_update_fields_changes(store: Store) -> None:
    a = store.create_request(**_args("idle-notebook/a/nb-1"))
    b = store.create_request(**_args("idle-notebook/b/nb-1"))
    later = T0 + timedelta(minutes=15)
    fields = {"finding_json": json.dumps({"idle_seconds": 4500}), "usd_per_hour": 7.5, "act_at": later}
    one = store.update_fields(a.id, now=later, actor="system", event="updated", **fields)
    assert store_bulk.update_requests(store, [(b.id, fields)], now=later, actor="system", event="updated") == [b.id]
    bulk = store.get(b.id)
    assert (bulk.version, bulk.updated_at, bulk.usd_per_hour, bulk.act_at) == (2, later, 7.5, later)
    assert _row(store.get(b.id)) == _row(store.get(a.id)) == _row(one)
    assert store.get(b.id).finding_json == fields["finding_json"]
    assert _events(store, bulk) == _events(store, one)


def test_update_requests_in_a_few_statements_leaving_out_missing_ids(store: Store) -> None:
    reqs = [store.create_request(**_args(f"idle-notebook/ns/nb-{i:03d}")) for i in range(300)]
    later = T0 + timedelta(minutes=15)
    changes = [(r.id, {"finding_json": json.dumps({"i": i}), "usd_per_hour": float(i)}) for i, r in enumerate(reqs)]
    changes[7] = (reqs[7].id, {**changes[7][1], "act_at": later})  # a second set of columns
    with _statements(store) as sent:
        done = store_bulk.update_requests(store, [*changes, (10**9, {"note": "x"})], now=later, actor="system",
                                          event="updated")
    assert done == [r.id for r in reqs]
    by_id = store_bulk.requests_by_id(store, done)
    done = [by_id[i] for i in done]
    assert store_bulk.versions(store, [reqs[0].id, 10**9]) == {reqs[0].id: 2}
    assert [r.usd_per_hour for r in done] == [float(i) for i in range(300)]
    assert done[7].act_at == later and done[8].act_at is None
    assert all(r.version == 2 and r.updated_at == later for r in done)
    assert [e.event for e in store.events(reqs[299].id)] == ["proposed", "updated"]
    assert len(_data(sent)) <= 10, _data(sent)  # one by one it is 900 statements
    with pytest.raises(ValueError, match="cannot set"):
        store_bulk.update_requests(store, [(reqs[0].id, {"state": "done"})], now=later, actor="system", event="x")


def test_claim_messages_skips_held_ones_and_messages_shown_releases(store: Store) -> None:
    reqs = [store.create_request(**_args(f"idle-notebook/ns/nb-{i}")) for i in range(4)]
    assert store.claim_message(reqs[1].id, T0, 120) is not None  # another writer holds it
    claimed = store_bulk.claim_messages(store, [reqs[3].id, reqs[1].id, reqs[0].id, reqs[2].id], T0, 120)
    assert [r.id for r in claimed] == [reqs[3].id, reqs[0].id, reqs[2].id]  # in the order asked
    assert store_bulk.claim_messages(store, [reqs[0].id], T0 + timedelta(seconds=60), 120) == []
    store_bulk.messages_shown(store, [(reqs[0].id, 1)], T0, posted=[(reqs[3].id, 1, "C0GPU", "1732352400.000100")])
    shown = store_bulk.requests_by_id(store, [r.id for r in reqs])
    assert (shown[reqs[0].id].shown_version, shown[reqs[0].id].sync_lease_until) == (1, None)
    assert (shown[reqs[3].id].shown_version, shown[reqs[3].id].channel, shown[reqs[3].id].message_ts) == (
        1, "C0GPU", "1732352400.000100")
    assert _events(store, reqs[3])[-1] == (T0, "system", "posted", '{"channel":"C0GPU","ts":"1732352400.000100"}')
    assert shown[reqs[2].id].shown_version is None and shown[reqs[2].id].sync_lease_until is not None
    store_bulk.messages_posting(store, [reqs[1].id, reqs[2].id], T0)
    store_bulk.messages_posting(store, [reqs[2].id], T0 + timedelta(minutes=1))  # the first attempt is kept
    assert store.get(reqs[2].id).post_started_at == T0 and store.get(reqs[0].id).post_started_at is None
    # Released: claimable again at once, as after Store.message_shown.
    assert [r.id for r in store_bulk.claim_messages(store, [reqs[0].id], T0, 120)] == [reqs[0].id]
