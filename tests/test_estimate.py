"""The estimate grammar and the cost arithmetic, checked to the cent."""

from __future__ import annotations

import json
import re

import pytest

from actions.estimate import (
    DEFAULT_CHECKPOINT_HOURS,
    DEFAULT_INTERRUPTION_HOURS,
    EstimateInputError,
    EstimateRequest,
    compute_estimate,
    estimate_to_jsonable,
    format_hours,
    interruption_overhead,
    parse_estimate,
)
from actions.model import CapacityType
from actions.prices import PriceBook, PriceCatalog, PriceOverrides


@pytest.fixture(scope="module")
def prices() -> PriceBook:
    return PriceBook(PriceCatalog.bundled())


def cents(x: float) -> float:
    return round(x, 2)


# --- worked checks ---------------------------------------------------------------------------------


def test_four_gpus_ten_hours_at_three_dollars(prices):
    est = compute_estimate(parse_estimate("4 gpus 10h at $3/hr"), prices)
    assert est.gpu_hours == 40
    assert cents(est.on_demand.total_usd) == 120.00
    assert est.spot is None  # a given price is on-demand; spot only with `spot $Y/hr`


def test_sixteen_gpus_a_week_at_three_dollars(prices):
    est = compute_estimate(parse_estimate("16 gpus 1w at $3/hr"), prices)
    assert est.gpu_hours == 16 * 168
    assert cents(est.on_demand.total_usd) == 8064.00


def test_spot_node_interrupted_every_three_hours(prices):
    est = compute_estimate(
        parse_estimate("1 gpus 1h at $32/hr spot $12/hr interruptions every 3h checkpoint 30m"), prices
    )
    assert cents(est.on_demand.usd_per_gpu_hour) == 32.00
    assert cents(est.spot.usd_per_gpu_hour) == 12.00
    assert cents(est.spot.effective_usd_per_gpu_hour) == 13.09  # 12 x 3 / (3 - 0.25)
    assert round(est.spot.savings_pct) == 59
    assert round(est.spot.list_savings_pct, 1) == 62.5


def test_overhead_formula():
    assert interruption_overhead(3, 0.5) == pytest.approx(3 / 2.75)
    assert interruption_overhead(4, 0) == 1.0
    with pytest.raises(EstimateInputError, match="write it like `"):
        interruption_overhead(1, 2)


def test_a100_week_uses_the_catalog_on_demand_and_spot(prices):
    est = compute_estimate(parse_estimate("16 a100 1w"), prices)
    od = prices.gpu_hour("A100", CapacityType.ON_DEMAND)
    spot = prices.gpu_hour("A100", CapacityType.SPOT, strict=True)
    assert est.on_demand.quote == od and est.on_demand.quote.basis == "default"
    assert cents(est.on_demand.total_usd) == cents(16 * 168 * od.usd_per_gpu_hour) == 11010.72
    assert est.spot.quote == spot
    assert cents(est.spot.total_usd) == cents(16 * 168 * 1.47) == 3951.36
    factor = DEFAULT_INTERRUPTION_HOURS / (DEFAULT_INTERRUPTION_HOURS - DEFAULT_CHECKPOINT_HOURS / 2)
    assert cents(est.spot.effective_total_usd) == cents(16 * 168 * 1.47 * factor) == 4214.78
    assert any("default" in a for a in est.assumptions)


def test_h100_has_no_catalog_spot_price(prices):
    est = compute_estimate(parse_estimate("8 h100 for 3 days"), prices)
    assert cents(est.on_demand.total_usd) == cents(8 * 72 * prices.gpu_hour("h100", CapacityType.ON_DEMAND).usd_per_gpu_hour)
    assert est.spot is None
    assert any("no spot price known for H100" in a for a in est.assumptions)


def test_model_with_given_spot_price_uses_catalog_on_demand(prices):
    est = compute_estimate(parse_estimate("8 h100 3d spot $4/hr interruptions every 3h"), prices)
    assert est.on_demand.quote.basis == "default"
    assert est.spot.usd_per_gpu_hour == 4.0 and est.spot.quote.source == "given in the request"
    assert est.spot.overhead_factor == pytest.approx(3 / 2.75)


def test_config_prices_flow_through(prices):
    book = PriceBook(PriceCatalog.bundled(), PriceOverrides(gpu_families={"H100": {"usd_per_gpu_hour": 2.0}}))
    est = compute_estimate(parse_estimate("2 h100 36h"), book)
    assert cents(est.on_demand.total_usd) == 144.00
    assert est.spot is None  # a flat (on-prem) price has no spot counterpart


def test_unpriced_model_asks_for_a_price():
    bare = PriceBook(PriceCatalog.from_dict({
        "source": "t", "as_of": "2026-01",
        "instance_types": {"g": {"cloud": "x", "region": "y", "gpu_model": "T4", "gpus": 1,
                                 "on_demand_usd_per_hour": 1.0}},
    }))
    with pytest.raises(EstimateInputError, match=r"no price known for H200.*`8 h200 3d at \$3/hr`"):
        compute_estimate(parse_estimate("8 h200 3d"), bare)


def test_json_output(prices):
    est = compute_estimate(parse_estimate("1 gpus 1h at $32/hr spot $12/hr interruptions every 3h checkpoint 30m"), prices)
    data = estimate_to_jsonable(est)
    json.dumps(data)
    assert data["on_demand"]["total_usd"] == 32.0
    assert data["spot"]["effective_usd_per_gpu_hour"] == 13.0909
    assert data["spot"]["savings_pct"] == 59.1
    assert data["spot"]["quote"]["capacity_type"] == "spot"
    assert data["request"]["interruption_hours"] == 3.0
    assert estimate_to_jsonable(compute_estimate(parse_estimate("4 gpus 10h at $3/hr"), prices))["spot"] is None


