"""The bundled catalog, the config overrides and the price lookup order."""

from __future__ import annotations

import json
import re
import statistics
from importlib import resources

import pytest
import yaml
from pydantic import ValidationError

from actions.hardware.gpus import FAMILIES
from actions.model.kube import CapacityType
from actions.policy.rules import DEFAULT_IDLE_POWER_WATTS, Policy
from actions.pricing.book import PriceBook, PriceNotFound, config_example
from actions.pricing.catalog import CatalogError, PriceCatalog
from actions.pricing.overrides import PriceOverrides

OD, SPOT, UNKNOWN, RESERVED = (
    CapacityType.ON_DEMAND,
    CapacityType.SPOT,
    CapacityType.UNKNOWN,
    CapacityType.RESERVED,
)

REQUIRED = [
    "p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge", "p4de.24xlarge", "p6-b200.48xlarge",
    "g6e.xlarge", "g6e.12xlarge", "g6e.48xlarge", "g6.xlarge", "g6.48xlarge", "g5.xlarge", "g5.2xlarge",
    "g5.4xlarge", "g5.8xlarge", "g5.12xlarge", "g5.16xlarge", "g5.24xlarge", "g5.48xlarge",
    "g4dn.xlarge", "p3.2xlarge", "a3-highgpu-8g", "a3-megagpu-8g", "a2-highgpu-1g", "a2-highgpu-8g",
    "a2-ultragpu-8g", "g2-standard-4", "Standard_ND96isr_H100_v5", "Standard_ND96amsr_A100_v4",
    "ND96amsr_A100_v4", "Standard_ND96asr_v4", "Standard_NC24ads_A100_v4", "Standard_NC40ads_H100_v5",
    "Standard_ND96isr_H200_v5", "Standard_ND96isr_MI300X_v5",
]

# Published figures, USD per instance-hour, as the research of 2026-11-23 found them:
# (on-demand, spot; None where it found no dated spot price, which the catalog must leave null).
# AWS on-demand: AWS Price List via Karpenter's table, 2026-07-20; AWS spot: the spot price feed,
# 2026-08-10; GCP: Cloud Billing Catalog via Cyclenerd's pricing.yml, 2026-07-30; Azure: Retail
# Prices API via Karpenter-Azure's table, 2026-06-18.
PUBLISHED = {
    "p5.48xlarge": (55.04, 19.4933),  # was 98.32 before AWS's 2025-06-01 cut (-44%)
    "p5en.48xlarge": (63.296, 27.0749),
    "p4d.24xlarge": (21.957642, 14.2313),  # was 32.7726 (-33%)
    "p4de.24xlarge": (27.44705, 21.8259),  # was 40.96575 (-33%)
    "p6-b200.48xlarge": (113.9328, 42.2529),
    "g6e.xlarge": (1.861, 1.6119),
    "g6.xlarge": (0.8048, 0.5375),
    "g5.xlarge": (1.006, 0.5089),
    "g5.2xlarge": (1.212, 1.0236),
    "g5.12xlarge": (5.672, 3.4917),
    "g4dn.xlarge": (0.526, 0.3196),
    "p3.2xlarge": (3.06, 0.5509),
    "a3-highgpu-8g": (88.49, 50.6095),
    "a3-megagpu-8g": (92.9376, 23.2752),  # us-east4: the source has no us-central1 price
    "a2-highgpu-8g": (29.3871, 15.4242),
    "a2-ultragpu-8g": (40.5504, 22.0764),
    "g2-standard-4": (0.7068, 0.3973),
    "Standard_ND96isr_H100_v5": (98.32, None),
    "ND96amsr_A100_v4": (32.77, None),
    "Standard_ND96asr_v4": (27.197, None),
    "Standard_NC24ads_A100_v4": (3.673, None),
    "Standard_NC40ads_H100_v5": (6.98, None),
    "Standard_ND96isr_H200_v5": (84.80, None),  # eastus2: not offered in eastus
    "Standard_ND96isr_MI300X_v5": (48.00, None),  # eastus2: not offered in eastus
}


@pytest.fixture(scope="module")
def catalog() -> PriceCatalog:
    return PriceCatalog.bundled()


def book(catalog: PriceCatalog, **overrides) -> PriceBook:
    return PriceBook(catalog, PriceOverrides(**overrides))


# --- the catalog -----------------------------------------------------------------------------------


