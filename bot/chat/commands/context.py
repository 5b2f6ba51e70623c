"""What a ``/gpu`` subcommand is given and what it answers with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from actions.pricing.book import PriceBook
from bot.runtime.chat import Message
from bot.runtime.runtime import Runtime


@dataclass(frozen=True)
class Reply:
    """An answer to a slash command; ``ephemeral`` ones are shown to the caller only."""

    message: Message
    ephemeral: bool = True


@dataclass(frozen=True)
class CommandContext:
    """What a subcommand may use: the caller (Slack user id), the price book and, in a running
    bot, the Runtime (store, cluster, telemetry, teams) and the channel the command was typed in.
    ``spend_usd(start, end)`` maps team -> USD spent in ``[start, end)`` (``/gpu budget`` shows
    spend with it); None when the bot has no cost source."""

    user: str
    prices: PriceBook
    rt: Runtime | None = None
    channel: str | None = None
    spend_usd: Callable[[datetime, datetime], Mapping[str, float]] | None = None


class UsageError(Exception):
    """Bad input to a subcommand: ``problem`` says what was wrong, ``example`` a correct call."""

    def __init__(self, problem: str, example: str):
        super().__init__(problem)
        self.problem = problem
        self.example = example


def cluster_arg(args: str, example: str) -> tuple[str, str | None]:
    """``(the other words, cluster or None)`` from ``--cluster NAME`` (or ``--cluster=NAME``)
    anywhere in ``args``. Raises UsageError (showing ``example``) for ``--cluster`` without a
    name or given twice."""
    words, cluster, i = args.split(), None, 0
    rest = []
    while i < len(words):
        w = words[i]
        if w == "--cluster" or w.startswith("--cluster="):
            name = w.split("=", 1)[1] if "=" in w else (words[i + 1] if i + 1 < len(words) else "")
            i += 1 if "=" in w else 2
            if not name or name.startswith("--"):
                raise UsageError("`--cluster` needs a cluster's name.", example)
            if cluster is not None:
                raise UsageError(f"Two clusters given ({cluster}, {name}); give one.", example)
            cluster = name
            continue
        rest.append(w)
        i += 1
    return " ".join(rest), cluster
