"""An alert's one button, Snooze: silence the team's follow-up alerts of the same family.

A Snooze press holds back the team's later alerts of the same family (all budget alerts together;
otherwise the same kind) until the snooze ends: the alerts job does not claim them meanwhile, so
one that still holds when the snooze ends goes out then. Anyone who sees the alert may snooze it.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import sqlalchemy.exc

from actions.alerts.alert import snooze_family
from bot.chat.blocks import plain, short_time
from bot.chat.blocks.alerts import snoozed_message
from bot.chat.outcomes import NOT_RECORDED, Outcome, database_error_line
from bot.runtime.chat import ChatError, Message, MessageRef
from bot.runtime.runtime import Runtime

log = logging.getLogger(__name__)

# How long a Snooze holds follow-ups when the caller gives no alerts.snooze_seconds, seconds.
DEFAULT_SNOOZE_SECONDS = 4 * 3600.0


def snooze(rt: Runtime, alert_id: int, user: str, seconds: float, original: Message | None = None) -> Outcome:
    """Snooze alert ``alert_id`` for ``seconds`` on behalf of ``user`` (a Slack user id): stored and
    audited (``alert-snoozed``); the posted message, when ``original`` (its current content) is
    given, loses its button and says who snoozed it until when. Anyone who sees the alert may
    snooze it. An unknown id changes nothing and is audited as ``alert-snooze-rejected``."""
    now = rt.clock()
    until = now + timedelta(seconds=seconds)
    try:
        record = rt.store.snooze_alert(alert_id, until, user, now)
        if record is None:
            rt.store.audit(
                None, actor=user, event="alert-snooze-rejected", now=now,
                detail={"alert_id": alert_id, "reason": "no such alert"},
            )
            return Outcome(False, f"There is no alert #{alert_id}; nothing was snoozed.")
    except sqlalchemy.exc.SQLAlchemyError as e:
        first = database_error_line(e)
        log.warning("alert snooze on #%s by %s not recorded: %s", alert_id, user, first)
        return Outcome(False, NOT_RECORDED.format(error=plain(first), verb="Snooze"))
    if original is not None and record.channel and record.message_ts:
        try:
            rt.chat.update(MessageRef(record.channel, record.message_ts), snoozed_message(original, user, until))
        except ChatError as e:
            log.warning("alert #%s snoozed but its message was not updated: %s", alert_id, e)
    return Outcome(
        True,
        f"Alert #{alert_id} snoozed until {short_time(until)}: no {snooze_family(record.kind)} follow-ups for "
        f"{plain(record.team)} until then.",
    )
