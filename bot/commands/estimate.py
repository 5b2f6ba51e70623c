"""``/gpu estimate``: what N GPUs for a while cost, on-demand beside spot."""

from __future__ import annotations

from actions.estimate import EXAMPLES, Estimate, EstimateInputError, compute_estimate, format_hours, parse_estimate
from bot import blocks
from bot.chat import Message

NAME = "estimate"
SUMMARY = "what GPUs for a while would cost, on-demand and spot (interruption-adjusted)"
EXAMPLE = "/gpu estimate 16 a100 1w"


def estimate_text(est: Estimate) -> str:
    """The answer as mrkdwn: GPU-hours, on-demand, spot list and interruption-adjusted."""
    req = est.request
    what = f"{req.gpus} × {req.gpu_model or 'GPU'} for {format_hours(req.hours)} = {est.gpu_hours:,.0f} GPU-hours"
    od = est.on_demand
    lines = [
        f"*{what}*",
        f"• On-demand: {blocks.usd(od.total_usd)} ({blocks.usd(od.usd_per_gpu_hour)}/GPU-hour; {od.quote.source}"
        f"{', as of ' + od.quote.as_of if od.quote.as_of else ''})",
    ]
    if est.spot is None:
        lines.append("• Spot: no spot price known; add one like `spot $1.20/hr`")
    else:
        s = est.spot
        lines.append(
            f"• Spot: {blocks.usd(s.total_usd)} list ({blocks.usd(s.usd_per_gpu_hour)}/GPU-hour, "
            f"{s.list_savings_pct:.0f}% below on-demand; {s.quote.source}"
            f"{', as of ' + s.quote.as_of if s.quote.as_of else ''})"
        )
        lines.append(
            f"• Spot with interruptions: {blocks.usd(s.effective_total_usd)} "
            f"({blocks.usd(s.effective_usd_per_gpu_hour)}/GPU-hour effective, {s.savings_pct:.0f}% below on-demand)"
        )
    lines += [f"_{a}_" for a in est.assumptions]
    return "\n".join(lines)


def handle(args: str, ctx) -> "Reply":
    from bot.commands import Reply, UsageError

    if not args:
        raise UsageError(
            "Tell me how many GPUs, which model, and for how long.", f"/gpu estimate {EXAMPLES[0]}"
        )
    try:
        est = compute_estimate(parse_estimate(args), ctx.prices)
    except EstimateInputError as e:
        # The message already carries a correct example.
        return Reply(blocks.error_message(str(e)))
    text = estimate_text(est)
    return Reply(Message(text=text.splitlines()[0].strip("*"), blocks=[blocks.section(text)]), ephemeral=False)
