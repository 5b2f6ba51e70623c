"""Billing discounts on on-demand hours, the config's ``prices.discounts``: Reserved Instances
and Savings Plans. Pydantic models the settings validate into, and their arithmetic; no I/O.

A Reserved Instance or a Savings Plan is how on-demand hours are billed, not how a node is bought:
the node keeps its capacity type (Karpenter's ``karpenter.sh/capacity-type``: ``on-demand``,
``spot``, ``reserved``) and only the price of its on-demand hours goes down. The price book
(:meth:`actions.pricing.book.PriceBook.quote`) applies a discount to capacity priced at the
on-demand rate: ``on-demand``, ``unknown`` (priced as on-demand) and ``reserved`` capacity
without a configured ``reserved_usd_per_hour`` (On-Demand Capacity Reservations are charged at
the on-demand rate, and Savings Plans and regional Reserved Instances discount them: AWS EC2 User
Guide, "Capacity Reservation pricing and billing"). Never to spot, nor to a reservation's own
configured rate, nor to a flat ``prices.gpu_families`` price.

A discount applies to every matching on-demand hour: the bot does not know how many instances a
commitment covers. Where it covers part of the fleet, give the blended percent you see on the bill.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from actions.pricing.catalog import family_key, instance_key

DiscountKind = Literal["reserved-instance", "savings-plan"]
_AMOUNTS = ("percent", "usd_per_hour", "usd_per_gpu_hour")


class Discount(BaseModel):
    """One Reserved Instance or Savings Plan (``kind``) on the on-demand hours of
    ``instance_types`` (as ``node.kubernetes.io/instance-type`` names them) and/or
    ``gpu_families`` (``H100``, or a GPU model name reduced to its family).

    Exactly one amount: ``percent`` off the on-demand price (0-100, exclusive), ``usd_per_hour``
    (the rate you pay per instance-hour under it; only with ``instance_types``, since a GPU family
    has no instance size) or ``usd_per_gpu_hour`` (the rate per GPU-hour). ``as_of`` (when the
    rate was agreed or last checked) is required: every discounted price says it. Raises
    pydantic's ValidationError naming the field at fault.
    """

    model_config = ConfigDict(extra="forbid")

    kind: DiscountKind
    instance_types: list[str] = Field(default_factory=list)
    gpu_families: list[str] = Field(default_factory=list)
    percent: float | None = Field(None, gt=0, lt=100, description="percent off the on-demand price, 0-100")
    usd_per_hour: float | None = Field(None, gt=0, description="USD per instance-hour under the commitment")
    usd_per_gpu_hour: float | None = Field(None, gt=0, description="USD per GPU-hour under the commitment")
    note: str | None = None
    as_of: str = Field(min_length=1, description="when this rate was agreed or checked")

    @field_validator("gpu_families")
    @classmethod
    def _families(cls, v: list[str]) -> list[str]:
        out: list[str] = []
        for name in v:
            key = family_key(name)
            if key in out:
                raise ValueError(f"gpu_families lists family {key} twice (as {name!r} too)")
            out.append(key)
        return out

    @field_validator("instance_types")
    @classmethod
    def _types(cls, v: list[str]) -> list[str]:
        seen: dict[str, str] = {}
        for name in v:
            if instance_key(name) in seen:
                raise ValueError(f"instance_types lists {name!r} twice (as {seen[instance_key(name)]!r} too)")
            seen[instance_key(name)] = name
        return v

    @model_validator(mode="after")
    def _one_amount_on_something(self) -> "Discount":
        given = [name for name in _AMOUNTS if getattr(self, name) is not None]
        if len(given) != 1:
            got = f"got {' and '.join(given)}" if given else "got none"
            raise ValueError(f"give exactly one of percent, usd_per_hour, usd_per_gpu_hour ({got})")
        if not self.instance_types and not self.gpu_families:
            raise ValueError("name what the discount covers: instance_types, gpu_families or both")
        if self.usd_per_hour is not None and self.gpu_families:
            raise ValueError(
                "usd_per_hour is per instance-hour and a GPU family has no instance size: give the "
                "families usd_per_gpu_hour or percent, or list instance_types only"
            )
        return self

    def covers_instance(self, instance_type: str) -> bool:
        """Whether ``instance_type`` is one of ``instance_types`` (matched as the catalog matches)."""
        key = instance_key(instance_type)
        return any(instance_key(name) == key for name in self.instance_types)

    def terms(self) -> str:
        """The amount in words: ``"28% off"``, ``"$38.50 per instance-hour"``, ``"$4.81 per GPU-hour"``."""
        if self.percent is not None:
            return f"{self.percent:g}% off"
        if self.usd_per_hour is not None:
            return f"${self.usd_per_hour:g} per instance-hour"
        return f"${self.usd_per_gpu_hour:g} per GPU-hour"

    def label(self, index: int) -> str:
        """How a discounted price's source names it: kind, place in the config, terms, note, as-of."""
        note = f": {self.note}" if self.note else ""
        return f"{self.kind} discount prices.discounts[{index}] ({self.terms()}{note}), as of {self.as_of}"

    def apply(self, on_demand_usd: float, gpus: int) -> float:
        """The discounted price of ``gpus`` GPUs whose on-demand price is ``on_demand_usd`` (USD per
        hour of those GPUs: per instance-hour for a whole instance, per GPU-hour with ``gpus=1``).
        ``usd_per_hour`` is per instance-hour, so only a whole instance's price asks for it: a
        discount with it covers no GPU family."""
        if self.percent is not None:
            return on_demand_usd * (1 - self.percent / 100)
        if self.usd_per_gpu_hour is not None:
            return self.usd_per_gpu_hour * gpus
        assert self.usd_per_hour is not None
        return self.usd_per_hour


def check_overlaps(discounts: list[Discount]) -> list[Discount]:
    """``discounts`` unchanged when no instance type or GPU family is in two of them. Raises
    ValueError naming the two places otherwise: which one would price those hours is ambiguous."""
    types: dict[str, int] = {}
    families: dict[str, int] = {}
    for i, d in enumerate(discounts):
        for name in d.instance_types:
            j = types.setdefault(instance_key(name), i)
            if j != i:
                raise ValueError(f"discounts[{j}] and discounts[{i}] both cover instance type {name}")
        for family in d.gpu_families:
            j = families.setdefault(family, i)
            if j != i:
                raise ValueError(f"discounts[{j}] and discounts[{i}] both cover GPU family {family}")
    return discounts


def find_discount(
    discounts: list[Discount], instance_type: str | None, family: str | None
) -> tuple[int, Discount] | None:
    """The discount on ``instance_type``'s on-demand hours with its index in ``discounts``: one
    naming the instance type first, else one naming its GPU ``family``; ``None`` when none does."""
    if instance_type:
        for i, d in enumerate(discounts):
            if d.covers_instance(instance_type):
                return i, d
    if family:
        for i, d in enumerate(discounts):
            if family in d.gpu_families:
                return i, d
    return None
