"""The store against real SQLite and PostgreSQL: migrations, the one-open-request-per-key rule, the
atomic state transitions a double click relies on, the audit trail and the time queries."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError

import actions.store.activity  # noqa: F401 - the activity state table is a model too
import actions.store.ledger  # noqa: F401 - the ledger's tables are models too
from actions.model.findings import ActionVerb
from actions.model.kube import ObjectRef
from actions.store.database import Store
from actions.store.requests import ActionRequest
from actions.store.schema import VERSION_TABLE, include_object, metadata
from actions.store.states import OPEN_STATES, TERMINAL_STATES, DuplicateOpenRequest, RequestState
from tests.support.paths import ROOT
from tests.support.processes import python_env

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc)


def _create(store: Store, key: str = "idle-notebook/ml-research/llm-explore", **overrides: Any) -> ActionRequest:
    args: dict[str, Any] = dict(
        key=key,
        team="ml-research",
        kind="idle-notebook",
        namespace="ml-research",
        name="llm-explore",
        verb=ActionVerb.STOP_NOTEBOOK,
        target=("kubeflow.org/v1", "Notebook", "llm-explore"),
        finding_json=json.dumps({"key": key, "usd_per_hour": 12.29}),
        usd_per_hour=12.29,
        gpus=4,
        dry_run=False,
        now=T0,
        ttl_seconds=3600,
        cluster="default",
    )
    args.update(overrides)
    return store.create_request(**args)


def _race(n: int, work: Callable[[int], Any]) -> list[Any]:
    """Run ``work(i)`` in ``n`` threads released together; return results (or the exceptions)."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except Exception as e:  # collected and asserted on by the caller
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a racing thread hung"
    return results


# --- migrations ------------------------------------------------------------------------------------


def test_migrate_twice_creates_the_tables(database_url: str, tmp_path, monkeypatch) -> None:
    # From a directory with no alembic.ini in sight, as an installed package would run.
    monkeypatch.chdir(tmp_path)
    with Store(database_url) as s:
        s.migrate()
        s.migrate()
        with s.engine.connect() as connection:
            inspector = sa.inspect(connection)
            assert {"action_request", "audit_event", VERSION_TABLE} <= set(inspector.get_table_names())
            columns = {c["name"] for c in inspector.get_columns("action_request")}
            assert {"key", "state", "finding_json", "usd_per_hour", "until", "undo_json", "version"} <= columns
            assert {c["name"] for c in inspector.get_columns("audit_event")} == {
                "id", "request_id", "at", "actor", "event", "detail_json"
            }
            unique = [ix for ix in inspector.get_indexes("action_request") if ix["unique"]]
            assert [ix["column_names"] for ix in unique] == [["key"]]
            versions = connection.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).all()
        assert versions == [("0014_advice_hours",)]
        # Usable after the second migrate: the tables were not recreated empty-handed or broken.
        assert _create(s).id is not None


def test_migration_matches_models(store: Store) -> None:
    with store.engine.connect() as connection:
        context = MigrationContext.configure(
            connection,
            opts={"version_table": VERSION_TABLE, "compare_type": True, "include_object": include_object},
        )
        assert compare_metadata(context, metadata) == []
        # The comparison does see the migrated tables: against no models, both would be dropped.
        removed = {d[1].name for d in compare_metadata(context, sa.MetaData()) if d[0] == "remove_table"}
        assert removed == {"action_request", "audit_event", "price_cache", "team_budget", "alert_record", "job_run",
                           "usage_hour", "usage_hour_filled", "usage_day", "activity_seen", "activity_mark",
                           "store_fact", "slack_request_seen", "budget_rule", "advice_pod_hour",
                           "advice_namespace_hour", "advice_node_hour", "advice_hour_filled"}
        # APScheduler's table is created by a migration but belongs to APScheduler: never compared.
        assert "apscheduler_jobs" in sa.inspect(connection).get_table_names()


_MIGRATE_AT = """
import sys
from actions.store.database import Store
# A first migration of a throwaway database loads alembic and the scripts, so that after the
# common go each replica reaches its DDL within milliseconds of the others.
with Store("sqlite://") as warm_up:
    warm_up.migrate()
store = Store(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()  # the go, sent to every replica at once
store.migrate()
store.close()
"""


