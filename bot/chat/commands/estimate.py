"""``/gpu estimate``: what GPUs for a while would cost, on-demand beside spot, read from the
request as people type it (see :mod:`actions.estimate`)."""

from __future__ import annotations

from actions.energy.settings import EnergyFactors
from actions.estimate.energy import EnergyEstimate
from actions.estimate.parse import parse_estimate
from actions.estimate.price import compute_estimate
from actions.estimate.render import compared_with, price_word, versus_on_demand
from actions.estimate.request import EXAMPLES, CostLine, Estimate, EstimateInputError, Option, SpotCost
from actions.model.kube import CapacityType
from actions.model.quote import PriceQuote
from actions.text import format_hours, format_number, kwh, usd_rate
from bot.chat import blocks
from bot.chat.commands.context import CommandContext, Reply, UsageError
from bot.runtime.chat import Message

NAME = "estimate"
# A $ in an example sits in single quotes, so the same example pasted into a shell keeps it.
SUMMARY = (
    "what GPUs for a while would cost, on-demand beside spot (interruption-adjusted); ask as you "
    "would a colleague: `what would 16 h100 cost for a week`, `2 nodes of p4d for 3 days`, "
    "`1000 gpu-hours of a100-40gb`, `'4 gpus 10h at $3/hr'`; without a model, common ones side by side"
)
EXAMPLE = "/gpu estimate 16 h100 for a week on spot"


def estimate_parts(est: Estimate) -> list[str]:
    """The answer as mrkdwn parts, each short enough for one Slack section: the reading of the
    request (with the total it asked for), then the option (or one part per option of a
    comparison), each figure as rate x GPU-hours = total with its source; then the assumptions."""
    answer = est.answer
    head = f"*{blocks.plain(est.reading)}{_lead(answer, est.request.capacity) if answer else ''}*"
    if answer is not None:
        parts = [head, "\n".join(_option_lines(answer, est.gpu_hours))]
    else:
        intro = (
            "No GPU model or price named, so here are common ones side by side, each priced as its "
            f"instance type with the lowest on-demand price known (name one, e.g. `{_example(est, 'h100')}`, "
            f"or give your price, e.g. `{_example(est, 'gpus', ' at $3/hr')}`):"
        )
        parts = [f"{head}\n{intro}"]
        parts += ["\n".join(_compact_lines(o)) for o in est.options]
    if est.assumptions:
        parts.append("\n".join(f"_{blocks.plain(a)}_" for a in est.assumptions))
    return parts


def estimate_text(est: Estimate) -> str:
    """The answer as one mrkdwn text (the CLI prints it): :func:`estimate_parts` joined."""
    return "\n".join(estimate_parts(est))


def _lead(o: Option, capacity: CapacityType | None) -> str:
    """``": $6,549.85 on spot"``: the total the request asked for (on-demand unless it said spot,
    or no on-demand price is known)."""
    line: CostLine | SpotCost
    if o.spot is not None and (capacity is CapacityType.SPOT or o.on_demand is None):
        line, word = o.spot, "on spot"
    elif o.on_demand is not None:
        line, word = o.on_demand, price_word(o.on_demand)
    else:
        return ""
    said = "on spot" if capacity is CapacityType.SPOT else "on-demand" if capacity is CapacityType.ON_DEMAND else None
    return f": {blocks.usd(line.total_usd)}" + ("" if word == said else f" {word}")  # the reading says it once


def _option_lines(o: Option, gpu_hours: float) -> list[str]:
    hours = f"{format_number(gpu_hours)} GPU-hours"
    lines = []
    against = compared_with(o)
    if o.on_demand is not None:
        od = o.on_demand
        lines.append(
            f"• {price_word(od).capitalize()}: {blocks.usd(od.total_usd)} = "
            f"{usd_rate(od.usd_per_gpu_hour)}/GPU-hour x {hours}"
            f" ({_instance(o) + '; ' if o.instance_type else ''}{_source(od.quote)})"
        )
    if o.spot is not None:
        s = o.spot
        versus = versus_on_demand(s.list_savings_pct, against)
        lines.append(
            f"• Spot: {blocks.usd(s.total_usd)} = {usd_rate(s.usd_per_gpu_hour)}/GPU-hour x {hours}"
            f"{', ' + versus if versus else ''} ({_source(s.quote)})"
        )
        versus = versus_on_demand(s.savings_pct, against)
        lines.append(
            f"• Spot with interruptions: {blocks.usd(s.effective_total_usd)} = "
            f"{usd_rate(s.effective_usd_per_gpu_hour)}/GPU-hour effective x {hours}"
            f"{', ' + versus if versus else ''}"
        )
    if o.energy is not None:
        lines.append(f"• {_energy(o.energy)}")
    lines += [f"• {blocks.plain(n)}" for n in o.notes]
    return lines


