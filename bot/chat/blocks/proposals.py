"""The Block Kit of an idle-GPU proposal: what is idle, the evidence, the dollars, the request's
state, and the buttons valid in that state.

A button carries only the ActionRequest id (``value``); its ``action_id`` is one of
:data:`BUTTON_ACTIONS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from actions.model.findings import Finding
from actions.text import energy_amount, gpu_amount
from bot.chat.blocks import context, duration, header, plain, section, short_time, usd
from bot.chat.blocks.fit import clip, clip_middle, fit_rows
from bot.runtime.chat import Message

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
    "uncertain": ":grey_question: Outcome unknown: reading it back from the cluster",
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
    act_at: datetime | None = None  # mode auto: when the policy acts unless someone decides first
    now: datetime | None = None  # when the message is rendered, for the countdown


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


MAX_PODS_NAMED = 3  # a consumer of 64 pods: its GPU evidence matters, not a wall of pod names
FIELD_CHARS = 2000  # Slack's limit on a section field's text


def pods_text(pods: tuple[str, ...] | list[str]) -> str:
    """``", pods a, b"``; for more than :data:`MAX_PODS_NAMED` pods, their count and the first
    names (``", 64 pods: a, b, c and 61 more"``); empty for none."""
    if not pods:
        return ""
    if len(pods) <= MAX_PODS_NAMED:
        return ", pods " + plain(", ".join(clip_middle(p, 80) for p in pods))
    named = ", ".join(clip_middle(p, 80) for p in pods[:MAX_PODS_NAMED])
    return f", {len(pods)} pods: {plain(named)} and {len(pods) - MAX_PODS_NAMED} more"


MAX_EVIDENCE_LINES = 8  # keeps the section under Slack's 3000 characters for any GPU count


def evidence_lines(f: Finding) -> list[str]:
    """One line per GPU (at most ``MAX_EVIDENCE_LINES``): measured signals beside thresholds."""
    lines = []
    for e in f.evidence[:MAX_EVIDENCE_LINES]:
        signal = plain((e.engine_signal or "activity").replace("DCGM_FI_", ""))
        peak = "n/a" if e.peak_engine_pct is None else f"{e.peak_engine_pct:.1f}%"
        power = "n/a" if e.mean_power_w is None else f"{e.mean_power_w:.0f} W"
        ceiling = "?" if e.power_ceiling_w is None else f"{e.power_ceiling_w:.0f} W"
        lines.append(
            f"• GPU {plain(e.gpu)}: peak `{signal}` {peak} (idle ≤ {e.engine_threshold_pct:g}%), "
            f"mean power {power} (idle ≤ {ceiling}), samples {e.coverage:.0%} of the window"
        )
    hidden = len(f.evidence) - MAX_EVIDENCE_LINES
    if hidden > 0:
        lines.append(f"• … and {hidden} more GPUs, every one idle on the same thresholds")
    return lines


TITLES = {
    "idle-notebook": "Idle GPU notebook",
    "idle-workload": "Idle GPU job",
    "idle-serving": "Idle GPU service",
    "unrequested-gpus": "GPUs no pod requests",
}


def proposal_message(f: Finding, status: RequestStatus) -> Message:
    """The message for one ActionRequest: what is idle (and in which cluster, when the bot
    watches several), the evidence, the dollars, its state and the buttons that apply to that
    state."""
    title = f"{TITLES.get(f.kind, 'Idle GPUs')}: {f.consumer_kind} {f.namespace + '/' if f.namespace else ''}{f.name}"
    # The same namespace and name may run in several clusters; a bot of one leaves it out.
    where_cluster = f" in cluster {f.cluster}" if f.cluster else ""
    price = f.price
    where = plain(f"{f.node or '?'} ({price.instance_type or 'unknown instance type'}, {price.capacity_type.value})")
    amount = gpu_amount(f.gpus, dict(f.devices))
    if f.reserved:
        # Reserved capacity is paid for idle or not: stopping it frees GPUs, not dollars.
        money = [
            f"*Capacity freed*\n{amount} GPU(s) for the queue (reserved: {usd(f.usd_per_hour)}/h is paid either way)",
            f"*Idle reserved GPU-hours*\n{f.gpus * f.idle_seconds / 3600:,.1f}",
        ]
    else:
        money = [
            f"*Cost*\n{usd(f.usd_per_hour)}/h · {usd(f.usd_per_day)}/day",
            f"*Idle cost so far*\n{usd(f.usd_so_far)}",
        ]
    fields = [
        f"*Team*\n{plain(f.team)}",
        f"*GPUs*\n{amount} × {plain(f.gpu_model)}",
        f"*Idle for*\n{duration(f.idle_seconds)}",
        *money,
        f"*Node*\n{where}",
    ]
    if f.kwh_per_day is not None:
        fields.append(f"*Energy*\n{energy_amount(f.kwh_per_day, f.co2e_kg_per_day)}/day")
    if f.workload:
        fields.append(f"*Kueue Workload*\n{f.workload}")
    blocks: list[dict] = [
        header(title, where_cluster),
        {"type": "section", "fields": [{"type": "mrkdwn", "text": clip(t, FIELD_CHARS)} for t in fields[:10]]},
        section(fit_rows(evidence_lines(f) + [f"• {plain(n)}" for n in f.notes], max_sections=1, hint=None,
                         title=f"*Evidence* (last {duration(f.window_seconds)}{pods_text(f.pods)}):")[0]),
    ]
    if f.action is None:
        action_text = f"nothing the bot can do ({plain(f.report_reason or 'no action with an exact Restore')})"
    elif f.handling.mode == "report":
        action_text = f"nothing: report only ({f.handling.source} policy); it would {plain(f.action.summary)}"
    else:
        action_text = plain(f.action.summary)
    blocks.append(
        context(
            f"Price {usd(price.usd_per_gpu_hour)}/GPU-hour from {plain(price.source)}"
            f"{', as of ' + plain(price.as_of) if price.as_of else ''}. "
            f"Proposed: {action_text}. Request #{status.id}"
            f"{' · DRY RUN: the cluster will not be changed' if status.dry_run else ''}"
        )
    )
    blocks.append(section(status_line(status, approvable=f.action is not None and f.handling.mode != "report")))
    buttons = buttons_for(
        status,
        has_action=f.action is not None and f.handling.mode != "report",
        restorable=f.action is not None and f.action.verb.restorable,
    )
    if buttons:
        blocks.append({"type": "actions", "block_id": f"request-{status.id}", "elements": buttons})
    cost = f"reserved, {gpu_amount(f.gpus)} GPU(s) freed" if f.reserved else f"{usd(f.usd_per_hour)}/h"
    text = f"{plain(title + where_cluster)}: {gpu_amount(f.gpus)} GPU(s) idle for {duration(f.idle_seconds)}, {cost}"
    return Message(text=text, blocks=blocks)


def status_line(s: RequestStatus, approvable: bool = True) -> str:
    """``":white_check_mark: Done by <@U1> at 2026-11-20 12:05 UTC: Notebook stopped"``. A
    proposal with nothing to approve (``approvable`` False: no action, or mode report) reads as
    reported, not as awaiting approval."""
    line = _STATE_LINES.get(s.state, s.state)
    if s.state == "proposed" and not approvable:
        line = ":mag: Reported: nothing to approve"
    if s.state == "proposed" and s.act_at is not None:
        left = f" (in {duration(max(0.0, (s.act_at - s.now).total_seconds()))})" if s.now else ""
        line = (
            f":alarm_clock: Acts automatically at {short_time(s.act_at)}{left} unless someone presses "
            "Snooze, Exempt or Deny; an approver may Approve now"
        )
    elif s.state == "proposed":
        line += f" (expires {short_time(s.expires_at)})"
    if s.decided_by == "policy" and s.state != "proposed":
        line += " · by the team's policy (mode auto)"
    elif s.decided_by and s.state != "proposed":
        line += f" · by <@{plain(s.decided_by)}>"
    if s.decided_at and s.state != "proposed":
        line += f" at {short_time(s.decided_at)}"
    if s.until and s.state in ("snoozed", "exempt", "denied"):
        line += f" · until {short_time(s.until)}"
    if s.note:
        line += f"\n{plain(s.note)}"
    return line


def buttons_for(s: RequestStatus, *, has_action: bool, restorable: bool = True) -> list[dict]:
    """Buttons valid in state ``s.state``: the full set while proposed, Restore once done (when
    the action has an inverse: a deleted NodeClaim has none)."""
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
    if s.state == "done" and restorable:
        return [_button("Restore", RESTORE, s.id)]
    return []