@pytest.mark.postgres
@pytest.mark.process
def test_replicas_migrating_at_once_all_succeed(postgres_url: str) -> None:
    # Separate processes, as replicas are: alembic's context is per process. Each one waits for
    # the go after its imports (sent once all are ready), so the migrations really do overlap.
    root = ROOT
    replicas = [
        subprocess.Popen(
            [sys.executable, "-c", _MIGRATE_AT, postgres_url],
            cwd=root,
            env=python_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(6)
    ]
    before_go = []
    for p in replicas:
        lines = []
        while (line := p.stdout.readline()) and line != "ready\n":  # "" when it died first
            lines.append(line)
        before_go.append("".join(lines))
    for p in replicas:
        try:
            p.stdin.write("go\n")
            p.stdin.flush()
        except BrokenPipeError:  # it died before the go: its output and exit code say why
            pass
    outputs = [early + p.communicate(timeout=120)[0] for early, p in zip(before_go, replicas)]
    assert [p.returncode for p in replicas] == [0] * len(replicas), outputs
    with Store(postgres_url) as s, s.engine.connect() as connection:
        assert connection.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).all() == [("0014_advice_hours",)]
        assert {"action_request", "audit_event"} <= set(sa.inspect(connection).get_table_names())


def test_migrations_in_one_process_do_not_overlap(database_url: str) -> None:
    stores = [Store(database_url) for _ in range(4)]
    try:
        assert _race(len(stores), lambda i: stores[i].migrate()) == [None] * len(stores)
        assert _create(stores[0]).id is not None
    finally:
        for s in stores:
            s.close()


def test_in_memory_sqlite_works() -> None:
    with Store("sqlite://") as s:
        s.migrate()
        created = _create(s)
        assert s.get(created.id).key == created.key


# --- creating requests and the one-open-request-per-key rule ---------------------------------------


def test_create_request_stores_everything(store: Store) -> None:
    created = _create(store)
    loaded = store.get(created.id)
    assert loaded is not None
    assert (loaded.state, loaded.version, loaded.verb) == ("proposed", 1, "stop-notebook")
    assert (loaded.target_api_version, loaded.target_kind, loaded.target_name) == (
        "kubeflow.org/v1", "Notebook", "llm-explore"
    )
    assert loaded.usd_per_hour == pytest.approx(12.29) and loaded.gpus == 4 and loaded.dry_run is False
    assert loaded.created_at == loaded.updated_at == T0
    assert loaded.expires_at == T0 + timedelta(hours=1)
    assert loaded.finding()["key"] == created.key
    assert [(e.event, e.actor) for e in store.events(created.id)] == [("proposed", "system")]
    assert store.open_for_key(created.key).id == created.id


def test_report_only_and_object_ref_targets(store: Store) -> None:
    report = _create(store, key="a", verb="", target=None)
    assert (report.verb, report.target_kind) == ("", "")
    ref = ObjectRef("apps/v1", "StatefulSet", "ml-research", "trainer")
    scaled = _create(store, key="b", verb=ActionVerb.SCALE_TO_ZERO, target=ref)
    assert (scaled.verb, scaled.target_kind, scaled.target_name) == ("scale-to-zero", "StatefulSet", "trainer")
    with pytest.raises(ValueError):
        _create(store, key="c", verb="delete-everything")
    with pytest.raises(ValueError):
        _create(store, key="d", target=None)
    with pytest.raises(ValueError):
        _create(store, key="e", finding_json="not json")
    assert [r.key for r in store.list_requests()] == ["a", "b"]


def test_a_request_names_its_cluster(store: Store) -> None:
    assert _create(store, key="a", cluster="gpu-west").cluster == "gpu-west"
    with pytest.raises(ValueError, match="b: name the cluster the request was made in"):
        _create(store, key="b", cluster="")
    args = dict(key="c", team="t", kind="idle-notebook", namespace="n", name="c", verb="", target=None,
                finding_json="{}", usd_per_hour=1.0, gpus=1.0, dry_run=True, now=T0, ttl_seconds=60)
    with pytest.raises(TypeError, match="cluster"):
        store.create_request(**args)
    assert [r.key for r in store.list_requests()] == ["a"]