# --- the grammar -----------------------------------------------------------------------------------

GOOD = [
    # text, gpus, model, hours, on-demand $, spot $, checkpoint h, interruption h
    ("16 a100 1w", 16, "A100", 168, None, None, 0.5, 4),
    ("8 h100 for 3 days", 8, "H100", 72, None, None, 0.5, 4),
    ("4 gpus 10h at $3/hr", 4, None, 10, 3, None, 0.5, 4),
    ("2 h100 36h", 2, "H100", 36, None, None, 0.5, 4),
    ("16 a100 1w checkpoint 30m", 16, "A100", 168, None, None, 0.5, 4),
    ("8 h100 3d interruptions every 3h", 8, "H100", 72, None, None, 0.5, 3),
    ("1 gpus 1h at $32/hr spot $12/hr interruptions every 3h checkpoint 30m", 1, None, 1, 32, 12, 0.5, 3),
    ("8xH100 for a week", 8, "H100", 168, None, None, 0.5, 4),
    ("8 x h100 for 2 weeks", 8, "H100", 336, None, None, 0.5, 4),
    ("4 T4 90 minutes", 4, "T4", 1.5, None, None, 0.5, 4),
    ("2 nvidia a100-80gb 2 days", 2, "A100", 48, None, None, 0.5, 4),
    ("16 A100s 1.5d", 16, "A100", 36, None, None, 0.5, 4),
    ("3 a10g 12 hours @ $1.25 per hour", 3, "A10G", 12, 1.25, None, 0.5, 4),
    ("1 l4 an hour at $0.80/gpu-hr", 1, "L4", 1, 0.8, None, 0.5, 4),
    ("4 v100 1d checkpoints every 1h interrupted every 6h", 4, "V100", 24, None, None, 1, 6),
    ("10 gpus 2h at $1,000/hr", 10, None, 2, 1000, None, 0.5, 4),
    ("  8   H100   3D  ", 8, "H100", 72, None, None, 0.5, 4),
]


@pytest.mark.parametrize("text,gpus,model,hours,od,spot,ckpt,intr", GOOD)
def test_good_inputs(text, gpus, model, hours, od, spot, ckpt, intr):
    r = parse_estimate(text)
    assert (r.gpus, r.gpu_model, r.hours) == (gpus, model, pytest.approx(hours))
    assert (r.on_demand_usd_per_gpu_hour, r.spot_usd_per_gpu_hour) == (od, spot)
    assert (r.checkpoint_hours, r.interruption_hours) == (ckpt, intr)


BAD = [
    # text, what the message must say
    ("16 a100", 'could not find a duration in "16 a100"'),
    ("", "the request is empty"),
    ("a100 1w", "could not find a GPU count"),
    ("4 gpus 10h", "no GPU model and no price"),
    ("8 b300 3d", 'unknown GPU model "b300"'),
    ("8 h100 3d 4h", "2 durations"),
    ("8 h100 for 3 days 2w", "2 durations"),
    ("8 4 h100 3d", "2 GPU counts"),
    ("8 h100 a100 3d", "2 GPU models"),
    ("1.5 h100 3h", "whole number"),
    ("0 h100 3h", "at least 1"),
    ("8 h100 0h", "longer than zero"),
    ("8 h100 3d at $3", "could not read the price"),
    ("8 h100 3d at $2/hr at $3/hr", "2 values for the price"),
    ("8 h100 3d checkpoint 30m checkpoint 1h", "2 values for the checkpoint"),
    ("8 h100 3d checkpoint soon", "could not read the checkpoint"),
    ("8 h100 3d interruptions often", "could not read the interrupt"),
    ("8 h100 3d checkpoint 10h interruptions every 2h", "never makes progress"),
    ("8 h100 3d at $0/hr", "more than $0"),
    ("8 h100 3d please", 'unknown GPU model "please"'),
]


@pytest.mark.parametrize("text,says", BAD)
def test_bad_inputs_say_what_is_wrong_and_show_a_correct_example(text, says):
    with pytest.raises(EstimateInputError) as e:
        parse_estimate(text)
    msg = str(e.value)
    assert says in msg
    examples = re.findall(r"`([^`]+)`", msg.split("write it like", 1)[1])
    assert examples, msg
    for example in examples:
        parse_estimate(example)  # every example shown must itself parse


def test_missing_duration_message_exactly():
    with pytest.raises(EstimateInputError) as e:
        parse_estimate("16 a100")
    assert str(e.value) == (
        'could not find a duration in "16 a100": write it like `16 a100 1w` or `8 h100 for 3 days`'
    )


def test_missing_model_and_price_suggests_both_with_the_users_numbers():
    with pytest.raises(EstimateInputError) as e:
        parse_estimate("4 gpus 10h")
    assert "`4 a100 10h`" in str(e.value) and "`4 gpus 10h at $3/hr`" in str(e.value)


def test_unknown_model_lists_known_models():
    with pytest.raises(EstimateInputError) as e:
        parse_estimate("8 b300 3d")
    for known in ("A100", "A10G", "H100", "L4", "T4", "V100"):
        assert known in str(e.value)


def test_request_validates_itself():
    with pytest.raises(EstimateInputError, match="never makes progress"):
        EstimateRequest(gpus=1, hours=1, checkpoint_hours=8, interruption_hours=4)


@pytest.mark.parametrize("hours,text", [(168, "1w"), (72, "3d"), (36, "36h"), (0.5, "30m"), (1.5, "90m")])
def test_format_hours(hours, text):
    assert format_hours(hours) == text
    assert parse_estimate(f"1 h100 {text}").hours == pytest.approx(hours)