def test_catalog_has_every_required_instance_type(catalog):
    missing = [t for t in REQUIRED if catalog.entry(t) is None]
    assert missing == []


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_catalog_uses_the_published_figures(catalog, name):
    on_demand, spot = PUBLISHED[name]
    e = catalog.entry(name)
    assert (e.on_demand_usd_per_hour, e.spot_usd_per_hour) == (on_demand, spot)
    assert not e.spot_estimate


def test_the_aws_price_cut_is_noted_with_date_percentages_and_url(catalog):
    url = "https://aws.amazon.com/blogs/aws/announcing-up-to-45-price-reduction-for-amazon-ec2-nvidia-gpu-accelerated-instances/"
    data = json.loads(resources.files("actions.pricing").joinpath("data", "prices.json").read_text())
    assert url in data["note"] and "2025-06-01" in data["note"]
    for name, pct in (("p5.48xlarge", "-44%"), ("p5en.48xlarge", "-25%"), ("p4d.24xlarge", "-33%"), ("p4de.24xlarge", "-33%")):
        note = catalog.entry(name).note
        assert "2025-06-01" in note and pct in note and url in note, name


def test_a_catalog_note_travels_in_the_quote_source(catalog):
    """Sweep, report and estimate all show a quote's source, so the note shows wherever they do."""
    q = PriceBook(catalog).quote("p5.48xlarge", OD, None)
    assert "P5 on-demand -44%, was $98.32/h" in q.source
    assert "cut" not in PriceBook(catalog).quote("p5.48xlarge", SPOT, None).source  # spot was not cut


def test_every_price_is_dated_to_the_day(catalog):
    for e in catalog.entries:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", e.as_of), e.instance_type
        if e.spot_usd_per_hour is not None:
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", e.spot_as_of or ""), e.instance_type


def test_every_gpu_family_has_an_idle_ceiling_that_says_where_it_comes_from(catalog):
    policy = Policy()
    for family in set(FAMILIES) | {e.gpu_model for e in catalog.entries}:
        watts, source = policy.idle_ceiling(family)
        assert watts and 0 < watts < 400 and source, family
        # only the H100 figure is measured; the rest must not pass for measurements
        assert ("measured on a real H100" in source) == (family == "H100"), (family, source)
        if family not in DEFAULT_IDLE_POWER_WATTS:
            assert source.startswith("25% of the") and "board power" in source, (family, source)
    # a GPU's own enforced limit (DCGM) beats the datasheet: a B200 capped at 600 W
    assert policy.idle_ceiling("NVIDIA B200", 600.0) == (150.0, "25% of its 600 W power limit (no idle ceiling known for B200)")
    assert policy.idle_ceiling("NVIDIA B200") == (
        250.0, "25% of the B200's 1000 W board power (TGP in MLPerf Inference v5.1 B200-SXM-180GB system descriptions); "
        "DCGM exported no power limit")
    assert policy.idle_ceiling("Z9000 accelerator") == (None, None)


def test_every_entry_is_complete_and_sane(catalog):
    assert catalog.source and catalog.as_of
    for e in catalog.entries:
        assert e.gpus > 0, e.instance_type
        assert e.gpu_model in FAMILIES, e.instance_type
        assert e.on_demand_usd_per_hour > 0, e.instance_type
        assert e.spot_usd_per_hour is None or 0 < e.spot_usd_per_hour < e.on_demand_usd_per_hour
        assert e.source and e.as_of and e.region and e.cloud, e.instance_type
        if e.spot_usd_per_hour is not None:
            assert (e.spot_source or e.source) and (e.spot_as_of or e.as_of)


def test_no_spot_figure_is_an_estimate_and_azure_spot_is_unknown(catalog):
    # Every spot figure is a quoted price; where none was found (Azure) it is null, not guessed.
    assert [e.instance_type for e in catalog.entries if e.spot_estimate] == []
    azure = [e for e in catalog.entries if e.cloud == "azure"]
    assert azure and all(e.spot_usd_per_hour is None for e in azure)
    assert all(e.spot_usd_per_hour is not None for e in catalog.entries if e.cloud in ("aws", "gcp"))


def test_gpu_counts_and_families(catalog):
    expect = {
        "p5.48xlarge": ("H100", 8), "p4d.24xlarge": ("A100", 8), "p4de.24xlarge": ("A100", 8),
        "g5.xlarge": ("A10G", 1), "g5.12xlarge": ("A10G", 4), "g5.24xlarge": ("A10G", 4),
        "g5.48xlarge": ("A10G", 8), "g6.xlarge": ("L4", 1), "g4dn.xlarge": ("T4", 1),
        "p3.2xlarge": ("V100", 1), "a3-megagpu-8g": ("H100", 8), "a2-highgpu-8g": ("A100", 8),
        "Standard_ND96amsr_A100_v4": ("A100", 8), "Standard_NC24ads_A100_v4": ("A100", 1),
    }
    got = {t: (catalog.entry(t).gpu_model, catalog.entry(t).gpus) for t in expect}
    assert got == expect
    assert "40GB" in catalog.entry("p4d.24xlarge").gpu_memory
    assert "80GB" in catalog.entry("p4de.24xlarge").gpu_memory


