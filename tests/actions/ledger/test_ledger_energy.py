"""The usage ledger keeps the GPUs' energy: rows carry it (pods' kWh summed per key, a node's kWh on
its capacity row), the database sums it per key and per day like the GPU-hours (real SQLite and
PostgreSQL), a period read back from the ledger gives the energy of the hours that were written,
rows written before the ledger kept energy read 0 (not measured), and migration 0012 goes up and
down on both databases. Figures worked out by hand below."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.exc import IntegrityError

from actions.ledger.rollup import LedgerUsage
from actions.ledger.rows import merge_usage, rows_from_usage, usage_from_rows
from actions.model.kube import CapacityType
from actions.model.ledger import CAPACITY, FILLED, REQUESTED
from actions.model.usage import DailyUsage, NodeInfo, PodOwner, PodUsage, UsageData
from actions.policy.rules import Policy
from actions.store.database import Store, alembic_config
from actions.store.ledger import ENERGY, LedgerStore, day_rows, usage_day, usage_hour
from actions.store.schema import VERSION_TABLE, include_object, metadata

UTC = timezone.utc
CLUSTER = "eu-1"
BEFORE, AFTER = "0011_slack_request_seen", "0012_ledger_energy"


def h(day: int, hour: int) -> datetime:
    return datetime(2026, 11, day, hour, tzinfo=UTC)


# Three hours: two of 2026-11-20 (a whole day in a period from 20 00:00) and one of the 21st.
# Each hour is the hour of SCALE 1 times k.
SCALE = {h(20, 5): 1.0, h(20, 6): 2.0, h(21, 1): 0.5}
N1 = NodeInfo("n1", instance_type="p5.48xlarge", capacity_type=CapacityType.ON_DEMAND,
              gpu_model="NVIDIA-H100-80GB-HBM3")


def hour_usage(hour: datetime, k: float) -> UsageData:
    """One hour: Job ml/train's two pods on n1 (2 and 1 GPUs; 2.1 kWh, 0.1 of it idle, all
    measured), n1's 4 GPUs drawing 2.5 kWh in all, and n2, whose GPUs drew 0.3 kWh in an hour
    its capacity series lacked."""
    pods = (
        PodUsage("ml", "train-0", "n1", 2.0 * k, 0.5 * k, energy_kwh=1.4 * k, idle_energy_kwh=0.1 * k,
                 energy_gpu_hours=2.0 * k),
        PodUsage("ml", "train-1", "n1", 1.0 * k, energy_kwh=0.7 * k, energy_gpu_hours=1.0 * k),
    )
    return UsageData(
        hour, hour.replace(hour=hour.hour + 1), 300, pods=pods, nodes={"n1": N1},
        owners={("ml", p.pod): PodOwner("ml", p.pod, "Job", "train") for p in pods},
        namespace_labels={"ml": {"team": "training"}},
        node_gpu_hours={"n1": 4.0 * k}, node_energy_kwh={"n1": 2.5 * k, "n2": 0.3 * k},
    )


def _figures(row) -> tuple:
    return (row.gpu_hours, row.idle_gpu_hours, *(getattr(row, f) for f in ENERGY))


def test_an_hours_rows_carry_the_pods_energy_per_key_and_each_nodes_on_its_capacity_row():
    rows = rows_from_usage(hour_usage(h(20, 5), 1.0), h(20, 5), CLUSTER, "team")
    by = {(r.measure, r.node): r for r in rows}
    assert set(by) == {(REQUESTED, "n1"), (CAPACITY, "n1"), (CAPACITY, "n2")}
    assert _figures(by[(REQUESTED, "n1")]) == pytest.approx((3.0, 0.5, 2.1, 0.1, 3.0))
    assert _figures(by[(CAPACITY, "n1")]) == pytest.approx((4.0, 0.0, 2.5, 0.0, 4.0))
    # n2 had no capacity hours: a capacity row of 0 GPU-hours keeps its energy, not counted as capacity.
    assert _figures(by[(CAPACITY, "n2")]) == pytest.approx((0.0, 0.0, 0.3, 0.0, 0.0))
    back = usage_from_rows(rows, (), h(20, 5), h(20, 6), team_label="team", step_seconds=300)
    assert back.node_gpu_hours == {"n1": 4.0}
    assert back.node_energy_kwh == pytest.approx({"n1": 2.5, "n2": 0.3})
    (pod,) = back.pods
    assert (pod.energy_kwh, pod.idle_energy_kwh, pod.energy_gpu_hours) == pytest.approx((2.1, 0.1, 3.0))


def test_a_node_measured_at_zero_kwh_reads_back_as_measured_and_an_unmeasured_one_not_at_all():
    usage = UsageData(h(20, 5), h(20, 6), 300, nodes={"n1": N1, "n3": N1},
                      node_gpu_hours={"n1": 4.0, "n3": 8.0}, node_energy_kwh={"n1": 0.0})
    rows = rows_from_usage(usage, h(20, 5), CLUSTER, None)
    assert [(r.node, r.energy_kwh, r.energy_gpu_hours) for r in rows] == [("n1", 0.0, 4.0), ("n3", 0.0, 0.0)]
    back = usage_from_rows(rows, (), h(20, 5), h(20, 6), team_label=None, step_seconds=300)
    assert back.node_energy_kwh == {"n1": 0.0} and back.node_gpu_hours == {"n1": 4.0, "n3": 8.0}


def test_merge_usage_adds_each_nodes_energy():
    a, b = hour_usage(h(20, 5), 1.0), hour_usage(h(20, 6), 2.0)
    c = UsageData(h(20, 7), h(20, 8), 300, node_energy_kwh={"n3": 1.25})
    merged = merge_usage([b, c, a], h(20, 5), h(20, 8))
    assert merged.node_energy_kwh == pytest.approx({"n1": 7.5, "n2": 0.9, "n3": 1.25})
    assert merged.node_gpu_hours == pytest.approx({"n1": 12.0})
    assert sum(p.energy_kwh for p in merged.pods) == pytest.approx(6.3)


# --- the database ------------------------------------------------------------------------------------


def _write(ledger: LedgerStore) -> None:
    for hour, k in SCALE.items():
        rows = rows_from_usage(hour_usage(hour, k), hour, CLUSTER, "team")
        assert ledger.write_hour(CLUSTER, hour, rows, FILLED, hour)


def test_rows_round_trip_with_their_energy(store: Store):
    ledger = LedgerStore(store)
    _write(ledger)
    for hour, k in SCALE.items():
        assert ledger.rows(CLUSTER, hour) == rows_from_usage(hour_usage(hour, k), hour, CLUSTER, "team")


def test_a_periods_sums_give_the_summed_energy(store: Store):
    ledger = LedgerStore(store)
    _write(ledger)
    # Day 20 whole (from usage_day, k = 1 + 2) and 21 00:00-02:00 (from usage_hour, k = 0.5): k = 3.5.
    span = [(h(20, 0), h(21, 2))]
    sums = {(r.measure, r.node): r for r in ledger.key_sums(CLUSTER, span)}
    assert _figures(sums[(REQUESTED, "n1")]) == pytest.approx((10.5, 1.75, 7.35, 0.35, 10.5))
    assert _figures(sums[(CAPACITY, "n1")]) == pytest.approx((14.0, 0.0, 8.75, 0.0, 14.0))
    assert _figures(sums[(CAPACITY, "n2")]) == pytest.approx((0.0, 0.0, 1.05, 0.0, 0.0))
    assert sums[(REQUESTED, "n1")].hour == h(21, 1) and sums[(REQUESTED, "n1")].usd_per_gpu_hour is None
    # Two spans (a day and some hours, then hours): summed per key in Python, the same.
    split = {(r.measure, r.node): r for r in ledger.key_sums(CLUSTER, [(h(20, 0), h(21, 0)), (h(21, 0), h(21, 2))])}
    assert {k: pytest.approx(_figures(r)) for k, r in split.items()} == {k: _figures(r) for k, r in sums.items()}

    days = sorted(ledger.daily_sums(CLUSTER, span), key=lambda d: d.day)
    assert days == [
        DailyUsage(date(2026, 11, 20), "ml", "n1", pytest.approx(9.0), pytest.approx(1.5), pytest.approx(6.3),
                   pytest.approx(0.3)),
        DailyUsage(date(2026, 11, 21), "ml", "n1", pytest.approx(1.5), pytest.approx(0.25), pytest.approx(1.05),
                   pytest.approx(0.05)),
    ]
    # Summed under a price group's node, the energy is the same.
    assert [d.energy_kwh for d in ledger.daily_sums(CLUSTER, span, groups={"n1": "n0"})] == pytest.approx([6.3, 1.05])


def test_a_period_read_from_the_ledger_gives_the_energy_of_its_hours(store: Store):
    _write(LedgerStore(store))
    source = LedgerUsage(LedgerStore(store), None, cluster=CLUSTER, team_label="team", source="ledger")
    usage = source.fetch(h(20, 0), h(21, 2), Policy())
    direct = merge_usage([hour_usage(x, k) for x, k in SCALE.items()], h(20, 0), h(21, 2))
    assert usage.node_energy_kwh == pytest.approx(dict(direct.node_energy_kwh))
    assert usage.node_gpu_hours == pytest.approx(dict(direct.node_gpu_hours))
    (pod,) = usage.pods
    assert (pod.energy_kwh, pod.idle_energy_kwh, pod.energy_gpu_hours) == pytest.approx((
        sum(p.energy_kwh for p in direct.pods), sum(p.idle_energy_kwh for p in direct.pods),
        sum(p.energy_gpu_hours for p in direct.pods)))
    assert sum(d.energy_kwh for d in usage.daily) == pytest.approx(7.35)


# --- migration 0012 ---------------------------------------------------------------------------------


def _alembic(store: Store, verb: str, revision: str) -> None:
    with store.engine.begin() as connection:
        config = alembic_config(store.url.render_as_string(hide_password=False))
        config.attributes["connection"] = connection
        getattr(command, verb)(config, revision)


def _columns(store: Store, table: str) -> set[str]:
    with store.engine.connect() as connection:
        return {c["name"] for c in sa.inspect(connection).get_columns(table)}


def _matches_models(store: Store) -> list:
    with store.engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"version_table": VERSION_TABLE, "compare_type": True, "include_object": include_object}
        )
        return compare_metadata(context, metadata)


def test_rows_written_before_the_migration_read_no_energy(database_url: str):
    with Store(database_url) as store:
        _alembic(store, "upgrade", BEFORE)
        assert not set(ENERGY) & _columns(store, "usage_hour")
        hour = h(20, 5)
        rows = rows_from_usage(hour_usage(hour, 1.0), hour, CLUSTER, "team")
        old_rows = [r for r in rows if r.gpu_hours > 0]  # the old ledger kept no energy-only row
        with store.engine.begin() as connection:
            old_hour = sa.Table("usage_hour", sa.MetaData(), autoload_with=connection)
            old_day = sa.Table("usage_day", sa.MetaData(), autoload_with=connection)
            connection.execute(old_hour.insert(), [
                {c.name: getattr(r, c.name) if hasattr(r, c.name) else None for c in old_hour.columns if c.name != "id"}
                | {"owner_kind": r.consumer_kind, "owner_name": r.consumer_name, "flavor": r.sharing, "day": r.day}
                for r in old_rows
            ])
            connection.execute(old_day.insert(), [{k: v for k, v in d.items() if k not in ENERGY}
                                                  for d in day_rows(old_rows)])
            connection.execute(sa.text("INSERT INTO usage_hour_filled (cluster, hour, status, rows, written_at) "
                                       "VALUES (:c, :h, 'filled', 2, :h)"), {"c": CLUSTER, "h": hour})

        _alembic(store, "upgrade", "head")
        assert _matches_models(store) == []
        ledger = LedgerStore(store)
        read = ledger.rows(CLUSTER, hour)
        assert [(r.gpu_hours, r.energy_kwh, r.idle_energy_kwh, r.energy_gpu_hours) for r in read] == [
            (3.0, 0.0, 0.0, 0.0), (4.0, 0.0, 0.0, 0.0)]
        # A day with old rows takes new hours with energy: the old part adds 0.
        later = h(20, 6)
        assert ledger.write_hour(CLUSTER, later, rows_from_usage(hour_usage(later, 2.0), later, CLUSTER, "team"),
                                 FILLED, later)
        whole_day = [(h(20, 0), h(21, 0))]
        sums = {(r.measure, r.node): r for r in ledger.key_sums(CLUSTER, whole_day)}
        assert _figures(sums[(REQUESTED, "n1")]) == pytest.approx((9.0, 1.5, 4.2, 0.2, 6.0))
        assert _figures(sums[(CAPACITY, "n1")]) == pytest.approx((12.0, 0.0, 5.0, 0.0, 8.0))
        (day,) = ledger.daily_sums(CLUSTER, whole_day)
        assert (day.gpu_hours, day.energy_kwh, day.idle_energy_kwh) == pytest.approx((9.0, 4.2, 0.2))
        # The old hour alone: no energy measured, so no node energy (unknown, not 0 kWh).
        old = usage_from_rows(ledger.key_sums(CLUSTER, [(hour, later)]), (), hour, later, team_label="team",
                              step_seconds=300)
        assert old.node_energy_kwh == {} and old.node_gpu_hours == {"n1": 4.0}
        assert [(p.energy_kwh, p.energy_gpu_hours) for p in old.pods] == [(0.0, 0.0)]


def test_the_migration_goes_down_and_up_again(database_url: str):
    with Store(database_url) as store:
        store.migrate()
        hour = h(20, 5)
        rows = rows_from_usage(hour_usage(hour, 1.0), hour, CLUSTER, "team")
        assert LedgerStore(store).write_hour(CLUSTER, hour, rows, FILLED, hour)
        _alembic(store, "downgrade", BEFORE)
        for table in ("usage_hour", "usage_day"):
            assert not set(ENERGY) & _columns(store, table)
        with store.engine.connect() as connection:
            assert connection.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).all() == [(BEFORE,)]
            # The rows stay, GPU-hours and all; the tables keep their indexes and checks.
            assert connection.execute(sa.select(sa.func.sum(usage_hour.c.gpu_hours))).scalar() == pytest.approx(7.0)
            assert connection.execute(sa.select(sa.func.sum(usage_day.c.gpu_hours))).scalar() == pytest.approx(7.0)
            indexes = {ix["name"] for ix in sa.inspect(connection).get_indexes("usage_hour")}
            assert {"ix_usage_hour_cluster_hour", "ix_usage_hour_cluster_namespace_hour"} <= indexes
        with pytest.raises(IntegrityError), store.engine.begin() as connection:
            connection.execute(sa.text(
                "INSERT INTO usage_hour (hour, day, cluster, measure, namespace, owner_kind, owner_name, node, "
                "replicas, gpu_hours, idle_gpu_hours) VALUES (:h, :d, 'eu-1', 'bogus', '', '', '', 'n1', 1, 1, 0)"),
                {"h": hour, "d": hour.date()})

        _alembic(store, "upgrade", "head")
        assert _matches_models(store) == []
        read = {(r.measure, r.node): r for r in LedgerStore(store).rows(CLUSTER, hour)}
        held, cap = read[(REQUESTED, "n1")], read[(CAPACITY, "n1")]
        # Energy dropped by the downgrade reads 0 again: not measured.
        assert (held.gpu_hours, held.energy_kwh, held.energy_gpu_hours) == (3.0, 0.0, 0.0)
        assert (cap.gpu_hours, cap.energy_kwh) == (4.0, 0.0)
