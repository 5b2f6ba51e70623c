"""GPU energy measured through a real Prometheus holding the real H100 capture
(tests/support/energy_trace.py), against the hand integral of the same samples: the power
integral and the energy counter (with a reset) agree with it within 0.5%, MIG and time-sliced
shares add up to their GPU's energy, and the unrequested GPUs' energy makes the totals reconcile."""

from __future__ import annotations

import pytest

from actions.cost.engine import compute_cost_report
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.pricing.overrides import PriceOverrides
from actions.sources.prometheus.usage import PrometheusUsage
from tests.support import energy_trace as et
from tests.support.prometheus_server import running_prometheus

pytestmark = pytest.mark.prometheus


@pytest.fixture(scope="module")
def usage(tmp_path_factory):
    with running_prometheus(et.openmetrics(), tmp_path_factory.mktemp("energy")) as url:
        yield PrometheusUsage(url, team_label=None).fetch(et.START, et.END, Policy())


def pod(usage, name):
    (found,) = [p for p in usage.pods if p.pod == name]
    return found


def test_power_integral_matches_the_hand_integral(usage):
    samples = et.trace()
    got = pod(usage, "power-only")
    assert got.energy_kwh == pytest.approx(et.hand_kwh(samples), rel=0.005)
    assert got.energy_gpu_hours == pytest.approx(1.0)  # measured every step of the hour
    idle = et.hand_idle_kwh(samples, Policy().engine_idle_pct)
    assert idle > 0 and got.idle_energy_kwh == pytest.approx(idle, rel=0.005)


def test_energy_counter_with_a_reset_matches_the_hand_integral(usage):
    got = pod(usage, "counter-only")
    # The driver reloaded at T0+62 min, inside the period: a decrease is a reset, not negative energy.
    assert et.START < et.T0.__class__.fromtimestamp(et.T0.timestamp() + et.RESET_AT, et.UTC) < et.END
    assert got.energy_kwh == pytest.approx(et.hand_kwh(et.trace()), rel=0.005)


def test_mig_and_time_sliced_shares_add_up_to_the_gpu(usage):
    whole = et.hand_kwh(et.trace())
    mig = [pod(usage, "mig-a"), pod(usage, "mig-b")]
    for p in mig:  # a 3g.40gb instance is 3 of an H100's 7 slices, as its GPU-hours count
        assert p.energy_kwh == pytest.approx(whole * 3 / 7, rel=0.005)
        assert p.gpu_hours == pytest.approx(3 / 7)
    sliced = [pod(usage, f"ts-{i}") for i in range(4)]
    for p in sliced:  # dcgm-exporter names ts-0 alone; each replica is a quarter of the GPU
        assert p.energy_kwh == pytest.approx(whole / 4, rel=0.005)
    assert sum(p.energy_kwh for p in sliced) == pytest.approx(whole, rel=0.005)
    # The node sees each GPU once a step, though every MIG instance's series carries its power.
    assert usage.node_energy_kwh["h100-mig"] == pytest.approx(whole, rel=0.005)
    assert usage.node_energy_kwh["h100-a"] == pytest.approx(3 * whole, rel=0.005)


def test_unrequested_energy_reconciles_with_the_nodes(usage):
    whole = et.hand_kwh(et.trace())
    prices = PriceBook(PriceCatalog.bundled(), PriceOverrides())
    report = compute_cost_report(usage, prices, TeamDirectory([]), team_label=None)
    teams = sum(t.energy.gpu_energy_kwh for t in report.teams.values())
    unrequested = report.unrequested.energy.gpu_energy_kwh
    # h100-a's third GPU and the MIG GPU's unused 1g.10gb slice: 1 + 1/7 GPUs' worth.
    assert unrequested == pytest.approx(whole * (1 + 1 / 7), rel=0.005)
    assert teams + unrequested == pytest.approx(report.node_energy_kwh, rel=1e-9)
    assert report.node_energy_kwh == pytest.approx(5 * whole, rel=0.005)
    assert report.teams["research"].energy.facility_energy_kwh == report.teams["research"].energy.gpu_energy_kwh
    assert report.teams["research"].energy.co2e_kg is None  # no carbon intensity given
    assert any(n.startswith("Energy: kWh at the GPU") and "100% of the requested GPU-hours" in n for n in report.notes)
