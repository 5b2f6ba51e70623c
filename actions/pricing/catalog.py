"""The bundled price catalog (``data/prices.json``): AWS, GCP and Azure GPU instance types with
their GPUs, on-demand and spot USD per instance-hour, each with its source and as-of date. Read
once; the lookup that uses it is :class:`actions.pricing.book.PriceBook`.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Iterable, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from actions.hardware.gpus import FAMILIES, gpu_family

T = TypeVar("T")

BUNDLED_CATALOG = "prices.json"  # in the package's data/ directory


class CatalogError(ValueError):
    """The price catalog is malformed; the message lists every problem by its path."""


# --- the catalog -----------------------------------------------------------------------------------


class CatalogEntry(BaseModel):
    """One instance type's list prices, in USD per instance-hour.

    ``gpu_model`` is a family key as :func:`actions.hardware.gpus.gpu_family` returns it (``"H100"``,
    ``"A100"``, ...); ``gpu_memory`` tells variants of a family apart (A100 40GB vs 80GB).
    ``spot_usd_per_hour`` is ``None`` when no spot price is known; ``spot_estimate`` marks a spot
    figure that is a typical discount rather than a quoted price. ``source``/``as_of`` describe the
    on-demand figure, ``spot_source``/``spot_as_of`` the spot figure (defaulting to the former).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_type: str = Field(min_length=1)
    cloud: str = Field(min_length=1)
    region: str = Field(min_length=1)
    gpu_model: str
    gpu_memory: str | None = None
    gpus: int = Field(gt=0)
    on_demand_usd_per_hour: float = Field(gt=0)
    spot_usd_per_hour: float | None = Field(None, gt=0)
    spot_estimate: bool = False
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=1)
    spot_source: str | None = None
    spot_as_of: str | None = None
    aliases: tuple[str, ...] = ()
    note: str | None = None

    @field_validator("gpu_model")
    @classmethod
    def _known_family(cls, v: str) -> str:
        if v not in FAMILIES:
            raise ValueError(f"gpu_model {v!r} is not a GPU family key; use one of {', '.join(sorted(FAMILIES))}")
        return v

    @property
    def on_demand_usd_per_gpu_hour(self) -> float:
        """On-demand USD per GPU-hour."""
        return self.on_demand_usd_per_hour / self.gpus

    @property
    def spot_usd_per_gpu_hour(self) -> float | None:
        """Spot USD per GPU-hour, or ``None`` when no spot price is known."""
        return None if self.spot_usd_per_hour is None else self.spot_usd_per_hour / self.gpus


def instance_key(instance_type: str) -> str:
    """The lookup key of an instance type: case-insensitive, Azure's ``Standard_`` prefix optional
    (AKS labels nodes ``Standard_ND96amsr_A100_v4``; people write ``ND96amsr_A100_v4``)."""
    key = instance_type.strip().lower()
    return key.removeprefix("standard_")


class PriceCatalog:
    """Instance types with their GPU family, GPU count and list prices.

    Build it with :meth:`bundled` (the catalog shipped in ``actions/pricing/data/prices.json``) or
    :meth:`from_dict` (same shape: top-level ``source``, ``as_of`` and ``instance_types`` mapping
    instance type -> entry fields; entries without ``source``/``as_of`` inherit the top level).
    """

    def __init__(self, entries: Iterable[CatalogEntry], source: str, as_of: str):
        self.source = source
        self.as_of = as_of
        self.entries: tuple[CatalogEntry, ...] = tuple(entries)
        self._index: dict[str, CatalogEntry] = {}
        for e in self.entries:
            for name in (e.instance_type, *e.aliases):
                key = instance_key(name)
                other = self._index.get(key)
                if other is not None and other is not e:
                    raise CatalogError(
                        f"instance type {name!r} names both {other.instance_type!r} and {e.instance_type!r}"
                    )
                self._index[key] = e

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PriceCatalog":
        """Validate a catalog mapping. Raises CatalogError listing every problem by path."""
        problems: list[str] = []
        source = data.get("source")
        as_of = data.get("as_of")
        if not isinstance(source, str) or not source:
            problems.append("source: required, a non-empty string saying where the prices come from")
        if not isinstance(as_of, str) or not as_of:
            problems.append("as_of: required, the date the prices were published or fetched")
        raw = data.get("instance_types")
        if not isinstance(raw, Mapping) or not raw:
            problems.append("instance_types: required, a mapping of instance type -> prices")
            raw = {}
        entries = []
        for name, fields in raw.items():
            if not isinstance(fields, Mapping):
                problems.append(f"instance_types.{name}: must be a mapping of fields")
                continue
            merged = {"source": source, "as_of": as_of, **fields, "instance_type": name}
            try:
                entries.append(CatalogEntry(**merged))
            except ValidationError as e:
                for err in e.errors():
                    where = ".".join(str(p) for p in err["loc"])
                    problems.append(f"instance_types.{name}.{where}: {err['msg']}")
        if problems:
            raise CatalogError("price catalog is invalid:\n" + "\n".join(problems))
        return cls(entries, source, as_of)  # type: ignore[arg-type]

    @classmethod
    def bundled(cls) -> "PriceCatalog":
        """The catalog shipped with the package. Raises CatalogError if it is malformed."""
        text = resources.files("actions.pricing").joinpath("data", BUNDLED_CATALOG).read_text(encoding="utf-8")
        return cls.from_dict(json.loads(text))

    def entry(self, instance_type: str) -> CatalogEntry | None:
        """The entry for ``instance_type`` (see :func:`instance_key`), or ``None``."""
        return self._index.get(instance_key(instance_type))

    def names(self) -> list[str]:
        """Every lookup key: instance types and their aliases, as :func:`instance_key` gives them."""
        return sorted(self._index)

    def families(self) -> list[str]:
        """GPU family keys that have at least one entry, sorted."""
        return sorted({e.gpu_model for e in self.entries})

    def family_entries(self, family: str) -> list[CatalogEntry]:
        """Entries whose ``gpu_model`` is ``family``."""
        return [e for e in self.entries if e.gpu_model == family]


def family_key(gpu_model: str) -> str:
    """The family of a GPU model name or alias (``"a100"`` -> ``"A100"``, ``"NVIDIA H100 80GB
    HBM3"`` -> ``"H100"``); a name of no known family is kept, upper-cased, so on-prem models the
    policy does not know can still be priced by config."""
    return gpu_family(gpu_model) or gpu_model.strip().upper()


def by_family(entries: Mapping[str, T], field: str = "gpu_families") -> dict[str, T]:
    """``entries`` (a config's ``field``, e.g. ``gpu_families``) keyed by :func:`family_key`: people
    write "h100" or "NVIDIA H100 80GB HBM3". Raises ValueError when two names are one family
    (``A100`` and ``NVIDIA A100-SXM4-80GB``)."""
    out: dict[str, T] = {}
    for name, value in entries.items():
        key = family_key(name)
        if key in out:
            raise ValueError(f"{field} lists family {key} twice (as {name!r} too)")
        out[key] = value
    return out
