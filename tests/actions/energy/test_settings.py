"""The ``energy:`` section: its checks (a PUE below 1, a typo'd region, a source without its figure),
which intensity wins, a cluster's section over the top level, and the arithmetic of the resolved
factors against hand numbers; and the section read from a YAML file by the bot's own loader."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from actions.energy.settings import DEFAULT_PUE_SOURCE, EnergyFactors, EnergySettings, merge
from bot.settings import ConfigError, load_settings

# --- the checks ---------------------------------------------------------------------------------


def test_defaults_count_the_gpus_alone_and_no_carbon():
    f = EnergySettings().factors()
    assert (f.pue, f.pue_source, f.gco2e_per_kwh, f.usd_per_kwh) == (1.0, DEFAULT_PUE_SOURCE, None, None)
    assert f.pue_source == "default 1.0: facility overhead not counted"
    assert f.intensity_source.startswith("not configured")
    assert f.co2e_kg(100) is None
    assert f.facility_kwh(100) == 100


def test_a_pue_below_one_is_refused_with_what_pue_is_and_an_example():
    with pytest.raises(ValidationError) as e:
        EnergySettings(pue=0.9)
    text = str(e.value)
    assert "pue 0.9 is below 1.0: PUE is facility energy / IT energy" in text
    assert "energy:\n  pue: 1.3" in text


@pytest.mark.parametrize("field, value", [
    ("pue", 3.5), ("carbon_intensity_gco2e_per_kwh", -1), ("carbon_intensity_gco2e_per_kwh", 2500),
    ("usd_per_kwh", 0), ("usd_per_kwh", 5),
])
def test_figures_out_of_range_are_refused(field, value):
    with pytest.raises(ValidationError, match=field):
        EnergySettings(**{field: value})


def test_a_typo_in_the_region_fails_at_load_with_the_closest_names():
    with pytest.raises(ValidationError) as e:
        EnergySettings(region="us-east-l")
    text = str(e.value)
    assert "'us-east-l' is neither an eGRID subregion" in text
    assert "(did you mean 'us-east-2', 'us-east-1', 'us-east4'?)" in text
    assert "region: aws:us-east-1" in text  # the example


def test_a_bare_yaml_no_is_asked_to_be_quoted():
    with pytest.raises(ValidationError, match='quote a country code, e.g. region: "NO"'):
        EnergySettings(region=False)


def test_a_source_without_its_figure_is_refused():
    with pytest.raises(ValidationError, match="carbon_intensity_source given without carbon_intensity_gco2e_per_kwh"):
        EnergySettings(carbon_intensity_source="utility bill")
    with pytest.raises(ValidationError, match="usd_per_kwh_as_of given without usd_per_kwh"):
        EnergySettings(usd_per_kwh_as_of="2026-01")


def test_unknown_keys_are_refused():
    with pytest.raises(ValidationError, match="extra"):
        EnergySettings(PUE=1.2)


# --- which figure, from where -------------------------------------------------------------------


def test_the_region_gives_the_bundled_intensity_with_its_source():
    f = EnergySettings(pue=1.3, region="us-east-1").factors()
    assert f.gco2e_per_kwh == 283.89
    assert f.intensity_source == "US EPA eGRID2022, subregion SRVC (from region us-east-1)"
    assert f.pue_source == "configured"
    assert EnergySettings(region="srvc").factors().intensity_source == "US EPA eGRID2022, subregion SRVC"
    assert EnergySettings(region="DE").factors().intensity_source == "Ember Yearly Electricity Data 2024, country DE"


def test_a_configured_intensity_wins_over_the_region():
    f = EnergySettings(
        region="us-east-1", carbon_intensity_gco2e_per_kwh=350, carbon_intensity_source="utility 2025 disclosure",
        carbon_intensity_as_of="2026-01",
    ).factors()
    assert f.gco2e_per_kwh == 350
    assert f.intensity_source == "configured: utility 2025 disclosure (as of 2026-01)"
    assert EnergySettings(carbon_intensity_gco2e_per_kwh=0).factors().gco2e_per_kwh == 0  # a green tariff


def test_describe_is_one_sentence_with_every_source():
    f = EnergySettings(
        pue=1.3, pue_source="facilities report 2025", region="aws:us-east-1", usd_per_kwh=0.11,
        usd_per_kwh_as_of="2026-01",
    ).factors()
    assert f.describe() == (
        "PUE 1.3 (configured: facilities report 2025); 283.89 g CO2e/kWh: US EPA eGRID2022, subregion SRVC "
        "(from region aws:us-east-1); $0.11/kWh (configured (as of 2026-01))"
    )
    assert EnergySettings().factors().describe() == (
        "PUE 1 (default 1.0: facility overhead not counted); carbon not configured (set energy.region or "
        "energy.carbon_intensity_gco2e_per_kwh)"
    )


# --- a cluster's section over the top level ----------------------------------------------------


def test_merge_lets_the_override_win_field_by_field():
    base = EnergySettings(pue=1.4, pue_source="site survey", region="us-east-1", usd_per_kwh=0.12)
    cluster = EnergySettings(region="eu-north-1")
    merged = merge(base, cluster)
    assert (merged.pue, merged.pue_source, merged.region, merged.usd_per_kwh) == (1.4, "site survey", "eu-north-1", 0.12)
    assert merge(base, None) is base
    # The override's pue takes the base's note with it: the note was about the base's figure.
    assert merge(base, EnergySettings(pue=1.1)).pue_source is None
    assert merge(base, EnergySettings(pue=1.1)).factors().pue_source == "configured"


def test_a_cluster_region_drops_the_top_level_configured_intensity():
    base = EnergySettings(carbon_intensity_gco2e_per_kwh=400, carbon_intensity_source="campus meter")
    f = merge(base, EnergySettings(region="swedencentral")).factors()
    assert f.gco2e_per_kwh == 35.89
    assert f.intensity_source == "Ember Yearly Electricity Data 2024, country SE (from region swedencentral)"


def test_defaults_stay_defaults_through_a_merge():
    merged = merge(EnergySettings(region="SRVC"), EnergySettings(usd_per_kwh=0.2))
    assert "pue" not in merged.model_fields_set
    assert merged.factors().pue_source == DEFAULT_PUE_SOURCE


# --- the arithmetic -----------------------------------------------------------------------------


def test_facility_kwh_and_kg_co2e_against_hand_numbers():
    f = EnergyFactors(pue=1.25, pue_source="configured", gco2e_per_kwh=400.0, intensity_source="configured",
                      usd_per_kwh=None, usd_per_kwh_source="not configured")
    # 8 H100s at 700 W for 10 hours: 56 kWh of GPU energy; x 1.25 = 70 kWh at the meter;
    # 70 kWh x 400 g/kWh = 28,000 g = 28 kg.
    assert f.facility_kwh(56) == pytest.approx(70)
    assert f.co2e_kg(56) == pytest.approx(28)
    assert f.co2e_kg(0) == 0


def test_bundled_factor_arithmetic():
    f = EnergySettings(pue=1.5, region="DE").factors()
    # 1000 GPU kWh x 1.5 = 1500 kWh; x 342.06 g/kWh = 513,090 g = 513.09 kg.
    assert f.co2e_kg(1000) == pytest.approx(513.09)


# --- through the bot's loader -------------------------------------------------------------------


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bot.yaml"
    path.write_text(text)
    return path


def test_the_energy_section_loads_from_yaml_with_a_cluster_override(tmp_path):
    s = load_settings(_write(tmp_path, """
