"""The usage ledger against a real Prometheus (the 30 days of tests/actions/cost/test_report_prometheus.py, whose
figures are worked out by hand there) and real SQLite and PostgreSQL databases: the hours rolled
up by the job's own backfill, reports read back from the ledger compared with reports read
straight from Prometheus, to the cent; a gap filled; a period Prometheus no longer keeps; a
period the ledger does not cover; retention."""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime, timedelta, timezone
from typing import Iterator

import pytest
import sqlalchemy as sa

from actions.cost.engine import compute_cost_report, consumer_of
from actions.cost.periods import parse_period
from actions.cost.report import CostReport
from actions.cost.reporting import CostSetup, build_report
from actions.ledger.advice_history import LedgerHistorySource
from actions.ledger.plan import plan_period, plan_warnings
from actions.ledger.rollup import LedgerRollup, LedgerUsage
from actions.ledger.rows import owner_for, rows_from_usage
from actions.model.ledger import CAPACITY, EMPTY, FILLED, REQUESTED
from actions.model.times import HOUR, floor_hour, hours_between
from actions.model.usage import PodOwner, UsageData
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.prometheus.history import AdviceHistorySource
from actions.sources.prometheus.usage import PrometheusUsage
from actions.store.advice_hours import AdviceHourStore
from actions.store.database import Store
from actions.store.ledger import LedgerStore, usage_hour
from bot.jobs.ledger import LedgerJob
from bot.settings import LedgerSettings, Settings
from tests.support import gpu_shapes as shapes
from tests.support.ledger_copy import postgres_copy, two_backfills
from tests.support.prometheus_server import running_prometheus
from tests.support.usage_history import DATA_START, END, TEAMS, price_book, usage_openmetrics

pytestmark = pytest.mark.prometheus

UTC = timezone.utc
CLUSTER = "eu-1"
POLICY = Policy()


def cents(x: float) -> float:
    return round(x + 0.0, 2)


def report_figures(report: CostReport) -> dict:
    """Every figure a report shows, to the cent (GPU-hours to 1e-6)."""
    out: dict = {"notes": report.notes, "cost": cents(report.cost_usd)}
    for name, t in report.teams.items():
        out[name] = (
            round(t.gpu_hours, 6), cents(t.cost_usd), round(t.idle_gpu_hours, 6), cents(t.idle_cost_usd),
            None if t.efficiency is None else round(t.efficiency, 6),
            None if t.spot_ratio is None else round(t.spot_ratio, 6),
            [(f.gpu_model, f.capacity_type, round(f.gpu_hours, 6), cents(f.cost_usd), cents(f.idle_cost_usd),
              f.price_source, f.price_as_of) for f in t.price_lines],
            [(c.kind, c.namespace, c.name, c.queue, round(c.gpu_hours, 6), cents(c.cost_usd), round(c.idle_share, 6))
             for c in t.top_consumers],
            [(x.day, {k: cents(v) for k, v in x.cost_usd_by_capacity_type.items()}, cents(x.idle_cost_usd))
             for x in t.daily],
            t.notes, t.namespaces,
        )
    return out


def report(usage: UsageData) -> CostReport:
    return compute_cost_report(usage, price_book(), TEAMS, team_label="team")


# --- pure: rows, owners, plans ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "owner",
    [
        PodOwner("ml", "nb-0", "StatefulSet", "nb", {"notebook-name": "nb"}),
        PodOwner("ml", "nb-0", "StatefulSet", "nb", {"notebook-name": "nb", "kueue.x-k8s.io/queue-name": "q"}),
        PodOwner("ml", "w-0", "Job", "train", {"kueue.x-k8s.io/local-queue-name": "q"}),
        PodOwner("ml", "api-7d9f8c6b5-x", "ReplicaSet", "api-7d9f8c6b5"),
        PodOwner("ml", "bare", None, None),
        PodOwner("ml", "s-0", "StatefulSet", "s"),
    ],
)
def test_a_rows_owner_reads_back_as_the_same_consumer(owner):
    kind, name, queue = consumer_of(owner, owner.namespace, owner.pod)
    pod = f"{kind}/{name}"
    assert consumer_of(owner_for("ml", pod, kind, name, queue), "ml", pod) == (kind, name, queue)


