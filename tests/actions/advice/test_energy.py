"""The energy advice saves, by hand: GPUs given back at their measured mean power over the month,
nothing claimed for MIG, a smaller GPU or spot, the total counting each consumer once, CO2e only
with the cluster's energy factors, and the message and JSON that show it."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pytest

from actions.advice.energy import could_save_co2e_kg, could_save_kwh, gpus_freed_kwh
from actions.advice.jsonable import energy_totals, recommendation_to_jsonable
from actions.advice.model import ConsumerUsage
from actions.advice.recommend import advise, could_save
from actions.energy.settings import EnergyFactors
from actions.model.kube import CapacityType
from actions.policy.advice import AdvicePolicy
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from bot.chat.blocks.advice import advice_message, could_save_lines, saving_text
from tests.support.gpu_nodes import h100_cluster

BUNDLED = PriceBook(PriceCatalog.bundled())
AT = datetime(2026, 11, 30, 0, 30, tzinfo=timezone.utc)
GRID = EnergyFactors(pue=1.25, pue_source="configured", gco2e_per_kwh=400.0, intensity_source="configured",
                     usd_per_kwh=None, usd_per_kwh_source="not configured")


def job(**changes) -> ConsumerUsage:
    base = dict(
        key="idle-workload/ml/Job/train", team="ml", namespace="ml", consumer_kind="Job", name="train", role="job",
        pods=("train-0",), whole_gpus=1, gpus=1.0, gpu_model="NVIDIA H100 80GB HBM3", instance_type="p5.48xlarge",
        capacity=CapacityType.ON_DEMAND, window_seconds=7 * 86400, gpu_hours=168.0, peak_fb_mib=70000,
        peak_engine_pct=99, busy_gpus=1, restarts_cleanly="Kueue Workload w: requeued when evicted",
        landing=h100_cluster(),
    )
    base.update(changes)
    return ConsumerUsage(**base)


def four_gpus_two_busy(**changes):
    # 4 H100s for the whole 7-day window, at most 2 busy at once, drawing 300 W on average.
    base = dict(whole_gpus=4, gpus=4.0, gpu_hours=4 * 168.0, busy_gpus=2, mean_power_w=300.0,
                instance_type="p5.48xlarge", restarts_cleanly=None)
    base.update(changes)
    return job(**base)


def test_fewer_gpus_saves_the_power_of_the_gpus_given_back():
    [r] = advise([four_gpus_two_busy()], [], BUNDLED, AdvicePolicy())
    assert r.kind == "fewer-gpus" and "2 GPUs instead of 4" in r.summary
    # 2 GPUs given back x 300 W x 730 h / 1000 = 438 kWh a month.
    assert r.energy_saved_kwh_per_month == 438.0
    assert saving_text(r) == f"saves ${r.saving_usd_per_month:,.2f}/month, 438 kWh/month"
    assert recommendation_to_jsonable(r)["energy_saved_kwh_per_month"] == 438.0
    # The power reading does not change what the advice says, so it is not posted again.
    assert dataclasses.replace(r, energy_saved_kwh_per_month=1.0).fingerprint == r.fingerprint


def test_the_month_is_the_windows_run_rate_and_no_power_reading_is_no_figure():
    # Held half the window: 84 of 168 hours, so 365 h a month per GPU; 2 x 300 W x 365 h = 219 kWh.
    assert gpus_freed_kwh(four_gpus_two_busy(gpu_hours=4 * 84.0), 2) == 219.0
    assert gpus_freed_kwh(four_gpus_two_busy(mean_power_w=None), 2) is None
    assert gpus_freed_kwh(four_gpus_two_busy(), 0) is None
    [r] = advise([four_gpus_two_busy(mean_power_w=None)], [], BUNDLED, AdvicePolicy())
    assert r.kind == "fewer-gpus" and r.energy_saved_kwh_per_month is None
    assert saving_text(r) == f"saves ${r.saving_usd_per_month:,.2f}/month"


def test_mig_a_smaller_gpu_and_spot_claim_no_energy():
    # One GPU at 20 GB and low activity: a smaller GPU (or MIG) is advised; the GPU is not freed.
    [small] = advise([job(role="notebook", peak_fb_mib=20000, peak_engine_pct=10, mean_power_w=125,
                          instance_type="p5.48xlarge", restarts_cleanly=None)], [], BUNDLED, AdvicePolicy())
    assert small.kind in ("smaller-gpu", "mig") and small.energy_saved_kwh_per_month is None
    recs = advise([four_gpus_two_busy(restarts_cleanly="Kueue Workload w: requeued when evicted")], [], BUNDLED,
                  AdvicePolicy())
    assert sorted((r.kind, r.energy_saved_kwh_per_month) for r in recs) == [("fewer-gpus", 438.0), ("spot", None)]


def test_totals_count_each_consumer_once_and_co2e_needs_the_factors():
    a = four_gpus_two_busy(key="idle-workload/ml/Job/a", name="a")
    b = four_gpus_two_busy(key="idle-workload/ml/Job/b", name="b", busy_gpus=1, mean_power_w=500.0,
                           restarts_cleanly="Kueue Workload w: requeued when evicted")
    recs = advise([a, b], [], BUNDLED, AdvicePolicy())
    # a: 2 x 300 W x 730 h = 438 kWh; b: 3 x 500 W x 730 h = 1,095 kWh (its spot advice adds none).
    assert could_save_kwh(recs) == 1533.0
    assert could_save_co2e_kg(recs, None) is None
    # x PUE 1.25 x 400 g/kWh: 1,533 x 1.25 x 0.4 = 766.5 kg.
    assert could_save_co2e_kg(recs, GRID) == pytest.approx(766.5)
    assert could_save_co2e_kg(recs, {"": GRID}) == pytest.approx(766.5)
    unknown = dataclasses.replace(GRID, gco2e_per_kwh=None)
    assert could_save_co2e_kg(recs, unknown) is None
    assert energy_totals(recs, GRID) == {"could_save_kwh_per_month": 1533.0,
                                         "could_save_co2e_kg_per_month": pytest.approx(766.5)}
    assert energy_totals([]) == {"could_save_kwh_per_month": None, "could_save_co2e_kg_per_month": None}


def test_the_advice_message_totals_the_energy_with_co2e_only_given_the_factors():
    a = four_gpus_two_busy(key="idle-workload/ml/Job/a", name="a")
    recs = advise([a], [], BUNDLED, AdvicePolicy())
    with_grid = advice_message(recs, could_save(recs), AT, "ml", energy=GRID)
    assert with_grid.text.endswith("/month and 438 kWh/month (219 kg CO2e)")  # 438 x 1.25 x 0.4
    assert "saves $" in str(with_grid.blocks) and "438 kWh/month" in str(with_grid.blocks)
    assert "400 g CO2e/kWh" in str(with_grid.blocks[-2])
    bare = advice_message(recs, could_save(recs), AT, "ml")
    assert bare.text.endswith("/month and 438 kWh/month") and "CO2e" not in bare.text
    assert could_save_lines(recs, could_save(recs))[0].endswith("and 438 kWh/month*")
    # Advice that frees no measured power says nothing of energy.
    quiet = advise([four_gpus_two_busy(mean_power_w=None)], [], BUNDLED, AdvicePolicy())
    assert "kWh" not in advice_message(quiet, could_save(quiet), AT, "ml", energy=GRID).text
