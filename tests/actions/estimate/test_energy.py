"""The energy of an estimate by hand: GPU-hours x the model's board power, an upper bound with
its datasheet and the measured H100 beside it; facility kWh and CO2e only with the cluster's
factors; a MIG slice at its share; an unknown model said to be unknown; in the text, the chat
answer and the JSON."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from actions.energy.settings import EnergyFactors
from actions.estimate.energy import estimate_energy
from actions.estimate.parse import parse_estimate
from actions.estimate.price import compute_estimate
from actions.estimate.render import estimate_to_jsonable
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from bot.chat.commands import CommandContext
from bot.chat.commands.estimate import energy_factors, estimate_text, handle

GRID = EnergyFactors(pue=1.2, pue_source="configured", gco2e_per_kwh=400.0, intensity_source="configured",
                     usd_per_kwh=None, usd_per_kwh_source="not configured")


@pytest.fixture(scope="module")
def prices() -> PriceBook:
    return PriceBook(PriceCatalog.bundled())


def test_16_h100_for_a_week_is_at_most_1881_6_kwh(prices):
    est = compute_estimate(parse_estimate("16 h100 for a week", prices), prices)
    # 16 GPUs x 168 h = 2,688 GPU-hours x 700 W / 1000 = 1,881.6 kWh.
    assert est.energy_kwh == 1881.6
    e = est.answer.energy
    assert (e.watts, e.gpu_name, e.facility_kwh, e.co2e_kg) == (700, "H100 SXM", None, None)
    text = estimate_text(est)
    assert "Energy (estimate): up to 1,882 kWh at the GPUs, at the H100 SXM's 700 W board power" in text
    assert "NVIDIA H100 Tensor Core GPU datasheet" in text and "training 616-701 W" in text
    assert "CO2e" not in text
    data = json.loads(json.dumps(estimate_to_jsonable(est)))
    assert data["energy_kwh"] == 1881.6 and data["energy"]["upper_bound"] is True
    assert data["energy"]["board_power_w"] == 700 and data["options"][0]["energy"]["energy_kwh"] == 1881.6
    assert data["energy"]["co2e_kg"] is None and data["energy"]["facility_kwh"] is None


def test_with_the_clusters_factors_facility_kwh_and_co2e(prices):
    est = compute_estimate(parse_estimate("16 h100 for a week", prices), prices, GRID)
    e = est.answer.energy
    # 1,881.6 kWh x PUE 1.2 = 2,257.92 kWh; x 400 g/kWh = 903.17 kg CO2e.
    assert e.facility_kwh == 2257.92 and e.co2e_kg == pytest.approx(903.168)
    assert "2,258 kWh with the facility, 903 kg CO2e (PUE 1.2 (configured)" in estimate_text(est)
    assert estimate_to_jsonable(est)["energy"]["co2e_kg"] == 903.17


def test_a_model_without_a_known_board_power_says_energy_unknown_and_why(prices):
    est = compute_estimate(parse_estimate("8 a10g for a day", prices), prices, GRID)
    assert est.energy_kwh is None
    assert "Energy (estimate): unknown, no NVIDIA datasheet board power is known here for A10G" in estimate_text(est)
    data = estimate_to_jsonable(est)
    assert data["energy_kwh"] is None and "A10G" in data["energy"]["unknown"]
    given = compute_estimate(parse_estimate("4 gpus 10h at $3/hr", prices), prices)
    assert given.energy_kwh is None and "no GPU model named" in estimate_text(given)


def test_a_comparison_gives_each_model_its_bound(prices):
    est = compute_estimate(parse_estimate("16 gpus for a week", prices), prices)
    assert est.energy_kwh is None  # one figure per option
    # 2,688 GPU-hours x 700 / 400 / 350 / 72 W.
    assert [o.energy.kwh for o in est.options] == [1881.6, 1075.2, 940.8, 193.54]
    assert "energy up to 194 kWh (72 W board power)" in estimate_text(est)


def test_a_mig_slice_counts_its_share_of_the_board_power():
    # 168 h of one 1g.10gb of an H100: 1/7 of 700 W = 100 W, 16.8 kWh.
    e = estimate_energy("H100", None, 168, mig_profile="1g.10gb")
    assert (e.share, e.kwh) == (pytest.approx(1 / 7), 16.8)
    assert "x 0.143 for the MIG slice" in e.describe()
    assert estimate_energy("A30", None, 10, mig_profile="1g.6gb").kwh is None  # no A30 figure here


def test_the_chat_answer_uses_the_running_bots_factors(prices):
    rt = SimpleNamespace(clusters=(), costs=SimpleNamespace(energy=GRID), home_cluster=None)
    ctx = CommandContext(user="U1", prices=prices, rt=rt)
    assert energy_factors(ctx) is GRID
    assert energy_factors(CommandContext(user="U1", prices=prices)) is None
    east = SimpleNamespace(name="east", energy=None)
    west = SimpleNamespace(name="west", energy=GRID)
    fleet = SimpleNamespace(clusters=(east, west), costs=None, home_cluster="west")
    assert energy_factors(CommandContext(user="U1", prices=prices, rt=fleet)) is GRID
    reply = handle("16 h100 for a week", ctx)
    assert "903 kg CO2e" in str(reply.message.blocks)
