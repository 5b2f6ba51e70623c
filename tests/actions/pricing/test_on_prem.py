"""On-prem chargeback: ``prices.on_prem``, bought hardware amortised straight-line, and where the
price book uses it."""

from __future__ import annotations

import pytest
import yaml
from pydantic import ValidationError

from actions.model.kube import CapacityType
from actions.pricing.book import PriceBook, PriceNotFound, config_example
from actions.pricing.catalog import PriceCatalog
from actions.pricing.on_prem import ON_PREM_SOURCE, OnPremHardware, OnPremPrices
from actions.pricing.overrides import PriceOverrides

OD, SPOT, UNKNOWN, RESERVED = (
    CapacityType.ON_DEMAND,
    CapacityType.SPOT,
    CapacityType.UNKNOWN,
    CapacityType.RESERVED,
)

CONFIG = """
prices:
  on_prem:
    usd_per_gpu: 30000
    years: 4
    as_of: "2025-06"
    note: "DGX H100 purchase, straight-line"
    gpu_families:
      A100: {usd_per_node: 200000, gpus_per_node: 8, years: 5}
"""

# By hand: 4 years x 8,760 h = 35,040 h; 30,000 / 35,040 = 0.856164... USD per GPU-hour.
# A100: 200,000 / 8 = 25,000 per GPU; 5 x 8,760 = 43,800 h; 25,000 / 43,800 = 0.570776... USD.
H100_RATE = 0.856164
A100_RATE = 0.570776


@pytest.fixture(scope="module")
def catalog() -> PriceCatalog:
    return PriceCatalog.bundled()


def overrides(**extra) -> PriceOverrides:
    return PriceOverrides(**yaml.safe_load(CONFIG)["prices"], **extra)


def book(catalog: PriceCatalog, **extra) -> PriceBook:
    return PriceBook(catalog, overrides(**extra))


# --- validation ------------------------------------------------------------------------------------


def test_the_documented_config_validates():
    on_prem = overrides().on_prem
    assert on_prem is not None
    default = on_prem.default()
    assert default is not None
    assert (default.usd_per_gpu, default.years, default.as_of) == (30000, 4, "2025-06")
    assert default.note == "DGX H100 purchase, straight-line"
    assert on_prem.gpu_families["A100"].gpus_per_node == 8
    assert PriceOverrides().on_prem is None


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"usd_per_gpu": 30000, "usd_per_node": 240000, "gpus_per_node": 8, "years": 4}, "not both"),
        ({"usd_per_gpu": 30000, "gpus_per_node": 8, "years": 4}, "not both"),
        ({"years": 4}, "give the purchase price"),
        ({"usd_per_node": 240000, "years": 4}, "gpus_per_node is missing"),
        ({"gpus_per_node": 8, "years": 4}, "usd_per_node is missing"),
    ],
)
def test_the_price_is_given_exactly_once_with_an_example(fields, message):
    with pytest.raises(ValidationError, match=message) as e:
        OnPremHardware(**fields)
    assert "e.g. {usd_per_gpu: 30000, years: 4}" in str(e.value)
    with pytest.raises(ValidationError, match=message):
        OnPremPrices(**fields)


@pytest.mark.parametrize("years", [0, -1, 15.5, 20])
def test_years_is_over_0_and_at_most_15(years):
    with pytest.raises(ValidationError, match="years"):
        OnPremHardware(usd_per_gpu=30000, years=years)
    with pytest.raises(ValidationError, match="years"):
        OnPremPrices(usd_per_gpu=30000, years=years)


def test_years_bounds_included():
    assert OnPremHardware(usd_per_gpu=30000, years=15).years == 15
    assert OnPremHardware(usd_per_gpu=30000, years=0.5).years == 0.5


def test_years_is_required():
    with pytest.raises(ValidationError, match="years"):
        OnPremHardware(usd_per_gpu=30000)
    with pytest.raises(ValidationError, match="years is missing"):
        OnPremPrices(usd_per_gpu=30000)
    with pytest.raises(ValidationError, match="years"):
        OnPremPrices(gpu_families={"A100": {"usd_per_gpu": 20000}})


