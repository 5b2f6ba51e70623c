"""What a GPU costs per hour: the bundled price catalog, config overrides, and the lookup order.

Money is USD. Catalog and instance-type overrides are per instance-hour; quotes are per GPU-hour
(instance price / GPUs in the instance). Every quote names its source and as-of date.

Lookup order of :meth:`PriceBook.quote`, first hit wins:

1. config override for the instance type (``prices.instance_types``), field by field over the
   catalog entry, so an override of the on-demand rate keeps the catalog's spot rate;
2. live prices fetched from the cloud provider (``PriceBook(..., live=...)``, see
   :class:`LivePrice` and ``actions.sources.aws_prices``; only when ``prices.aws.enabled``), also
   field by field: a configured on-demand rate still leaves the live spot price in use;
3. the bundled catalog entry for the instance type;
4. the config flat price for the GPU family (``prices.gpu_families``, for on-prem or reserved
   capacity, the same for every capacity type);
5. the catalog default for the GPU family: the median per-GPU-hour price over the catalog entries
   of that family (spot median for spot capacity);

and otherwise :class:`PriceNotFound`.

Capacity types: SPOT uses the spot price when one is known, else the on-demand price (the quote's
source says so); ON_DEMAND, UNKNOWN and RESERVED use on-demand (reserved capacity such as an
on-demand capacity reservation bills at the on-demand rate unless ``reserved_usd_per_hour`` is
configured). A quote keeps the capacity type it was asked for; its ``source`` says which price
was used. A config price without ``as_of`` gives a quote with an empty ``as_of``.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from actions.gpus import FAMILIES, gpu_family
from actions.model import CapacityType, PriceQuote, format_time

BUNDLED_CATALOG = "prices.json"  # in the package's data/ directory


def config_example(instance_type: str | None, family: str | None, *, spot: bool = False) -> str:
    """The config lines that would price ``instance_type`` (USD per instance-hour) or ``family``
    (USD per GPU-hour), as one-line YAML a reader can paste. With ``spot``, only the instance
    type's spot rate: a flat family price is not a spot price. The figures are placeholders."""
    if spot:
        return f"prices: {{instance_types: {{{instance_type or 'p5.48xlarge'}: {{spot_usd_per_hour: 20.0}}}}}}"
    examples = []
    if instance_type:
        examples.append(
            f"prices: {{instance_types: {{{instance_type}: {{on_demand_usd_per_hour: 12.0, gpus: 8}}}}}}"
        )
    examples.append(f"prices: {{gpu_families: {{{family or 'H100'}: {{usd_per_gpu_hour: 2.5}}}}}}")
    return " or ".join(examples)


class PriceNotFound(LookupError):
    """No price could be found; the message lists what was tried and how to configure one."""


class CatalogError(ValueError):
    """The price catalog is malformed; the message lists every problem by its path."""


# --- the catalog -----------------------------------------------------------------------------------


