"""A price fetched from a cloud's own API (:class:`LivePrice`: USD per instance-hour, when it was
fetched and from where), as the store caches it and the price book reads it. The AWS fetch is
:mod:`actions.sources.aws.prices`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from actions.model.kube import CapacityType

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
