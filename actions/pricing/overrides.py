"""Prices from the config (``prices:``): per instance type over the catalog, flat per GPU family
(on-prem or negotiated), on-prem hardware amortised (``on_prem``, see :mod:`actions.pricing.on_prem`),
billing discounts on on-demand hours (``discounts``, see :mod:`actions.pricing.discounts`), and
whether to fetch live AWS prices. Pydantic models the
settings validate into; no I/O.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from actions.model.durations import Seconds
from actions.pricing.catalog import PriceCatalog, by_family, instance_key
from actions.pricing.discounts import Discount, check_overlaps, find_discount
from actions.pricing.on_prem import OnPremPrices

# --- config overrides ------------------------------------------------------------------------------


class InstancePriceOverride(BaseModel):
    """Your rate for one instance type, USD per instance-hour (e.g. after a discount).

    ``reserved_usd_per_hour`` is what reserved capacity of this type (capacity type ``reserved``:
    an On-Demand Capacity Reservation, a Capacity Block) is billed at, e.g. a Capacity Block's
    effective hourly price; without it reserved capacity is priced at on-demand. A Reserved
    Instance or Savings Plan is no reserved capacity: configure it in ``prices.discounts``.
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
    """A flat USD per GPU-hour for a GPU family, whatever the capacity type (on-prem, reserved);
    ``prices.discounts`` do not apply to it."""

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
    refresh_seconds: Seconds = Field(86400, ge=300)
    max_age_seconds: Seconds | None = Field(None, gt=0)
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
    name such as ``NVIDIA A100-SXM4-80GB``, reduced to its family) -> a flat USD per GPU-hour;
    ``discounts`` lists Reserved Instances and Savings Plans (:class:`~actions.pricing.discounts.Discount`),
    no instance type or family in two of them; ``on_prem`` amortises bought hardware
    (:class:`~actions.pricing.on_prem.OnPremPrices`), for nodes nothing else prices.
    """

    model_config = ConfigDict(extra="forbid")

    instance_types: dict[str, InstancePriceOverride] = Field(default_factory=dict)
    gpu_families: dict[str, FamilyPriceOverride] = Field(default_factory=dict)
    discounts: list[Discount] = Field(default_factory=list)
    on_prem: OnPremPrices | None = None
    aws: AwsLivePrices = Field(default_factory=AwsLivePrices)

    @field_validator("gpu_families")
    @classmethod
    def _family_keys(cls, v: dict[str, FamilyPriceOverride]) -> dict[str, FamilyPriceOverride]:
        return by_family(v)

    @field_validator("discounts")
    @classmethod
    def _discounts_do_not_overlap(cls, v: list[Discount]) -> list[Discount]:
        return check_overlaps(v)

    def discount(self, instance_type: str | None, family: str | None) -> tuple[int, Discount] | None:
        """The discount on the on-demand hours of ``instance_type`` (GPU ``family``) and its index in
        ``discounts``: the one naming the instance type, else the one naming the family, else ``None``."""
        return find_discount(self.discounts, instance_type, family)

    def instance(self, instance_type: str) -> tuple[str, InstancePriceOverride] | None:
        """The configured name and override for ``instance_type``, or ``None``."""
        key = instance_key(instance_type)
        for name, price in self.instance_types.items():
            if instance_key(name) == key:
                return name, price
        return None