def _energy(e: EnergyEstimate) -> str:
    """``"Energy (estimate): up to 1,882 kWh at the GPUs, at the H100 SXM's 700 W board power
    (...)"``: the datasheet's maximum, so an upper bound, with what one measured GPU drew."""
    return "Energy (estimate): " + blocks.plain(e.describe())


def _compact_lines(o: Option) -> list[str]:
    name = f"*{blocks.plain(o.gpu_model)}*" + (f" ({_instance(o)})" if o.instance_type else "")
    if o.on_demand is None:
        return [f"• {name}: " + "; ".join(blocks.plain(n) for n in o.notes)]
    figures = [f"{price_word(o.on_demand)} {_cost(o.on_demand)}"]
    sources = [f"{price_word(o.on_demand)} {_source(o.on_demand.quote)}"]
    if o.spot is not None:
        s = o.spot
        versus = versus_on_demand(s.list_savings_pct, compared_with(o))
        figures.append(
            f"spot {_cost(s)}{', ' + versus if versus else ''}; "
            f"{blocks.usd(s.effective_total_usd)} with interruptions"
        )
        sources.append(f"spot {_source(s.quote)}")
    else:
        figures += [blocks.plain(n) for n in o.notes if n.startswith("no spot price")]
    if o.energy is not None and o.energy.kwh is not None:
        figures.append(f"energy up to {kwh(o.energy.kwh)} ({o.energy.watts:g} W board power)")
    return [f"• {name}: " + "; ".join(figures), f"    _prices: {'; '.join(sources)}_"]


def _cost(line: CostLine | SpotCost) -> str:
    return f"{blocks.usd(line.total_usd)} ({usd_rate(line.usd_per_gpu_hour)}/GPU-hour)"


def _instance(o: Option) -> str:
    """``"p5.48xlarge, 8 GPUs, aws us-east-1"``."""
    gpus = f"{o.instance_gpus} GPU{'' if o.instance_gpus == 1 else 's'}" if o.instance_gpus else None
    parts = [o.instance_type, gpus, o.where]
    return blocks.plain(", ".join(p for p in parts if p))


def _source(q: PriceQuote) -> str:
    return blocks.plain(q.source + (f", as of {q.as_of}" if q.as_of else ""))


def _example(est: Estimate, what: str, tail: str = "") -> str:
    req = est.request
    return f"{req.gpus or 16} {what} {format_hours(req.hours or 168)}{tail}"


def error_message(e: EstimateInputError) -> Message:
    """An ephemeral answer to a request that cannot be priced: what was wrong, what was read of
    it, and a correct example."""
    problem = blocks.plain(e.problem + (f"\nI read: {e.understood}" if e.understood else ""))
    return blocks.error_message(problem, f"/gpu estimate {e.examples[0]}")


def energy_factors(ctx: CommandContext) -> EnergyFactors | None:
    """The PUE and carbon intensity an estimate's energy is shown with: the running bot's (its
    cost setup's, or, with several clusters, the home cluster's, else the first's); ``None``
    outside a running bot, so the estimate gives kWh at the GPUs only."""
    rt = ctx.rt
    if rt is None:
        return None
    if rt.clusters:
        home = next((c for c in rt.clusters if c.name == rt.home_cluster), rt.clusters[0])
        return home.energy
    return rt.costs.energy if rt.costs is not None else None


def handle(args: str, ctx: CommandContext) -> Reply:
    if not args:
        raise UsageError(
            "Tell me how many GPUs, which model, and for how long.", f"/gpu estimate {EXAMPLES[0]}"
        )
    try:
        est = compute_estimate(parse_estimate(args, ctx.prices), ctx.prices, energy_factors(ctx))
    except EstimateInputError as e:
        return Reply(error_message(e))
    parts = estimate_parts(est)
    return Reply(Message(text=est.reading, blocks=[blocks.section(p) for p in parts]), ephemeral=False)