def h(day: int, hour: int) -> datetime:
    return datetime(2026, 11, day, hour, tzinfo=UTC)


def test_a_plan_names_the_hours_the_ledger_lacks_and_reads_the_current_hour_live():
    held = {x: FILLED for x in hours_between(h(20, 0), h(20, 6))} | {x: EMPTY for x in hours_between(h(20, 9), h(20, 11))}
    plan = plan_period(h(20, 0), h(20, 11) + timedelta(minutes=35), held, live=True)
    assert plan.ledger == ((h(20, 0), h(20, 6)), (h(20, 9), h(20, 11)))
    assert plan.live == ((h(20, 11), h(20, 11) + timedelta(minutes=35)),)
    assert plan.missing == ((h(20, 6), h(20, 9)),) and plan.missing_hours == 3
    (gap, empty) = plan_warnings(plan)
    assert "does not hold 3 of the 11.5833 hours" in gap and "2026-11-20 06:00-09:00" in gap
    assert "ledger backfill --since" in gap and "2 hour(s)" in empty

    # The last whole hour, not rolled up yet (the job runs minutes after the hour), is read live.
    plan = plan_period(h(20, 0), h(20, 12), held, live=True)
    assert plan.live == ((h(20, 11), h(20, 12)),) and plan.missing == ((h(20, 6), h(20, 9)),)
    # From the ledger alone, nothing is read live: the partial hours are missing too.
    plan = plan_period(h(20, 0) + timedelta(minutes=10), h(20, 11) + timedelta(minutes=35), held, live=False)
    assert plan.live == ()
    assert plan.missing == ((h(20, 0) + timedelta(minutes=10), h(20, 1)), (h(20, 6), h(20, 9)),
                            (h(20, 11), h(20, 11) + timedelta(minutes=35)))
    assert plan.ledger[0] == (h(20, 1), h(20, 6))


def test_rows_refuse_an_hour_that_is_not_whole():
    with pytest.raises(ValueError, match="not the start of an hour; e.g. 2026-11-20T06:00:00Z"):
        rows_from_usage(UsageData(h(20, 6), h(20, 7), 300), h(20, 6) + timedelta(minutes=5), CLUSTER, "team")


# --- against the real Prometheus ---------------------------------------------------------------------

FILL_FROM = END - timedelta(days=31)


def _rollup(store: Store, url: str, cluster: str = CLUSTER) -> LedgerRollup:
    return LedgerRollup(PrometheusUsage(url, team_label="team"), LedgerStore(store), cluster=cluster,
                        team_label="team", prices=price_book())


@pytest.fixture(scope="module")
def sqlite_ledger(usage_prometheus, tmp_path_factory) -> Iterator[Store]:
    """A SQLite store whose ledger the backfill filled from 31 days before END up to END.

    Two backfills at once, each with its own client (744 hours of a dozen queries each: one
    backfill waits on Prometheus about half the time): the first 16 days, as the backfill's
    ``limit``, and the last 15. Each UTC day is written by one of them, hour after hour, as by
    one backfill, so the ledger, its daily sums included, is the one backfill's."""
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('ledger') / 'bot.db'}")
    store.migrate()
    rolled = two_backfills(lambda: _rollup(store, usage_prometheus), FILL_FROM, END, POLICY, 16 * 24)
    assert [r.hour for r in rolled] == hours_between(FILL_FROM, END)
    assert len(rolled) == 31 * 24 and {r.status for r in rolled} == {FILLED}
    yield store
    store.close()


@pytest.fixture(scope="module")
def postgres_ledger(postgres_server: sa.Engine, sqlite_ledger: Store) -> Iterator[Store]:
    """A PostgreSQL database of its own with the same hours, each written as the job writes one."""
    with postgres_copy(postgres_server, sqlite_ledger, CLUSTER) as store:
        yield store


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger(request) -> Store:
    return request.getfixturevalue(f"{request.param}_ledger")


@pytest.fixture(scope="module")
def direct_30d(usage_prometheus) -> UsageData:
    start, end = parse_period("30d", END)
    return PrometheusUsage(usage_prometheus, team_label="team").fetch(start, end, POLICY)