def test_unnamed_requests_are_named_once_each_and_a_fact_is_recorded_once(store: Store) -> None:
    old = [_create(store, key=k) for k in ("a", "b")]
    west = _create(store, key="c", cluster="west")
    with store.engine.begin() as connection:
        t = ActionRequest.__table__
        connection.execute(sa.update(t).where(t.c.key.in_(["a", "b"])).values(cluster=""))
    assert store.name_unnamed_requests("east", T0, why="test") == [r.id for r in old]
    assert store.name_unnamed_requests("east", T0, why="test") == []  # named already
    assert [(r.key, r.cluster, r.version) for r in store.list_requests()] == [("a", "east", 1), ("b", "east", 1), ("c", "west", 1)]
    assert [e.event for e in store.events(old[0].id)] == ["proposed", "cluster-named"]
    assert [e.event for e in store.events(west.id)] == ["proposed"]
    with pytest.raises(ValueError):
        store.name_unnamed_requests("", T0, why="test")

    assert store.fact("home_cluster") is None
    assert store.record_fact("home_cluster", "east", T0).value == "east"
    later = store.record_fact("home_cluster", "west", T0 + timedelta(days=1))
    assert (later.value, later.recorded_at) == ("east", T0)  # the first writer's, unchanged
    assert [e.detail() for e in store.all_events() if e.event == "fact-recorded"] == [{"name": "home_cluster", "value": "east"}]


def test_duplicate_open_key_is_refused(store: Store) -> None:
    first = _create(store)
    with pytest.raises(DuplicateOpenRequest) as caught:
        _create(store, now=T0 + timedelta(minutes=5))
    assert caught.value.existing == first.id
    assert [r.id for r in store.list_requests()] == [first.id]
    assert [e.event for e in store.all_events()] == ["proposed"]


def test_open_states_hold_the_key_and_terminal_states_release_it(store: Store) -> None:
    # Checks the migration's partial index against the store's own idea of "open".
    for state in sorted(OPEN_STATES | TERMINAL_STATES):
        key = f"k/{state}"
        first = _create(store, key=key)
        if state != RequestState.PROPOSED:
            assert store.transition(
                first.id, from_states=["proposed"], to_state=state, now=T0, actor="U1", event=state
            )
        if state in OPEN_STATES:
            with pytest.raises(DuplicateOpenRequest):
                _create(store, key=key)
            assert store.open_for_key(key).id == first.id
        else:
            second = _create(store, key=key, now=T0 + timedelta(seconds=1))
            assert second.id != first.id
            assert store.open_for_key(key).id == second.id


def test_reopening_while_the_key_is_held_is_refused(store: Store) -> None:
    old = _create(store)
    assert store.transition(old.id, from_states=["proposed"], to_state="expired", now=T0, actor="system", event="expired")
    new = _create(store)
    with pytest.raises(DuplicateOpenRequest) as caught:
        store.transition(old.id, from_states=["expired"], to_state="proposed", now=T0, actor="system", event="reproposed")
    assert caught.value.existing == new.id
    assert store.get(old.id).state == "expired"
    assert [e.event for e in store.events(old.id)] == ["proposed", "expired"]


def test_replicas_racing_to_propose_create_one(database_url: str) -> None:
    stores = [Store(database_url) for _ in range(6)]
    try:
        stores[0].migrate()
        results = _race(len(stores), lambda i: _create(stores[i]))
        created = [r for r in results if isinstance(r, ActionRequest)]
        refused = [r for r in results if isinstance(r, DuplicateOpenRequest)]
        assert len(created) == 1 and len(refused) == len(stores) - 1, results
        assert len(stores[0].list_requests()) == 1
        assert [e.event for e in stores[0].all_events()] == ["proposed"]
    finally:
        for s in stores:
            s.close()


# --- transitions ------------------------------------------------------------------------------------