def test_an_empty_section_is_refused():
    with pytest.raises(ValidationError, match="give a default price"):
        OnPremPrices()


def test_unknown_fields_are_refused():
    with pytest.raises(ValidationError, match="extra"):
        OnPremHardware(usd_per_gpu=30000, years=4, usd_per_gpu_hour=1.0)
    with pytest.raises(ValidationError, match="extra"):
        OnPremPrices(usd_per_gpu=30000, years=4, yeras=5)


def test_family_keys_are_normalised():
    o = OnPremPrices(gpu_families={"NVIDIA A100-SXM4-80GB": {"usd_per_gpu": 20000, "years": 5},
                                   "h100": {"usd_per_gpu": 30000, "years": 4}})
    assert sorted(o.gpu_families) == ["A100", "H100"]
    assert o.default() is None
    assert o.hardware("NVIDIA A100-SXM4-40GB") == (f"{ON_PREM_SOURCE}.gpu_families.A100", o.gpu_families["A100"])
    assert o.hardware("L40S") is None
    with pytest.raises(ValidationError, match="twice"):
        OnPremPrices(gpu_families={"a100": {"usd_per_gpu": 1, "years": 4}, "A100": {"usd_per_gpu": 2, "years": 4}})


# --- the rate --------------------------------------------------------------------------------------


def test_rate_per_gpu_by_hand_to_the_cent():
    h = OnPremHardware(usd_per_gpu=30000, years=4)
    assert h.usd_per_gpu_hour() == pytest.approx(30000 / (4 * 8760))
    assert round(h.usd_per_gpu_hour(), 6) == H100_RATE
    assert round(h.usd_per_gpu_hour(), 2) == 0.86
    # A month (730 h) of one GPU, to the cent: 730 x 0.856164... = 625.00.
    assert round(h.usd_per_gpu_hour() * 730, 2) == 625.00


def test_rate_per_node_by_hand_to_the_cent():
    h = OnPremHardware(usd_per_node=200000, gpus_per_node=8, years=5)
    assert h.purchase_per_gpu() == 25000
    assert h.usd_per_gpu_hour() == pytest.approx(200000 / 8 / (5 * 8760))
    assert round(h.usd_per_gpu_hour(), 6) == A100_RATE
    # 8 GPUs for a year (8,760 h) write off a fifth of the node: 40,000.00 USD.
    assert round(h.usd_per_gpu_hour() * 8 * 8760, 2) == 40000.00


# --- the price book --------------------------------------------------------------------------------


def test_a_node_with_no_instance_type_gets_the_on_prem_quote(catalog):
    q = book(catalog).quote(None, UNKNOWN, "NVIDIA H100 80GB HBM3")
    assert round(q.usd_per_gpu_hour, 6) == H100_RATE
    assert q.energy_billed is True
    assert q.capacity_type is RESERVED
    assert q.basis == "on-prem" and q.gpu_model == "H100"
    assert q.source == f"{ON_PREM_SOURCE} (USD 30,000 per GPU over 4 years): DGX H100 purchase, straight-line"
    assert q.as_of == "2025-06"


def test_the_family_entry_comes_before_the_default(catalog):
    q = book(catalog).quote(None, OD, "NVIDIA A100-SXM4-80GB")
    assert round(q.usd_per_gpu_hour, 6) == A100_RATE
    assert q.source == f"{ON_PREM_SOURCE}.gpu_families.A100 (USD 200,000 per node of 8 GPUs over 5 years)"
    assert q.as_of == "" and q.energy_billed and q.capacity_type is RESERVED


def test_no_gpu_model_known_gets_the_default(catalog):
    q = book(catalog).quote(None, SPOT, None)
    assert round(q.usd_per_gpu_hour, 6) == H100_RATE
    assert (q.capacity_type, q.energy_billed, q.gpu_model) == (RESERVED, True, None)