def test_the_ledgers_30_day_report_equals_the_direct_report_to_the_cent(ledger, direct_30d):
    source = LedgerUsage(LedgerStore(ledger), None, cluster=CLUSTER, team_label="team", source="ledger")
    start, end = parse_period("30d", END)
    from_ledger = source.fetch(start, end, POLICY)
    assert from_ledger.warnings == () and source.last_plan.ledger == ((start, end),)
    direct, mine = report(direct_30d), report(from_ledger)
    assert report_figures(mine) == report_figures(direct)
    # and both are the hand-computed chargeback of tests/support/usage_history.py
    assert cents(mine.teams["training"].cost_usd) == 3225.60 and cents(mine.teams["research"].cost_usd) == 4953.60
    top = mine.teams["training"].top_consumers[0]
    assert (top.kind, top.name, top.queue) == ("Workload", "pretrain", "training-queue")


def test_a_weeks_report_for_a_team_reads_its_namespaces_only(ledger, usage_prometheus):
    start, end = parse_period("7d", END)
    direct = report(PrometheusUsage(usage_prometheus, team_label="team").fetch(start, end, POLICY))
    source = LedgerUsage(LedgerStore(ledger), None, cluster=CLUSTER, team_label="team", source="ledger")
    mine = report(source.fetch(start, end, POLICY, namespaces=["ml-research"]))
    assert report_figures(mine)["research"] == report_figures(direct)["research"]
    assert "training" not in mine.teams and "sandbox" not in mine.teams  # not read


def test_rows_carry_the_cluster_the_owner_the_node_facts_and_the_price_in_force(sqlite_ledger):
    rows = LedgerStore(sqlite_ledger).rows(CLUSTER, datetime(2026, 10, 25, 3, tzinfo=UTC))
    held = sorted((r.namespace, r.consumer_kind, r.consumer_name, r.queue, r.node) for r in rows if r.measure == REQUESTED)
    assert held == [("ml-research", "Notebook", "llm-explore", None, "h100-od-1"),
                    ("training", "Workload", "pretrain", "training-queue", "h100-spot-1")]
    (pretrain,) = [r for r in rows if r.consumer_name == "pretrain"]
    assert (pretrain.cluster, pretrain.gpu_hours, pretrain.instance_type, pretrain.capacity_type) == (
        CLUSTER, pytest.approx(4.0), "p5.48xlarge", "spot")
    assert pretrain.namespace_team == "training" and pretrain.gpu_model.startswith("NVIDIA H100")
    assert (pretrain.usd_per_gpu_hour, pretrain.price_source) == (
        pytest.approx(2.50), "config override prices.instance_types.p5.48xlarge (spot)")
    assert not [r for r in rows if r.measure == CAPACITY]  # this Prometheus has no kube_node_status_capacity


def test_a_6_hour_gap_is_backfilled_and_the_report_is_unchanged(database_url, usage_prometheus, direct_30d):
    """The bot ran until Nov 20 06:00, was down 6 hours, and came back at 12:10: the job's next run
    fills the gap oldest first, at most hours_per_run per run."""
    store = Store(database_url)
    store.migrate()
    ledger = LedgerStore(store)
    settings = LedgerSettings(enabled=True, backfill_days=2, hours_per_run=4)
    job = LedgerJob(_rollup(store, usage_prometheus), ledger, settings, POLICY, clock=lambda: END)
    down, back = h(20, 6), h(20, 12) + timedelta(minutes=10)
    first = job.run(down)  # the bot before going down: the last 2 days, 4 hours a run
    while job.run(down).rolled:
        pass
    assert [r.hour for r in first.rolled] == hours_between(h(18, 6), h(18, 10))
    assert ledger.held_hours(CLUSTER, h(18, 0), back).keys() == set(hours_between(h(18, 6), down))

    after = job.run(back)
    assert [r.hour for r in after.rolled] == hours_between(down, down + 4 * HOUR)  # the gap, oldest first
    assert [r.hour for r in job.run(back).rolled] == [h(20, 10), h(20, 11)]
    assert job.run(back).rolled == ()  # the 12:00 hour is not finished
    assert set(ledger.held_hours(CLUSTER, h(18, 0), back)) == set(hours_between(h(18, 6), h(20, 12)))
    start, end = h(19, 0), h(20, 12)
    direct = PrometheusUsage(usage_prometheus, team_label="team").fetch(start, end, POLICY)
    mine = LedgerUsage(ledger, None, cluster=CLUSTER, team_label="team", source="ledger").fetch(start, end, POLICY)
    assert mine.warnings == ()
    assert report_figures(report(mine)) == report_figures(report(direct))
    store.close()


