"""Advice from the usage ledger equals advice from Prometheus: the advice tests' 30 days of DCGM
history (tests/support/advice_fleet.py, built from the real H100 trace) on a real Prometheus,
rolled up hour by hour into the ledger on SQLite and PostgreSQL, then one advice round read each
way. ``ADVISE_AT`` is 00:30, so both windows start and end mid-hour: the ledger path reads those
partial hours live, as it reads an hour the rollup has not reached yet."""

from __future__ import annotations

import concurrent.futures
from collections import Counter
from dataclasses import asdict
from datetime import timedelta

import pytest

from actions.advice.round import gather_advice
from actions.ledger.advice_history import MAX_LIVE_HOURS, LedgerHistorySource
from actions.ledger.advice_tally import quantile
from actions.ledger.rollup import AdviceHours, LedgerRollup
from actions.model.ledger import EMPTY
from actions.model.times import floor_hour, hours_between
from actions.policy.rules import Policy
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.kube.dump import snapshot_from_kubectl_dump
from actions.sources.prometheus.advice_hours import PrometheusAdviceHours
from actions.sources.prometheus.api import PrometheusApi
from actions.sources.prometheus.history import AdviceHistorySource
from actions.sources.prometheus.promql import open_window
from actions.sources.prometheus.usage import PrometheusUsage
from actions.store.advice_hours import AdviceHourStore
from actions.store.ledger import LedgerStore
from tests.support.advice_fleet import ADVISE_AT, POLICY, TEAMS, cluster_json, openmetrics
from tests.support.prometheus_server import running_prometheus

pytestmark = pytest.mark.prometheus

CLUSTER = "default"
START = ADVISE_AT - timedelta(seconds=POLICY.commitment_window_seconds)
HOURS = hours_between(START, ADVISE_AT)  # the whole hours of the 30-day window: 719


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory):
    with running_prometheus(openmetrics(), tmp_path_factory.mktemp("advice-ledger-prometheus")) as url:
        yield url


@pytest.fixture(scope="module")
def hours(prometheus: str):
    """Every whole hour's advice facts, read as the hourly rollup reads them."""
    source = PrometheusAdviceHours(PrometheusApi(prometheus))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        return list(pool.map(lambda h: source.fetch(h, h + timedelta(hours=1), POLICY), HOURS))


def _round(source):
    snapshot = snapshot_from_kubectl_dump(cluster_json(), ADVISE_AT)
    return gather_advice(snapshot, source, PriceBook(PriceCatalog.bundled()), Policy(), POLICY, TEAMS, ADVISE_AT)


@pytest.fixture(scope="module")
def raw(prometheus: str):
    return _round(AdviceHistorySource(PrometheusApi(prometheus)))


def _shown(result):
    return [(r.kind, r.key, r.subject, r.summary, r.change, r.current_usd_per_month, r.advised_usd_per_month,
             r.saving_usd_per_month, r.evidence, r.notes, r.energy_saved_kwh_per_month) for r in result.recommendations]


def test_advice_from_the_ledger_equals_advice_from_prometheus(store, prometheus, hours, raw):
    table = AdviceHourStore(store)
    for h in hours:
        assert table.write_hour(CLUSTER, h, ADVISE_AT)
    api = PrometheusApi(prometheus)
    source = LedgerHistorySource(table, CLUSTER, live=PrometheusAdviceHours(api), whole=AdviceHistorySource(api))
    before = api.requests
    ledger = _round(source)
    # 719 hours from the ledger; live: the mid-hour starts of the 7-day and 30-day windows and the
    # last half hour (shared): three pieces, a handful of queries.
    assert source.last_read == ("ledger", len(HOURS), 3)
    assert api.requests - before <= 3 * 8
    assert _shown(ledger) == _shown(raw)
    assert ledger.could_save_usd_per_month == raw.could_save_usd_per_month > 0
    assert {r.kind for r in raw.recommendations} >= {"mig", "fewer-gpus", "spot", "commitment", "reserved-idle"}
    for mine, theirs in zip(ledger.usages, raw.usages, strict=True):
        a, b = asdict(mine), asdict(theirs)
        for k in ("gpu_hours", "peak_fb_mib", "peak_engine_pct", "busy_gpus", "mean_power_w"):
            assert a.pop(k) == pytest.approx(b.pop(k), rel=1e-9), (mine.key, k)
        assert a == b
    assert ledger.baselines == raw.baselines
    assert ledger.warnings() == raw.warnings()


