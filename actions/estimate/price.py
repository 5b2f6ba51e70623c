"""Pricing a read request: on-demand beside spot, spot adjusted for interruptions
(``spot x I / (I - C/2)`` for interruption interval ``I`` and checkpoint interval ``C``), every
line with its price's source and as-of date. Pure: the price book is a parameter.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

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


def compute_estimate(req: EstimateRequest, prices: PriceBook) -> Estimate:
    """Price ``req`` on-demand and on spot (how, in the module docstring). Pure.

    Raises EstimateInputError when the request names a GPU model or instance type that has no
    price, saying which and how to set one in the config, with an example that gives a price.
    """
    gpu_hours = _round(req.gpu_hours, "0.01")
    comparison = not (req.gpu_model or req.instance_type or req.on_demand_price or req.spot_price)
    if comparison:
        options = tuple(_option(req, prices, gpu_hours, family) for family in COMPARED_MODELS)
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
    return Estimate(req, gpu_hours, options, comparison, tuple(assumptions), reading(req))


def _option(
    req: EstimateRequest, prices: PriceBook, gpu_hours: float, model: str | None, *, strict: bool = False
) -> Option:
    """``model`` (or the request's instance type or prices) priced for ``gpu_hours``. With
    ``strict`` a missing on-demand price is an error; without, the option says so in its notes."""
    notes: list[str] = []
    instance = req.instance_type
    flat: PriceQuote | None = None
    if instance is None and model is not None and req.on_demand_price is None:
        if model in prices.overrides.gpu_families:
            flat = prices.gpu_hour(model, CapacityType.ON_DEMAND)
        else:
            chosen = _cheapest(prices, model, req.gpu_memory, req.gpus)
            if chosen is not None:
                instance, why = chosen
                notes.append(why)

    on_demand: CostLine | None = None
    if req.on_demand_price is not None:
        on_demand = _line(_given(req.on_demand_price, CapacityType.ON_DEMAND, model), gpu_hours)
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


def _cheapest(prices: PriceBook, family: str, memory: str | None, gpus: int | None) -> tuple[str, str] | None:
    """The instance type of ``family`` (with ``memory`` per GPU) with the lowest on-demand price
    per GPU-hour the PriceBook knows, and a sentence saying so; ``None`` when there is none.
    Among equal prices, the largest instance that ``gpus`` fill, else the smallest."""
    entries = [
        e for e in prices.catalog.family_entries(family)
        if memory is None or (e.gpu_memory or "").upper().startswith(memory)
    ]
    if not entries:
        return None
    rates = {e.instance_type: _rate(prices.quote(e.instance_type, CapacityType.ON_DEMAND, None).usd_per_gpu_hour) for e in entries}
    wanted = gpus or max(e.gpus for e in entries)

    def key(e: CatalogEntry) -> tuple[float, bool, int]:
        fits = e.gpus <= wanted
        return rates[e.instance_type], not fits, -e.gpus if fits else e.gpus

    best = min(entries, key=key)
    name = family + (f" {memory}" if memory else "")
    where = f"{best.cloud} {best.region}"
    if len(entries) == 1:
        return best.instance_type, f"{name} priced as {best.instance_type} ({where}), the only {name} instance type known"
    low, high = min(rates.values()), max(rates.values())
    return best.instance_type, (
        f"{name} priced as {best.instance_type} ({where}), the lowest on-demand price of the "
        f"{len(entries)} {name} instance types known ({usd_rate(low)} to {usd_rate(high)} per GPU-hour)"
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
