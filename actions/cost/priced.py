"""What one node's GPU-hours are priced at, as every report shows it: the GPU family priced, the
capacity type as shown (``reserved/on-prem`` for flat and reserved prices), and the quote, or why
there is none. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from actions.cost.report import RESERVED_ON_PREM
from actions.hardware.gpus import gpu_family
from actions.model.kube import CapacityType
from actions.model.quote import PriceQuote
from actions.model.usage import NodeInfo
from actions.pricing.book import PriceBook, PriceNotFound


@dataclass(frozen=True)
class Priced:
    """A node's price: ``gpu_model`` the family priced (``H100``), ``capacity_label`` as shown,
    ``capacity`` the capacity type asked for, ``quote`` (None: no price; ``problem`` says why)."""

    gpu_model: str
    capacity_label: str
    capacity: CapacityType
    quote: PriceQuote | None
    problem: str | None = None

    @property
    def usd_per_gpu_hour(self) -> float:
        """USD per GPU-hour; 0 without a price (a report leaves such GPU-hours out of its dollars)."""
        return self.quote.usd_per_gpu_hour if self.quote else 0.0


def capacity_label(quote: PriceQuote) -> str:
    """How a quote's capacity is shown: flat config prices (``prices.gpu_families``) and reserved
    capacity are ``reserved/on-prem``; otherwise the capacity type's value."""
    if quote.capacity_type is CapacityType.RESERVED or quote.source.startswith("config flat price"):
        return RESERVED_ON_PREM
    return quote.capacity_type.value


def price_of(node: NodeInfo | None, dcgm_model: str | None, prices: PriceBook) -> Priced:
    """The price of GPU-hours on ``node`` (its instance type, capacity type, GPU product) of the GPU
    model DCGM named (``dcgm_model``, else the node's product); capacity type unknown when the node
    does not say."""
    capacity = (node.capacity_type if node else None) or CapacityType.UNKNOWN
    instance_type = node.instance_type if node else None
    model = dcgm_model or (node.gpu_model if node else None)
    try:
        quote = prices.quote(instance_type, capacity, model)
    except PriceNotFound as e:
        family = (gpu_family(model) if model else None) or model or "unknown GPU"
        return Priced(family, capacity.value, capacity, None, str(e))
    family = quote.gpu_model or (gpu_family(model) if model else None) or model or "unknown GPU"
    return Priced(family, capacity_label(quote), capacity, quote)
