"""On-prem chargeback: a DGX-style node with no instance type, priced from `prices.on_prem`
(hardware amortised straight-line) plus its measured GPU energy at `energy.usd_per_kwh` x PUE,
every figure by hand to the cent; the teams, the unrequested GPUs and the node reconcile."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from actions.cost.engine import compute_cost_report
from actions.cost.report import RESERVED_ON_PREM
from actions.energy.settings import EnergySettings
from actions.model.usage import DailyUsage, NodeInfo, PodOwner, PodUsage, UsageData
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.pricing.overrides import PriceOverrides

UTC = timezone.utc
DAY = date(2026, 11, 2)
START, END = datetime(2026, 11, 2, tzinfo=UTC), datetime(2026, 11, 3, tzinfo=UTC)
PRICES = PriceBook(PriceCatalog.bundled(), PriceOverrides.model_validate(
    {"on_prem": {"usd_per_node": 320000, "gpus_per_node": 8, "years": 4, "as_of": "2025-06"}}))
FACTORS = EnergySettings(pue=1.25, usd_per_kwh=0.12, usd_per_kwh_as_of="2026-10",
                         carbon_intensity_gco2e_per_kwh=400).factors()
TEAMS = TeamDirectory([Team(name="research", namespaces=["research"])])
# One day of a DGX H100 bought for $320,000 (8 GPUs) over 4 years, at the draws measured on the real
# H100 (tests/support/data): training ~620 W, a notebook holding a model 125 W, an empty GPU 75 W.
USAGE = UsageData(
    START, END, 300,
    pods=(
        PodUsage("research", "trainer-0", "dgx-1", 96.0, 0.0, "NVIDIA H100 80GB HBM3",
                 energy_kwh=4 * 24 * 0.620, energy_gpu_hours=96.0),
        PodUsage("research", "notebook-0", "dgx-1", 24.0, 24.0, "NVIDIA H100 80GB HBM3",
                 energy_kwh=24 * 0.125, idle_energy_kwh=24 * 0.125, energy_gpu_hours=24.0),
    ),
    daily=(DailyUsage(DAY, "research", "dgx-1", 120.0, 24.0),),
    nodes={"dgx-1": NodeInfo("dgx-1", gpu_model="NVIDIA-H100-80GB-HBM3")},
    owners={("research", "trainer-0"): PodOwner("research", "trainer-0", "Job", "trainer"),
            ("research", "notebook-0"): PodOwner("research", "notebook-0", "StatefulSet", "notebook",
                                                 {"notebook-name": "notebook"})},
    node_gpu_hours={"dgx-1": 192.0},
    node_energy_kwh={"dgx-1": 4 * 24 * 0.620 + 24 * 0.125 + 3 * 24 * 0.075},
)


def cents(x: float) -> float:
    return round(x, 2)


def test_an_on_prem_report_prices_amortisation_plus_energy_to_the_cent():
    report = compute_cost_report(USAGE, PRICES, TEAMS, team_label=None, energy=FACTORS)
    rate = 320000 / 8 / (4 * 8760)  # $1.1415525 per GPU-hour
    per_kwh = 0.12 * 1.25  # USD per kWh at the GPU: the facility's kWh at $0.12
    research = report.teams["research"]
    (line,) = research.price_lines
    assert (line.capacity_type, cents(line.usd_per_gpu_hour)) == (RESERVED_ON_PREM, 1.14)
    assert line.price_source.startswith("config prices.on_prem") and line.price_as_of == "2025-06"
    # 120 GPU-hours x $1.1415525 = $136.99, and 62.52 kWh x 1.25 x $0.12 = $9.38
    assert cents(line.energy_cost_usd) == cents(62.52 * per_kwh) == 9.38
    assert cents(research.cost_usd) == cents(120 * rate + 62.52 * per_kwh) == 146.36
    assert cents(research.idle_cost_usd) == cents(24 * rate + 3.0 * per_kwh) == 27.85
    assert cents(research.daily[0].cost_usd) == 146.36 and cents(research.daily[0].idle_cost_usd) == 27.85
    assert research.energy.co2e_kg == pytest.approx(62.52 * 1.25 * 0.4)
    # three GPUs no pod requested: 72 GPU-hours and 5.4 kWh
    assert cents(report.unrequested.cost_usd) == cents(72 * rate + 5.4 * per_kwh) == 83.0
    assert report.unrequested.energy.gpu_energy_kwh == pytest.approx(5.4)
    assert cents(report.node_cost_usd) == cents(192 * rate + 67.92 * per_kwh) == 229.37
    assert report.reconciles
    assert not any("no price" in n for n in report.notes)


def test_without_an_electricity_price_on_prem_is_amortisation_alone_and_says_so():
    factors = EnergySettings(pue=1.25).factors()
    report = compute_cost_report(USAGE, PRICES, TEAMS, team_label=None, energy=factors)
    assert cents(report.teams["research"].cost_usd) == cents(120 * 320000 / 8 / (4 * 8760)) == 136.99
    assert any("set energy.usd_per_kwh" in n for n in report.notes)


def test_a_cloud_node_never_bills_energy_on_top_of_its_price():
    usage = UsageData(START, END, 300, pods=(PodUsage("research", "p", "p5", 24.0, 0.0, "NVIDIA H100 80GB HBM3",
                                                      energy_kwh=15.0, energy_gpu_hours=24.0),),
                      nodes={"p5": NodeInfo("p5", "p5.48xlarge")})
    report = compute_cost_report(usage, PRICES, TEAMS, team_label=None, energy=FACTORS)
    (line,) = report.teams["research"].price_lines
    assert line.energy_cost_usd == 0 and cents(line.cost_usd) == cents(24 * line.usd_per_gpu_hour)
    assert report.teams["research"].energy.gpu_energy_kwh == 15.0
