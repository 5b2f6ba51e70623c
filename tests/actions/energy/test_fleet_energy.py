"""Several clusters' energy added up: each cluster's kg CO2e at its own grid's intensity, summed
and never recomputed; a cluster without a carbon intensity adds its kWh and no carbon."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from actions.cost.fleet import add_up
from actions.cost.report import CostReport, TeamReport, UnrequestedLine
from actions.energy.settings import EnergySettings
from actions.model.energy import EnergyUse

T0, T1 = datetime(2026, 11, 1, tzinfo=timezone.utc), datetime(2026, 11, 8, tzinfo=timezone.utc)


def cluster(region: str | None, kwh: float, spare_kwh: float) -> CostReport:
    factors = EnergySettings(pue=1.1, region=region).factors()
    team = TeamReport("research", T0, T1, 100.0, 688.0, 20.0, 137.6, 0.8, 0.0,
                      energy=EnergyUse(kwh, kwh / 4, factors.facility_kwh(kwh), factors.co2e_kg(kwh), 100.0,
                                       factors.co2e_kg(kwh / 4)))
    spare = EnergyUse(spare_kwh, 0.0, factors.facility_kwh(spare_kwh), factors.co2e_kg(spare_kwh))
    return CostReport(T0, T1, {"research": team}, unrequested=UnrequestedLine(1.0, 6.88, {"n": (1.0, 6.88)}, spare),
                      node_energy_kwh=kwh + spare_kwh, energy_basis=factors.describe())


def test_each_clusters_carbon_is_its_own_grids():
    east, west, onprem = cluster("us-east-1", 100.0, 10.0), cluster("FR", 200.0, 0.0), cluster(None, 50.0, 5.0)
    fleet = add_up({"east": east, "west": west, "dc": onprem}, T0, T1)
    e = fleet.teams["research"].energy
    assert e.gpu_energy_kwh == 350.0 and e.facility_energy_kwh == pytest.approx(385.0)
    # us-east-1 is eGRID2022 SRVC, France Ember 2024's figure; the on-prem cluster has none
    srvc, fr = east.teams["research"].energy.co2e_kg, west.teams["research"].energy.co2e_kg
    assert srvc == pytest.approx(110 * 0.28389) and fr < srvc / 3
    assert e.co2e_kg == pytest.approx(srvc + fr) and onprem.teams["research"].energy.co2e_kg is None
    assert fleet.unrequested.energy.gpu_energy_kwh == 15.0 and fleet.node_energy_kwh == 365.0
    assert fleet.energy_basis.startswith("east: PUE 1.1") and "dc: PUE 1.1" in fleet.energy_basis