class CatalogEntry(BaseModel):
    """One instance type's list prices, in USD per instance-hour.

    ``gpu_model`` is a family key as :func:`actions.policy.gpu_family` returns it (``"H100"``,
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

    Build it with :meth:`bundled` (the catalog shipped in ``actions/data/prices.json``) or
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
        text = resources.files("actions").joinpath("data", BUNDLED_CATALOG).read_text(encoding="utf-8")
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


# --- config overrides ------------------------------------------------------------------------------


class InstancePriceOverride(BaseModel):
    """Your rate for one instance type, USD per instance-hour (e.g. after a discount).

    Fields left out fall back to the catalog entry. ``gpus`` is required when the instance type is
    not in the catalog (per GPU-hour = instance price / gpus).
    """

    model_config = ConfigDict(extra="forbid")

    on_demand_usd_per_hour: float | None = Field(None, gt=0)
    spot_usd_per_hour: float | None = Field(None, gt=0)
    reserved_usd_per_hour: float | None = Field(None, gt=0)
    gpus: int | None = Field(None, gt=0)
    note: str | None = None
    as_of: str | None = Field(None, description="when this rate was agreed or checked")

    @model_validator(mode="after")
    def _some_price(self) -> "InstancePriceOverride":
        if (
            self.on_demand_usd_per_hour is None
            and self.spot_usd_per_hour is None
            and self.reserved_usd_per_hour is None
        ):
            raise ValueError(
                "give at least one of on_demand_usd_per_hour, spot_usd_per_hour, reserved_usd_per_hour"
            )
        return self


class FamilyPriceOverride(BaseModel):
    """A flat USD per GPU-hour for a GPU family, whatever the capacity type (on-prem, reserved)."""

    model_config = ConfigDict(extra="forbid")

    usd_per_gpu_hour: float = Field(gt=0)
    note: str | None = None
    as_of: str | None = Field(None, description="when this rate was agreed or checked")


class AwsLivePrices(BaseModel):
    """The ``prices.aws`` section: fetch AWS prices live instead of trusting the bundled catalog.

    Off by default (it needs AWS credentials allowed ``pricing:GetProducts`` and
    ``ec2:DescribeSpotPriceHistory``). ``region`` is the cluster's AWS region: spot prices are read
    there and on-demand prices are those the Pricing API lists for it. Prices are refreshed every
    ``refresh_seconds`` (default one day) into the store; a cached price older than
    ``max_age_seconds`` (default three refresh periods, so one or two failed refreshes do not
    lose it) is ignored and the catalog answers again. ``instance_types`` defaults to every AWS
    instance type of the bundled catalog (see :meth:`fetch_types`).
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    region: str = Field("us-east-1", pattern=r"^[a-z]{2}(-[a-z]+)+-\d+$")
    refresh_seconds: float = Field(86400, ge=300)
    max_age_seconds: float | None = Field(None, gt=0)
    instance_types: list[str] | None = None

    @model_validator(mode="after")
    def _max_age_covers_refresh(self) -> "AwsLivePrices":
        if self.max_age_seconds is not None and self.max_age_seconds < self.refresh_seconds:
            raise ValueError(
                f"max_age_seconds ({self.max_age_seconds:g}) is shorter than refresh_seconds "
                f"({self.refresh_seconds:g}): cached prices would expire before the next refresh"
            )
        return self

    def max_age(self) -> float:
        """Seconds after which a cached live price is ignored."""
        return self.max_age_seconds if self.max_age_seconds is not None else 3 * self.refresh_seconds

    def fetch_types(self, catalog: "PriceCatalog") -> list[str]:
        """The instance types to fetch: ``instance_types`` if set, else the catalog's AWS ones."""
        if self.instance_types is not None:
            return list(self.instance_types)
        return [e.instance_type for e in catalog.entries if e.cloud == "aws"]


class PriceOverrides(BaseModel):
    """The ``prices`` section of the config.

    ``instance_types`` maps instance type (as in ``node.kubernetes.io/instance-type``) -> your
    rates per instance-hour; ``gpu_families`` maps GPU family (``H100``, ``A100``, or a GPU model
    name such as ``NVIDIA A100-SXM4-80GB``, reduced to its family) -> a flat USD per GPU-hour.
    """

    model_config = ConfigDict(extra="forbid")

    instance_types: dict[str, InstancePriceOverride] = Field(default_factory=dict)
    gpu_families: dict[str, FamilyPriceOverride] = Field(default_factory=dict)
    aws: AwsLivePrices = Field(default_factory=AwsLivePrices)

    @field_validator("gpu_families")
    @classmethod
    def _family_keys(cls, v: dict[str, FamilyPriceOverride]) -> dict[str, FamilyPriceOverride]:
        out: dict[str, FamilyPriceOverride] = {}
        for name, price in v.items():
            key = family_key(name)
            if key in out:
                raise ValueError(f"gpu_families lists family {key} twice (as {name!r} too)")
            out[key] = price
        return out

    def instance(self, instance_type: str) -> tuple[str, InstancePriceOverride] | None:
        """The configured name and override for ``instance_type``, or ``None``."""
        key = instance_key(instance_type)
        for name, price in self.instance_types.items():
            if instance_key(name) == key:
                return name, price
        return None


def family_key(gpu_model: str) -> str:
    """The family of a GPU model name or alias (``"a100"`` -> ``"A100"``, ``"NVIDIA H100 80GB
    HBM3"`` -> ``"H100"``); a name of no known family is kept, upper-cased, so on-prem models the
    policy does not know can still be priced by config."""
    return gpu_family(gpu_model) or gpu_model.strip().upper()