def test_instance_lookup_ignores_case_and_azure_prefix(catalog):
    e = catalog.entry("Standard_ND96amsr_A100_v4")
    assert catalog.entry("ND96amsr_A100_v4") is e
    assert catalog.entry("standard_nd96amsr_a100_v4") is e
    assert catalog.entry("P5.48XLARGE") is catalog.entry("p5.48xlarge")
    assert catalog.entry("p9.nope") is None


def test_bundled_file_is_plain_json_with_top_level_provenance():
    data = json.loads(resources.files("actions.pricing").joinpath("data", "prices.json").read_text())
    assert data["source"] and data["as_of"]


def test_malformed_catalog_lists_every_problem():
    bad = {
        "source": "test",
        "as_of": "2026-01",
        "instance_types": {
            "x.big": {"cloud": "aws", "region": "r", "gpu_model": "Z900", "gpus": 0,
                      "on_demand_usd_per_hour": -1},
        },
    }
    with pytest.raises(CatalogError) as e:
        PriceCatalog.from_dict(bad)
    msg = str(e.value)
    assert "instance_types.x.big.gpu_model" in msg
    assert "instance_types.x.big.gpus" in msg
    assert "instance_types.x.big.on_demand_usd_per_hour" in msg


def test_catalog_entries_inherit_top_level_provenance():
    c = PriceCatalog.from_dict({
        "source": "lab list", "as_of": "2026-02",
        "instance_types": {"box": {"cloud": "onprem", "region": "lab", "gpu_model": "L4",
                                   "gpus": 2, "on_demand_usd_per_hour": 1.0}},
    })
    e = c.entry("box")
    assert (e.source, e.as_of, e.on_demand_usd_per_gpu_hour) == ("lab list", "2026-02", 0.5)


# --- the lookup order ------------------------------------------------------------------------------


def test_catalog_instance_price_per_gpu_hour(catalog):
    q = PriceBook(catalog).quote("p5.48xlarge", OD, "NVIDIA H100 80GB HBM3")
    assert q.usd_per_gpu_hour == pytest.approx(55.04 / 8)  # $6.88 per GPU-hour
    assert (q.basis, q.instance_type, q.gpu_model, q.capacity_type) == ("instance-type", "p5.48xlarge", "H100", OD)
    assert q.source.startswith("bundled catalog: AWS EC2 on-demand")
    assert q.as_of


def test_catalog_spot_price_when_known(catalog):
    q = PriceBook(catalog).quote("p4d.24xlarge", SPOT, None)
    assert q.usd_per_gpu_hour == pytest.approx(14.2313 / 8)
    assert "spot" in q.source


def test_spot_without_a_spot_price_is_on_demand_with_a_note(catalog):
    q = PriceBook(catalog).quote("ND96isr_H100_v5", SPOT, None)
    assert q.usd_per_gpu_hour == pytest.approx(98.32 / 8)
    assert q.capacity_type is SPOT
    assert "no spot price known" in q.source


def test_strict_spot_quote_never_falls_back_to_on_demand(catalog):
    b = PriceBook(catalog)
    assert b.quote("p5.48xlarge", SPOT, None, strict=True).usd_per_gpu_hour == pytest.approx(19.4933 / 8)
    with pytest.raises(PriceNotFound, match="no spot price for Standard_ND96isr_H100_v5"):
        b.quote("Standard_ND96isr_H100_v5", SPOT, None, strict=True)


def test_instance_names_and_gpus_come_from_catalog_aliases_and_config(catalog):
    b = book(catalog, instance_types={"bm.gpu.h100.8": {"on_demand_usd_per_hour": 80.0, "gpus": 8},
                                      "p4d.24xlarge": {"on_demand_usd_per_hour": 20.0, "gpus": 4}})
    names = b.instance_names()
    assert {"p4d", "p5", "p4d.24xlarge", "nd96amsr_a100_v4", "bm.gpu.h100.8"} <= set(names)
    assert catalog.entry("p4d") is catalog.entry("p4d.24xlarge")
    assert (b.instance_gpus("bm.gpu.h100.8"), b.instance_gpus("p5"), b.instance_gpus("nope.large")) == (8, 8, None)
    assert b.instance_gpus("p4d.24xlarge") == 4  # the config's count wins