@pytest.fixture(scope="module")
def short_prometheus(tmp_path_factory) -> Iterator[str]:
    """A Prometheus that kept only the last 2 days of the same history (its retention)."""
    keep = int((END - timedelta(days=2)).timestamp())
    lines = [
        line for line in usage_openmetrics().splitlines()
        if line.startswith("#") or int(line.rsplit(" ", 1)[1]) >= keep
    ]
    with running_prometheus("\n".join(lines) + "\n", tmp_path_factory.mktemp("short")) as url:
        yield url


def test_a_period_older_than_prometheus_keeps_is_still_reported_from_the_ledger(ledger, short_prometheus, usage_prometheus):
    start, end = parse_period("30d", END + timedelta(minutes=25))
    # The Prometheus of today keeps 2 days: straight from it, most of the month is gone.
    gone = PrometheusUsage(short_prometheus, team_label="team").fetch(start, end, POLICY)
    assert gone.covered_from is not None and "covers" in gone.warnings[0]
    assert "training" not in report(gone).teams  # pretrain ran in October
    # auto: the ledger's hours, the partial hours at both ends from that Prometheus
    source = LedgerUsage(LedgerStore(ledger), PrometheusUsage(short_prometheus, team_label="team"),
                         cluster=CLUSTER, team_label="team", source="auto")
    mine = source.fetch(start, end, POLICY)
    assert source.last_plan.live == ((start, start + timedelta(minutes=35)), (END, end))
    assert source.last_plan.missing == ()
    # The 35 minutes before the first whole hour were older than that Prometheus keeps: they
    # read as nothing, and say so; everything else is the report of the full history.
    head = start + timedelta(minutes=35)
    direct = report(PrometheusUsage(usage_prometheus, team_label="team").fetch(head, end, POLICY))
    assert report_figures(report(mine)) == report_figures(direct)
    assert cents(report(mine).teams["research"].gpu_hours) == cents(719 + 25 / 60)
    assert any("no kube-state-metrics series" in w for w in mine.warnings)


def test_a_period_the_ledger_does_not_cover_says_how_much_is_missing(ledger):
    start, end = parse_period("30d", END + timedelta(days=3))
    usage = LedgerUsage(LedgerStore(ledger), None, cluster=CLUSTER, team_label="team", source="ledger").fetch(
        start, end, POLICY)
    (warning,) = usage.warnings
    assert "does not hold 72 of the 720 hours" in warning and "2026-11-21 00:00-00:00" in warning
    built = build_report(CostSetup(usage=_Fixed(usage)), price_book(), TEAMS, POLICY, start, end)
    assert built.warnings == (warning,)


class _Fixed:
    def __init__(self, usage: UsageData):
        self.usage = usage

    def fetch(self, start, end, policy):
        return self.usage


def test_first_data_hour_finds_where_prometheus_history_begins(usage_prometheus, short_prometheus):
    long = PrometheusUsage(usage_prometheus)
    assert long.first_data_hour(DATA_START - timedelta(days=20), END) == DATA_START
    assert PrometheusUsage(short_prometheus).first_data_hour(END - timedelta(days=30), END) == END - timedelta(days=2)
    assert long.first_data_hour(DATA_START - timedelta(days=20), DATA_START - timedelta(days=1)) is None


def test_retention_drops_old_rows_and_their_hours(database_url, sqlite_ledger):
    store = Store(database_url)
    store.migrate()
    source, target = LedgerStore(sqlite_ledger), LedgerStore(store)
    hours = [x for x, *_ in source.hours(CLUSTER)][:48]
    for hour in hours:
        target.write_hour(CLUSTER, hour, source.rows(CLUSTER, hour), FILLED, END)
    assert not target.write_hour(CLUSTER, hours[0], source.rows(CLUSTER, hours[0]), FILLED, END)  # final once written
    before = target.counts(CLUSTER)["rows"]
    dropped = target.drop_before(hours[24])
    assert dropped == before - target.counts(CLUSTER)["rows"] > 0
    assert min(target.held_hours(CLUSTER, hours[0], hours[-1] + HOUR)) == hours[24]
    with store.engine.connect() as c:
        assert c.execute(sa.select(sa.func.min(usage_hour.c.hour))).scalar() == hours[24]
    store.close()