# --- live prices -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LivePrice:
    """One instance type's price as a cloud provider's API reported it, USD per instance-hour.

    ``source`` names the API and how the figure was derived (e.g. ``"AWS Pricing API (on-demand,
    us-east-1)"`` or ``"EC2 spot price history (us-east-1, median of 5 AZs)"``); ``as_of`` is the
    aware UTC time it was fetched, when it was known to be current; ``region`` the cloud region it
    applies to.
    """

    instance_type: str
    capacity_type: CapacityType
    usd_per_hour: float
    source: str
    as_of: datetime
    region: str


LiveKey = tuple[str, CapacityType]


# --- the lookup ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _InstancePrice:
    usd_per_hour: float
    source: str
    as_of: str


class PriceBook:
    """Answers "what does one GPU of this node cost per hour" from the catalog, the config and,
    when given, live prices.

    ``live`` maps ``(instance_type, capacity_type)`` to a :class:`LivePrice` (USD per
    instance-hour; ``ON_DEMAND``, ``SPOT`` and ``RESERVED`` keys are consulted; instance types
    match as in :func:`instance_key`). A live price needs the instance's GPU count from the catalog or from
    ``prices.instance_types.<type>.gpus``. Pure: no I/O after construction.
    """

    def __init__(
        self,
        catalog: PriceCatalog,
        overrides: PriceOverrides | None = None,
        live: Mapping[LiveKey, LivePrice] | None = None,
    ):
        self.catalog = catalog
        self.overrides = overrides or PriceOverrides()
        self.live: dict[LiveKey, LivePrice] | None = (
            None
            if live is None
            else {(instance_key(t), CapacityType(c)): p for (t, c), p in live.items()}
        )

    def quote(
        self,
        instance_type: str | None,
        capacity_type: CapacityType,
        gpu_model: str | None,
        *,
        strict: bool = False,
    ) -> PriceQuote:
        """USD per GPU-hour of one GPU on a node of ``instance_type`` bought as ``capacity_type``.

        ``gpu_model`` (a DCGM ``modelName``, a GFD product or a family key) is used when the
        instance type has no price. With ``strict`` a spot request is answered only by a spot
        price, as in :meth:`gpu_hour`. Raises PriceNotFound listing what was tried.
        """
        tried: list[str] = []
        if instance_type:
            q = self._instance_quote(instance_type, capacity_type, gpu_model, tried, strict=strict)
            if q is not None:
                return q
        else:
            tried.append("instance type: not known for this node")
        family = family_key(gpu_model) if gpu_model else None
        if family is None:
            tried.append("GPU family: no GPU model known")
        else:
            q = self._family_quote(family, capacity_type, strict=strict, tried=tried)
            if q is not None:
                return q
        raise PriceNotFound(
            f"no price for instance type {instance_type!r}, GPU model {gpu_model!r} ({capacity_type.value}): "
            + "; ".join(tried)
            + f". Add a price to the config, e.g. {config_example(instance_type, family)}"
        )

    def gpu_hour(
        self, gpu_model_or_alias: str, capacity_type: CapacityType, *, strict: bool = False
    ) -> PriceQuote:
        """USD per GPU-hour for a GPU family named loosely (``"a100"``, ``"H100"``, ``"t4"``,
        ``"NVIDIA A10G"``; case-insensitive): the config flat price, else the catalog median.

        With ``strict`` a spot request is answered only by a spot price (no on-demand fallback,
        and a flat config price, which is not a spot price, does not count). Raises PriceNotFound
        naming the families that have prices.
        """
        tried: list[str] = []
        family = family_key(gpu_model_or_alias)
        q = self._family_quote(family, capacity_type, strict=strict, tried=tried)
        if q is not None:
            return q
        raise PriceNotFound(
            f"no {capacity_type.value} price for GPU model {gpu_model_or_alias!r}: "
            + "; ".join(tried)
            + f". GPU families with prices: {', '.join(self.known_families())}."
            + f" Add a price to the config, e.g. {config_example(None, family)}"
        )

    def reserved_quote(self, instance_type: str | None) -> PriceQuote | None:
        """A reserved rate for ``instance_type``, USD per GPU-hour, only when one is known: the
        config's ``reserved_usd_per_hour``, else a live Reserved Instance price (1-year No
        Upfront, from the Pricing API). ``None`` otherwise; :meth:`quote` would stand in the
        on-demand price, which says nothing about what a commitment saves."""
        if not instance_type:
            return None
        found = self.overrides.instance(instance_type)
        live = self._live(instance_type, CapacityType.RESERVED)
        if not ((found and found[1].reserved_usd_per_hour) or live):
            return None
        try:
            return self.quote(instance_type, CapacityType.RESERVED, None)
        except PriceNotFound:
            return None

    def instance_names(self) -> list[str]:
        """Instance types (and catalog aliases) that can be named in a request: the catalog's
        lookup keys and the config's ``prices.instance_types``, as :func:`instance_key` gives them."""
        return sorted(set(self.catalog.names()) | {instance_key(n) for n in self.overrides.instance_types})

    def instance_gpus(self, instance_type: str) -> int | None:
        """GPUs in one ``instance_type`` (config ``gpus`` first, then the catalog), or ``None``."""
        found = self.overrides.instance(instance_type)
        if found is not None and found[1].gpus:
            return found[1].gpus
        entry = self.catalog.entry(instance_type)
        return entry.gpus if entry else None

    def known_families(self) -> list[str]:
        """GPU families that can be priced (catalog or config), sorted."""
        return sorted(set(self.catalog.families()) | set(self.overrides.gpu_families))

    # --- steps -------------------------------------------------------------------------------------

    def _instance_quote(
        self,
        instance_type: str,
        capacity: CapacityType,
        gpu_model: str | None,
        tried: list[str],
        *,
        strict: bool = False,
    ) -> PriceQuote | None:
        found = self.overrides.instance(instance_type)
        entry = self.catalog.entry(instance_type)
        live_od = self._live(instance_type, CapacityType.ON_DEMAND)
        live_spot = self._live(instance_type, CapacityType.SPOT)
        tried.append(
            f"config prices.instance_types.{instance_type}: {'set' if found else 'not set'}"
        )
        if self.live is not None:
            tried.append(
                f"live prices for {instance_type}: "
                + ("found" if live_od or live_spot else "none fetched or all too old")
            )
        tried.append(
            f"bundled catalog instance type {instance_type}: {'found' if entry else 'not listed'}"
        )
        if found is None and entry is None and live_od is None and live_spot is None:
            return None
        name, override = found if found else (instance_type, None)
        gpus = (override.gpus if override and override.gpus else None) or (entry.gpus if entry else None)
        if gpus is None:
            tried.append(
                f"config prices.instance_types.{name} has no gpus, needed for an instance type the catalog does not list"
            )
            return None

        def from_override(field: str, label: str) -> _InstancePrice | None:
            value = getattr(override, field) if override else None
            if value is None:
                return None
            note = f": {override.note}" if override and override.note else ""
            return _InstancePrice(
                value,
                f"config override prices.instance_types.{name} ({label}){note}",
                (override.as_of if override else None) or "",
            )

        def from_live(live: LivePrice | None) -> _InstancePrice | None:
            if live is None:
                return None
            fetched = format_time(live.as_of)
            return _InstancePrice(live.usd_per_hour, f"{live.source}, fetched {fetched}", fetched)

        def from_catalog(spot: bool) -> _InstancePrice | None:
            if entry is None:
                return None
            if spot:
                if entry.spot_usd_per_hour is None:
                    return None
                return _InstancePrice(
                    entry.spot_usd_per_hour,
                    f"bundled catalog: {entry.spot_source or entry.source} (spot)",
                    entry.spot_as_of or entry.as_of,
                )
            # The entry's note (a known price change, the region used) travels in the source, so
            # every place that shows where a price came from shows it too.
            note = f"; {entry.note}" if entry.note else ""
            return _InstancePrice(
                entry.on_demand_usd_per_hour, f"bundled catalog: {entry.source}{note}", entry.as_of
            )

        on_demand = (
            from_override("on_demand_usd_per_hour", "on-demand")
            or from_live(live_od)
            or from_catalog(False)
        )
        price: _InstancePrice | None
        if capacity is CapacityType.SPOT:
            price = (
                from_override("spot_usd_per_hour", "spot") or from_live(live_spot) or from_catalog(True)
            )
            if price is None and on_demand is not None and not strict:
                price = _with_note(on_demand, "no spot price known, priced at on-demand")
        elif capacity is CapacityType.RESERVED:
            price = from_override("reserved_usd_per_hour", "reserved") or from_live(
                self._live(instance_type, CapacityType.RESERVED)
            )
            if price is None and on_demand is not None:
                price = _with_note(on_demand, "reserved capacity priced at on-demand")
        elif capacity is CapacityType.UNKNOWN:
            price = on_demand and _with_note(on_demand, "capacity type unknown, priced as on-demand")
        else:
            price = on_demand
        if price is None:
            fallback = "" if strict and capacity is CapacityType.SPOT else " or on-demand"
            tried.append(f"no {capacity.value}{fallback} price for {instance_type}")
            return None
        family = entry.gpu_model if entry else (family_key(gpu_model) if gpu_model else None)
        return PriceQuote(
            usd_per_gpu_hour=price.usd_per_hour / gpus,
            capacity_type=capacity,
            source=price.source,
            as_of=price.as_of,
            basis="instance-type",
            instance_type=instance_type,
            gpu_model=family,
        )

    def _live(self, instance_type: str, capacity: CapacityType) -> LivePrice | None:
        if self.live is None:
            return None
        return self.live.get((instance_key(instance_type), capacity))

    def _family_quote(
        self,
        family: str,
        capacity: CapacityType,
        *,
        strict: bool,
        tried: list[str],
    ) -> PriceQuote | None:
        flat = self.overrides.gpu_families.get(family)
        tried.append(f"config prices.gpu_families.{family}: {'set' if flat else 'not set'}")
        if flat is not None:
            if strict and capacity is CapacityType.SPOT:
                tried.append(f"a flat price for {family} is not a spot price")
                return None
            note = f": {flat.note}" if flat.note else ""
            return PriceQuote(
                usd_per_gpu_hour=flat.usd_per_gpu_hour,
                capacity_type=capacity,
                source=f"config flat price prices.gpu_families.{family}{note}",
                as_of=flat.as_of or "",
                basis="gpu-model",
                gpu_model=family,
            )
        entries = self.catalog.family_entries(family)
        if not entries:
            tried.append(f"bundled catalog: no {family} instance types")
            return None
        spot_entries = [e for e in entries if e.spot_usd_per_hour is not None]
        if capacity is CapacityType.SPOT and spot_entries:
            values = [e.spot_usd_per_gpu_hour for e in spot_entries]
            estimated = any(e.spot_estimate for e in spot_entries)
            what = "spot" + (", includes estimated spot figures" if estimated else "")
            used = spot_entries
            as_ofs = [e.spot_as_of or e.as_of for e in spot_entries]
        else:
            if capacity is CapacityType.SPOT and strict:
                tried.append(f"bundled catalog: no spot price for any {family} instance type")
                return None
            values = [e.on_demand_usd_per_gpu_hour for e in entries]
            what = {
                CapacityType.SPOT: "on-demand; no spot price known",
                CapacityType.UNKNOWN: "on-demand; capacity type unknown",
                CapacityType.RESERVED: "on-demand; reserved capacity priced at on-demand",
            }.get(capacity, "on-demand")
            used = entries
            as_ofs = [e.as_of for e in entries]
        names = ", ".join(e.instance_type for e in used)
        over = "1 instance type" if len(used) == 1 else f"median over {len(used)} instance types"
        return PriceQuote(
            usd_per_gpu_hour=statistics.median(values),  # type: ignore[type-var]
            capacity_type=capacity,
            source=f"bundled catalog: {family} price per GPU-hour, {over} ({names}), {what}",
            as_of=_as_of_range(as_ofs),
            basis="default",
            gpu_model=family,
        )


def _with_note(p: _InstancePrice, note: str) -> _InstancePrice:
    return _InstancePrice(p.usd_per_hour, f"{p.source}; {note}", p.as_of)


def _as_of_range(dates: list[str]) -> str:
    lo, hi = min(dates), max(dates)
    return lo if lo == hi else f"{lo} to {hi}"