def test_a_ledger_that_lacks_hours_reads_prometheus_whole_or_names_them(store, prometheus, hours, raw):
    table = AdviceHourStore(store)
    dropped = {floor_hour(ADVISE_AT - timedelta(days=3)) + timedelta(hours=i) for i in range(MAX_LIVE_HOURS + 1)}
    for h in hours:
        if h.start not in dropped:
            table.write_hour(CLUSTER, h, ADVISE_AT)
    api = PrometheusApi(prometheus)
    both = LedgerHistorySource(table, CLUSTER, live=PrometheusAdviceHours(api), whole=AdviceHistorySource(api))
    result = _round(both)
    assert both.last_read == ("prometheus", MAX_LIVE_HOURS + 1, 0)
    assert _shown(result) == _shown(raw)
    assert any("lacks 7 hours" in w and "read them from Prometheus" in w for w in result.warnings())

    only = LedgerHistorySource(table, CLUSTER)  # `ledger` only: nothing read live
    result = _round(only)
    [gap] = [w for w in result.warnings() if "does not hold" in w]
    assert "2026-11-27 00:00-01:00" in gap and "left out" in gap
    # Fewer GPU-hours than the whole week, never more.
    explore = next(u for u in result.usages if u.name == "explore")
    assert explore.gpu_hours < next(u for u in raw.usages if u.name == "explore").gpu_hours


def test_backfill_fills_advice_for_hours_the_ledger_already_holds(store, prometheus, hours):
    """Hours rolled up before the ledger kept advice facts are missing until the backfill adds
    them, without reading their usage again."""
    api = PrometheusApi(prometheus)
    usage = PrometheusUsage(prometheus)
    ledger = LedgerStore(store)
    some = [h for h in HOURS if h >= floor_hour(ADVISE_AT) - timedelta(hours=4)]
    # The advice history has no kube-state-metrics series: its hours' usage was written empty.
    for h in some:
        assert ledger.write_hour(CLUSTER, h, [], EMPTY, ADVISE_AT)
    plain = LedgerRollup(usage, ledger, cluster=CLUSTER, team_label=None)
    assert plain.missing(some[0], ADVISE_AT) == []
    table = AdviceHourStore(store)
    advising = LedgerRollup(usage, ledger, cluster=CLUSTER, team_label=None,
                            advice=AdviceHours(PrometheusAdviceHours(api), table, POLICY))
    assert advising.missing(some[0], ADVISE_AT) == some
    rolled = advising.backfill(some[0], ADVISE_AT, Policy())
    assert [(r.hour, r.written, r.advice) for r in rolled] == [(h, False, True) for h in some]
    assert advising.missing(some[0], ADVISE_AT) == []
    assert table.held(CLUSTER, some[0], ADVISE_AT, POLICY.busy_engine_pct) == set(some)
    # Another busy threshold makes the hours missing again: the steps were counted against the old one.
    other = LedgerRollup(usage, ledger, cluster=CLUSTER, team_label=None, advice=AdviceHours(
        PrometheusAdviceHours(api), table, POLICY.model_copy(update={"busy_engine_pct": 5.0})))
    assert other.missing(some[0], ADVISE_AT) == some


@pytest.mark.parametrize("values, phi", [
    ([3, 1, 2, 2, 8], 0.99), ([0] * 10 + [8] * 3, 0.5), ([5], 0.1), (list(range(17)), 0.1), ([2, 2, 2, 7], 0.75),
])
def test_quantile_from_a_histogram_is_prometheus_quantile_over_time(prometheus, values, phi):
    """The same values through Prometheus's own quantile_over_time: a subquery whose steps (one a
    minute, the last at ``ADVISE_AT``) each yield one of ``values``."""
    n, end = len(values), int(ADVISE_AT.timestamp())
    steps = " or ".join(f"(vector({v}) and on() (vector(time()) == {end - (n - 1 - i) * 60}))" for i, v in enumerate(values))
    query = f"quantile_over_time({phi}, ({steps})[{open_window(n * 60)}:1m])"
    [row] = PrometheusApi(prometheus).instant("quantile", query, ADVISE_AT)
    assert quantile(phi, Counter(values)) == pytest.approx(float(row["value"][1]), rel=1e-12)
