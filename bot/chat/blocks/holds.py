"""The Block Kit of a budget's hold: which LocalQueue, why (the budget and its spend), what Kueue
does once it is held, and the buttons: the approvers' Approve/Snooze/Exempt/Deny, then Restore
(``spec.stopPolicy`` back as it was). Pure."""

from __future__ import annotations

from actions.model.findings import Finding
from bot.chat.blocks import context, duration, header, plain, section
from bot.chat.blocks.proposals import RequestStatus, buttons_for, status_line
from bot.runtime.chat import Message


def hold_message(f: Finding, status: RequestStatus) -> Message:
    """The message for one ``budget-exhausted`` request (:func:`actions.budgets.holds.hold_findings`):
    ``f.notes`` say the budget and its spend, then the LocalQueue's ClusterQueue; ``f.action`` the
    hold Approve (or mode auto after its grace) sets."""
    assert f.action is not None  # hold_findings makes them only with an action
    where = f" in cluster {f.cluster}" if f.cluster else ""
    title = f"GPU budget used up: hold LocalQueue {f.namespace}/{f.name}"
    auto = (f" Mode auto ({plain(f.handling.source)}): held after {duration(f.handling.grace_seconds)} unless "
            "Snoozed, Exempted or Denied." if f.handling.mode == "auto" else "")
    blocks: list[dict] = [
        header(title, where),
        section(f"*{plain(f.notes[0]) if f.notes else 'Budget used up'}*\n"
                + "\n".join(f"• {plain(n)}" for n in f.notes[1:])
                + f"\nApprove will {plain(f.action.summary)}. Nothing is deleted; Restore sets the policy back."),
        context(f"Team {plain(f.team)}. The hold is lifted by itself when a new budget period begins or the budget "
                f"is raised.{auto} Request #{status.id}"
                f"{' · DRY RUN: the cluster will not be changed' if status.dry_run else ''}"),
        section(status_line(status).replace("no longer idle", "the budget is no longer used up")),
    ]
    buttons = buttons_for(status, has_action=True, restorable=True)
    if buttons:
        blocks.append({"type": "actions", "block_id": f"request-{status.id}", "elements": buttons})
    return Message(text=f"{plain(title + where)}: {plain(f.notes[0]) if f.notes else ''}", blocks=blocks)