def test_an_hour_must_be_finished_and_whole_to_be_rolled_up(sqlite_ledger, usage_prometheus):
    rollup = _rollup(sqlite_ledger, usage_prometheus)
    with pytest.raises(ValueError, match=re.escape("is not finished")):
        rollup.roll_up(h(20, 6), POLICY, h(20, 6) + timedelta(minutes=30))
    with pytest.raises(ValueError, match="not the start of an hour"):
        rollup.roll_up(h(20, 6) + timedelta(minutes=5), POLICY, END)
    assert floor_hour(h(20, 6) + timedelta(minutes=59)) == h(20, 6)


# --- MIG slices, time-sliced replicas and unrequested GPUs (tests/scenarios/test_gpu_accounting.py) ----------


def test_shares_of_gpus_and_unrequested_gpus_read_back_the_same_to_the_cent(database_url, accounting_prometheus):
    """The 6 hours of tests/support/gpu_shapes.py rolled up hour by hour: MIG 1g.5gb slices at 1/7 of a GPU,
    time-sliced replicas at their share, and each node's unrequested GPU-hours priced at its rate
    (the capacity rows), all as the report straight from Prometheus has them."""
    store = Store(database_url)
    store.migrate()
    book = PriceBook(PriceCatalog.bundled(), shapes.PRICES)
    prometheus = PrometheusUsage(accounting_prometheus, team_label="team")
    rollup = LedgerRollup(prometheus, LedgerStore(store), cluster=CLUSTER, team_label="team", prices=book)
    end = shapes.REPORT_END
    rolled = rollup.backfill(end - 6 * HOUR, end, POLICY)
    assert [r.hour for r in rolled] == hours_between(end - 6 * HOUR, end)
    mine = LedgerUsage(LedgerStore(store), None, cluster=CLUSTER, team_label="team", source="ledger").fetch(
        end - 6 * HOUR, end, POLICY)
    direct = prometheus.fetch(end - 6 * HOUR, end, POLICY)
    ours, theirs = (compute_cost_report(u, book, TeamDirectory([]), team_label="team") for u in (mine, direct))
    assert report_figures(ours) == report_figures(theirs)
    assert {n: (round(a, 6), cents(b)) for n, (a, b) in ours.unrequested.by_node.items()} == {
        n: (round(a, 6), cents(b)) for n, (a, b) in theirs.unrequested.by_node.items()}
    assert (cents(ours.node_cost_usd), cents(ours.unrequested.cost_usd)) == (1482.24, 553.68) and ours.reconciles
    flavors = {f.gpu_model for t in ours.teams.values() for f in t.price_lines}
    assert "A100 MIG 1g.5gb" in flavors and any("shared" in f for f in flavors)
    rows = LedgerStore(store).rows(CLUSTER, end - HOUR)
    assert {r.node for r in rows if r.measure == CAPACITY} >= {"h100-empty", "a100-mig-single"}
    store.close()


# --- the scheduled job ------------------------------------------------------------------------------


