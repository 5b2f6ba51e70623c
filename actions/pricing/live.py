"""A price fetched from a cloud's own API (:class:`LivePrice`: USD per instance-hour, which offer
it is, when it was fetched and from where), as the store caches it and the price book reads it.
The AWS fetch is :mod:`actions.sources.aws.prices`.

An offer is not a capacity type: :attr:`LiveOffer.ON_DEMAND` and :attr:`LiveOffer.SPOT` are what
on-demand and spot capacity cost, while :attr:`LiveOffer.RESERVED_INSTANCE` is the published
rate of a Reserved Instance, a billing discount on on-demand hours. Nodes of capacity type
``reserved`` (Karpenter's On-Demand Capacity Reservations and Capacity Blocks) are billed at the
on-demand rate or the reservation's own price, never at a Reserved Instance rate, so the price
book uses that offer only as advice of what a commitment would cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum


class LiveOffer(str, Enum):
    """What a live price is the price of. ``on-demand`` and ``spot`` are spelled as the capacity
    types they price (so ``LiveOffer("spot")`` and ``LiveOffer(CapacityType.SPOT)`` are the same);
    ``reserved-instance`` is the 1-year standard No Upfront Reserved Instance rate, for advice."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"
    RESERVED_INSTANCE = "reserved-instance"


# --- live prices -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LivePrice:
    """One instance type's price as a cloud provider's API reported it, USD per instance-hour.

    ``offer`` is a :class:`LiveOffer` (given as one, or as its value: ``"on-demand"``, ``"spot"``,
    ``"reserved-instance"``; a capacity type ``reserved`` is refused, since no API price is the
    price of reserved capacity). ``source`` names the API and how the figure was derived (e.g.
    ``"AWS Pricing API (on-demand, us-east-1)"`` or ``"EC2 spot price history (us-east-1, median of
    5 AZs)"``); ``as_of`` is the aware UTC time it was fetched, when it was known to be current;
    ``region`` the cloud region it applies to. Raises ValueError for an offer it does not know.
    """

    instance_type: str
    offer: LiveOffer
    usd_per_hour: float
    source: str
    as_of: datetime
    region: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "offer", live_offer(self.offer))


def live_offer(value: str) -> LiveOffer:
    """``value`` as a :class:`LiveOffer`. Raises ValueError naming the offers, and for
    ``reserved`` saying why a capacity type of reserved capacity is not one."""
    try:
        return LiveOffer(value)
    except ValueError:
        hint = (
            ": reserved capacity is billed at the on-demand rate or its reservation's price, and a "
            "Reserved Instance rate is the offer 'reserved-instance'"
            if str(getattr(value, "value", value)) == "reserved"
            else ""
        )
        raise ValueError(
            f"unknown live price offer {getattr(value, 'value', value)!r}; one of "
            + ", ".join(o.value for o in LiveOffer)
            + hint
        ) from None


LiveKey = tuple[str, LiveOffer]