def test_transition_sets_fields_bumps_version_and_audits(store: Store) -> None:
    created = _create(store)
    later = T0 + timedelta(minutes=3)
    approved = store.transition(
        created.id,
        from_states=["proposed"],
        to_state=RequestState.APPROVED,
        now=later,
        actor="U123",
        event="approved",
        detail={"at": later, "reason": "button"},
        decided_by="U123",
        decided_at=later,
        note="Approved by <@U123>",
    )
    assert approved is not None
    assert (approved.state, approved.version, approved.decided_by) == ("approved", 2, "U123")
    assert approved.updated_at == approved.decided_at == later
    assert approved.created_at == T0
    events = store.events(created.id)
    assert [(e.event, e.actor) for e in events] == [("proposed", "system"), ("approved", "U123")]
    assert events[1].detail() == {"at": "2026-11-23T09:03:00Z", "reason": "button"}

    done = store.transition(
        created.id, from_states=["approved"], to_state="done", now=later, actor="system", event="applied",
        undo_json=json.dumps({"annotation": "kubeflow-resource-stopped"}),
    )
    assert done.version == 3 and done.undo() == {"annotation": "kubeflow-resource-stopped"}
    assert store.get(created.id).undo_json == done.undo_json


def test_transition_from_wrong_state_changes_and_writes_nothing(store: Store) -> None:
    created = _create(store)
    assert store.transition(created.id, from_states=["proposed"], to_state="denied", now=T0, actor="U1", event="denied")
    before = store.get(created.id)
    result = store.transition(
        created.id, from_states=["proposed"], to_state="approved", now=T0 + timedelta(hours=1),
        actor="U2", event="approved", decided_by="U2",
    )
    assert result is None
    after = store.get(created.id)
    assert (after.state, after.version, after.updated_at, after.decided_by) == (
        before.state, before.version, before.updated_at, before.decided_by
    )
    assert [e.event for e in store.events(created.id)] == ["proposed", "denied"]
    assert store.transition(10_000, from_states=["proposed"], to_state="approved", now=T0, actor="U", event="approved") is None


def test_transition_rejects_bad_arguments(store: Store) -> None:
    created = _create(store)
    with pytest.raises(ValueError):
        store.transition(created.id, from_states=["proposed"], to_state="gone", now=T0, actor="U", event="x")
    with pytest.raises(ValueError):
        store.transition(created.id, from_states=[], to_state="approved", now=T0, actor="U", event="x")
    with pytest.raises(ValueError):
        store.transition(created.id, from_states=["proposed"], to_state="approved", now=T0, actor="U", event="x", key="other")
    with pytest.raises(ValueError):
        store.transition(created.id, from_states=["proposed"], to_state="approved", now=datetime(2026, 1, 1), actor="U", event="x")
    with pytest.raises(ValueError):
        store.transition(created.id, from_states=["proposed"], to_state="snoozed", now=T0, actor="U", event="x", until=datetime(2026, 1, 1))
    with pytest.raises(ValueError):
        store.transition(created.id, from_states=["proposed"], to_state="done", now=T0, actor="U", event="x", undo_json="{")
    assert store.get(created.id).version == 1
    assert [e.event for e in store.events(created.id)] == ["proposed"]


def test_racing_approvals_act_once(database_url: str) -> None:
    # Separate stores stand for separate replicas (or Slack's retry landing on another pod).
    stores = [Store(database_url) for _ in range(8)]
    try:
        stores[0].migrate()
        created = _create(stores[0])

        def approve(i: int) -> ActionRequest | None:
            return stores[i].transition(
                created.id, from_states=["proposed"], to_state="approved", now=T0, actor=f"U{i}",
                event="approved", decided_by=f"U{i}",
            )

        results = _race(len(stores), approve)
        assert not [r for r in results if isinstance(r, Exception)], results
        winners = [r for r in results if r is not None]
        assert len(winners) == 1
        final = stores[0].get(created.id)
        assert (final.state, final.version, final.decided_by) == ("approved", 2, winners[0].decided_by)
        assert [e.event for e in stores[0].events(created.id)] == ["proposed", "approved"]
    finally:
        for s in stores:
            s.close()


def test_update_fields(store: Store) -> None:
    created = _create(store)
    posted = store.update_fields(
        created.id, now=T0 + timedelta(seconds=2), actor="system", event="posted",
        channel="C0123", message_ts="1732352400.000100",
    )
    assert (posted.channel, posted.message_ts, posted.state, posted.version) == ("C0123", "1732352400.000100", "proposed", 2)
    assert posted.updated_at == T0 + timedelta(seconds=2)
    refreshed = store.update_fields(
        created.id, now=T0 + timedelta(minutes=10), actor="system", event="updated", in_states=["proposed"],
        finding_json=json.dumps({"idle_seconds": 7200}), usd_per_hour=9.0,
    )
    assert refreshed.usd_per_hour == 9.0 and refreshed.finding() == {"idle_seconds": 7200}
    store.transition(created.id, from_states=["proposed"], to_state="expired", now=T0 + timedelta(hours=1), actor="system", event="expired")
    assert store.update_fields(created.id, now=T0, actor="system", event="updated", in_states=["proposed"], note="x") is None
    assert store.update_fields(10_000, now=T0, actor="system", event="updated", note="x") is None
    with pytest.raises(ValueError):
        store.update_fields(created.id, now=T0, actor="system", event="updated", state="proposed")
    assert [e.event for e in store.events(created.id)] == ["proposed", "posted", "updated", "expired"]


