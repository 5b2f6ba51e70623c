"""Pricing a read request: on-demand beside spot, spot adjusted for interruptions
(``spot x I / (I - C/2)`` for interruption interval ``I`` and checkpoint interval ``C``), every
line with its price's source and as-of date. Pure: the price book is a parameter.

Pricing (:func:`compute_estimate`): prices given in the request win. A named instance type is
priced by the :class:`~actions.pricing.book.PriceBook` (config, live prices, catalog). A GPU
model is priced at the config's flat ``prices.gpu_families`` price if there is one, else at the instance
type of that model (and memory) with the lowest on-demand price the PriceBook knows, which is a
price someone can actually pay, and spot for that same instance type. With no model, instance
type or price, the common models (:data:`~actions.estimate.request.COMPARED_MODELS`) are priced side by side.

Durations: a month is 730 h and a year 8,760 h, the convention cloud providers bill by (365 days
x 24 h a year, a twelfth of that a month).

Rounding: GPU-hours are rounded to 0.01, a rate to 0.0001 USD per GPU-hour, and every total is
that rate x those GPU-hours rounded to the cent, so the figures shown multiply out.

Spot interruptions (REFERENCE: GPU spot on AWS is interrupted roughly once per 4 hours): with an
interruption every ``I`` hours and a checkpoint every ``C`` hours, each interruption loses on
average ``C/2`` hours of work, which must be run again. So only ``I - C/2`` of every ``I`` paid
hours is progress, and the effective spot price is ``spot x I / (I - C/2)`` per GPU-hour of
progress. The time to restart and reload after an interruption is not counted.

Where and how bought (:class:`~actions.estimate.request.Market`): a cloud, region or instance
series keeps the choice to the catalog's instance types there (and passes over a flat
``prices.gpu_families`` price, which is no cloud's); none there is a refusal naming where the
catalog has that model. A commitment is priced at a committed rate the PriceBook knows for the
instance type: a ``prices.discounts`` entry of that kind (``reserved-instance`` for reserved,
``savings-plan`` for a savings plan), the config's ``reserved_usd_per_hour`` or the live 1-year
Reserved Instance rate (reserved, no term or 1-year), or a flat family price; the bundled
catalog holds list prices only, so otherwise it is refused, naming the words and how to give a
rate. A price given in the request is taken as the committed rate.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import ROUND_HALF_UP, Decimal

from actions.energy.settings import EnergyFactors
from actions.estimate.energy import estimate_energy
from actions.estimate.market import matches, where_known
from actions.estimate.render import reading
from actions.estimate.request import (
    COMPARED_MODELS,
    CostLine,
    Estimate,
    EstimateInputError,
    EstimateRequest,
    GivenPrice,
    Option,
    SpotCost,
    error,
    words_read,
)
from actions.model.kube import CapacityType
from actions.model.quote import PriceQuote
from actions.pricing.book import PriceBook, PriceNotFound, config_example
from actions.pricing.catalog import CatalogEntry
from actions.text import format_hours, format_number, usd_rate

# --- computing -------------------------------------------------------------------------------------


def interruption_overhead(interruption_hours: float, checkpoint_hours: float) -> float:
    """``I / (I - C/2)``: paid hours per hour of progress when an interruption every ``I`` hours
    loses half a checkpoint interval ``C`` (both in hours). Raises EstimateInputError if
    ``C/2 >= I``."""
    lost = checkpoint_hours / 2
    if lost >= interruption_hours:
        raise error(
            "half the checkpoint interval must be shorter than the interruption interval",
            "8 h100 3d interruptions every 3h checkpoint 30m",
        )
    return interruption_hours / (interruption_hours - lost)


def compute_estimate(req: EstimateRequest, prices: PriceBook, energy: EnergyFactors | None = None) -> Estimate:
    """Price ``req`` on-demand and on spot (how, in the module docstring), each option with the
    energy of its GPU-hours at its model's board power (an upper bound; the facility's kWh and kg
    CO2e too with the cluster's ``energy`` factors: :mod:`actions.estimate.energy`). Pure.

    Raises EstimateInputError when the request names a GPU model or instance type that has no
    price, saying which and how to set one in the config, with an example that gives a price.
    """
    gpu_hours = _round(req.gpu_hours, "0.01")
    comparison = not (req.gpu_model or req.instance_type or req.on_demand_price or req.spot_price)
    if comparison:
        options = tuple(_option(req, prices, gpu_hours, family) for family in COMPARED_MODELS)
        said = req.market.where() or req.market.commitment_words()
        if said and all(o.on_demand is None for o in options):
            missing = next((n for o in options for n in o.notes if n.startswith('"')), options[0].notes[-1])
            raise _no_price(req, f"none of {', '.join(COMPARED_MODELS)} can be priced: {missing}")
    else:
        options = (_option(req, prices, gpu_hours, req.gpu_model, strict=True),)
    assumptions = list(req.notes)
    if any(o.spot for o in options):
        interruption = f"spot interrupted every {format_hours(req.interruption_hours)}"
        if not req.interruption_given:
            interruption += " (default: GPU spot on AWS is interrupted roughly once per 4 hours)"
        checkpoint = f"a checkpoint every {format_hours(req.checkpoint_hours)}"
        if not req.checkpoint_given:
            checkpoint += " (default)"
        assumptions.append(
            f"{interruption}, {checkpoint}: each interruption redoes half a checkpoint interval on "
            "average; restart time is not counted"
        )
    options = tuple(replace(o, energy=estimate_energy(o.gpu_model, _memory(o, req, prices), gpu_hours, energy))
                    for o in options)
    return Estimate(req, gpu_hours, options, comparison, tuple(assumptions), reading(req))


def _memory(o: Option, req: EstimateRequest, prices: PriceBook) -> str | None:
    """The memory (and form factor) of an option's GPU as said or as its catalog entry has it."""
    entry = prices.catalog.entry(o.instance_type) if o.instance_type else None
    return req.gpu_memory or (entry.gpu_memory if entry else None)


