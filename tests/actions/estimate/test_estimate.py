"""The estimate: how a request is priced, refused and shown, checked to the cent against the
bundled catalog. How each way of phrasing a request is read: tests/actions/estimate/test_phrasings.py."""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_UP, Decimal

import pytest

from actions.estimate.parse import parse_estimate
from actions.estimate.price import compute_estimate, interruption_overhead
from actions.estimate.render import estimate_to_jsonable, versus_on_demand
from actions.estimate.request import (
    COMPARED_MODELS,
    DEFAULT_CHECKPOINT_HOURS,
    DEFAULT_INTERRUPTION_HOURS,
    EstimateInputError,
    EstimateRequest,
)
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.pricing.overrides import PriceOverrides
from actions.text import describe_hours, format_hours
from bot.chat.commands import CommandContext, dispatch
from bot.chat.commands.estimate import estimate_text

SPOT_FACTOR = DEFAULT_INTERRUPTION_HOURS / (DEFAULT_INTERRUPTION_HOURS - DEFAULT_CHECKPOINT_HOURS / 2)  # 4 / 3.75


@pytest.fixture(scope="module")
def prices() -> PriceBook:
    return PriceBook(PriceCatalog.bundled())


def cents(x: float) -> float:
    return float(Decimal(repr(x)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def rate(x: float) -> float:
    """A rate as the answer shows it and multiplies it: USD per GPU-hour to 4 decimals, half up."""
    return float(Decimal(repr(x)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


def estimate(text: str, prices: PriceBook):
    return compute_estimate(parse_estimate(text, prices), prices)


# --- worked checks ---------------------------------------------------------------------------------


def test_four_gpus_ten_hours_at_three_dollars(prices):
    est = estimate("4 gpus 10h at $3/hr", prices)
    assert est.gpu_hours == 40
    assert est.answer.on_demand.total_usd == 120.00
    assert est.answer.spot is None  # a given price is on-demand; spot only with `spot $Y/hr`
    assert any("spot $1.20/hr" in n for n in est.answer.notes)


def test_sixteen_gpus_a_week_at_three_dollars(prices):
    est = estimate("16 gpus 1w at $3/hr", prices)
    assert est.gpu_hours == 16 * 168
    assert est.answer.on_demand.total_usd == 8064.00


def test_spot_node_interrupted_every_three_hours(prices):
    est = estimate("1 gpus 1h at $32/hr spot $12/hr interruptions every 3h checkpoint 30m", prices)
    od, spot = est.answer.on_demand, est.answer.spot
    assert od.usd_per_gpu_hour == 32.00 and spot.usd_per_gpu_hour == 12.00
    assert spot.effective_usd_per_gpu_hour == 13.0909  # 12 x 3 / (3 - 0.25), to 4 decimals
    assert round(spot.savings_pct) == 59
    assert round(spot.list_savings_pct, 1) == 62.5


def test_overhead_formula():
    assert interruption_overhead(3, 0.5) == pytest.approx(3 / 2.75)
    assert interruption_overhead(4, 0) == 1.0
    with pytest.raises(EstimateInputError, match="write it like `"):
        interruption_overhead(1, 2)


def test_a_model_is_priced_as_its_cheapest_instance_type_on_demand_and_spot(prices):
    est = estimate("16 a100 1w", prices)
    o = est.answer
    assert (o.gpu_model, o.instance_type, o.instance_gpus, o.where) == ("A100", "p4d.24xlarge", 8, "aws us-east-1")
    # p4d.24xlarge $21.957642 / 8 GPUs = $2.7447 per GPU-hour, x 16 x 168 GPU-hours.
    assert o.on_demand.usd_per_gpu_hour == 2.7447
    assert o.on_demand.total_usd == cents(16 * 168 * rate(21.957642 / 8)) == 7377.75
    # Spot for the same instance type: $14.2313 / 8 = $1.7789 per GPU-hour.
    assert o.spot.usd_per_gpu_hour == rate(14.2313 / 8) == 1.7789
    assert o.spot.total_usd == cents(16 * 168 * 1.7789) == 4781.68
    assert o.spot.effective_usd_per_gpu_hour == rate(1.7789 * SPOT_FACTOR) == 1.8975
    assert o.spot.effective_total_usd == cents(16 * 168 * 1.8975) == 5100.48
    assert "lowest on-demand price of the 11 A100 instance types" in o.notes[0]
    assert any("default" in a for a in est.assumptions)


def test_a_memory_size_keeps_to_that_variant(prices):
    # A100 40GB: p4d.24xlarge (AWS) is cheaper per GPU than a2-highgpu (GCP) or ND96asr_v4 (Azure).
    forty = estimate("4 a100-40gb 10h", prices).answer
    assert forty.instance_type == "p4d.24xlarge"
    assert forty.on_demand.total_usd == cents(4 * 10 * rate(21.957642 / 8)) == 109.79
    # A100 80GB: p4de.24xlarge, $27.44705 / 8 = $3.4309 per GPU-hour, never the 40GB p4d.
    eighty = estimate("4 A100 80GB 10h", prices).answer
    assert eighty.instance_type == "p4de.24xlarge"
    assert eighty.on_demand.total_usd == cents(4 * 10 * rate(27.44705 / 8)) == 137.24


def test_equal_prices_pick_the_instance_the_gpus_fill(prices):
    # p5.4xlarge (1 GPU, $6.88) and p5.48xlarge (8 GPUs, $55.04 / 8 = $6.88) cost the same per GPU.
    assert estimate("1 h100 1h", prices).answer.instance_type == "p5.4xlarge"
    assert estimate("16 h100 1h", prices).answer.instance_type == "p5.48xlarge"


def test_the_catalog_note_on_a_price_shows_in_the_answer(prices):
    text = estimate_text(estimate("16 h100 1w", prices))
    assert "after AWS's 2025-06-01 price cut: P5 on-demand -44%, was $98.32/h" in text
    assert "as of 2026-07-20" in text and "as of 2026-08-10" in text  # on-demand and spot dates


def test_config_flat_price_wins_and_has_no_spot(prices):
    book = PriceBook(PriceCatalog.bundled(), PriceOverrides(gpu_families={"H100": {"usd_per_gpu_hour": 2.0}}))
    est = estimate("2 h100 36h", book)
    assert est.answer.on_demand.total_usd == 144.00  # 2 x 36 x $2
    assert est.answer.spot is None and "not a spot price" in " ".join(est.answer.notes)


def test_config_instance_rates_take_part_in_choosing_the_cheapest(prices):
    book = PriceBook(
        PriceCatalog.bundled(),
        PriceOverrides(instance_types={"a3-highgpu-8g": {"on_demand_usd_per_hour": 40.0, "note": "our CUD"}}),
    )
    o = estimate("8 h100 10h", book).answer
    assert o.instance_type == "a3-highgpu-8g" and o.on_demand.total_usd == 8 * 10 * 40.0 / 8
    assert "our CUD" in o.on_demand.quote.source


def test_a_model_without_a_price_says_which_and_how_to_set_it():
    bare = PriceBook(PriceCatalog.from_dict({
        "source": "t", "as_of": "2026-01-01",
        "instance_types": {"g": {"cloud": "x", "region": "y", "gpu_model": "T4", "gpus": 1,
                                 "on_demand_usd_per_hour": 1.0}},
    }))
    with pytest.raises(EstimateInputError) as e:
        estimate("8 h200 3d", bare)
    assert "no price known for H200" in e.value.problem
    assert "prices: {gpu_families: {H200: {usd_per_gpu_hour: 2.5}}}" in e.value.problem
    assert e.value.examples == ("8 gpus 3d at $3/hr",)


def test_an_instance_type_without_a_price_says_how_to_set_it(prices):
    with pytest.raises(EstimateInputError) as e:
        estimate("16 gpus on p5e.48xlarge for 3 days", prices)
    assert "no price known for p5e.48xlarge" in e.value.problem
    assert "prices: {instance_types: {p5e.48xlarge: {on_demand_usd_per_hour: 12.0, gpus: 8}}}" in e.value.problem


def test_a_missing_spot_price_says_which_and_how_to_set_it(prices):
    o = estimate("8 mi300x for a week", prices).answer
    assert o.instance_type == "Standard_ND96isr_MI300X_v5" and o.spot is None
    assert o.on_demand.total_usd == 8 * 168 * 48.00 / 8  # $6.00 per GPU-hour, eastus2
    assert (
        "no spot price known for Standard_ND96isr_MI300X_v5: set one in the config, e.g. "
        "`prices: {instance_types: {Standard_ND96isr_MI300X_v5: {spot_usd_per_hour: 20.0}}}`"
    ) in o.notes


# --- spot wording and rounding ---------------------------------------------------------------------


@pytest.mark.parametrize("pct,says", [
    (65.2, "65% below on-demand"),
    (-120.0, "spot costs 120% more here"),
    (-30.8, "spot costs 31% more here"),
    (0.3, "about the same as on-demand"),
    (None, ""),
])
def test_spot_versus_on_demand_wording(pct, says):
    assert versus_on_demand(pct) == says


def test_spot_above_on_demand_says_it_costs_more_never_negative_below(prices):
    est = estimate("8 h100 3d spot $9/hr", prices)
    spot = est.answer.spot
    # On-demand $6.88; spot $9: 1 - 9 / 6.88 = -30.8%; with interruptions $9 x 4 / 3.75 = $9.60: -39.5%.
    assert round(spot.list_savings_pct, 1) == -30.8 and round(spot.savings_pct, 1) == -39.5
    text = estimate_text(est)
    assert "spot costs 31% more here" in text and "spot costs 40% more here" in text
    assert "below" not in text and "-31%" not in text and "-40%" not in text


SHOWN = re.compile(r"\$([\d,]+\.\d{2}) = \$([\d,.]+)/GPU-hour(?: effective)? x ([\d,.]+) GPU-hours")


@pytest.mark.parametrize("text", [
    "16 a100 1w", "16 h100 for a week", "7 h100 for 7 minutes", "3 a100-80gb for 13 hours",
    "2 nodes of p4d for 3 days", "1 ND96amsr_A100_v4 for 5 days", "4 g6e.12xlarge for 29 hours",
    "3 l4 for a year", "1000 gpu-hours of a100", "8 h100 3d spot $2.718/hr", "5 gpus 7h at $2.99999/hr",
])
def test_the_rate_shown_times_the_gpu_hours_shown_is_the_total_shown(prices, text):
    """Before, "$4.10/GPU-hour" x 2,688 h was shown as $11,010.72; now every line multiplies out."""
    lines = SHOWN.findall(estimate_text(estimate(text, prices)))
    assert lines
    for total, shown_rate, gpu_hours in lines:
        product = Decimal(shown_rate.replace(",", "")) * Decimal(gpu_hours.replace(",", ""))
        assert product.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) == Decimal(total.replace(",", "")), text


def test_json_carries_the_figures_the_text_shows(prices):
    est = estimate("1 gpus 1h at $32/hr spot $12/hr interruptions every 3h checkpoint 30m", prices)
    data = estimate_to_jsonable(est)
    json.dumps(data)
    assert data["on_demand"]["total_usd"] == 32.0
    assert data["spot"]["effective_usd_per_gpu_hour"] == 13.0909
    assert data["spot"]["savings_pct"] == 59.1  # 1 - 13.0909 / 32
    assert data["spot"]["quote"]["capacity_type"] == "spot"
    assert data["request"]["interruption_hours"] == 3.0
    assert data["options"] == [{**data["options"][0], "on_demand": data["on_demand"], "spot": data["spot"]}]
    assert estimate_to_jsonable(estimate("4 gpus 10h at $3/hr", prices))["spot"] is None


# --- no model, no price: common models side by side ------------------------------------------------


def test_no_model_and_no_price_compares_common_models(prices):
    est = estimate("what would 16 GPUs for a week cost", prices)
    assert est.comparison and est.answer is None
    assert est.reading == "16 GPUs x 168 h (1 week) = 2,688 GPU-hours"
    by_model = {o.gpu_model: o for o in est.options}
    assert tuple(by_model) == COMPARED_MODELS and {"H100", "A100", "L4"} <= set(by_model)
    # Each at its cheapest instance type, 16 x 168 GPU-hours, on-demand and spot.
    h100, a100, l40s, l4 = (by_model[m] for m in COMPARED_MODELS)
    assert (h100.instance_type, h100.on_demand.total_usd) == ("p5.48xlarge", cents(16 * 168 * 55.04 / 8))
    assert h100.spot.total_usd == cents(16 * 168 * rate(19.4933 / 8))
    assert (a100.instance_type, a100.on_demand.total_usd) == ("p4d.24xlarge", cents(16 * 168 * rate(21.957642 / 8)))
    assert (l40s.instance_type, l40s.on_demand.total_usd) == ("g6e.xlarge", cents(16 * 168 * 1.861))
    assert (l4.instance_type, l4.on_demand.total_usd) == ("g2-standard-4", cents(16 * 168 * 0.7068))
    assert l4.spot.total_usd == cents(16 * 168 * 0.3973)
    text = estimate_text(est)
    for o in est.options:
        assert f"*{o.gpu_model}* ({o.instance_type}" in text
        assert o.on_demand.quote.source in text and o.spot.quote.source in text  # each with its source
        assert f"as of {o.on_demand.quote.as_of}" in text


def test_the_comparison_in_json_has_one_object_per_model(prices):
    data = estimate_to_jsonable(estimate("16 gpus for a week", prices))
    assert data["comparison"] is True and data["on_demand"] is None and data["spot"] is None
    assert [o["gpu_model"] for o in data["options"]] == list(COMPARED_MODELS)
    h100 = data["options"][0]
    assert (h100["instance_type"], h100["instance_gpus"], h100["where"]) == ("p5.48xlarge", 8, "aws us-east-1")
    assert h100["on_demand"]["total_usd"] == 18493.44  # 16 x 168 x $55.04 / 8
    assert h100["on_demand"]["quote"]["source"].startswith("bundled catalog: AWS EC2 on-demand")
    assert h100["spot"]["total_usd"] == 6549.85  # 16 x 168 x $2.4367 ($19.4933 / 8)


def test_a_compared_model_without_a_price_says_how_to_set_it():
    only_h100 = PriceBook(PriceCatalog.from_dict({
        "source": "t", "as_of": "2026-01-01",
        "instance_types": {"box": {"cloud": "onprem", "region": "lab", "gpu_model": "H100", "gpus": 8,
                                   "on_demand_usd_per_hour": 16.0}},
    }))
    est = estimate("4 gpus 10h", only_h100)
    h100, a100 = est.options[:2]
    assert h100.on_demand.total_usd == 4 * 10 * 16.0 / 8  # $2 per GPU-hour
    assert a100.on_demand is None and a100.spot is None
    assert a100.notes == ("no price known for A100: set one in the config, e.g. "
                          "`prices: {gpu_families: {A100: {usd_per_gpu_hour: 2.5}}}`",)
    assert "*A100*: no price known for A100: set one in the config" in estimate_text(est)


def test_a_comparison_fits_slack_sections(prices):
    reply = dispatch("estimate what would 16 GPUs for a week cost?", CommandContext(user="U1", prices=prices))
    assert not reply.ephemeral
    for block in reply.message.blocks:
        assert len(block["text"]["text"]) < 3000  # Slack cuts a section there


# --- refusals --------------------------------------------------------------------------------------

BAD = [
    # text, what the message must say
    ("", "the request is empty"),
    ("16 a100", 'could not find a duration in "16 a100"'),
    ("0 h100 3h", "the GPU count must be at least 1"),
    ("run -4 gpus for a week", "the GPU count must be at least 1"),
    ("zero h100 for a day", "the GPU count must be at least 1"),
    ("8 h100 0h", "the duration must be longer than zero"),
    ("8 h100 for -3 days", "the duration must be longer than zero"),
    ("0 nodes of p4d for 3 days", "the node count must be more than zero"),
    ("200000 h100 1w", "200,000 GPUs is more than 100,000"),
    ("8 h100 for 11 years", "more than 10 years (87,600 h)"),
    ("0 gpu-hours of a100", "the GPU-hours must be more than zero"),
    ("1.5 h100 3h", 'the GPU count "1.5" must be a whole number'),
    ("8 h100 for 3d 2w", "2 durations (3d, 2w)"),
    ("8 4 h100 3d", "2 GPU counts (8, 4)"),
    ("8 h100 a100 3d", "2 GPU models (H100, A100)"),
    ("16 gpus on p5 and p4d for a day", "2 instance types (p5.48xlarge, p4d.24xlarge)"),
    ("8 h100 3d at $3", "could not read the price"),
    ("8 h100 3d at $2/hr at $3/hr", "2 values for the price"),
    ("8 h100 3d checkpoint 30m checkpoint 1h", "2 values for the checkpoint"),
    ("8 h100 3d checkpoint soon", "could not read the checkpoint"),
    ("8 h100 3d interruptions often", "could not read the interruption"),
    ("8 h100 3d checkpoint 10h interruptions every 2h", "never makes progress"),
    ("8 h100 3d at $0/hr", "more than $0"),
    ("2 nodes of h100 for 3 days", "nodes of which instance type?"),
    ("16 h100 on p4d for a day", "p4d.24xlarge has A100 GPUs, not H100"),
    ("16 a100-80gb on p4d for a day", "p4d.24xlarge has A100 40GB HBM2, not 80GB"),
    ("3 nodes of p5 with 16 gpus for a day", "3 nodes of p5.48xlarge hold 24 GPUs, not 16"),
    ("1000 gpu-hours of a100 for a week", "give GPU-hours or a duration, not both"),
    ("2 nodes of p5e.48xlarge 3d", "how many GPUs does p5e.48xlarge hold?"),
    ("16 gpus at $3/hr per node for a day", "a price per node needs the instance type"),
    ("8 h100 for 2 minutes 30 seconds", "2 GPU counts"),  # seconds are no unit: 30 is read as a count
]


@pytest.mark.parametrize("text,says", BAD)
def test_refusals_say_what_is_wrong_and_show_a_correct_example(prices, text, says):
    with pytest.raises(EstimateInputError) as e:
        estimate(text, prices)
    assert says in e.value.problem
    assert e.value.examples
    for example in e.value.examples:
        assert estimate(example, prices).options  # every example shown is itself a real request
    assert "\nwrite it like `" in str(e.value) and str(e.value).count("\n") == 1  # two lines


def test_a_refusal_says_what_was_read():
    with pytest.raises(EstimateInputError) as e:
        parse_estimate("run -4 gpus for a week")
    assert e.value.understood == "-4 GPUs, 168 h (1 week)"
    with pytest.raises(EstimateInputError) as e:
        parse_estimate("16 a100")
    assert e.value.understood == "16 GPUs, A100"
    assert str(e.value) == (
        'could not find a duration in "16 a100" (I read: 16 GPUs, A100)\n'
        "write it like `16 a100 1w` or `8 h100 for 3 days`"
    )


def test_a_model_without_any_price_is_refused_with_the_config_to_set(prices):
    with pytest.raises(EstimateInputError) as e:
        estimate("8 b300 3d", prices)
    assert "no price known for B300" in e.value.problem and "prices: {gpu_families: {B300:" in e.value.problem
    assert e.value.understood == "8 GPUs, B300, 72 h (3 days)"


def test_refusals_in_chat_are_ephemeral_with_the_reading_and_an_example(prices):
    reply = dispatch("estimate 200000 h100 for a week", CommandContext(user="U1", prices=prices))
    assert reply.ephemeral
    assert reply.message.text == (
        ":warning: 200,000 GPUs is more than 100,000, more than the largest clusters hold; price what one "
        "job or team uses\nI read: 200,000 GPUs, H100, 168 h (1 week)\nFor example: `/gpu estimate 1024 h100 for a week`"
    )


def test_request_validates_itself():
    with pytest.raises(EstimateInputError, match="never makes progress"):
        EstimateRequest(gpus=1, hours=1, checkpoint_hours=8, interruption_hours=4)
    with pytest.raises(EstimateInputError, match="a GPU count and a duration, or GPU-hours"):
        EstimateRequest(gpus=1, hours=None)


@pytest.mark.parametrize("hours,text", [(168, "1w"), (72, "3d"), (36, "36h"), (0.5, "30m"), (1.5, "90m")])
def test_format_hours(hours, text):
    assert format_hours(hours) == text
    assert parse_estimate(f"1 h100 {text}").hours == pytest.approx(hours)


@pytest.mark.parametrize("hours,text", [
    (168, "168 h (1 week)"), (730, "730 h (1 month)"), (8760, "8,760 h (1 year)"), (72, "72 h (3 days)"),
    (1.5, "1.5 h (90 min)"), (36, "36 h"), (1, "1 h"),
])
def test_describe_hours(hours, text):
    assert describe_hours(hours) == text


def test_months_and_years_state_the_billing_convention(prices):
    for text in ("16 a100 for a month", "2 l4 for a year", "8 t4 monthly"):
        assert any("a month is 730 h and a year 8,760 h" in a for a in estimate(text, prices).assumptions)
    assert not any("730 h" in a for a in estimate("16 a100 for a week", prices).assumptions)