# --- audit ----------------------------------------------------------------------------------------


def test_events_are_ordered_by_time_then_id(store: Store) -> None:
    created = _create(store)  # "proposed" at T0
    store.audit(created.id, actor="U9", event="approve-rejected", now=T0 + timedelta(minutes=2), detail={"why": "not an approver"})
    store.audit(created.id, actor="U8", event="approve-rejected", now=T0 + timedelta(minutes=1))
    store.audit(created.id, actor="U7", event="approve-rejected", now=T0 + timedelta(minutes=1))
    store.audit(None, actor="U6", event="approve-rejected", now=T0 + timedelta(seconds=30), detail={"request": 999})
    assert [(e.actor, e.at) for e in store.events(created.id)] == [
        ("system", T0),
        ("U8", T0 + timedelta(minutes=1)),
        ("U7", T0 + timedelta(minutes=1)),
        ("U9", T0 + timedelta(minutes=2)),
    ]
    everything = store.all_events()
    assert [e.actor for e in everything] == ["system", "U6", "U8", "U7", "U9"]
    assert everything[1].request_id is None and everything[1].detail() == {"request": 999}


def test_audit_for_a_missing_request_is_refused(store: Store) -> None:
    with pytest.raises(IntegrityError):
        store.audit(424242, actor="U1", event="approved", now=T0)
    assert store.all_events() == []


# --- time ------------------------------------------------------------------------------------------


def _with_session_timezone(database_url: str) -> str:
    # A PostgreSQL session in another zone must not change what comes back.
    url = make_url(database_url)
    if url.get_backend_name() != "postgresql":
        return database_url
    return url.update_query_dict({"options": "-c timezone=Asia/Tokyo"}).render_as_string(hide_password=False)


def test_datetimes_round_trip_aware_utc(database_url: str) -> None:
    with Store(_with_session_timezone(database_url)) as s:
        s.migrate()
        india = timezone(timedelta(hours=5, minutes=30))
        now = datetime(2026, 11, 23, 14, 30, 15, 123456, tzinfo=india)
        created = _create(s, now=now, ttl_seconds=90)
        s.transition(
            created.id, from_states=["proposed"], to_state="snoozed", now=now, actor="U1", event="snoozed",
            until=datetime(2026, 11, 24, 9, 0, tzinfo=timezone.utc),
        )
        loaded = s.get(created.id)
        for value in (loaded.created_at, loaded.updated_at, loaded.expires_at, loaded.until, s.events(created.id)[0].at):
            assert value.tzinfo is not None and value.utcoffset() == timedelta(0)
        assert loaded.created_at == now
        assert loaded.created_at.hour == 9 and loaded.created_at.microsecond == 123456
        assert loaded.expires_at == now + timedelta(seconds=90)
        assert loaded.until == datetime(2026, 11, 24, 9, 0, tzinfo=timezone.utc)
        with pytest.raises(ValueError):
            _create(s, key="naive", now=datetime(2026, 11, 23, 9, 0))


def test_due_for_expiry(store: Store) -> None:
    due_early = _create(store, key="a", ttl_seconds=60)
    due_exactly = _create(store, key="b", ttl_seconds=3600)
    not_yet = _create(store, key="c", ttl_seconds=3601)
    decided = _create(store, key="d", ttl_seconds=60)
    store.transition(decided.id, from_states=["proposed"], to_state="approved", now=T0, actor="U1", event="approved")
    now = T0 + timedelta(hours=1)
    assert [r.id for r in store.due_for_expiry(now)] == [due_early.id, due_exactly.id]
    assert [r.id for r in store.due_for_expiry(now + timedelta(seconds=1))] == [due_early.id, due_exactly.id, not_yet.id]
    assert store.due_for_expiry(T0) == []


