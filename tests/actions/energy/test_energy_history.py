"""Energy and carbon per team over 30 days (tests/support/energy_history.py: A100, H100 and A10G
teams, power gauges and an energy counter) through a real Prometheus, against the figures worked
out by hand there, and the same figures read back from the usage ledger on SQLite and PostgreSQL
after the job's own backfill rolled the 720 hours up."""

from __future__ import annotations

import json
from dataclasses import astuple
from typing import Iterator

import pytest
import sqlalchemy as sa

from actions.cost.engine import compute_cost_report
from actions.cost.report import CostReport, to_jsonable
from actions.energy.settings import EnergySettings
from actions.ledger.rollup import LedgerRollup, LedgerUsage
from actions.model.ledger import FILLED
from actions.model.times import hours_between
from actions.model.usage import UsageData
from actions.policy.rules import Policy
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.pricing.overrides import PriceOverrides
from actions.sources.prometheus.usage import PrometheusUsage
from actions.store.database import Store
from actions.store.ledger import LedgerStore
from tests.support import energy_history as eh
from tests.support.ledger_copy import postgres_copy, two_backfills
from tests.support.prometheus_server import running_prometheus

pytestmark = pytest.mark.prometheus

POLICY = Policy()
CLUSTER = "us-east"
# us-east-1 is in Virginia: eGRID subregion SRVC, eGRID2022's CO2e output rate 625.875 lb/MWh.
FACTORS = EnergySettings(pue=1.2, region="us-east-1").factors()
PRICES = PriceBook(PriceCatalog.bundled(), PriceOverrides())


def report(usage: UsageData) -> CostReport:
    return compute_cost_report(usage, PRICES, eh.TEAMS, team_label="team", energy=FACTORS)


def hand_team(*gpus: eh.Gpu) -> tuple[float, float]:
    figures = [eh.hand(g, POLICY.engine_idle_pct) for g in gpus]
    return sum(k for k, _ in figures), sum(i for _, i in figures)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory) -> Iterator[str]:
    with running_prometheus(eh.openmetrics(), tmp_path_factory.mktemp("energy-history")) as url:
        yield url


@pytest.fixture(scope="module")
def direct(prometheus) -> CostReport:
    return report(PrometheusUsage(prometheus, team_label="team").fetch(eh.START, eh.END, POLICY))


def test_each_teams_energy_and_carbon_equal_the_hand_computation(direct):
    a100, _, h100, a10g, spare = eh.GPUS
    assert FACTORS.gco2e_per_kwh == pytest.approx(283.89, abs=0.01) and "eGRID2022" in FACTORS.intensity_source
    # Power is stored to 6 decimals: the power teams agree to 1e-6.
    for team, gpus, rel in (("vision", (eh.GPUS[0], eh.GPUS[1]), 1e-6), ("research", (h100,), 1e-6),
                            # the counter's steps are increase() over 4 intervals, extrapolated
                            ("serving", (a10g,), 0.005)):
        kwh, idle = hand_team(*gpus)
        e = direct.teams[team].energy
        assert e.gpu_energy_kwh == pytest.approx(kwh, rel=rel), team
        assert e.idle_gpu_energy_kwh == pytest.approx(idle, rel=rel), team
        assert e.facility_energy_kwh == pytest.approx(kwh * 1.2, rel=rel), team
        assert e.co2e_kg == pytest.approx(kwh * 1.2 * 283.89 / 1000, rel=rel + 1e-5), team
        assert e.measured_share(direct.teams[team].gpu_hours) == pytest.approx(1.0), team
    # The notebook idles 9 steps an hour, yet its 3 bursts draw most of its energy.
    research = direct.teams["research"].energy
    assert 0.3 < research.idle_gpu_energy_kwh / research.gpu_energy_kwh < 0.4
    spare_kwh, _ = eh.hand(spare, POLICY.engine_idle_pct)
    assert direct.unrequested.energy.gpu_energy_kwh == pytest.approx(spare_kwh, rel=1e-6)
    teams = sum(t.energy.gpu_energy_kwh for t in direct.teams.values())
    assert teams + direct.unrequested.energy.gpu_energy_kwh == pytest.approx(direct.node_energy_kwh, rel=1e-12)
    assert "283.89 g CO2e/kWh" in direct.energy_basis and "PUE 1.2" in direct.energy_basis


def test_report_json_names_the_energy_figures(direct):
    data = json.loads(json.dumps(to_jsonable(direct)))
    vision = data["teams"]["vision"]
    assert vision["gpu_energy_kwh"] == pytest.approx(direct.teams["vision"].energy.gpu_energy_kwh)
    assert {"idle_gpu_energy_kwh", "facility_energy_kwh", "co2e_kg", "idle_co2e_kg", "energy_measured_share"} <= set(vision)
    assert data["unrequested"]["gpu_energy_kwh"] > 0 and data["node_gpu_energy_kwh"] == pytest.approx(direct.node_energy_kwh)
    assert data["energy_basis"].startswith("PUE 1.2")


# --- the same from the ledger ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def sqlite_ledger(prometheus, tmp_path_factory) -> Iterator[Store]:
    """The 720 hours rolled up by two backfills side by side, each with its own client."""
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('energy-ledger') / 'bot.db'}")
    store.migrate()

    def rollup() -> LedgerRollup:
        return LedgerRollup(PrometheusUsage(prometheus, team_label="team"), LedgerStore(store), cluster=CLUSTER,
                            team_label="team", prices=PRICES)

    rolled = two_backfills(rollup, eh.START, eh.END, POLICY, 15 * 24)
    assert sorted(r.hour for r in rolled) == hours_between(eh.START, eh.END)
    assert {r.status for r in rolled} == {FILLED}
    yield store
    store.close()


@pytest.fixture(scope="module")
def postgres_ledger(postgres_server: sa.Engine, sqlite_ledger: Store) -> Iterator[Store]:
    with postgres_copy(postgres_server, sqlite_ledger, CLUSTER) as store:
        yield store


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger(request) -> Store:
    return request.getfixturevalue(f"{request.param}_ledger")


def test_the_ledger_gives_the_same_energy_and_carbon(ledger, direct):
    source = LedgerUsage(LedgerStore(ledger), None, cluster=CLUSTER, team_label="team", source="ledger")
    mine = report(source.fetch(eh.START, eh.END, POLICY))
    assert set(mine.teams) == set(direct.teams) == {"vision", "research", "serving"}
    for name, t in direct.teams.items():
        assert astuple(mine.teams[name].energy) == pytest.approx(astuple(t.energy), rel=1e-9), name
        assert [c.gpu_energy_kwh for c in mine.teams[name].top_consumers] == pytest.approx(
            [c.gpu_energy_kwh for c in t.top_consumers], rel=1e-9), name
    assert astuple(mine.unrequested.energy) == pytest.approx(astuple(direct.unrequested.energy), rel=1e-9)
    assert mine.node_energy_kwh == pytest.approx(direct.node_energy_kwh, rel=1e-9)