def test_config_examples_are_yaml_a_reader_can_paste():
    assert config_example("x9.huge", "H100") == (
        "prices: {instance_types: {x9.huge: {on_demand_usd_per_hour: 12.0, gpus: 8}}} "
        "or prices: {gpu_families: {H100: {usd_per_gpu_hour: 2.5}}}"
    )
    spot = config_example("ND96isr_H100_v5", None, spot=True)
    assert spot == "prices: {instance_types: {ND96isr_H100_v5: {spot_usd_per_hour: 20.0}}}"
    assert PriceOverrides(**yaml.safe_load(spot)["prices"]).instance("ND96isr_H100_v5") is not None


def test_unknown_capacity_is_priced_as_on_demand_and_says_so(catalog):
    q = PriceBook(catalog).quote("g5.12xlarge", UNKNOWN, None)
    assert q.usd_per_gpu_hour == pytest.approx(5.672 / 4)
    assert "unknown" in q.source and "on-demand" in q.source


def test_reserved_capacity_is_on_demand_unless_configured(catalog):
    assert "reserved" in PriceBook(catalog).quote("g5.xlarge", RESERVED, None).source
    b = book(catalog, instance_types={"g5.xlarge": {"reserved_usd_per_hour": 0.6}})
    assert b.quote("g5.xlarge", RESERVED, None).usd_per_gpu_hour == pytest.approx(0.6)


def test_override_beats_catalog(catalog):
    b = book(catalog, instance_types={"p5.48xlarge": {"on_demand_usd_per_hour": 55.04, "note": "EDP"}})
    q = b.quote("p5.48xlarge", OD, None)
    assert q.usd_per_gpu_hour == pytest.approx(55.04 / 8)
    assert q.basis == "instance-type"
    assert "config override" in q.source and "EDP" in q.source
    assert q.as_of == ""


def test_override_is_field_by_field_over_the_catalog(catalog):
    b = book(catalog, instance_types={"p4d.24xlarge": {"on_demand_usd_per_hour": 21.96, "as_of": "2026-10"}})
    spot = b.quote("p4d.24xlarge", SPOT, None)
    assert spot.usd_per_gpu_hour == pytest.approx(14.2313 / 8)
    assert spot.source.startswith("bundled catalog")
    od = b.quote("p4d.24xlarge", OD, None)
    assert (od.usd_per_gpu_hour, od.as_of) == (pytest.approx(21.96 / 8), "2026-10")


def test_spot_override_used_for_spot(catalog):
    b = book(catalog, instance_types={"p5.48xlarge": {"spot_usd_per_hour": 24.0}})
    assert b.quote("p5.48xlarge", SPOT, None).usd_per_gpu_hour == pytest.approx(3.0)
    assert b.quote("p5.48xlarge", OD, None).usd_per_gpu_hour == pytest.approx(55.04 / 8)


def test_override_for_an_instance_type_outside_the_catalog_needs_gpus(catalog):
    b = book(catalog, instance_types={"bm.gpu.h100.8": {"on_demand_usd_per_hour": 80.0, "gpus": 8}})
    assert b.quote("bm.gpu.h100.8", OD, "H100").usd_per_gpu_hour == pytest.approx(10.0)
    no_gpus = book(catalog, instance_types={"bm.gpu.h100.8": {"on_demand_usd_per_hour": 80.0}})
    q = no_gpus.quote("bm.gpu.h100.8", OD, "NVIDIA H100 80GB HBM3")  # falls through to the family
    assert q.basis == "default"


def test_override_keys_match_like_the_catalog(catalog):
    b = book(catalog, instance_types={"nd96amsr_a100_v4": {"on_demand_usd_per_hour": 24.0}})
    assert b.quote("Standard_ND96amsr_A100_v4", OD, None).usd_per_gpu_hour == pytest.approx(3.0)


def test_family_flat_price_when_the_instance_type_is_unknown(catalog):
    b = book(catalog, gpu_families={"H100": {"usd_per_gpu_hour": 2.0, "note": "on-prem"}})
    q = b.quote("dgx-h100", SPOT, "NVIDIA H100 80GB HBM3")
    assert (q.usd_per_gpu_hour, q.basis, q.gpu_model) == (2.0, "gpu-model", "H100")
    assert "on-prem" in q.source
    # A catalogued instance type still wins over the flat price.
    assert b.quote("p5.48xlarge", OD, "H100").basis == "instance-type"


