"""Block Kit of alerts: data in, :class:`~bot.runtime.chat.Message` out. No I/O, no clock reads.

An :class:`~actions.alerts.alert.Alert`'s ``text`` and field values are mrkdwn whose outside data
:mod:`actions.alerts` escaped; its ``title`` is plain text. An alert's one button, Snooze,
carries only the AlertRecord id (``value``), like the proposal buttons carry only the
ActionRequest id.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from actions.alerts.alert import Alert
from bot.chat.blocks import context, duration, header, plain, section, short_time
from bot.chat.blocks.fit import clip, fit_rows
from bot.runtime.chat import Message

ALERT_SNOOZE = "alert_snooze"
# Approves every proposal of a freeing plan at once; ``value`` is ``"alert:<id>"``, whose request
# ids the store holds (older messages carry the ids themselves, "12,15").
APPROVE_ALL = "gpu_approve_all"

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
    first, *rest = alert.text.split("\n")
    blocks: list[dict[str, Any]] = [
        header(alert.title),
        # A queue-wait alert may list hundreds of proposals: the first ones and how many more.
        section(fit_rows(rest, max_sections=1, title=f"{icon} {first}", hint=None)[0]),
    ]
    if alert.fields:
        blocks.append(
            {
                "type": "section",
                "fields": [
                    {"type": "mrkdwn", "text": clip(f"*{plain(label)}*\n{value}", 2000)}
                    for label, value in alert.fields[:MAX_FIELDS]
                ],
            }
        )
    blocks.append(
        context(
            f"Alert #{alert_id} · {alert.kind} · team {plain(alert.team)} · {plain(alert.period_key)}. "
            f"Sent once; Snooze holds the team's follow-up {alert.family} alerts."
        )
    )
    elements = [snooze_button(alert_id, snooze_seconds)]
    if alert.approve_all:
        # The ids are stored under the alert's id (bot.chat.approve_all): hundreds of them would
        # pass Slack's 2,000 characters of a button's value.
        elements.insert(0, {
            "type": "button", "style": "primary", "action_id": APPROVE_ALL, "value": f"alert:{alert_id}",
            "text": {"type": "plain_text", "text": f"Approve all {len(alert.approve_all)}"},
        })
    blocks.append({"type": "actions", "block_id": f"alert-{alert_id}", "elements": elements})
    return Message(text=plain(alert.title), blocks=blocks)


def snoozed_message(original: Message, user: str, until: datetime) -> Message:
    """``original`` with its Snooze button replaced by who snoozed it and until when."""
    kept = [b for b in original.blocks if b.get("type") != "actions"]
    kept.append(section(f":zzz: Snoozed by <@{plain(user)}> until {short_time(until)}: no follow-ups until then."))
    return Message(text=f"{original.text} (snoozed)", blocks=kept)


def message_from_payload(text: str, blocks: Sequence[dict[str, Any]] | None) -> Message:
    """The posted message as Slack sends it back in an interaction payload."""
    return Message(text=text or "", blocks=[dict(b) for b in blocks or ()])
