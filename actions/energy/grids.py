"""Grid carbon intensity from the bundled ``data/grid_intensity.json``: an annual average, in g CO2e
per kWh, for every US EPA eGRID2022 subregion (``SRVC``), for European countries and Japan (Ember,
2024; by ISO code, ``DE``, or name, ``Germany``), and the grid each common GPU cloud region draws
from (``aws:us-east-1`` -> ``SRVC``). Each figure carries its source and year; the file names the
datasets, their units and where each number was read. Pure: the file is package data.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

PROVIDERS = {"aws": "aws", "amazon": "aws", "gcp": "gcp", "google": "gcp", "azure": "azure", "microsoft": "azure"}
EXAMPLES = "'SRVC' (an eGRID subregion), 'DE' or 'Germany' (a country), 'aws:us-east-1', 'gcp:europe-west4', 'westeurope'"
_PREFIX = re.compile(r"^(?P<word>[a-z]+)\s*[:/ ]\s*(?P<rest>.+)$")


class UnknownGrid(LookupError):
    """A region, grid or country the bundled table does not know; the message says how the input
    was read and gives the closest known names and examples."""


@dataclass(frozen=True)
class GridIntensity:
    """One grid's annual average carbon intensity: ``gco2e_per_kwh`` grams of CO2e per kWh of
    electricity, from ``source`` (e.g. ``US EPA eGRID2022``) for data year ``year``. ``grid`` is the
    eGRID subregion (``SRVC``) or the country's ISO 3166-1 alpha-2 code (``DE``); ``note`` names the
    grid and, when looked up through a cloud region, that region and its location."""

    grid: str
    gco2e_per_kwh: float
    source: str
    year: int
    note: str = ""

    @property
    def kind(self) -> str:
        """``subregion`` (an eGRID subregion, four letters) or ``country`` (two letters)."""
        return "subregion" if len(self.grid) == 4 else "country"


@cache
def _table() -> dict[str, Any]:
    text = resources.files("actions.energy").joinpath("data", "grid_intensity.json").read_text(encoding="utf-8")
    return json.loads(text)


def _key(text: str) -> str:
    return re.sub(r"[\s_.]+", " ", text.strip().lower())


@cache
def _names() -> dict[str, str]:
    """Every spelling of a grid -> its code: the code (``srvc``, ``de``), the country's name and
    aliases (``germany``, ``uk``), each lower-cased."""
    out: dict[str, str] = {}
    for code, entry in _table()["grids"].items():
        out[_key(code)] = code
        if entry["kind"] == "country":
            for name in (entry["name"], *entry.get("aliases", ())):
                out[_key(name)] = code
    return out


def known_grids() -> list[str]:
    """Every grid of the bundled table by code: eGRID subregions and ISO country codes, sorted."""
    return sorted(_table()["grids"])


def known_cloud_regions() -> list[str]:
    """Every cloud region the bundled table maps to a grid, as ``provider:region``, sorted."""
    return sorted(_table()["cloud_regions"])


def _grid(code: str, note: str = "") -> GridIntensity:
    entry = _table()["grids"][code]
    name = f"eGRID subregion {entry['name']}" if entry["kind"] == "egrid_subregion" else entry["name"]
    return GridIntensity(
        grid=code, gco2e_per_kwh=float(entry["gco2e_per_kwh"]), source=entry["source"], year=int(entry["year"]),
        note=f"{name}; {note}" if note else name,
    )


def _cloud(provider: str | None, region: str) -> GridIntensity | None:
    """The grid of cloud ``region`` (of ``provider``, or of whichever provider names it so)."""
    table = _table()
    spellings = dict.fromkeys((region, region.replace(" ", "-"), region.replace(" ", "")))
    providers = [provider] if provider else ["aws", "gcp", "azure"]
    for key in (f"{p}:{r}" for r in spellings for p in providers):
        mapped = table["cloud_regions"].get(key)
        if mapped is not None:
            return _grid(mapped["grid"], f"cloud region {key} ({mapped['location']})")
        missing = table["cloud_regions_without_factor"].get(key)
        if missing is not None:
            raise UnknownGrid(f"cloud region {key} ({missing['location']}) has no bundled grid factor: {missing['why']}")
    return None


def _closest(word: str, choices: list[str]) -> str:
    """`` (did you mean 'X', 'Y'?)`` naming the up to three ``choices`` closest to ``word`` (case
    aside), or nothing."""
    by_key = {_key(c): c for c in choices}
    close = difflib.get_close_matches(_key(word), list(by_key), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(by_key[c]) for c in close)}?)" if close else ""


def grid_intensity(region: str) -> GridIntensity:
    """The annual average carbon intensity (g CO2e per kWh) of the grid ``region`` names, as a user
    writes it: an eGRID subregion (``SRVC``, ``srvc``, ``eGRID SRVC``), a country code or name
    (``DE``, ``de``, ``Germany``, ``UK``), or a cloud region with or without its provider
    (``us-east-1``, ``aws:us-east-1``, ``europe-west4``, ``gcp europe-west4``, ``westeurope``).

    Raises :class:`UnknownGrid` (a LookupError) when it names none of them, saying how the input
    was read, the closest known names and examples.
    """
    text = _key(region or "")
    if not text:
        raise UnknownGrid(f"no region given; write one of {EXAMPLES}")
    provider = None
    match = _PREFIX.match(text)
    if match and match["word"] in PROVIDERS:
        provider, text = PROVIDERS[match["word"]], match["rest"].strip()
    elif match and match["word"] == "egrid":
        text = match["rest"].strip()
        code = _names().get(text)
        if code is None or len(code) != 4:
            subregions = [c for c in known_grids() if len(c) == 4]
            raise UnknownGrid(
                f"{region!r} read as eGRID subregion {text.upper()!r}, which eGRID2022 does not have"
                f"{_closest(text.upper(), subregions)}; its subregions: {', '.join(subregions)}"
            )
        return _grid(code)
    found = _cloud(provider, text)
    if found is not None:
        return found
    if provider is not None:
        regions = [k.split(":", 1)[1] for k in known_cloud_regions() if k.startswith(provider + ":")]
        raise UnknownGrid(
            f"{region!r} read as {provider} region {text!r}, which the bundled table does not map to a grid"
            f"{_closest(text, regions)}; known {provider} regions: {', '.join(regions)}; or set "
            "energy.carbon_intensity_gco2e_per_kwh"
        )
    code = _names().get(text)
    if code is not None:
        return _grid(code)
    grids = _table()["grids"]
    names = [n for e in grids.values() if e["kind"] == "country" for n in (e["name"], *e.get("aliases", ()))]
    regions = [k.split(":", 1)[1] for k in known_cloud_regions()]
    raise UnknownGrid(
        f"{region!r} is neither an eGRID subregion, a country of the bundled table, nor a mapped cloud "
        f"region{_closest(text, [*known_grids(), *names, *regions])}; write one of {EXAMPLES}"
    )
