"""Reserved capacity priced one way, and Reserved Instances and Savings Plans as billing discounts
(``prices.discounts``) on the hours priced at on-demand.

Upstream, what ``reserved`` means:
- Karpenter's capacity types are ``spot``, ``on-demand`` and ``reserved``
  (kubernetes-sigs/karpenter, pkg/apis/v1/labels.go: CapacityTypeSpot, CapacityTypeOnDemand,
  CapacityTypeReserved, label key ``karpenter.sh/capacity-type``; v1.14.1).
- ``reserved`` is an EC2 On-Demand Capacity Reservation, Capacity Blocks included ("Karpenter
  doesn't model ODCRs as standard on-demand capacity, and instead uses a dedicated capacity type:
  reserved"; "Capacity blocks are modeled as on-demand capacity reservations in EC2";
  aws/karpenter-provider-aws, website/content/en/v1.14/tasks/odcrs.md, v1.14).
- AWS EC2 User Guide, "Capacity Reservation pricing and billing": Capacity Reservations are
  charged at the equivalent On-Demand rate, and billing discounts for Savings Plans and Regional
  Reserved Instances apply to them; "Capacity Blocks pricing and billing": a Capacity Block's
  price is paid up front when it is reserved. A Reserved Instance is a billing discount, not
  capacity: it never decides the price of a ``reserved`` node.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from actions.model.kube import CapacityType
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.pricing.live import LiveOffer, LivePrice
from actions.pricing.overrides import PriceOverrides

OD, SPOT, UNKNOWN, RESERVED = CapacityType.ON_DEMAND, CapacityType.SPOT, CapacityType.UNKNOWN, CapacityType.RESERVED
FETCHED = datetime(2026, 11, 23, 6, 0, tzinfo=timezone.utc)
# AWS's published us-east-1 figures for p5.48xlarge (8 H100), USD per instance-hour: on-demand
# after the June 2025 cut, and the 1-year standard No Upfront Reserved Instance rate.
P5_ON_DEMAND, P5_RI = 55.044, 36.329
CATALOG_P5 = 55.04  # the bundled catalog's p5.48xlarge on-demand, AWS Price List 2026-07-20
SP = {"kind": "savings-plan", "gpu_families": ["H100"], "percent": 30, "note": "compute SP", "as_of": "2026-11-01"}


@pytest.fixture(scope="module")
def catalog() -> PriceCatalog:
    return PriceCatalog.bundled()


def live(*offers: tuple[LiveOffer, float]) -> dict:
    sources = {LiveOffer.ON_DEMAND: "AWS Pricing API (on-demand, us-east-1)",
               LiveOffer.RESERVED_INSTANCE: "AWS Pricing API (Reserved Instance, 1 year standard, No Upfront, us-east-1)"}
    return {("p5.48xlarge", o): LivePrice("p5.48xlarge", o, usd, sources[o], FETCHED, "us-east-1") for o, usd in offers}


def book(catalog: PriceCatalog, live_prices: dict | None = None, **prices) -> PriceBook:
    return PriceBook(catalog, PriceOverrides.model_validate(prices), live=live_prices)


# --- reserved capacity -----------------------------------------------------------------------------


def test_a_reserved_node_is_priced_at_on_demand_whether_or_not_a_live_reserved_instance_rate_is_known(catalog):
    with_ri = book(catalog, live((LiveOffer.ON_DEMAND, P5_ON_DEMAND), (LiveOffer.RESERVED_INSTANCE, P5_RI)))
    without_ri = book(catalog, live((LiveOffer.ON_DEMAND, P5_ON_DEMAND)))
    q = with_ri.quote("p5.48xlarge", RESERVED, "H100")
    assert q.usd_per_gpu_hour == without_ri.quote("p5.48xlarge", RESERVED, "H100").usd_per_gpu_hour
    assert q.usd_per_gpu_hour == pytest.approx(P5_ON_DEMAND / 8) != pytest.approx(P5_RI / 8)
    assert q.capacity_type is RESERVED
    assert q.source == "AWS Pricing API (on-demand, us-east-1), fetched 2026-11-23T06:00:00Z; reserved capacity priced at on-demand"
    # Live prices off: the catalog's on-demand, by the same rule.
    off = book(catalog).quote("p5.48xlarge", RESERVED, "H100")
    assert off.usd_per_gpu_hour == pytest.approx(CATALOG_P5 / 8) == book(catalog).quote("p5.48xlarge", OD, "H100").usd_per_gpu_hour
    # The Reserved Instance rate is still what the advice says a commitment would cost.
    commitment = with_ri.commitment_quote("p5.48xlarge")
    assert commitment is not None and commitment.usd_per_gpu_hour == pytest.approx(P5_RI / 8)
    assert commitment.basis == "commitment" and commitment.as_of == "2026-11-23T06:00:00Z"
    assert without_ri.commitment_quote("p5.48xlarge") is None


def test_the_reservations_own_rate_prices_reserved_capacity_and_no_discount_touches_it(catalog):
    # A Capacity Block's effective hourly price, configured: $39.33 per instance-hour.
    b = book(catalog, live((LiveOffer.RESERVED_INSTANCE, P5_RI)),
             instance_types={"p5.48xlarge": {"reserved_usd_per_hour": 39.33, "note": "capacity block", "as_of": "2026-11-20"}},
             discounts=[SP])
    q = b.quote("p5.48xlarge", RESERVED, None)
    assert (q.usd_per_gpu_hour, q.as_of) == (pytest.approx(39.33 / 8), "2026-11-20")
    assert q.source == "config override prices.instance_types.p5.48xlarge (reserved): capacity block"


def test_a_live_price_keyed_by_the_reserved_capacity_type_is_refused(catalog):
    ri = LivePrice("p5.48xlarge", LiveOffer.RESERVED_INSTANCE, P5_RI, "AWS Pricing API", FETCHED, "us-east-1")
    with pytest.raises(ValueError, match="unknown live price offer 'reserved'.*'reserved-instance'"):
        PriceBook(catalog, live={("p5.48xlarge", RESERVED): ri})
    with pytest.raises(ValueError, match="reserved capacity is billed at the on-demand rate"):
        LivePrice("p5.48xlarge", RESERVED, P5_RI, "AWS Pricing API", FETCHED, "us-east-1")


# --- discounts -------------------------------------------------------------------------------------


def test_a_percent_discount_lowers_every_hour_priced_at_on_demand_and_keeps_the_capacity_type(catalog):
    b = book(catalog, discounts=[SP])
    label = "savings-plan discount prices.discounts[0] (30% off: compute SP), as of 2026-11-01"
    for capacity, note in ((OD, ""), (RESERVED, "; reserved capacity priced at on-demand"),
                           (UNKNOWN, "; capacity type unknown, priced as on-demand")):
        q = b.quote("p5.48xlarge", capacity, None)
        assert q.usd_per_gpu_hour == pytest.approx(CATALOG_P5 * 0.7 / 8)
        assert q.capacity_type is capacity  # a savings plan is no capacity type
        assert q.source.endswith(f"{note}; {label}") and q.source.startswith("bundled catalog: AWS EC2 on-demand")
        assert q.as_of == "2026-07-20"  # a percent of the catalog's price: the catalog's date
    # Spot is never discounted.
    assert b.quote("p5.48xlarge", SPOT, None).usd_per_gpu_hour == pytest.approx(19.4933 / 8)
    assert "discount" not in b.quote("p5.48xlarge", SPOT, None).source


def test_a_reserved_instance_rate_for_the_instance_type_wins_over_the_family_discount(catalog):
    ri = {"kind": "reserved-instance", "instance_types": ["p5.48xlarge"], "usd_per_hour": 38.5,
          "note": "1 year, no upfront, 4 instances", "as_of": "2026-10-15"}
    b = book(catalog, live((LiveOffer.ON_DEMAND, P5_ON_DEMAND)), discounts=[SP, ri])
    q = b.quote("p5.48xlarge", OD, None)
    assert (q.usd_per_gpu_hour, q.as_of, q.capacity_type) == (pytest.approx(38.5 / 8), "2026-10-15", OD)
    assert q.source == (
        "AWS Pricing API (on-demand, us-east-1), fetched 2026-11-23T06:00:00Z; reserved-instance discount "
        "prices.discounts[1] ($38.5 per instance-hour: 1 year, no upfront, 4 instances), as of 2026-10-15")
    # Another H100 type takes the family's savings plan, per GPU-hour of its own on-demand price.
    p5_small = b.quote("p5.4xlarge", OD, None)  # 1 H100, $6.88 an hour in the catalog
    assert p5_small.usd_per_gpu_hour == pytest.approx(6.88 * 0.7) and "prices.discounts[0]" in p5_small.source


def test_a_family_discount_applies_to_the_family_median_but_not_to_a_flat_family_price(catalog):
    plain = book(catalog).gpu_hour("H100", OD).usd_per_gpu_hour
    per_gpu = {**SP, "percent": None, "usd_per_gpu_hour": 4.1}
    assert book(catalog, discounts=[SP]).gpu_hour("h100", OD).usd_per_gpu_hour == pytest.approx(plain * 0.7)
    q = book(catalog, discounts=[per_gpu]).quote(None, RESERVED, "NVIDIA H100 80GB HBM3")
    assert (q.usd_per_gpu_hour, q.as_of, q.basis) == (4.1, "2026-11-01", "default")
    assert q.source.endswith("savings-plan discount prices.discounts[0] ($4.1 per GPU-hour: compute SP), as of 2026-11-01")
    assert book(catalog, discounts=[SP]).gpu_hour("h100", SPOT).usd_per_gpu_hour == book(catalog).gpu_hour("h100", SPOT).usd_per_gpu_hour
    flat = book(catalog, gpu_families={"H100": {"usd_per_gpu_hour": 2.0, "note": "on-prem"}}, discounts=[SP])
    assert flat.quote("dgx-h100", OD, "H100").usd_per_gpu_hour == 2.0


@pytest.mark.parametrize("discount, message", [
    ({"percent": 30, "usd_per_hour": 38.5, "instance_types": ["p5.48xlarge"]},
     "give exactly one of percent, usd_per_hour, usd_per_gpu_hour (got percent and usd_per_hour)"),
    ({"gpu_families": ["H100"]}, "give exactly one of percent, usd_per_hour, usd_per_gpu_hour (got none)"),
    ({"percent": 100, "gpu_families": ["H100"]}, "percent\n  Input should be less than 100"),
    ({"percent": 0, "gpu_families": ["H100"]}, "percent\n  Input should be greater than 0"),
    ({"percent": 30}, "name what the discount covers: instance_types, gpu_families or both"),
    ({"usd_per_hour": 38.5, "gpu_families": ["H100"], "instance_types": ["p5.48xlarge"]},
     "usd_per_hour is per instance-hour and a GPU family has no instance size"),
    ({"percent": 30, "gpu_families": ["h100", "NVIDIA H100 80GB HBM3"]}, "gpu_families lists family H100 twice"),
    ({"percent": 30, "instance_types": ["p5.48xlarge", "P5.48XLARGE"]}, "instance_types lists 'P5.48XLARGE' twice"),
    ({"percent": 30, "gpu_families": ["H100"], "kind": "reserved"},
     "kind\n  Input should be 'reserved-instance' or 'savings-plan'"),
    ({"percent": 30, "gpu_families": ["H100"], "as_of": None}, "as_of\n  Input should be a valid string"),
    ({"percent": 30, "gpu_families": ["H100"], "capacity_type": "reserved"}, "capacity_type\n  Extra inputs are not permitted"),
])
def test_a_bad_discount_says_precisely_what_is_wrong(discount, message):
    entry = {"kind": "savings-plan", "as_of": "2026-11-01", **discount}
    with pytest.raises(ValidationError) as e:
        PriceOverrides.model_validate({"discounts": [entry]})
    assert message in str(e.value) and "discounts.0" in str(e.value)


def test_two_discounts_on_the_same_hours_are_refused():
    ri = {"kind": "reserved-instance", "instance_types": ["p5.48xlarge"], "percent": 40, "as_of": "2026-10-15"}
    with pytest.raises(ValidationError, match=r"discounts\[0\] and discounts\[1\] both cover instance type p5.48xlarge"):
        PriceOverrides.model_validate({"discounts": [ri, {**ri, "kind": "savings-plan"}]})
    with pytest.raises(ValidationError, match=r"discounts\[0\] and discounts\[2\] both cover GPU family H100"):
        PriceOverrides.model_validate({"discounts": [SP, ri, {**SP, "gpu_families": ["nvidia h100 80gb hbm3"]}]})
    # A type and its family in two discounts is no overlap: the instance type's wins.
    assert len(PriceOverrides.model_validate({"discounts": [SP, ri]}).discounts) == 2
