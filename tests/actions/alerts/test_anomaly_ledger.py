"""The spend-anomaly reads of the usage ledger (:mod:`actions.store.ledger_hours`) on real SQLite
and PostgreSQL, over five weeks written as the rollup writes them: which hours are held, an
hour's requested GPU-hours summed without the node, the first day each namespace and LocalQueue
spent; and a judgement from the database is the judgement from the rows themselves."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timedelta

import pytest

from actions.alerts.anomalies import SpendSeries, baseline_hours, judge_hour, spend_lines
from actions.model.ledger import FILLED, REQUESTED
from actions.store.ledger import LedgerStore
from actions.store.ledger_hours import LedgerHours
from tests.support import spend_history as world

UTC = world.UTC
HOUR = timedelta(hours=1)


@pytest.fixture
def ledger(store) -> LedgerHours:
    world.write_hours(LedgerStore(store))
    return LedgerHours(store)


def test_held_hours_and_the_first_day_each_namespace_and_queue_spent(ledger):
    end = world.END
    assert ledger.held(world.CLUSTER, end - 3 * HOUR, end + HOUR) == [end - 3 * HOUR, end - 2 * HOUR, end - HOUR]
    assert ledger.held("other", world.START, end) == []
    wanted = [world.START - HOUR, world.START, end - HOUR, end]
    assert ledger.held_of(world.CLUSTER, wanted) == {world.START, end - HOUR}
    assert ledger.held_of(world.CLUSTER, []) == set() and ledger.requested(world.CLUSTER, []) == []
    # The first day each namespace and LocalQueue spent.
    day = world.STEP_START.date()
    got = ledger.first_days(world.CLUSTER, day - timedelta(days=29), day)
    first = day - timedelta(days=29)  # a Sunday: vision runs on weekdays only
    assert got == {("ml-research", "research-q"): first, ("serve", None): first,
                   ("vision", "vision-q"): first + timedelta(days=1), ("newbie", None): day, ("tiny", None): day}
    assert ledger.first_days(world.CLUSTER, date(2026, 1, 1), date(2026, 1, 2)) == {}


def test_an_hours_requested_rows_sum_over_nodes_and_keep_what_prices_them(store):
    step = world.STEP_START
    world.write_hours(LedgerStore(store), step, step + HOUR)
    ledger = LedgerHours(store)
    # A second node of the same Workload in a later hour: summed into one row without the node.
    h = world.END
    rows = world.hour_rows(h)
    extra = [r for r in rows if r.consumer_name == "finetune"][0]
    LedgerStore(store).write_hour(world.CLUSTER, h, [*rows, replace(extra, node="p5-b")], FILLED, h + 2 * HOUR)
    got = {(r.hour, r.consumer_name): r for r in ledger.requested(world.CLUSTER, [step, h])}
    assert set(got) == {(step, n) for n in ("finetune", "llm-sweep", "llm-api", "detector")} | {
        (h, n) for n in ("finetune", "llm-api", "detector", "notebook")}
    sweep = got[(step, "llm-sweep")]
    assert (sweep.measure, sweep.node, sweep.gpu_hours, sweep.queue, sweep.namespace) == (
        REQUESTED, "", 16.0, "research-q", "ml-research")
    assert (sweep.instance_type, sweep.capacity_type, sweep.gpu_model) == (
        "p5.48xlarge", "on-demand", "NVIDIA H100 80GB HBM3")
    assert got[(h, "finetune")].gpu_hours == pytest.approx(2 * extra.gpu_hours)


def test_a_judgement_from_the_ledger_is_the_one_from_the_rows(ledger):
    history = world.history()
    for hour in (world.STEP_START, world.NEW_START, world.STEP_START + world.STEP_HOURS * HOUR,
                 datetime(2026, 11, 23, 9, tzinfo=UTC)):
        held = ledger.held_of(world.CLUSTER, baseline_hours(hour, 4))
        lines = spend_lines(ledger.requested(world.CLUSTER, held), world.BOOK, world.DIRECTORY, "team")
        hours = {h: [x for x in lines if x.hour == h] for h in held}
        first = ledger.first_days(world.CLUSTER, (hour - timedelta(weeks=4, days=1)).date(), hour.date())
        from_db = judge_hour(SpendSeries(hours, first), hour, hour + HOUR)
        from_rows = judge_hour(world.series_of(history), hour, hour + HOUR)
        assert [(a.kind, a.period_key, a.text, a.fields) for a in from_db.alerts + from_db.recoveries] == [
            (a.kind, a.period_key, a.text, a.fields) for a in from_rows.alerts + from_rows.recoveries]
