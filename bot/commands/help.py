"""``/gpu help``: what the bot can do and how to ask."""

from __future__ import annotations

from bot import blocks

NAME = "help"
SUMMARY = "this list"
EXAMPLE = "/gpu help"


def handle(args: str, ctx) -> "Reply":
    from bot.commands import Reply, subcommands

    lines = ["*gpu-cost-bot* finds idle GPUs, asks before stopping them, and says what GPUs cost."]
    for name, module in sorted(subcommands().items()):
        lines.append(f"• `/gpu {name}`: {module.SUMMARY}. Example: `{module.EXAMPLE}`")
    lines.append(
        "Proposals arrive in your team's channel with Approve, Snooze 4h, Exempt 7d and Deny buttons; "
        "only your team's approvers can approve, and every press is audited."
    )
    return Reply(blocks.text_message("\n".join(lines)))
