"""The bundled grid carbon intensity: every figure sourced and positive, every mapped cloud region on
a grid of the table, and the lookup reading what people write (a subregion, a country, a cloud
region) or saying what it understood and what to write instead."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from actions.energy.grids import GridIntensity, UnknownGrid, grid_intensity, known_cloud_regions, known_grids

EGRID_SUBREGIONS = (
    "AKGD AKMS AZNM CAMX ERCT FRCC HIMS HIOA MROE MROW NEWE NWPP NYCW NYLI NYUP PRMS RFCE RFCM RFCW RMPA "
    "SPNO SPSO SRMV SRMW SRSO SRTV SRVC"
).split()
EU27 = "AT BE BG HR CY CZ DK EE FI FR DE GR HU IE IT LV LT LU MT NL PL PT RO SK SI ES SE".split()
REQUIRED_REGIONS = [
    "aws:us-east-1", "aws:us-east-2", "aws:us-west-1", "aws:us-west-2", "aws:eu-west-1", "aws:eu-west-2",
    "aws:eu-west-3", "aws:eu-central-1", "aws:eu-north-1", "aws:eu-south-1", "aws:ap-northeast-1",
    "gcp:us-central1", "gcp:us-east1", "gcp:us-east4", "gcp:us-west1", "gcp:us-west4", "gcp:europe-west1",
    "gcp:europe-west4", "gcp:europe-west2", "gcp:europe-north1",
    "azure:eastus", "azure:eastus2", "azure:westus2", "azure:westus3", "azure:southcentralus",
    "azure:northeurope", "azure:westeurope", "azure:swedencentral", "azure:uksouth", "azure:francecentral",
    "azure:germanywestcentral",
]


@pytest.fixture(scope="module")
def table() -> dict:
    return json.loads(resources.files("actions.energy").joinpath("data", "grid_intensity.json").read_text("utf-8"))


# --- the data -----------------------------------------------------------------------------------


def test_every_dataset_names_its_source_url_year_and_unit(table):
    for name, dataset in table["datasets"].items():
        for key in ("source", "url", "year", "unit", "notes"):
            assert dataset.get(key), (name, key)
        assert dataset["url"].startswith("https://"), name
        assert dataset["unit"] == "g CO2e/kWh", name


def test_every_grid_has_source_year_unit_and_a_positive_value(table):
    for code, entry in table["grids"].items():
        dataset = table["datasets"][entry["dataset"]]
        assert entry["source"] == dataset["source"], code
        assert entry["year"] == dataset["year"], code
        assert entry["unit"] == "g CO2e/kWh", code
        assert 0 < entry["gco2e_per_kwh"] < 2000, code


def test_all_egrid_subregions_and_the_eu_are_there_from_one_edition_each(table):
    grids = table["grids"]
    assert {c for c, e in grids.items() if e["kind"] == "egrid_subregion"} == set(EGRID_SUBREGIONS)
    assert {grids[c]["dataset"] for c in EGRID_SUBREGIONS} == {"egrid2022"}
    assert set(EU27 + ["NO", "CH", "GB"]) <= set(grids)
    assert {e["dataset"] for e in grids.values() if e["kind"] == "country"} == {"ember2024"}


def test_egrid_figures_are_the_lb_per_mwh_rates_converted(table):
    # 1 lb/MWh = 0.45359237 g/kWh; the table keeps both, so a reader can check the arithmetic.
    for code in EGRID_SUBREGIONS:
        entry = table["grids"][code]
        assert entry["gco2e_per_kwh"] == pytest.approx(entry["lb_co2e_per_mwh"] * 0.45359237, abs=0.01), code


def test_every_mapped_cloud_region_resolves_to_a_grid_of_the_table(table):
    for key, mapped in table["cloud_regions"].items():
        assert mapped["grid"] in table["grids"], key
        assert mapped["location"] and mapped["basis"], key
        found = grid_intensity(key)
        assert found.grid == mapped["grid"]
        assert found.gco2e_per_kwh == table["grids"][mapped["grid"]]["gco2e_per_kwh"]
    assert set(REQUIRED_REGIONS) <= set(known_cloud_regions())


def test_no_region_name_is_used_by_two_providers(table):
    # A bare region ("us-east-1", "westeurope") finds its provider only because no two share a name.
    bare = [k.split(":", 1)[1] for k in [*table["cloud_regions"], *table["cloud_regions_without_factor"]]]
    assert len(bare) == len(set(bare))


# --- the lookup ---------------------------------------------------------------------------------


@pytest.mark.parametrize("written", ["SRVC", "srvc", "eGRID SRVC", "egrid:srvc", " SRVC "])
def test_an_egrid_subregion_as_written(written):
    found = grid_intensity(written)
    assert found == GridIntensity("SRVC", 283.89, "US EPA eGRID2022", 2022, "eGRID subregion SERC Virginia/Carolina")
    assert found.kind == "subregion"


@pytest.mark.parametrize("written", ["DE", "de", "Germany", "germany", "GERMANY"])
def test_a_country_by_code_or_name(written):
    found = grid_intensity(written)
    assert (found.grid, found.gco2e_per_kwh, found.source, found.year) == (
        "DE", 342.06, "Ember Yearly Electricity Data 2024", 2024)
    assert found.kind == "country"


@pytest.mark.parametrize("written, grid", [
    ("UK", "GB"), ("United Kingdom", "GB"), ("Great Britain", "GB"), ("EL", "GR"), ("Czech Republic", "CZ"),
    ("Czechia", "CZ"), ("The Netherlands", "NL"), ("no", "NO"), ("Switzerland", "CH"),
])
def test_country_aliases(written, grid):
    assert grid_intensity(written).grid == grid


@pytest.mark.parametrize("written, grid", [
    ("us-east-1", "SRVC"), ("aws:us-east-1", "SRVC"), ("AWS us-east-1", "SRVC"), ("aws/us-east-1", "SRVC"),
    ("us-east-2", "RFCW"), ("us-west-2", "NWPP"), ("eu-central-1", "DE"), ("ap-northeast-1", "JP"),
    ("europe-west4", "NL"), ("gcp europe-west4", "NL"), ("gcp:europe-west4", "NL"), ("google:us-central1", "MROW"),
    ("westeurope", "NL"), ("azure:westeurope", "NL"), ("West Europe", "NL"), ("azure: west europe", "NL"),
    ("southcentralus", "ERCT"), ("westus3", "AZNM"),
])
def test_a_cloud_region_with_or_without_its_provider(written, grid):
    found = grid_intensity(written)
    assert found.grid == grid
    assert "cloud region" in found.note


def test_a_typo_says_what_was_understood_and_suggests():
    with pytest.raises(UnknownGrid) as e:
        grid_intensity("Germny")
    text = str(e.value)
    assert "'Germny' is neither an eGRID subregion, a country of the bundled table, nor a mapped cloud region" in text
    assert "did you mean 'Germany'?" in text
    assert "'aws:us-east-1'" in text and "'SRVC'" in text  # examples of what to write


def test_an_unknown_region_of_a_named_provider():
    with pytest.raises(UnknownGrid) as e:
        grid_intensity("aws:us-east-9")
    text = str(e.value)
    assert "read as aws region 'us-east-9'" in text
    assert "did you mean 'us-east-2', 'us-east-1'" in text
    assert "known aws regions: ap-northeast-1" in text
    assert "carbon_intensity_gco2e_per_kwh" in text


def test_an_unknown_egrid_subregion():
    with pytest.raises(UnknownGrid, match=r"read as eGRID subregion 'SRVX'.*did you mean 'SRVC'"):
        grid_intensity("eGRID SRVX")
    with pytest.raises(UnknownGrid, match="read as eGRID subregion 'DE'"):
        grid_intensity("egrid DE")  # a country is not a subregion


def test_a_cloud_region_left_out_says_why():
    with pytest.raises(UnknownGrid, match=r"aws:ca-central-1 \(Montréal.*no bundled grid factor.*carbon_intensity"):
        grid_intensity("ca-central-1")


@pytest.mark.parametrize("written", ["", "   "])
def test_nothing_given(written):
    with pytest.raises(UnknownGrid, match="no region given; write one of 'SRVC'"):
        grid_intensity(written)


def test_unknown_grid_is_a_lookup_error():
    assert issubclass(UnknownGrid, LookupError)


def test_known_grids_lists_codes_sorted():
    grids = known_grids()
    assert grids == sorted(grids)
    assert {"SRVC", "PRMS", "DE", "GB", "NO", "JP"} <= set(grids)
    assert "IS" not in grids  # Ember's latest figure for Iceland is from 2023, not 2024