def test_due_to_wake(store: Store) -> None:
    until = T0 + timedelta(days=1)
    woken = {}
    for state, offset in (("snoozed", 0), ("exempt", -60), ("denied", 60)):
        r = _create(store, key=f"k/{state}")
        store.transition(r.id, from_states=["proposed"], to_state=state, now=T0, actor="U1", event=state,
                         until=until + timedelta(seconds=offset))
        woken[state] = r.id
    forever = _create(store, key="k/forever")
    store.transition(forever.id, from_states=["proposed"], to_state="exempt", now=T0, actor="U1", event="exempted")
    done = _create(store, key="k/done")
    store.transition(done.id, from_states=["proposed"], to_state="done", now=T0, actor="U1", event="applied", until=T0)
    assert [r.id for r in store.due_to_wake(until)] == [woken["exempt"], woken["snoozed"]]
    assert [r.id for r in store.due_to_wake(until + timedelta(minutes=1))] == [
        woken["exempt"], woken["snoozed"], woken["denied"]
    ]
    assert store.due_to_wake(T0) == []


def test_list_requests_filters(store: Store) -> None:
    a = _create(store, key="a", team="ml-research", now=T0 + timedelta(seconds=2))
    b = _create(store, key="b", team="vision", now=T0)
    c = _create(store, key="c", team="ml-research", now=T0 + timedelta(seconds=1))
    store.transition(c.id, from_states=["proposed"], to_state="superseded", now=T0, actor="system", event="superseded")
    assert [r.id for r in store.list_requests()] == [b.id, c.id, a.id]
    assert [r.id for r in store.list_requests(team="ml-research")] == [c.id, a.id]
    assert [r.id for r in store.list_requests(states=OPEN_STATES)] == [b.id, a.id]
    assert [r.id for r in store.list_requests(states=["superseded"], team="ml-research")] == [c.id]
    assert store.list_requests(team="nobody") == []
    with pytest.raises(ValueError):
        store.list_requests(states=["nonsense"])


# --- budgets, alerts, live prices, job runs ---------------------------------------------------------


def test_budget_set_replace_remove_and_audit(store: Store) -> None:
    assert store.budget("ml-research") is None
    store.set_budget("ml-research", 20000, "UAPPROVER1", T0)
    store.set_budget("ml-research", 25000.5, "UAPPROVER2", T0 + timedelta(minutes=1))
    budget = store.budget("ml-research")
    assert (budget.usd_per_month, budget.set_by, budget.set_at) == (25000.5, "UAPPROVER2", T0 + timedelta(minutes=1))
    events = [(e.event, e.detail()) for e in store.all_events()]
    assert events[-1] == (
        "budget-set", {"team": "ml-research", "usd_per_month": 25000.5, "previous_usd_per_month": 20000.0}
    )
    with pytest.raises(ValueError, match="more than 0 USD"):
        store.set_budget("ml-research", 0, "UAPPROVER1", T0)
    assert store.remove_budget("ml-research", "UAPPROVER1", T0) is True
    assert store.remove_budget("ml-research", "UAPPROVER1", T0) is False
    assert store.budgets() == []


def test_an_alert_is_claimed_once_across_replicas(database_url: str) -> None:
    stores = [Store(database_url) for _ in range(6)]
    try:
        stores[0].migrate()
        results = _race(len(stores), lambda i: stores[i].record_alert("ml-research", "budget-80", "2026-11", T0))
        assert sorted(results) == [False] * 5 + [True]
        # Another threshold, team or month is a different alert.
        assert stores[0].record_alert("ml-research", "budget-100", "2026-11", T0) is True
        assert stores[0].record_alert("ml-research", "budget-80", "2026-12", T0) is True
        with pytest.raises(ValueError, match="unknown alert kind"):
            stores[0].record_alert("ml-research", "budget-90", "2026-11", T0)
        alert = stores[0].alert("ml-research", "budget-80", "2026-11")
        assert stores[0].set_alert_message(alert.id, "C0TEAM", "1700000000.000100").message_ts == "1700000000.000100"
        snoozed = stores[0].snooze_alert(alert.id, T0 + timedelta(hours=4), "UUSER1", T0)
        assert snoozed.snoozed_until == T0 + timedelta(hours=4)
        assert stores[0].all_events()[-1].event == "alert-snoozed"
        assert stores[0].snooze_alert(10_000, T0, "UUSER1", T0) is None
    finally:
        for s in stores:
            s.close()


