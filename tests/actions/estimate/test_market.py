"""Every word that changes the price is read ("Try every command before installing", item 3):
clouds, regions, instance series, commitments, fractions of nodes, counts after the type,
numbers in any notation and misspelt units. Each failure seen in use has a test written as the
user typed it; figures are worked by hand from the bundled catalog (USD per instance-hour / GPUs)."""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import ROUND_HALF_UP, Decimal

import pytest

from actions.estimate.parse import parse_estimate
from actions.estimate.price import compute_estimate
from actions.estimate.render import estimate_to_jsonable
from actions.estimate.request import EstimateInputError
from actions.model.kube import CapacityType
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.pricing.live import LivePrice
from actions.pricing.overrides import PriceOverrides
from bot.chat.commands.estimate import estimate_text


def cents(x: float) -> float:
    return float(Decimal(repr(x)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def rate(x: float) -> float:
    return float(Decimal(repr(x)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


H100_AWS = 55.04 / 8  # p5.48xlarge, aws us-east-1
H100_GCP = 11.0612  # a3-highgpu-1g, gcp us-central1; a3-highgpu-8g is $88.49 / 8 = $11.06125 -> $11.0613
H100_GCP_EAST4 = rate(92.9376 / 8)  # a3-megagpu-8g, gcp us-east4: $11.6172
H100_AZURE = 13.96 / 2  # Standard_NC80adis_H100_v5 (2 GPUs), eastus: $6.98, as NC40ads (1 GPU)
H200 = 63.296 / 8  # p5en.48xlarge


@pytest.fixture(scope="module")
def prices() -> PriceBook:
    return PriceBook(PriceCatalog.bundled())


def estimate(text: str, prices: PriceBook):
    return compute_estimate(parse_estimate(text, prices), prices)


def refusal(text: str, prices: PriceBook) -> EstimateInputError:
    with pytest.raises(EstimateInputError) as e:
        estimate(text, prices)
    for example in e.value.examples:
        assert estimate(example, prices).options  # every example shown is itself a real request
    return e.value


# --- the failures seen, as typed -------------------------------------------------------------------


def test_8_h100_on_gcp_for_a_week_is_priced_on_gcp(prices):
    est = estimate("8 H100 on GCP for a week", prices)
    o = est.answer
    assert (est.request.market.cloud, est.request.ignored) == ("gcp", ())
    assert o.instance_type.startswith("a3-") and o.where == "gcp us-central1"
    assert o.on_demand.total_usd == cents(1344 * H100_GCP) == 14866.25  # not AWS p5's $9,246.72
    assert est.reading == "8 H100 GPUs x 168 h (1 week) = 1,344 GPU-hours, on gcp"


def test_8_h100_reserved_for_a_year_is_refused_naming_the_word(prices):
    e = refusal("8 H100 reserved for a year", prices)
    assert e.problem.startswith('"reserved": no such rate is known for p5.48xlarge')
    assert "on-demand and spot list prices only" in e.problem and "kind: reserved-instance" in e.problem
    assert e.understood == "8 GPUs, H100, 8,760 h (1 year)"


def test_half_a_p5_node_for_10_hours_is_half_a_node(prices):
    est = estimate("half a p5 node for 10 hours", prices)
    assert (est.request.nodes, est.request.gpus) == (0.5, 4)
    assert est.answer.on_demand.total_usd == 275.20  # not a whole node's $550.40
    assert est.reading == "0.5 x p5.48xlarge (4 H100 GPUs) x 10 h = 40 GPU-hours"


def test_p5en_x_2_is_2_nodes_like_2_x_p5en(prices):
    e = refusal("p5en x 2", prices)  # as typed: no duration, and it says it read 2 nodes
    assert "could not find a duration" in e.problem and e.understood.startswith("2 nodes")
    for text in ("p5en x 2 for a day", "2 x p5en for a day", "p5en x2 for a day", "p5en nodes x 2 for a day"):
        req = parse_estimate(text, prices)
        assert (req.nodes, req.gpus) == (2, 16), text
        assert estimate(text, prices).answer.on_demand.total_usd == cents(384 * H200)


def test_1e3_h100_is_a_thousand_gpus(prices):
    e = refusal("1e3 H100", prices)  # as typed: no duration, and it says it read 1,000 GPUs
    assert e.understood.startswith("1,000 GPUs")
    assert parse_estimate("1e3 H100 for an hour", prices).gpus == 1000


def test_8_nvidia_h100s_for_3_dyas_suggests_days(prices):
    e = refusal("8 nvidia H100s for 3 dyas", prices)
    assert e.problem == '"3 dyas": did you mean "3 days"?'  # not "2 GPU counts (8, 3)"
    assert e.examples[0] == "8 nvidia H100s for 3 days"


# --- numbers, counts and fractions ----------------------------------------------------------------


@pytest.mark.parametrize("text,gpus", [
    ("1,000 h100 for an hour", 1000),
    ("1e3 h100 for an hour", 1000),
    ("2.5e2 h100 for an hour", 250),
    ("eight h100 for an hour", 8),
    ("a dozen h100 for an hour", 12),
    ("half a dozen h100 for an hour", 6),
    ("h100 x 8 for an hour", 8),
    ("gpus x 4 for an hour", 4),
    ("1.5 nodes of p5 for an hour", 12),
    ("half of a p5 node for an hour", 4),
    ("p5 x 1.5 for an hour", 12),
])  # fmt: skip
def test_numbers_in_any_notation(prices, text, gpus):
    assert parse_estimate(text, prices).gpus == gpus


@pytest.mark.parametrize("text,says", [
    ("1.3 nodes of p5 for a day", "1.3 nodes of p5.48xlarge (8 GPUs each) is 10.4 GPUs"),
    ("half a g6e.xlarge for a day", "0.5 nodes of g6e.xlarge (1 GPU each) is 0.5 GPUs"),
    ("half a gpu for a day", 'the GPU count "0.5" must be a whole number'),
    ("16 h100 for 2 wekes", '"2 wekes": did you mean "2 weeks"?'),
    ("16 h100 for a wek", '"a wek": did you mean "a week"?'),
    ("2 noeds of p5 for a day", '"2 noeds": did you mean "2 nodes"?'),
    ("8 h100 for ten minuets", '"ten minuets": did you mean "ten minutes"?'),
])  # fmt: skip
def test_a_count_that_is_not_whole_or_a_misspelt_unit_is_refused(prices, text, says):
    assert says in refusal(text, prices).problem


# --- clouds, regions and series -------------------------------------------------------------------


@pytest.mark.parametrize("text,where,instance,usd_per_gpu_hour", [
    ("8 h100 on aws for a day", "on aws", "p5.48xlarge", H100_AWS),
    ("8 h100 in AWS for a day", "on aws", "p5.48xlarge", H100_AWS),
    ("8 h100 azure for a day", "on azure", "Standard_NC80adis_H100_v5", H100_AZURE),
    ("8 h100 on microsoft azure for a day", "on azure", "Standard_NC80adis_H100_v5", H100_AZURE),
    ("8 h100 on google cloud for a day", "on gcp", "a3-highgpu-1g", H100_GCP),
    ("8 h100 gcp a3 for a day", "on gcp a3 series", "a3-highgpu-1g", H100_GCP),
    ("8 h100 in us-east4 for a day", "on gcp in us-east4", "a3-megagpu-8g", H100_GCP_EAST4),
    ("8 h100 for a day in region us-central1", "on gcp in us-central1", "a3-highgpu-1g", H100_GCP),
    ("8 h100 for a day in us-east-1", "on aws in us-east-1", "p5.48xlarge", H100_AWS),
    ("8 h100 eastus for a day", "on azure in eastus", "Standard_NC80adis_H100_v5", H100_AZURE),
    ("p5 on aws for a day", "on aws", "p5.48xlarge", H100_AWS),
])  # fmt: skip
def test_a_cloud_region_or_series_keeps_to_its_instance_types(prices, text, where, instance, usd_per_gpu_hour):
    est = estimate(text, prices)
    assert est.request.market.where() == where and est.request.ignored == ()
    assert (est.answer.instance_type, est.answer.on_demand.usd_per_gpu_hour) == (instance, usd_per_gpu_hour)
    assert est.answer.on_demand.total_usd == cents(192 * usd_per_gpu_hour)
    assert f", {where}" in est.reading


@pytest.mark.parametrize("text,says", [
    ("p5 on gcp for a day", "p5.48xlarge is an aws instance type, not gcp"),
    ("p5 in us-west-2 for a day", "the catalog prices p5.48xlarge in us-east-1 only, not us-west-2"),
    ("8 h100 in eu-west-1 for a day",
     '"on aws in eu-west-1": the catalog has no H100 instance type there; it has H100 in aws us-east-1, '
     "azure eastus, gcp us-central1, gcp us-east4"),
    ("8 b200 on gcp for a day", '"on gcp": the catalog has no B200 instance type there; it has B200 in aws us-east-1'),
    ("8 h100 on aws and gcp for a day", "the request names 2 clouds (aws, gcp)"),
    ("8 h100 on gcp in us-east-1 for a day", "us-east-1 is a aws region, not gcp"),
    ("8 h100 on aws a3 for a day", "a3 is a gcp instance series, not aws"),
    ("a3-megagpu-8g in us-central1 for a day", "the catalog prices a3-megagpu-8g in us-east4 only"),
])  # fmt: skip
def test_a_cloud_or_region_the_catalog_cannot_price_is_refused(prices, text, says):
    assert says in refusal(text, prices).problem


def test_a_comparison_keeps_to_the_cloud_and_says_which_models_are_not_there(prices):
    est = estimate("16 gpus for a week on azure", prices)
    assert est.comparison and est.reading.endswith(", on azure")
    by_model = {o.gpu_model: o for o in est.options}
    assert {o.where for o in est.options if o.on_demand} == {"azure eastus"}
    assert by_model["L4"].on_demand is None
    assert by_model["L4"].notes[0].startswith('"on azure": the catalog has no L4 instance type there')
    assert '"on azure": the catalog has no L40S' in estimate_text(est)


def test_a_price_given_wins_and_says_the_cloud_does_not_change_it(prices):
    est = estimate("8 gpus 3d at $2/hr on gcp", prices)
    assert est.answer.on_demand.total_usd == 1152.00
    assert 'your price is used: "on gcp" does not change it' in est.answer.notes


# --- commitments ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text,said", [
    ("8 h100 on a 3-year savings plan for a month", "savings plan (3-year)"),
    ("8 h100 1-year reserved instance for a week", "reserved (1-year)"),
    ("8 h100 for a week with a 3 year commitment", "3-year commitment"),
    ("8 h100 for a week, 3-year term", "3-year commitment"),
    ("8 h100 for a week on an RI", "reserved"),
    ("8 a100 committed use on gcp for a month", "committed use"),
    ("8 a100 on gcp with a cud for a month", "committed use"),
])  # fmt: skip
def test_a_commitment_without_a_known_rate_is_refused_naming_it(prices, text, said):
    e = refusal(text, prices)
    assert e.problem.startswith(f'"{said}": no such rate is known for ')


@pytest.mark.parametrize("text,says", [
    ("8 h100 reserved on spot for a week", "spot capacity cannot be bought under a commitment (reserved)"),
    ("8 h100 for a 2-year reservation for a week", "a 2-year commitment is not sold"),
    ("8 h100 reserved savings plan for a week", "2 commitments (reserved, savings plan)"),
    ("16 gpus for a week reserved", 'none of H100, A100, L40S, L4 can be priced: "reserved"'),
])  # fmt: skip
def test_a_commitment_that_cannot_be_bought_is_refused(prices, text, says):
    assert says in refusal(text, prices).problem


def test_a_year_of_reserved_is_a_duration_and_a_commitment(prices):
    req = parse_estimate("8 h100 reserved for a year", prices)
    assert (req.hours, req.market.commitment, req.market.commitment_years) == (8760, "reserved", None)


def test_a_configured_reserved_instance_discount_prices_reserved(prices):
    book = PriceBook(
        PriceCatalog.bundled(),
        PriceOverrides(
            discounts=[{"kind": "reserved-instance", "gpu_families": ["H100"], "percent": 40, "as_of": "2026-11-01"}]
        ),
    )
    est = estimate("8 H100 reserved for a year", book)
    od = est.answer.on_demand
    assert (od.usd_per_gpu_hour, od.total_usd) == (4.128, 289290.24)  # $6.88 x 60% x 70,080 GPU-hours
    assert od.quote.capacity_type is CapacityType.RESERVED and "prices.discounts[0]" in od.quote.source
    text = estimate_text(est)
    assert text.startswith("*8 H100 GPUs x 8,760 h (1 year) = 70,080 GPU-hours, reserved: $289,290.24 committed*")
    assert "• Committed: $289,290.24" in text and "below the committed rate" in text
    assert '"reserved" priced at the reserved-instance discount prices.discounts[0]' in est.answer.notes
    with pytest.raises(EstimateInputError, match='"savings plan": no such rate'):
        estimate("8 H100 savings plan for a year", book)  # a Reserved Instance is no Savings Plan


def test_a_configured_reserved_rate_prices_reserved_and_says_the_term_is_not_known():
    book = PriceBook(
        PriceCatalog.bundled(), PriceOverrides(instance_types={"p4d.24xlarge": {"reserved_usd_per_hour": 12.0}})
    )
    o = estimate("2 nodes of p4d 3-year reserved for a week", book).answer
    assert (o.on_demand.usd_per_gpu_hour, o.on_demand.total_usd) == (1.50, 4032.00)
    assert o.notes[-1].endswith("reserved_usd_per_hour for p4d.24xlarge (a 3-year term is not recorded there)")


def test_the_live_reserved_instance_rate_prices_a_1_year_reservation_only():
    live = {
        ("p5.48xlarge", "reserved-instance"): LivePrice(
            "p5.48xlarge", "reserved-instance", 36.0, "AWS Pricing API, 1-year standard No Upfront",
            datetime(2026, 11, 20, tzinfo=timezone.utc), "us-east-1",
        )
    }  # fmt: skip
    book = PriceBook(PriceCatalog.bundled(), live=live)
    o = estimate("8 h100 1-year reserved for a week", book).answer
    assert (o.on_demand.usd_per_gpu_hour, o.on_demand.total_usd) == (4.50, cents(1344 * 4.50))
    with pytest.raises(EstimateInputError, match=r'"reserved \(3-year\)": no such rate'):
        estimate("8 h100 3-year reserved for a week", book)


def test_a_price_given_is_the_committed_rate(prices):
    o = estimate("8 h100 reserved for a week at $4/hr", prices).answer
    assert (o.on_demand.total_usd, o.on_demand.quote.capacity_type) == (5376.00, CapacityType.RESERVED)


# --- nothing dropped silently ---------------------------------------------------------------------


def test_every_word_not_used_is_ignored_and_shown(prices):
    est = estimate("8 h100 for a week in frankfurt", prices)
    assert est.request.ignored == ("frankfurt",)
    assert est.reading.endswith("; ignored: frankfurt")
    assert estimate("what would 16 h100 cost for a week, please?", prices).request.ignored == ()


def test_json_carries_where_and_the_commitment(prices):
    request = estimate_to_jsonable(estimate("8 h100 gcp a3 for a week", prices))["request"]
    assert (request["cloud"], request["region"], request["series"], request["commitment"]) == ("gcp", None, "a3", None)
    assert request["nodes"] is None and request["ignored"] == []
