"""Pure Block Kit renderers: data in, :class:`~bot.chat.Message` out. No I/O, no clock reads.

Slack limits kept here: 50 blocks per message, 3000 characters per section text, 2000 per button
value (ours carry only the ActionRequest id).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from actions.model import Finding, format_time
from actions.text import duration, usd  # noqa: F401 - re-exported for the chat layer
from bot.chat import Message

APPROVE, SNOOZE, EXEMPT, DENY, RESTORE = (
    "gpu_approve",
    "gpu_snooze",
    "gpu_exempt",
    "gpu_deny",
    "gpu_restore",
)
BUTTON_ACTIONS = (APPROVE, SNOOZE, EXEMPT, DENY, RESTORE)

_STATE_LINES = {
    "proposed": ":hourglass: Awaiting approval",
    "approved": ":gear: Approved, acting",
    "done": ":white_check_mark: Done",
    "restoring": ":gear: Restoring",
    "restored": ":leftwards_arrow_with_hook: Restored",
    "snoozed": ":zzz: Snoozed",
    "exempt": ":shield: Exempt",
    "denied": ":no_entry_sign: Denied",
    "expired": ":hourglass_flowing_sand: Expired without a decision",
    "superseded": ":arrows_counterclockwise: Closed: no longer idle",
    "failed": ":x: Failed",
}


@dataclass(frozen=True)
class RequestStatus:
    """What the message says about the ActionRequest besides the finding."""

    id: int
    state: str
    dry_run: bool
    expires_at: datetime
    until: datetime | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    note: str | None = None


def short_time(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M UTC")


def _button(text: str, action_id: str, request_id: int, style: str | None = None) -> dict:
    b = {
        "type": "button",
        "text": {"type": "plain_text", "text": text},
        "action_id": action_id,
        "value": str(request_id),
    }
    if style:
        b["style"] = style
    return b


SECTION_CHARS = 3000  # Slack's limit on a section's text and on a context element's
HEADER_CHARS = 150


def header(text: str) -> dict:
    """A header block (plain text, cut at Slack's 150 characters)."""
    return {"type": "header", "text": {"type": "plain_text", "text": text[:HEADER_CHARS]}}


def section(text: str) -> dict:
    """A section block of mrkdwn ``text``, cut at Slack's 3000 characters."""
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_CHARS]}}


def context(*texts: str) -> dict:
    """A context block: one mrkdwn element per text (Slack takes at most 10), each cut at 3000
    characters."""
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": t[:SECTION_CHARS]} for t in texts[:10]]}


MAX_EVIDENCE_LINES = 8  # keeps the section under Slack's 3000 characters for any GPU count


def evidence_lines(f: Finding) -> list[str]:
    """One line per GPU (at most ``MAX_EVIDENCE_LINES``): measured signals beside thresholds."""
    lines = []
    for e in f.evidence[:MAX_EVIDENCE_LINES]:
        signal = (e.engine_signal or "activity").replace("DCGM_FI_", "")
        peak = "n/a" if e.peak_engine_pct is None else f"{e.peak_engine_pct:.1f}%"
        power = "n/a" if e.mean_power_w is None else f"{e.mean_power_w:.0f} W"
        ceiling = "?" if e.power_ceiling_w is None else f"{e.power_ceiling_w:.0f} W"
        lines.append(
            f"• GPU {e.gpu}: peak `{signal}` {peak} (idle ≤ {e.engine_threshold_pct:g}%), "
            f"mean power {power} (idle ≤ {ceiling}), samples {e.coverage:.0%} of the window"
        )
    hidden = len(f.evidence) - MAX_EVIDENCE_LINES
    if hidden > 0:
        lines.append(f"• … and {hidden} more GPUs, every one idle on the same thresholds")
    return lines


def proposal_message(f: Finding, status: RequestStatus) -> Message:
    """The message for one ActionRequest: what is idle, the evidence, the dollars, its state and
    the buttons that apply to that state."""
    what = "notebook" if f.kind == "idle-notebook" else "Kueue Workload"
    title = f"Idle GPU {what}: {f.namespace}/{f.name}"
    price = f.price
    where = f"{f.node or '?'} ({price.instance_type or 'unknown instance type'}, {price.capacity_type.value})"
    fields = [
        f"*Team*\n{f.team}",
        f"*GPUs*\n{f.gpus} × {f.gpu_model}",
        f"*Idle for*\n{duration(f.idle_seconds)}",
        f"*Cost*\n{usd(f.usd_per_hour)}/h · {usd(f.usd_per_day)}/day",
        f"*Idle cost so far*\n{usd(f.usd_so_far)}",
        f"*Node*\n{where}",
    ]
    blocks: list[dict] = [
        header(title),
        {"type": "section", "fields": [{"type": "mrkdwn", "text": t} for t in fields]},
        section(
            f"*Evidence* (last {duration(f.window_seconds)}, pods {', '.join(f.pods)}):\n"
            + "\n".join(evidence_lines(f))
        ),
    ]
    action_text = f.action.summary if f.action else "no action the bot can take: stop it by hand"
    blocks.append(
        context(
            f"Price {usd(price.usd_per_gpu_hour)}/GPU-hour from {price.source}"
            f"{', as of ' + price.as_of if price.as_of else ''}. "
            f"Proposed: {action_text}. Request #{status.id}"
            f"{' · DRY RUN: the cluster will not be changed' if status.dry_run else ''}"
        )
    )
    blocks.append(section(status_line(status)))
    buttons = buttons_for(status, has_action=f.action is not None)
    if buttons:
        blocks.append({"type": "actions", "block_id": f"request-{status.id}", "elements": buttons})
    text = f"{title}: {f.gpus} GPU(s) idle for {duration(f.idle_seconds)}, {usd(f.usd_per_hour)}/h"
    return Message(text=text, blocks=blocks)


def status_line(s: RequestStatus) -> str:
    """``":white_check_mark: Done by <@U1> at 2026-11-20 12:05 UTC: Notebook stopped"``."""
    line = _STATE_LINES.get(s.state, s.state)
    if s.state == "proposed":
        line += f" (expires {short_time(s.expires_at)})"
    if s.decided_by and s.state != "proposed":
        line += f" · by <@{s.decided_by}>"
    if s.decided_at and s.state != "proposed":
        line += f" at {short_time(s.decided_at)}"
    if s.until and s.state in ("snoozed", "exempt", "denied"):
        line += f" · until {short_time(s.until)}"
    if s.note:
        line += f"\n{s.note}"
    return line


def buttons_for(s: RequestStatus, *, has_action: bool) -> list[dict]:
    """Buttons valid in state ``s.state``: the full set while proposed, Restore once done."""
    if s.state == "proposed":
        buttons = []
        if has_action:
            buttons.append(_button("Approve", APPROVE, s.id, "primary"))
        buttons += [
            _button("Snooze 4h", SNOOZE, s.id),
            _button("Exempt 7d", EXEMPT, s.id),
            _button("Deny", DENY, s.id, "danger"),
        ]
        return buttons
    if s.state == "done":
        return [_button("Restore", RESTORE, s.id)]
    return []


def error_message(problem: str, example: str | None = None) -> Message:
    """An ephemeral error: what was wrong and, when there is one, a correct example."""
    text = f":warning: {problem}"
    if example:
        text += f"\nFor example: `{example}`"
    return Message(text=text, blocks=[section(text)])


def text_message(text: str) -> Message:
    """A plain mrkdwn message."""
    return Message(text=text, blocks=[section(text)])


def now_stamp(t: datetime) -> str:
    """RFC 3339 stamp for notes."""
    return format_time(t)
