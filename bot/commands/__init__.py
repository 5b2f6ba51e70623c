"""The ``/gpu`` slash command: one module per subcommand, dispatched by :func:`dispatch`.

Slack (``bot.app``) and the console (``bot.console``) call the same :func:`dispatch`, so a
subcommand behaves the same whichever chat it is typed into.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from actions.prices import PriceBook
from bot import blocks
from bot.chat import Message

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import datetime

    from bot.runtime import Runtime


@dataclass(frozen=True)
class Reply:
    """An answer to a slash command; ``ephemeral`` ones are shown to the caller only."""

    message: Message
    ephemeral: bool = True


@dataclass(frozen=True)
class CommandContext:
    """What a subcommand may use: the caller (Slack user id), the price book and, in a running
    bot, the Runtime (store, cluster, telemetry, teams) and the channel the command was typed in."""

    user: str
    prices: PriceBook
    rt: "Runtime | None" = None
    channel: str | None = None
    # (start, end) -> team -> USD spent in [start, end); /gpu budget shows spend with it.
    spend_usd: "Callable[[datetime, datetime], Mapping[str, float]] | None" = None


class UsageError(Exception):
    """Bad input to a subcommand: ``problem`` says what was wrong, ``example`` a correct call."""

    def __init__(self, problem: str, example: str):
        super().__init__(problem)
        self.problem = problem
        self.example = example


def subcommands() -> dict[str, ModuleType]:
    """Subcommand name -> module with ``NAME``, ``SUMMARY``, ``EXAMPLE`` and ``handle(args, ctx)``."""
    from bot.commands import budget, estimate, help, queue
    from bot.commands import cost

    return {m.NAME: m for m in (help, estimate, queue, budget, cost)}


def dispatch(text: str, ctx: CommandContext) -> Reply:
    """Run ``/gpu <text>``. Never raises for bad input: errors come back as an ephemeral reply
    that says what was wrong and shows a correct example."""
    name, _, args = text.strip().partition(" ")
    commands = subcommands()
    module = commands.get(name.lower() or "help")
    if module is None:
        known = ", ".join(sorted(commands))
        return Reply(blocks.error_message(f"`/gpu {name}` is not a subcommand I know (known: {known}).", "/gpu help"))
    try:
        return module.handle(args.strip(), ctx)
    except UsageError as e:
        return Reply(blocks.error_message(e.problem, e.example))
