"""On-prem chargeback, the config's ``prices.on_prem``: what a GPU you bought costs per hour,
its purchase price amortised straight-line over ``years``. Pydantic models the settings validate
into, and the quote they give (:func:`on_prem_quote`, called by
:meth:`actions.pricing.book.PriceBook.quote`); no I/O.

The price book uses it only where nothing else prices a node: no instance-type price (config,
live or catalog) and no flat ``prices.gpu_families`` price, so for hardware with no known instance
type (or one priced nowhere). The quote's capacity type is RESERVED (reports show it as
``reserved/on-prem``), its ``basis`` ``"on-prem"``, and its ``energy_billed`` is True: the
amortisation covers the hardware only, so the facility energy is to be added at
``energy.usd_per_kwh``. Billing discounts (``prices.discounts``) never apply to it.

```yaml
prices:
  on_prem:
    usd_per_gpu: 30000        # purchase price per GPU, USD (or usd_per_node + gpus_per_node)
    years: 4
    as_of: "2025-06"
    note: "DGX H100 purchase, straight-line"
    gpu_families:
      A100: {usd_per_node: 200000, gpus_per_node: 8, years: 5}
```
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from actions.model.kube import CapacityType
from actions.model.quote import PriceQuote
from actions.pricing.catalog import by_family, family_key

ON_PREM_SOURCE = "config prices.on_prem"
"""How every on-prem quote's ``source`` begins."""

HOURS_PER_YEAR = 8760
"""Hours in an amortisation year: 365 days x 24 h (no leap days), as clouds bill a year."""

MAX_YEARS = 15

_EXAMPLE = "e.g. {usd_per_gpu: 30000, years: 4} or {usd_per_node: 240000, gpus_per_node: 8, years: 4}"
_PRICE_FIELDS = ("usd_per_gpu", "usd_per_node", "gpus_per_node")


def _check_price(usd_per_gpu: float | None, usd_per_node: float | None, gpus_per_node: int | None) -> None:
    """Exactly one way to give the purchase price: ``usd_per_gpu``, or ``usd_per_node`` with
    ``gpus_per_node``. Raises ValueError with an example otherwise."""
    per_node = usd_per_node is not None or gpus_per_node is not None
    if usd_per_gpu is not None and per_node:
        raise ValueError(
            "give the purchase price once: usd_per_gpu, or usd_per_node with gpus_per_node, not both "
            f"({_EXAMPLE})"
        )
    if usd_per_gpu is None and not per_node:
        raise ValueError(
            f"give the purchase price: usd_per_gpu, or usd_per_node with gpus_per_node ({_EXAMPLE})"
        )
    if per_node and (usd_per_node is None or gpus_per_node is None):
        missing = "gpus_per_node" if gpus_per_node is None else "usd_per_node"
        raise ValueError(f"usd_per_node and gpus_per_node go together: {missing} is missing ({_EXAMPLE})")


class OnPremHardware(BaseModel):
    """GPUs bought outright: the purchase price, either ``usd_per_gpu`` or ``usd_per_node`` with
    ``gpus_per_node`` (never both), written off straight-line over ``years`` (more than 0, at most
    15). ``as_of`` is when it was bought or priced; ``note`` travels in the quote's source. Raises
    pydantic's ValidationError with an example when the price is given twice or not at all.
    """

    model_config = ConfigDict(extra="forbid")

    usd_per_gpu: float | None = Field(None, gt=0, description="purchase price per GPU, USD")
    usd_per_node: float | None = Field(None, gt=0, description="purchase price per node, USD")
    gpus_per_node: int | None = Field(None, gt=0, description="GPUs in one node, with usd_per_node")
    years: float = Field(gt=0, le=MAX_YEARS, description="amortisation period, years")
    as_of: str | None = Field(None, description="when the hardware was bought or priced")
    note: str | None = None

    @model_validator(mode="after")
    def _one_price(self) -> "OnPremHardware":
        _check_price(self.usd_per_gpu, self.usd_per_node, self.gpus_per_node)
        return self

    def purchase_per_gpu(self) -> float:
        """The purchase price of one GPU, USD: ``usd_per_gpu``, else ``usd_per_node / gpus_per_node``."""
        if self.usd_per_gpu is not None:
            return self.usd_per_gpu
        assert self.usd_per_node is not None and self.gpus_per_node  # the validator saw to it
        return self.usd_per_node / self.gpus_per_node

    def usd_per_gpu_hour(self) -> float:
        """USD per GPU-hour, straight-line: purchase price per GPU / (``years`` x 8,760 h).

        A year is 8,760 hours (365 days; no leap days), the year clouds bill and the reports use,
        so a GPU bought for USD 30,000 over 4 years costs 30000 / 35040 = 0.8562 USD an hour,
        every hour of the period, busy or not. Hardware only: no energy, no interest, no resale
        value."""
        return self.purchase_per_gpu() / (self.years * HOURS_PER_YEAR)

    def terms(self) -> str:
        """The price in words, for a quote's source: ``USD 30,000 per GPU over 4 years``."""
        if self.usd_per_gpu is not None:
            what = f"USD {_usd(self.usd_per_gpu)} per GPU"
        else:
            assert self.usd_per_node is not None and self.gpus_per_node
            gpus = "1 GPU" if self.gpus_per_node == 1 else f"{self.gpus_per_node} GPUs"
            what = f"USD {_usd(self.usd_per_node)} per node of {gpus}"
        return f"{what} over {self.years:g} year{'' if self.years == 1 else 's'}"