def _option(
    req: EstimateRequest, prices: PriceBook, gpu_hours: float, model: str | None, *, strict: bool = False
) -> Option:
    """``model`` (or the request's instance type or prices) priced for ``gpu_hours``. With
    ``strict`` a missing on-demand price is an error; without, the option says so in its notes."""
    notes: list[str] = []
    instance = req.instance_type
    flat: PriceQuote | None = None
    market = req.market
    nowhere: str | None = None  # why no instance type of the model is where the request said
    if instance is None and model is not None and req.on_demand_price is None:
        if model in prices.overrides.gpu_families and not market.where():
            flat = prices.gpu_hour(model, CapacityType.ON_DEMAND)
        else:
            chosen = _cheapest(prices, model, req)
            if chosen is not None:
                instance, why = chosen
                notes.append(why)
            elif market.where() and prices.catalog.family_entries(model):
                name = model + (f" {req.gpu_memory}" if req.gpu_memory else "")
                nowhere = (
                    f'"{market.where()}": the catalog has no {name} instance type there; it has {name} in '
                    f"{where_known(prices.catalog.family_entries(model))}"
                )

    on_demand: CostLine | None = None
    if req.on_demand_price is not None:
        on_demand = _line(_given(req.on_demand_price, CapacityType.ON_DEMAND, model), gpu_hours)
        if market.where():
            notes.append(f'your price is used: "{market.where()}" does not change it')
    elif nowhere is not None:
        if strict and req.spot_price is None:
            raise _no_price(req, nowhere)
        notes.append(nowhere)
    elif flat is not None:
        on_demand = _line(flat, gpu_hours)
    elif instance is not None:
        try:
            on_demand = _line(prices.quote(instance, CapacityType.ON_DEMAND, None), gpu_hours)
        except PriceNotFound:
            missing = f"no price known for {instance}: set one in the config, e.g. `{config_example(instance, model)}`"
            if strict and req.spot_price is None:
                raise _no_price(req, missing) from None
            notes.append(missing)
    elif model is not None:
        name = model + (f" {req.gpu_memory}" if req.gpu_memory else "")
        missing = f"no price known for {name}: set one in the config, e.g. `{config_example(None, model)}`"
        if strict and req.spot_price is None:
            raise _no_price(req, missing)
        notes.append(missing)
    else:
        notes.append("no on-demand price: name a GPU model or add one like `at $3/hr`")

    if market.commitment and on_demand is not None:
        committed, why = _committed(req, prices, instance, model, on_demand.quote)
        if committed is None:
            if strict and req.spot_price is None:
                raise _no_price(req, why)
            notes.append(why)
            on_demand = None
        else:
            on_demand = _line(committed, gpu_hours)
            notes.append(why)

    spot_quote: PriceQuote | None = None
    if req.spot_price is not None:
        spot_quote = _given(req.spot_price, CapacityType.SPOT, model)
    elif req.on_demand_price is not None:
        notes.append("no spot price given: add one like `spot $1.20/hr` to compare with spot")
    elif flat is not None:
        notes.append(f"the config's flat {model} price (prices.gpu_families) is not a spot price: no spot shown")
    elif instance is not None and on_demand is not None:
        try:
            spot_quote = prices.quote(instance, CapacityType.SPOT, None, strict=True)
        except PriceNotFound:
            notes.append(
                f"no spot price known for {instance}: set one in the config, e.g. "
                f"`{config_example(instance, None, spot=True)}`"
            )
    spot = _spot(spot_quote, on_demand, req, gpu_hours) if spot_quote is not None else None
    entry = prices.catalog.entry(instance) if instance else None
    return Option(
        gpu_model=model or (entry.gpu_model if entry else None),
        instance_type=instance,
        instance_gpus=prices.instance_gpus(instance) if instance else None,
        where=f"{entry.cloud} {entry.region}" if entry else None,
        on_demand=on_demand,
        spot=spot,
        notes=tuple(notes),
    )


