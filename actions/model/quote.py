"""A price with its provenance: what one GPU-hour costs on one instance type and capacity type,
where that figure came from and as of when (:class:`PriceQuote`). Made by
:class:`actions.pricing.book.PriceBook`; carried by every finding, report line and estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

from actions.model.kube import CapacityType


@dataclass(frozen=True)
class PriceQuote:
    """A price per GPU-hour in USD with where it came from.

    ``source`` names the origin (e.g. ``"bundled catalog: AWS EC2 on-demand, us-east-1"`` or
    ``"config override"``) and ``as_of`` the date the figure was published or fetched.
    ``basis`` says what was matched: ``"instance-type"``, ``"gpu-model"`` or ``"default"``;
    ``"on-prem"`` for hardware amortised by ``prices.on_prem``; or ``"commitment"`` for a committed
    rate the advice compares against (``advice.commitment_rates`` or a live Reserved Instance
    rate), which prices no node.

    ``energy_billed`` is True when the price covers the hardware only (an on-prem amortisation,
    :mod:`actions.pricing.on_prem`): the cost engine then adds the facility energy at
    ``energy.usd_per_kwh``. A cloud price includes its energy, so it is False for every other quote.
    """

    usd_per_gpu_hour: float
    capacity_type: CapacityType
    source: str
    as_of: str
    basis: str
    instance_type: str | None = None
    gpu_model: str | None = None
    energy_billed: bool = False
