"""Where and how a request's GPUs are bought, read out of it: the cloud (``AWS``, ``on gcp``,
``Azure``), the region (``us-east-1``, ``in europe-west4``, ``eastus``), an instance series
(``a3`` in ``gcp a3``) and a commitment (``reserved``, ``1-year``, ``3-year``, ``savings plan``,
``committed use``), and the checks that what was named exists in the catalog. Pure.

A word that names a cloud, region or commitment is always read: a request the catalog cannot
price as said is refused with the reason, never priced as something else.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from actions.estimate.request import Market, error
from actions.pricing.catalog import CatalogEntry, PriceCatalog, instance_key

CLOUD_NAMES = {
    "aws": "aws", "amazon": "aws", "amazon web services": "aws", "ec2": "aws",
    "gcp": "gcp", "google": "gcp", "google cloud": "gcp", "google cloud platform": "gcp", "gce": "gcp",
    "azure": "azure", "microsoft azure": "azure",
}  # fmt: skip
BEFORE = r"\b(?:(?:on|in|at|from|via|using|with|under)\s+)?(?:the\s+|an?\s+)?"
CLOUD_RE = re.compile(
    rf"{BEFORE}(?P<cloud>amazon\s+web\s+services|amazon|aws|ec2|google\s+cloud(?:\s+platform)?|google|gcp|gce"
    r"|microsoft\s+azure|azure)(?:\s+cloud)?(?!\w)"
)
_DIRS = r"(?:north|south|east|west|central|northeast|southeast|northwest|southwest)"
REGION_SHAPES = {
    "aws": rf"[a-z]{{2}}(?:-gov)?-{_DIRS}-\d",  # us-east-1
    "gcp": rf"(?:us|europe|asia|australia|northamerica|southamerica|me|africa)-{_DIRS}\d+",  # us-central1
    "azure": (  # eastus, westeurope: the common ones
        r"(?:east|west|north|south|central|northcentral|southcentral|westcentral)us\d?|(?:north|west)europe"
        r"|uk(?:south|west)|(?:east|southeast)asia|japan(?:east|west)|australia(?:east|southeast)"
        r"|(?:canada|france|germany|sweden|switzerland|norway|korea)central"
    ),
}
REGION_RE = re.compile(
    rf"{BEFORE}(?:region\s+)?(?P<region>{'|'.join(f'(?P<{c}>{p})' for c, p in REGION_SHAPES.items())})"
    r"(?:\s+region)?(?![\w-])"
)
TERM_RE = re.compile(
    rf"{BEFORE}(?P<years>\d+|one|two|three|five)(?:-(?:years?|yrs?|y)|\s*(?:years?|yrs?)"
    r"(?=\s+(?:term|reserv|commit|savings|plan|ri\b|cud)))(?:\s+(?:term|commitment))?(?!\w)"
)
KIND_RE = re.compile(
    rf"{BEFORE}(?P<kind>reserved(?:\s+instances?)?|reservations?|ris?|savings?\s+plans?"
    r"|committed(?:\s+use(?:\s+discounts?)?)?|commitments?|cuds?)(?!\w)"
)
TERM_YEARS = {"one": 1, "two": 2, "three": 3, "five": 5}
COMMITMENT_TERMS = (1, 3)  # AWS Reserved Instances and Savings Plans, GCP committed use: 1 or 3 years


def commitment_kind(word: str) -> str:
    """``"reserved"``, ``"savings plan"``, ``"committed use"`` or ``"commitment"`` (any kind) for a
    commitment word as typed (``"reserved instances"``, ``"RI"``, ``"savings plans"``, ``"CUD"``)."""
    w = " ".join(word.split())
    if w.startswith(("reserv", "ri")):
        return "reserved"
    if w.startswith("saving"):
        return "savings plan"
    if w.startswith("cud") or "use" in w:
        return "committed use"
    return "commitment"


def read_market(s: str) -> tuple[str, Market]:
    """The cloud, region and commitment words of the normalized request ``s``, and ``s`` without
    them. Raises EstimateInputError for two clouds, two regions, a region of another cloud, two
    commitments, or a term that is not 1 or 3 years."""
    said: list[str] = []
    clouds, s = _take_all(CLOUD_RE, s, said, lambda m: CLOUD_NAMES[" ".join(m.group("cloud").split())])
    regions, s = _take_all(REGION_RE, s, said, lambda m: m.group("region"))
    region_clouds = [c for r in regions for c in REGION_SHAPES if re.fullmatch(REGION_SHAPES[c], r)]
    terms, s = _take_all(TERM_RE, s, said, lambda m: TERM_YEARS.get(m.group("years")) or int(m.group("years")))
    kinds, s = _take_all(KIND_RE, s, said, lambda m: commitment_kind(m.group("kind")))
    for what, found in (("clouds", clouds), ("regions", regions), ("commitment terms", terms)):
        if len(found) > 1:
            raise error(f"the request names {len(found)} {what} ({', '.join(map(str, found))}); give one", *_EXAMPLES)
    if len(kinds) > 1:
        raise error(f"the request names {len(kinds)} commitments ({', '.join(kinds)}); give one", *_EXAMPLES)
    cloud = clouds[0] if clouds else None
    if region_clouds:
        if cloud is not None and region_clouds[0] != cloud:
            raise error(f"{regions[0]} is a {region_clouds[0]} region, not {cloud}", *_EXAMPLES)
        cloud = region_clouds[0]
    years = terms[0] if terms else None
    if years is not None and years not in COMMITMENT_TERMS:
        raise error(f"a {years}-year commitment is not sold: commitments run 1 or 3 years", *_EXAMPLES)
    kind = kinds[0] if kinds else ("commitment" if years else None)
    market = Market(cloud, regions[0] if regions else None, None, kind, years, tuple(said))
    return s, market


_EXAMPLES = ("8 h100 on gcp for a week", "8 h100 for a week")


def _take_all(
    pattern: re.Pattern[str], s: str, said: list[str], read: Callable[[re.Match[str]], Any]
) -> tuple[list[Any], str]:
    found: list[Any] = []
    while m := pattern.search(s):
        value = read(m)
        said.append(m.group(0).strip())
        if value not in found:
            found.append(value)
        s = f"{s[: m.start()]} {s[m.end() :]}"
    return found, s


def series_of(instance_type: str) -> str:
    """The series of an instance type: ``a3`` of ``a3-highgpu-8g``, ``g6e`` of ``g6e.xlarge``."""
    return re.split(r"[.-]", instance_key(instance_type))[0]


def series_names(catalog: PriceCatalog) -> dict[str, str]:
    """Instance series of the catalog, each with its cloud: the part of an AWS or GCP instance
    type before its first ``.`` or ``-`` (``a3`` of ``a3-highgpu-8g``, ``g6e`` of ``g6e.xlarge``),
    leaving out those that name an instance type themselves (``p5``)."""
    names = set(catalog.names())
    out: dict[str, str] = {}
    for e in catalog.entries:
        if e.cloud in ("aws", "gcp"):
            head = series_of(e.instance_type)
            if head not in names:
                out[head] = e.cloud
    return out


def read_series(s: str, market: Market, catalog: PriceCatalog) -> tuple[str, Market]:
    """``market`` with the instance series ``s`` names (``gcp a3``), and ``s`` without it. Raises
    EstimateInputError for two series or a series of another cloud than the one named."""
    series = series_names(catalog)
    if not series:
        return s, market
    pattern = re.compile(
        rf"(?<![\w.-])(?P<series>{'|'.join(map(re.escape, sorted(series, key=len, reverse=True)))})(?![\w.-])"
    )
    found, s = _take_all(pattern, s, [], lambda m: m.group("series"))
    if not found:
        return s, market
    if len(found) > 1:
        raise error(
            f"the request names {len(found)} instance series ({', '.join(found)}); give one",
            "8 h100 on gcp a3 for a week",
        )
    cloud = series[found[0]]
    if market.cloud and market.cloud != cloud:
        raise error(f"{found[0]} is a {cloud} instance series, not {market.cloud}", "8 h100 on gcp a3 for a week")
    return s, Market(cloud, market.region, found[0], market.commitment, market.commitment_years, market.said)


def check_entry(market: Market, entry: CatalogEntry | None, instance: str) -> None:
    """Raises EstimateInputError when the instance type named is in another cloud, region or series
    than the one named (a type only the config knows has no cloud to check)."""
    if entry is None:
        return
    example = f"{entry.gpus} {entry.gpu_model.lower()} for a week on {entry.cloud}"
    if market.cloud and entry.cloud != market.cloud:
        raise error(f"{instance} is an {entry.cloud} instance type, not {market.cloud}", example)
    if market.region and entry.region != market.region:
        raise error(f"the catalog prices {instance} in {entry.region} only, not {market.region}", example)
    if market.series and series_of(instance) != market.series:
        raise error(f"{instance} is not of the {market.series} series", example)


def matches(market: Market, entry: CatalogEntry) -> bool:
    """Whether ``entry`` is in the cloud, region and series ``market`` names."""
    return (
        (market.cloud is None or entry.cloud == market.cloud)
        and (market.region is None or entry.region == market.region)
        and (market.series is None or series_of(entry.instance_type) == market.series)
    )


def where_known(entries: list[CatalogEntry]) -> str:
    """``"aws us-east-1, gcp us-central1, gcp us-east4"``: where the catalog prices ``entries``."""
    return ", ".join(sorted({f"{e.cloud} {e.region}" for e in entries}))