def _no_price(req: EstimateRequest, missing: str) -> EstimateInputError:
    if req.gpus and req.hours:
        example = f"{req.gpus} gpus {format_hours(req.hours)} at $3/hr"
    else:
        example = f"{format_number(req.gpu_hours)} gpu-hours at $3/hr"
    return error(f"{missing}; or give your price", example, understood=words_read(req))


def _cheapest(prices: PriceBook, family: str, req: EstimateRequest) -> tuple[str, str] | None:
    """The instance type of ``family`` (with the request's memory per GPU, in its cloud, region
    and series) with the lowest on-demand price per GPU-hour the PriceBook knows, and a sentence
    saying so; ``None`` when there is none. Among equal prices, the largest instance that the
    request's GPUs fill, else the smallest."""
    memory, gpus = req.gpu_memory, req.gpus
    entries = [
        e for e in prices.catalog.family_entries(family)
        if (memory is None or (e.gpu_memory or "").upper().startswith(memory)) and matches(req.market, e)
    ]
    if not entries:
        return None
    rates = {e.instance_type: _rate(prices.quote(e.instance_type, CapacityType.ON_DEMAND, None).usd_per_gpu_hour) for e in entries}
    wanted = gpus or max(e.gpus for e in entries)

    def key(e: CatalogEntry) -> tuple[float, bool, int]:
        fits = e.gpus <= wanted
        return rates[e.instance_type], not fits, -e.gpus if fits else e.gpus

    best = min(entries, key=key)
    name = family + (f" {memory}" if memory else "") + (f" {req.market.where()}" if req.market.where() else "")
    where = f"{best.cloud} {best.region}"
    if len(entries) == 1:
        return best.instance_type, f"{name} priced as {best.instance_type} ({where}), the only {name} instance type known"
    low, high = min(rates.values()), max(rates.values())
    return best.instance_type, (
        f"{name} priced as {best.instance_type} ({where}), the lowest on-demand price of the "
        f"{len(entries)} {name} instance types known ({usd_rate(low)} to {usd_rate(high)} per GPU-hour)"
    )


_DISCOUNT_KINDS = {"reserved": ("reserved-instance",), "savings plan": ("savings-plan",),
                   "commitment": ("reserved-instance", "savings-plan"), "committed use": ()}  # fmt: skip


