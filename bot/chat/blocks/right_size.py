"""The Block Kit of a right-sizing request: the advised change to a Notebook's or Deployment's
GPUs, what it saves, its evidence, and its buttons: the approvers' Approve/Deny (Restore once
done), and Snooze/Exempt to silence the advice. Pure."""

from __future__ import annotations

from actions.model.findings import Finding
from bot.chat.blocks import context, header, plain, section, usd
from bot.chat.blocks.proposals import RequestStatus, buttons_for, status_line
from bot.runtime.chat import Message


def right_size_message(f: Finding, status: RequestStatus) -> Message:
    """The message for one ``right-size`` request (:func:`actions.advice.request.advice_finding`):
    ``f.usd_per_hour`` is the saving (USD per hour), ``f.action`` the change Approve makes."""
    assert f.action is not None  # advice_finding makes right-size findings only with an action
    title = f"Right-size GPUs: {f.consumer_kind} {f.namespace}/{f.name}"
    saving = f"saves {usd(f.usd_per_hour * 730)}/month" if f.usd_per_hour else "saving unknown"
    price = f.price
    blocks: list[dict] = [
        header(title),
        section(f"*{plain(f.action.summary)}*: {saving}\n" + "\n".join(f"• {plain(n)}" for n in f.notes)),
        context(
            f"Price {usd(price.usd_per_gpu_hour)}/GPU-hour from {plain(price.source)}"
            f"{', as of ' + plain(price.as_of) if price.as_of else ''}. Approve patches its pod template only "
            f"while its GPU request is still what the advice saw; Restore puts back what was there. "
            f"Snooze: not this advice until the snooze ends; Exempt: no advice on this {plain(f.consumer_kind)} "
            f"until the exemption ends. "
            f"Request #{status.id}{' · DRY RUN: the cluster will not be changed' if status.dry_run else ''}"
        ),
        section(status_line(status).replace("no longer idle", "the advice no longer holds")),
    ]
    # Snooze silences this advice until the snooze ends, then asks again; Exempt silences every
    # piece of advice on the consumer until the exemption ends (actions.advice.request.silenced).
    buttons = buttons_for(status, has_action=True, restorable=True)
    if buttons:
        blocks.append({"type": "actions", "block_id": f"request-{status.id}", "elements": buttons})
    return Message(text=f"{plain(title)}: {plain(f.action.summary)}, {saving}", blocks=blocks)