energy:
  pue: 1.3
  pue_source: facilities report 2025
  region: aws:us-east-1
  usd_per_kwh: 0.11
  usd_per_kwh_as_of: "2026-01"
clusters:
  - name: gpu-east
    kubernetes: {in_cluster: true}
  - name: gpu-north
    kubernetes: {context: gpu-north}
    energy:
      pue: 1.1
      region: "NO"
"""))
    east, north = s.energy_factors("gpu-east"), s.energy_factors("gpu-north")
    assert (east.pue, east.gco2e_per_kwh, east.usd_per_kwh) == (1.3, 283.89, 0.11)
    assert (north.pue, north.pue_source, north.gco2e_per_kwh, north.usd_per_kwh) == (1.1, "configured", 30.75, 0.11)
    assert north.intensity_source == "Ember Yearly Electricity Data 2024, country NO"
    assert s.energy_factors() == east  # the first cluster
    with pytest.raises(ValueError, match="no cluster 'gpu-west'; the clusters are gpu-east, gpu-north"):
        s.energy_factors("gpu-west")


def test_one_cluster_without_clusters_uses_the_top_level_section(tmp_path):
    s = load_settings(_write(tmp_path, "cluster_name: lab\nenergy: {region: europe-west4}\n"))
    assert s.energy_factors().gco2e_per_kwh == 252.7
    assert s.energy_factors("lab") == s.energy_factors()
    assert load_settings(_write(tmp_path, "cluster_name: lab\n")).energy_factors().gco2e_per_kwh is None


def test_a_typo_in_the_yaml_region_fails_at_start_with_where_and_the_suggestion(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_settings(_write(tmp_path, "energy:\n  region: westeurpoe\n"))
    text = str(e.value)
    assert "energy.region" in text
    assert "did you mean 'westeurope'" in text


def test_a_misspelt_energy_key_is_named(tmp_path):
    with pytest.raises(ConfigError, match="energy.pue_sorce"):
        load_settings(_write(tmp_path, "energy:\n  pue: 1.2\n  pue_sorce: survey\n"))