class OnPremPrices(BaseModel):
    """The ``prices.on_prem`` section: a default :class:`OnPremHardware` given by its fields at
    the top level (all optional here, but when any is given the price and ``years`` must be
    complete), and ``gpu_families``, per GPU family (``A100``, or a GPU model name such as
    ``NVIDIA A100-SXM4-80GB``, reduced to its family as ``prices.gpu_families`` keys are) an
    :class:`OnPremHardware` of its own. A family entry stands alone: it inherits nothing from the
    default. At least one of the two must be given.
    """

    model_config = ConfigDict(extra="forbid")

    usd_per_gpu: float | None = Field(None, gt=0, description="purchase price per GPU, USD")
    usd_per_node: float | None = Field(None, gt=0, description="purchase price per node, USD")
    gpus_per_node: int | None = Field(None, gt=0, description="GPUs in one node, with usd_per_node")
    years: float | None = Field(None, gt=0, le=MAX_YEARS, description="amortisation period, years")
    as_of: str | None = Field(None, description="when the hardware was bought or priced")
    note: str | None = None
    gpu_families: dict[str, OnPremHardware] = Field(default_factory=dict)

    @field_validator("gpu_families")
    @classmethod
    def _family_keys(cls, v: dict[str, OnPremHardware]) -> dict[str, OnPremHardware]:
        return by_family(v)

    @model_validator(mode="after")
    def _default_complete(self) -> "OnPremPrices":
        given = [f for f in (*_PRICE_FIELDS, "years") if getattr(self, f) is not None]
        if not given:
            if not self.gpu_families:
                raise ValueError(
                    f"give a default price (usd_per_gpu or usd_per_node + gpus_per_node, and years) "
                    f"or gpu_families ({_EXAMPLE})"
                )
            return self
        _check_price(self.usd_per_gpu, self.usd_per_node, self.gpus_per_node)
        if self.years is None:
            raise ValueError(f"years is missing: the amortisation period of the default price ({_EXAMPLE})")
        return self

    def default(self) -> OnPremHardware | None:
        """The default hardware (the top-level fields), or ``None`` when only families are given."""
        if self.years is None:
            return None
        return OnPremHardware(
            usd_per_gpu=self.usd_per_gpu,
            usd_per_node=self.usd_per_node,
            gpus_per_node=self.gpus_per_node,
            years=self.years,
            as_of=self.as_of,
            note=self.note,
        )

    def hardware(self, family: str | None) -> tuple[str, OnPremHardware] | None:
        """Where in the config ``family``'s hardware is (``prices.on_prem.gpu_families.A100`` or
        ``prices.on_prem``) and what it is: the family's entry first, else the default, else ``None``."""
        if family is not None:
            entry = self.gpu_families.get(family_key(family))
            if entry is not None:
                return f"{ON_PREM_SOURCE}.gpu_families.{family_key(family)}", entry
        default = self.default()
        return (ON_PREM_SOURCE, default) if default is not None else None


def on_prem_quote(
    prices: OnPremPrices | None,
    family: str | None,
    capacity: CapacityType,
    tried: list[str],
    *,
    strict: bool = False,
) -> PriceQuote | None:
    """The amortised price of one GPU of ``family`` (``None``: no GPU model known) from
    ``prices.on_prem``, or ``None`` with what was tried appended to ``tried``.

    With ``strict`` a spot request gets nothing: amortised hardware is no spot price. The quote's
    capacity type is RESERVED whatever ``capacity`` was asked, ``energy_billed`` True.
    """
    if prices is None:
        tried.append(f"{ON_PREM_SOURCE}: not set")
        return None
    found = prices.hardware(family)
    if found is None:
        tried.append(f"{ON_PREM_SOURCE}: nothing for {family or 'a GPU of no known model'} and no default")
        return None
    if strict and capacity is CapacityType.SPOT:
        tried.append("an on-prem amortised price is not a spot price")
        return None
    where, hardware = found
    note = f": {hardware.note}" if hardware.note else ""
    return PriceQuote(
        usd_per_gpu_hour=hardware.usd_per_gpu_hour(),
        capacity_type=CapacityType.RESERVED,
        source=f"{where} ({hardware.terms()}){note}",
        as_of=hardware.as_of or "",
        basis="on-prem",
        gpu_model=family_key(family) if family else None,
        energy_billed=True,
    )


def _usd(amount: float) -> str:
    return f"{amount:,.0f}" if amount == int(amount) else f"{amount:,.2f}"