def test_the_job_is_scheduled_when_enabled_claimed_once_and_reports_read_the_ledger(
    sqlite_url, usage_prometheus, tmp_path
):
    from bot.jobs.scheduler import JobBinding, run_scheduled
    from bot.wiring.jobs import ledger_job, scheduled_jobs
    from tests.support.demo_world import settings_runtime

    off = Settings(database_url=sqlite_url)
    assert "usage-ledger" not in {j.id for j in scheduled_jobs(settings_runtime(off), off)}
    # Disabled: no job keeps the ledger, so reports read it only for a period a backfill filled whole.
    kept_by_nobody = settings_runtime(off).costs.usage
    assert isinstance(kept_by_nobody, LedgerUsage) and not kept_by_nobody.kept

    settings = Settings(
        database_url=sqlite_url, cluster_name=CLUSTER, prometheus={"url": usage_prometheus},
        ledger={"enabled": True, "backfill_days": 1, "hours_per_run": 3},
    )
    now = h(20, 12) + timedelta(minutes=7)
    rt = settings_runtime(settings)
    (job,) = [j for j in scheduled_jobs(rt, settings) if j.id == "usage-ledger"]
    assert job.trigger.interval == timedelta(seconds=300) and job.first_run_at_start
    assert isinstance(rt.costs.usage, LedgerUsage) and rt.costs.usage.cluster == CLUSTER

    # The job as wired, on a clock at 12:07 (the wiring's own clock reads the wall clock).
    body = dataclasses.replace(ledger_job(rt, settings), clock=lambda: now)
    assert body.rollup.cluster == CLUSTER and body.settings.hours_per_run == 3
    bound = dataclasses.replace(job, run=body.scheduled)
    assert run_scheduled(job.id, scheduled_at=now, binding=JobBinding(bound, rt.store, "replica-a", lambda: now)) == "ran"
    assert run_scheduled(job.id, scheduled_at=now, binding=JobBinding(bound, rt.store, "replica-b", lambda: now)) == (
        "claimed-elsewhere")
    held = LedgerStore(rt.store).held_hours(CLUSTER, now - timedelta(days=2), now)
    assert sorted(held) == hours_between(h(19, 12), h(19, 15))  # 1 day back, 3 hours a run, once
    # The same hours keep advice's facts, and advice reads them: the whole hours from the ledger.
    advised = AdviceHourStore(rt.store).held(CLUSTER, now - timedelta(days=2), now, settings.advice.busy_engine_pct)
    assert sorted(advised) == sorted(held)
    assert isinstance(rt.advice_setup.history, LedgerHistorySource) and rt.advice_setup.history.cluster == CLUSTER
    assert isinstance(settings_runtime(off).advice_setup.history, AdviceHistorySource)
    raw = Settings(database_url=sqlite_url, prometheus={"url": usage_prometheus}, ledger={"enabled": True},
                   advice={"history_source": "prometheus"})
    assert isinstance(settings_runtime(raw).advice_setup.history, AdviceHistorySource)
    assert ledger_job(settings_runtime(raw), raw).rollup.advice is None


def test_settings_refuse_a_retention_shorter_than_the_backfill_and_a_source_that_is_none():
    with pytest.raises(ValueError, match=r"retention_days \(30\) is shorter than backfill_days \(90\).*e.g. backfill_days: 90"):
        LedgerSettings(retention_days=30)
    from bot.wiring.sources import usage_source

    with pytest.raises(ValueError, match="not one of auto, ledger, prometheus; e.g. --source ledger"):
        usage_source(Settings(), None, "thanos")
    with pytest.raises(ValueError, match="source ledger reads the database"):
        usage_source(Settings(), None, "ledger")
    assert isinstance(usage_source(Settings(ledger={"enabled": True}), None, "auto"), PrometheusUsage)


def test_gpu_cost_in_chat_reads_the_ledger_and_says_which_hours_it_lacks(sqlite_ledger, tmp_path):
    import io

    from actions.store.database import Store as _Store
    from bot.chat.commands import CommandContext, dispatch
    from bot.chat.console import ConsoleChat, to_text
    from bot.runtime.runtime import Runtime

    source = LedgerUsage(LedgerStore(sqlite_ledger), None, cluster=CLUSTER, team_label="team", source="ledger")
    rt = Runtime(
        store=_Store(f"sqlite:///{tmp_path / 'bot.db'}"), chat=ConsoleChat(io.StringIO()),
        cluster=None, telemetry=None, writer=None,  # type: ignore[arg-type]  # a cost report reads neither
        prices=price_book(), teams=TEAMS, policy=POLICY, dry_run=True, clock=lambda: END + timedelta(days=3),
        costs=CostSetup(source, spot_ratio_target=0.7),
    )
    text = to_text(dispatch("cost research 30d", CommandContext(user="U0ANY", prices=rt.prices, rt=rt, channel="C0ANY")).message)
    assert "GPU cost: research" in text and "does not hold 72 of the 720 hours" in text
    assert "GPU-hours consumed: 648 hrs" in text  # 27 days of the notebook's one GPU: the rest is missing
    table = to_text(dispatch("cost 30d", CommandContext(user="U0ANY", prices=rt.prices, rt=rt, channel="C0ANY")).message)
    assert "does not hold 72 of the 720 hours" in table