def test_a_job_run_is_claimed_once_across_replicas(database_url: str) -> None:
    stores = [Store(database_url) for _ in range(6)]
    try:
        stores[0].migrate()
        results = _race(len(stores), lambda i: stores[i].claim_job_run("digest", T0, f"pod-{i}", T0))
        claimed = [r for r in results if r is not None]
        assert len(claimed) == 1 and results.count(None) == 5, results
        stores[0].finish_job_run(claimed[0], "ok", T0 + timedelta(seconds=3))
        assert stores[0].claim_job_run("digest", T0 + timedelta(days=7), "pod-0", T0) is not None
        runs = stores[0].job_runs("digest")
        assert [(r.scheduled_at, r.outcome) for r in runs] == [(T0, "ok"), (T0 + timedelta(days=7), None)]
        with pytest.raises(ValueError, match="naive"):
            stores[0].claim_job_run("digest", datetime(2026, 11, 23), "pod-0", T0)
    finally:
        for s in stores:
            s.close()


def test_live_prices_are_cached_and_aged_out(store: Store) -> None:
    from actions.model.kube import CapacityType
    from actions.pricing.live import LivePrice

    def price(usd: float, as_of: datetime) -> LivePrice:
        return LivePrice("p5.48xlarge", CapacityType.SPOT, usd, "EC2 spot price history (us-east-1)", as_of, "us-east-1")

    assert store.put_prices([price(40.0, T0)], T0) == 1
    assert store.put_prices([price(38.5, T0 + timedelta(hours=1))], T0 + timedelta(hours=1)) == 1
    [cached] = store.cached_prices("us-east-1", 3600, T0 + timedelta(hours=1, minutes=30))
    assert (cached.usd_per_hour, cached.as_of) == (38.5, T0 + timedelta(hours=1))
    assert store.cached_prices("us-east-1", 3600, T0 + timedelta(hours=3)) == []
    assert store.cached_prices("eu-west-1", 86400, T0 + timedelta(hours=1)) == []
    with pytest.raises(ValueError, match="not > 0"):
        store.put_prices([price(0, T0)], T0)


def test_a_reserved_instance_rate_cached_as_reserved_by_an_older_version_is_read_as_that_offer(store: Store) -> None:
    from actions.model.kube import CapacityType
    from actions.pricing.book import PriceBook
    from actions.pricing.catalog import PriceCatalog
    from actions.pricing.live import LiveOffer

    # Before offers were told apart from capacity types the 1-year Reserved Instance rate was
    # cached under "reserved"; it must never price reserved capacity (capacity reservations bill
    # at on-demand, AWS EC2 User Guide, "Capacity Reservation pricing and billing").
    with store.engine.begin() as connection:
        connection.execute(sa.text(
            "INSERT INTO price_cache (instance_type, capacity_type, region, usd_per_hour, source, as_of, fetched_at)"
            " VALUES ('p5.48xlarge', 'reserved', 'us-east-1', 36.329, :source, :at, :at)"),
            {"source": "AWS Pricing API (Reserved Instance, 1 year standard, No Upfront, us-east-1)", "at": T0})
    [cached] = store.cached_prices("us-east-1", 3600, T0)
    assert (cached.offer, cached.usd_per_hour) == (LiveOffer.RESERVED_INSTANCE, 36.329)
    book = PriceBook(PriceCatalog.bundled(), live={(cached.instance_type, cached.offer): cached})
    assert book.quote("p5.48xlarge", CapacityType.RESERVED, None).usd_per_gpu_hour == pytest.approx(55.04 / 8)
    assert book.commitment_quote("p5.48xlarge").usd_per_gpu_hour == pytest.approx(36.329 / 8)  # type: ignore[union-attr]
    # Written now, the offer is spelled out.
    store.put_prices([cached], T0 + timedelta(minutes=1))
    with store.engine.connect() as connection:
        assert sorted(connection.execute(sa.text("SELECT capacity_type FROM price_cache")).scalars()) == [
            "reserved", "reserved-instance"]
