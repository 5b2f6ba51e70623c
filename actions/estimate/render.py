"""An estimate as people read it: how the request was understood
(``16 H100 GPUs x 168 h (1 week) = 2,688 GPU-hours``), spot against on-demand, and its JSON
(``gpu-cost-bot estimate --json``).
"""

from __future__ import annotations

from typing import Any

from actions.estimate.energy import energy_jsonable
from actions.estimate.request import CostLine, Estimate, EstimateRequest, Option
from actions.model.codec import to_jsonable
from actions.model.kube import CapacityType
from actions.text import describe_hours, format_number, plural

# --- how a request was read ------------------------------------------------------------------------


def reading(req: EstimateRequest) -> str:
    """How ``req`` was read, e.g. ``"16 GPUs x 168 h (1 week) = 2,688 GPU-hours"`` or ``"2 x
    p4d.24xlarge (16 A100 GPUs) x 72 h (3 days) = 1,152 GPU-hours, on spot"``: every part that
    changes the answer (cloud, region, series and commitment too), so a misreading shows."""
    model = " ".join(p for p in (req.gpu_model, req.gpu_memory) if p)
    gpu_word = f"{model} GPU" if model else "GPU"
    if req.given_gpu_hours is not None:
        text = f"{format_number(req.gpu_hours)} {gpu_word}-hours"
        if req.instance_type:
            text += f" on {req.instance_type}"
    else:
        assert req.gpus is not None and req.hours is not None  # __post_init__ checked
        unsaid = "" if req.count_given else ", no count given"
        if req.nodes is not None:
            count = f"{format_number(req.nodes)} x {req.instance_type} ({plural(req.gpus, gpu_word)}{unsaid})"
        else:
            count = plural(req.gpus, gpu_word) + (f" on {req.instance_type}" if req.instance_type else "")
            count += f" ({unsaid[2:]})" if unsaid else ""
        text = f"{count} x {describe_hours(req.hours)} = {plural(req.gpu_hours, 'GPU-hour')}"
    for said in (req.market.where(), req.market.commitment_words()):
        text += f", {said}" if said else ""
    if req.on_demand_price:
        text += f", at {req.on_demand_price.describe()}"
    if req.spot_price:
        text += f", spot at {req.spot_price.describe()}"
    if req.capacity is CapacityType.SPOT:
        text += ", on spot"
    elif req.capacity is CapacityType.ON_DEMAND:
        text += ", on-demand"
    if req.ignored:
        text += f"; ignored: {', '.join(req.ignored)}"
    return text


def versus_on_demand(pct: float | None, against: str = "on-demand") -> str:
    """How a spot total compares with on-demand (or ``against``, e.g. ``"the committed rate"``),
    from ``savings_pct`` (percent, negative when spot costs more): ``"65% below on-demand"``,
    ``"spot costs 20% more here"``, ``"about the same as on-demand"``; ``""`` for ``None``."""
    if pct is None:
        return ""
    if round(pct) == 0:
        return f"about the same as {against}"
    if pct > 0:
        return f"{pct:.0f}% below {against}"
    return f"spot costs {-pct:.0f}% more here"


def price_word(line: CostLine) -> str:
    """What an option's non-spot line is: ``"committed"`` for a commitment's rate (a quote of
    capacity type reserved, see :func:`~actions.estimate.price.compute_estimate`), else
    ``"on-demand"``."""
    return "committed" if line.quote.capacity_type is CapacityType.RESERVED else "on-demand"


def compared_with(o: Option) -> str:
    """What an option's spot figures are compared with (``against`` of :func:`versus_on_demand`):
    ``"the committed rate"`` when its non-spot line is a commitment's, else ``"on-demand"``."""
    return "the committed rate" if o.on_demand and price_word(o.on_demand) == "committed" else "on-demand"


# --- JSON ------------------------------------------------------------------------------------------


def estimate_to_jsonable(est: Estimate) -> dict[str, Any]:
    """The estimate as JSON-ready data (``gpu-cost-bot estimate ... --json``): money in USD
    (totals to the cent, per GPU-hour to 4 decimals, the figures the text shows), hours, percents
    0-100 to 1 decimal. ``options`` has one object per priced model; ``on_demand`` and ``spot``
    repeat the one option's when the request named one, and are ``null`` in a comparison; so do
    ``energy_kwh`` (kWh at the GPUs, an upper bound: the board power x GPU-hours; ``null`` too when
    the model's board power is unknown) and ``energy`` (its source, the facility's kWh, kg CO2e)."""
    req = est.request
    options = [_option_jsonable(o) for o in est.options]
    answer = None if est.comparison else options[0]
    return {
        "request": {
            "text": req.text,
            "reading": est.reading,
            "gpus": req.gpus,
            "nodes": req.nodes,
            "instance_type": req.instance_type,
            "gpu_model": req.gpu_model,
            "gpu_memory": req.gpu_memory,
            "hours": req.hours,
            "given_gpu_hours": req.given_gpu_hours,
            "on_demand_usd_per_gpu_hour": req.on_demand_usd_per_gpu_hour,
            "spot_usd_per_gpu_hour": req.spot_usd_per_gpu_hour,
            "capacity": req.capacity.value if req.capacity else None,
            "cloud": req.market.cloud,
            "region": req.market.region,
            "series": req.market.series,
            "commitment": req.market.commitment,
            "commitment_years": req.market.commitment_years,
            "checkpoint_hours": req.checkpoint_hours,
            "interruption_hours": req.interruption_hours,
            "ignored": list(req.ignored),
        },
        "gpu_hours": est.gpu_hours,
        "comparison": est.comparison,
        "options": options,
        "on_demand": answer["on_demand"] if answer else None,
        "spot": answer["spot"] if answer else None,
        "energy_kwh": est.energy_kwh,
        "energy": answer["energy"] if answer else None,
        "assumptions": list(est.assumptions),
    }


def _option_jsonable(o: Option) -> dict[str, Any]:
    out: dict[str, Any] = {
        "gpu_model": o.gpu_model,
        "instance_type": o.instance_type,
        "instance_gpus": o.instance_gpus,
        "where": o.where,
        "on_demand": None,
        "spot": None,
        "notes": list(o.notes),
        "energy": energy_jsonable(o.energy),
    }
    if o.on_demand is not None:
        out["on_demand"] = {
            "usd_per_gpu_hour": o.on_demand.usd_per_gpu_hour,
            "total_usd": o.on_demand.total_usd,
            "quote": to_jsonable(o.on_demand.quote),
        }
    if o.spot is not None:
        s = o.spot
        out["spot"] = {
            "usd_per_gpu_hour": s.usd_per_gpu_hour,
            "total_usd": s.total_usd,
            "overhead_factor": round(s.overhead_factor, 4),
            "effective_usd_per_gpu_hour": s.effective_usd_per_gpu_hour,
            "effective_total_usd": s.effective_total_usd,
            "savings_pct": None if s.savings_pct is None else round(s.savings_pct, 1),
            "list_savings_pct": None if s.list_savings_pct is None else round(s.list_savings_pct, 1),
            "quote": to_jsonable(s.quote),
        }
    return out
