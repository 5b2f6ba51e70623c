"""What a press answers its presser (ephemeral): :class:`Outcome`, and the sentences for a press
the bot could not take or record."""

from __future__ import annotations

from dataclasses import dataclass

from bot.chat.blocks.proposals import APPROVE, DENY, EXEMPT, RESTORE, SNOOZE

SHUTTING_DOWN = "The bot is restarting, so nothing was changed. Press {verb} again in a minute."
NOT_RECORDED = (
    ":warning: Not recorded: the bot's database is unavailable ({error}). Nothing was changed by this "
    "press; press {verb} again in a minute."
)
# After the change went out to the cluster: what happened there is known once the store answers.
MAY_HAVE_CHANGED = (
    ":warning: Request #{id}: the change may have been made, but the bot's database is unavailable ({error}), "
    "so it could not be recorded. Do not press Approve again: the bot reads the target back once the database "
    "answers and updates the request's message with what the cluster shows."
)

VERBS = {APPROVE: "Approve", SNOOZE: "Snooze", EXEMPT: "Exempt", DENY: "Deny", RESTORE: "Restore"}


@dataclass(frozen=True)
class Outcome:
    """The answer to a press: ``ok`` when the request changed; ``message`` is shown to the
    presser only (ephemeral)."""

    ok: bool
    message: str


def database_error_line(error: BaseException, limit: int | None = 200) -> str:
    """The first line of a database error, the driver's own words when it has them (SQLAlchemy
    keeps them in ``orig``), at most ``limit`` characters (None: all of it): what a presser or a
    log line is shown of it."""
    line = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
    return line if limit is None else line[:limit]