def _committed(
    req: EstimateRequest, prices: PriceBook, instance: str | None, model: str | None, on_demand: PriceQuote
) -> tuple[PriceQuote | None, str]:
    """The request's commitment priced (USD per GPU-hour) with a note saying which rate it is,
    or ``None`` and why there is no such rate (how, in the module docstring). ``on_demand`` is
    the price the request would otherwise pay."""
    m = req.market
    said = m.commitment_words()
    term = f" (a {m.commitment_years}-year term is not recorded there)" if m.commitment_years else ""
    used: PriceQuote | None = None
    if on_demand.basis == "request":
        used, what = on_demand, "your price"
    elif on_demand.basis == "gpu-model":
        used, what = on_demand, f"the config's flat {model} price (prices.gpu_families){term}"
    elif instance is not None:
        family = on_demand.gpu_model or model
        discount = prices.overrides.discount(instance, family)
        commitment = prices.commitment_quote(instance) if m.commitment in ("reserved", "commitment") else None
        if discount is not None and discount[1].kind in _DISCOUNT_KINDS[m.commitment or ""]:
            used, what = on_demand, f"the {discount[1].kind} discount prices.discounts[{discount[0]}]{term}"
        elif commitment is not None and commitment.basis == "commitment" and m.commitment_years in (None, 1):
            used, what = commitment, "the 1-year Reserved Instance rate fetched from AWS"
        elif commitment is not None and commitment.basis != "commitment":
            used, what = commitment, f"the config's reserved_usd_per_hour for {instance}{term}"
    if used is not None:
        quote = replace(used, capacity_type=CapacityType.RESERVED, source=f"{said}: {used.source}")
        return quote, f'"{said}" priced at {what}'
    why = (
        f'"{said}": no such rate is known for {instance or model or "this request"}: the bundled catalog '
        "has on-demand and spot list prices only"
    )
    if m.commitment == "committed use":  # the config's discounts are AWS's kinds only
        return None, why
    kind = "savings-plan" if m.commitment == "savings plan" else "reserved-instance"
    return None, (
        f"{why}; set yours in the config, e.g. `prices: {{discounts: [{{kind: {kind}, "
        f"instance_types: [{instance or 'p5.48xlarge'}], percent: 30, as_of: 2026-11-01}}]}}`"
    )


def _round(x: float, places: str) -> float:
    """``x`` rounded half up in decimal, as a person would (4.09625 -> 4.0963 at "0.0001")."""
    return float(Decimal(repr(x)).quantize(Decimal(places), rounding=ROUND_HALF_UP))


def _rate(usd_per_gpu_hour: float) -> float:
    return _round(usd_per_gpu_hour, "0.0001")


def _times(rate: float, gpu_hours: float) -> float:
    """``rate`` x ``gpu_hours`` in USD to the cent, multiplied in decimal so no float error moves a cent."""
    total = Decimal(repr(rate)) * Decimal(repr(gpu_hours))
    return float(total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _line(quote: PriceQuote, gpu_hours: float) -> CostLine:
    rate = _rate(quote.usd_per_gpu_hour)
    return CostLine(rate, _times(rate, gpu_hours), quote)


def _spot(quote: PriceQuote, on_demand: CostLine | None, req: EstimateRequest, gpu_hours: float) -> SpotCost:
    factor = interruption_overhead(req.interruption_hours, req.checkpoint_hours)
    rate = _rate(quote.usd_per_gpu_hour)
    effective = _rate(rate * factor)
    od = on_demand.usd_per_gpu_hour if on_demand else None
    return SpotCost(
        usd_per_gpu_hour=rate,
        total_usd=_times(rate, gpu_hours),
        quote=quote,
        overhead_factor=factor,
        effective_usd_per_gpu_hour=effective,
        effective_total_usd=_times(effective, gpu_hours),
        savings_pct=None if od is None else (1 - effective / od) * 100,
        list_savings_pct=None if od is None else (1 - rate / od) * 100,
    )


def _given(price: GivenPrice, capacity: CapacityType, model: str | None) -> PriceQuote:
    per = f", {price.describe()}" if price.instance_type else ""
    return PriceQuote(
        usd_per_gpu_hour=price.usd_per_gpu_hour,
        capacity_type=capacity,
        source=f"given in the request{per}",
        as_of="",  # the user's own figure has no publication date
        basis="request",
        instance_type=price.instance_type,
        gpu_model=model,
    )