def test_family_keys_in_config_are_normalised(catalog):
    o = PriceOverrides(gpu_families={"nvidia a100-sxm4-80gb": {"usd_per_gpu_hour": 1.5}})
    assert list(o.gpu_families) == ["A100"]
    with pytest.raises(ValidationError):
        PriceOverrides(gpu_families={"a100": {"usd_per_gpu_hour": 1}, "A100": {"usd_per_gpu_hour": 2}})


def test_catalog_family_default_is_the_median(catalog):
    b = PriceBook(catalog)
    a100 = [e for e in catalog.entries if e.gpu_model == "A100"]
    q = b.quote(None, OD, "NVIDIA A100-SXM4-40GB")
    assert q.usd_per_gpu_hour == pytest.approx(statistics.median(e.on_demand_usd_per_gpu_hour for e in a100))
    assert q.basis == "default" and "median" in q.source
    s = b.quote("unknown.type", SPOT, "A100")
    spot = [e.spot_usd_per_gpu_hour for e in a100 if e.spot_usd_per_hour]
    assert s.usd_per_gpu_hour == pytest.approx(statistics.median(spot))
    assert "spot" in s.source


def test_price_not_found_lists_what_was_tried_and_how_to_fix(catalog):
    with pytest.raises(PriceNotFound) as e:
        PriceBook(catalog).quote("x9.huge", SPOT, "NVIDIA B300")
    msg = str(e.value)
    assert "x9.huge" in msg and "NVIDIA B300" in msg
    assert "prices.instance_types.x9.huge" in msg and "prices.gpu_families" in msg
    assert "bundled catalog" in msg
    assert "on_demand_usd_per_hour" in msg and "gpus" in msg and "usd_per_gpu_hour" in msg


def test_price_not_found_without_instance_or_model(catalog):
    with pytest.raises(PriceNotFound, match="no GPU model known"):
        PriceBook(catalog).quote(None, OD, None)


@pytest.mark.parametrize("alias,family", [("a100", "A100"), ("h100", "H100"), ("A10G", "A10G"),
                                          ("t4", "T4"), ("L4", "L4"), ("v100", "V100"),
                                          ("NVIDIA H100 80GB HBM3", "H100")])
def test_gpu_hour_accepts_aliases(catalog, alias, family):
    q = PriceBook(catalog).gpu_hour(alias, OD)
    assert q.gpu_model == family and q.usd_per_gpu_hour > 0


def test_gpu_hour_strict_spot(catalog):
    b = PriceBook(catalog)
    # The A100 spot median over its 6 priced instance types, per GPU-hour: p4d 14.2313/8 =
    # 1.7789, a2-highgpu-1g 1.9280, a2-highgpu-8g 15.4242/8 = 1.9280, p4de 21.8259/8 = 2.7282,
    # a2-ultragpu-1g 2.7595, a2-ultragpu-8g 22.0764/8 = 2.7596: the middle two averaged.
    assert b.gpu_hour("a100", SPOT, strict=True).usd_per_gpu_hour == pytest.approx((15.4242 / 8 + 21.8259 / 8) / 2)
    with pytest.raises(PriceNotFound, match="no spot price"):
        b.gpu_hour("mi300x", SPOT, strict=True)  # Azure only, whose spot is unknown
    assert "no spot price known" in b.gpu_hour("mi300x", SPOT).source
    flat = book(catalog, gpu_families={"A100": {"usd_per_gpu_hour": 1.0}})
    with pytest.raises(PriceNotFound):
        flat.gpu_hour("a100", SPOT, strict=True)


def test_gpu_hour_unknown_model_lists_known_families(catalog):
    with pytest.raises(PriceNotFound) as e:
        PriceBook(catalog).gpu_hour("b300", OD)
    assert "A100" in str(e.value) and "H100" in str(e.value)


def test_overrides_validate():
    with pytest.raises(ValidationError):
        PriceOverrides(instance_types={"p5.48xlarge": {"note": "no price"}})
    with pytest.raises(ValidationError):
        PriceOverrides(instance_types={"p5.48xlarge": {"on_demand_usd_per_hour": -3}})
    with pytest.raises(ValidationError):
        PriceOverrides(gpu_families={"H100": {"usd_per_gpu_hour": 0}})
    with pytest.raises(ValidationError):
        PriceOverrides(instance_types={"p5.48xlarge": {"on_demand": 3}})
