"""Block Kit of alerts: data in, :class:`~bot.chat.Message` out. No I/O, no clock reads.

An alert's one button, Snooze, carries only the AlertRecord id (``value``), like the proposal
buttons carry only the ActionRequest id.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from actions.alerts import Alert
from bot.blocks import context, duration, header, section, short_time
from bot.chat import Message

ALERT_SNOOZE = "alert_snooze"

_ICONS = {
    "budget-50": ":moneybag:",
    "budget-80": ":warning:",
    "budget-100": ":rotating_light:",
    "budget-forecast": ":chart_with_upwards_trend:",
    "queue-wait": ":hourglass_flowing_sand:",
    "idle-on-demand": ":money_with_wings:",
    "spot-ratio": ":scales:",
}
MAX_FIELDS = 10  # Slack's limit per section


def snooze_button(alert_id: int, snooze_seconds: float) -> dict[str, Any]:
    """The Snooze button of alert ``alert_id``; its label says for how long."""
    return {
        "type": "button",
        "text": {"type": "plain_text", "text": f"Snooze {duration(snooze_seconds)}"},
        "action_id": ALERT_SNOOZE,
        "value": str(alert_id),
    }


def alert_message(alert: Alert, alert_id: int, snooze_seconds: float) -> Message:
    """The channel message of an alert: title, text, fields, where it comes from, Snooze."""
    icon = _ICONS.get(alert.kind, ":bell:")
    blocks: list[dict[str, Any]] = [
        header(alert.title),
        section(f"{icon} {alert.text}"),
    ]
    if alert.fields:
        blocks.append(
            {
                "type": "section",
                "fields": [
                    {"type": "mrkdwn", "text": f"*{label}*\n{value}"[:2000]}
                    for label, value in alert.fields[:MAX_FIELDS]
                ],
            }
        )
    blocks.append(
        context(
            f"Alert #{alert_id} · {alert.kind} · team {alert.team} · {alert.period_key}. "
            f"Sent once; Snooze holds the team's follow-up {alert.family} alerts."
        )
    )
    blocks.append(
        {"type": "actions", "block_id": f"alert-{alert_id}", "elements": [snooze_button(alert_id, snooze_seconds)]}
    )
    return Message(text=f"{alert.title}", blocks=blocks)


def snoozed_message(original: Message, user: str, until: datetime) -> Message:
    """``original`` with its Snooze button replaced by who snoozed it and until when."""
    kept = [b for b in original.blocks if b.get("type") != "actions"]
    kept.append(section(f":zzz: Snoozed by <@{user}> until {short_time(until)}: no follow-ups until then."))
    return Message(text=f"{original.text} (snoozed)", blocks=kept)


def message_from_payload(text: str, blocks: Sequence[dict[str, Any]] | None) -> Message:
    """The posted message as Slack sends it back in an interaction payload."""
    return Message(text=text or "", blocks=[dict(b) for b in blocks or ()])