def test_an_instance_type_priced_nowhere_gets_the_on_prem_quote(catalog):
    q = book(catalog).quote("dgx-h100", OD, "H100")
    assert q.source.startswith(ON_PREM_SOURCE) and q.energy_billed


def test_a_catalog_instance_type_is_unchanged(catalog):
    plain = PriceBook(catalog).quote("p5.48xlarge", OD, "H100")
    q = book(catalog).quote("p5.48xlarge", OD, "H100")
    assert q == plain
    assert q.energy_billed is False and q.basis == "instance-type"
    assert PriceBook(catalog).quote(None, OD, "H100").energy_billed is False  # catalog median


def test_precedence(catalog):
    """Instance-type override > catalog > flat gpu_families > on_prem."""
    b = book(
        catalog,
        instance_types={"p4d.24xlarge": {"on_demand_usd_per_hour": 16.0}},
        gpu_families={"H100": {"usd_per_gpu_hour": 2.0}},
    )
    override = b.quote("p4d.24xlarge", OD, "A100")
    assert override.usd_per_gpu_hour == pytest.approx(2.0) and override.source.startswith("config override")
    catalogued = b.quote("g5.xlarge", OD, "A10G")
    assert catalogued.basis == "instance-type" and catalogued.source.startswith("bundled catalog")
    flat = b.quote("dgx-h100", OD, "H100")
    assert (flat.usd_per_gpu_hour, flat.basis, flat.energy_billed) == (2.0, "gpu-model", False)
    owned = b.quote("dgx-a100", OD, "A100")
    assert owned.basis == "on-prem" and round(owned.usd_per_gpu_hour, 6) == A100_RATE
    # on_prem comes before the catalog's family median, which would price an owned GPU as a cloud one.
    assert b.quote(None, OD, "L40S").source.startswith(ON_PREM_SOURCE)
    assert PriceBook(catalog).quote(None, OD, "L40S").basis == "default"


def test_only_families_no_default_falls_through(catalog):
    b = PriceBook(catalog, PriceOverrides(on_prem={"gpu_families": {"A100": {"usd_per_gpu": 25000, "years": 5}}}))
    assert b.quote(None, OD, "A100").basis == "on-prem"
    assert b.quote(None, OD, "H100").basis == "default"  # the catalog median
    with pytest.raises(PriceNotFound, match="prices.on_prem: nothing for a GPU of no known model"):
        b.quote(None, OD, None)


def test_a_strict_spot_request_is_not_answered_by_on_prem(catalog):
    with pytest.raises(PriceNotFound, match="not a spot price"):
        book(catalog).quote("x9.huge", SPOT, "NVIDIA B300", strict=True)


def test_gpu_hour_does_not_use_on_prem(catalog):
    assert book(catalog).gpu_hour("h100", OD).basis == "default"


def test_discounts_do_not_apply(catalog):
    b = book(catalog, discounts=[{"kind": "savings-plan", "gpu_families": ["H100"], "percent": 28, "as_of": "2026-11"}])
    assert round(b.quote(None, OD, "H100").usd_per_gpu_hour, 6) == H100_RATE


def test_price_not_found_suggests_on_prem_for_a_node_without_an_instance_type(catalog):
    with pytest.raises(PriceNotFound) as e:
        PriceBook(catalog).quote(None, OD, "NVIDIA B300")
    msg = str(e.value)
    assert "prices.on_prem: not set" in msg and "prices: {on_prem: {usd_per_gpu: 30000" in msg
    with pytest.raises(PriceNotFound) as e:
        PriceBook(catalog).quote("x9.huge", OD, "NVIDIA B300")
    assert "{on_prem:" not in str(e.value)  # an instance type to price instead


def test_the_on_prem_example_is_yaml_a_reader_can_paste():
    example = config_example(None, "B300", on_prem=True).split(" or ")[-1]
    o = PriceOverrides(**yaml.safe_load(example)["prices"])
    assert o.on_prem is not None and o.on_prem.default() is not None
    assert "on_prem" not in config_example(None, "B300")  # as estimates ask: gpu_hour does not use it
