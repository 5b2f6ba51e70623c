"""The ``/gpu`` slash command: one module per subcommand, dispatched by :func:`dispatch`.

Slack (``bot.chat.slack.app``) and the console (``bot.chat.console``) call the same
:func:`dispatch`, so a subcommand behaves the same whichever chat it is typed into. A subcommand
module has ``NAME``, ``SUMMARY``, ``EXAMPLE`` and ``handle(args, ctx) -> Reply``, and imports
:mod:`.context`, never this package, so the table below is the only place that knows them all.
"""

from __future__ import annotations

import logging
from types import ModuleType

from bot.chat import blocks
from bot.chat.commands import advise, budget, cost, estimate, queue
from bot.chat.commands.context import CommandContext, Reply, UsageError
from bot.chat.failures import explain

__all__ = ["CommandContext", "Reply", "UsageError", "dispatch", "subcommands"]

log = logging.getLogger(__name__)

HELP_SUMMARY = "this list"
HELP_EXAMPLE = "/gpu help"


def subcommands() -> dict[str, ModuleType]:
    """Subcommand name -> its module (``help`` is this package's own answer)."""
    return {m.NAME: m for m in (estimate, queue, budget, cost, advise)}


def help_reply() -> Reply:
    """``/gpu help``: what the bot can do and how to ask, one line per subcommand."""
    lines = ["*gpu-cost-bot* finds idle GPUs, asks before stopping them, and says what GPUs cost."]
    entries = [(m.NAME, m.SUMMARY, m.EXAMPLE) for m in subcommands().values()]
    for name, summary, example in sorted([*entries, ("help", HELP_SUMMARY, HELP_EXAMPLE)]):
        lines.append(f"• `/gpu {name}`: {blocks.plain(summary)}. Example: `{blocks.plain(example)}`")
    lines.append(
        "Proposals arrive in your team's channel with Approve, Snooze 4h, Exempt 7d and Deny buttons; "
        "only your team's approvers can approve, and every press is audited."
    )
    return Reply(blocks.text_message("\n".join(lines)))


def dispatch(text: str, ctx: CommandContext) -> Reply:
    """Run ``/gpu <text>``. Never raises: bad input comes back as an ephemeral reply that says
    what was wrong and shows a correct example, a service that failed (Prometheus, the cluster,
    the database) as an ephemeral reply saying which and why."""
    typed, _, args = text.strip().partition(" ")
    name = typed.lower() or "help"
    if name == "help":
        return help_reply()
    commands = subcommands()
    module = commands.get(name)
    if module is None:
        known = ", ".join(sorted([*commands, "help"]))
        problem = f"`/gpu {blocks.plain(typed)}` is not a subcommand I know (known: {known})."
        return Reply(blocks.error_message(problem, HELP_EXAMPLE))
    try:
        return module.handle(args.strip(), ctx)
    except UsageError as e:
        return Reply(blocks.error_message(e.problem, e.example))
    except Exception as e:  # noqa: BLE001 - a failing backend is an answer, never a dead bot
        said = explain(e)
        if said.expected:
            log.warning("/gpu %s failed: %s", name, said.message)
        else:
            log.exception("/gpu %s failed", name)
        return Reply(blocks.error_message(f"I could not answer `/gpu {name}`: {blocks.plain(said.message)}"))
