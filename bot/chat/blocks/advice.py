"""Advice as Block Kit: ``/gpu advise``, ``gpu-cost-bot advise`` (through the console's text) and
the digest's "could save" section. Pure: recommendations in, :class:`~bot.runtime.chat.Message` out."""

from __future__ import annotations

from datetime import datetime
from typing import Collection, Sequence

from actions.advice.model import Recommendation
from bot.chat.blocks import context, header, plain, section, short_time, usd
from bot.runtime.chat import Message

MAX_SHOWN = 15  # 3 blocks each stays under Slack's 50 per message
KIND_LABELS = {"fewer-gpus": "Fewer GPUs", "mig": "MIG profile", "smaller-gpu": "Smaller GPU", "spot": "Spot",
               "commitment": "Commitment"}


def saving_text(r: Recommendation) -> str:
    """``"saves $4,304.91/month"``, or why there is no figure."""
    if r.saving_usd_per_month is None:
        return "no saving until a node offers it" if r.kind == "mig" else "saving unknown: no committed rate"
    return f"saves {usd(r.saving_usd_per_month)}/month"


def _source(p) -> str:  # noqa: ANN001 - a PriceQuote
    return plain(p.source) + (f", as of {plain(p.as_of)}" if p.as_of else "")


def _basis(p) -> str:  # noqa: ANN001 - a PriceQuote
    # A committed rate (a Reserved Instance, a Savings Plan) is what a commitment would cost, not
    # the price of reserved capacity: it is labelled as such.
    return "committed" if p.basis == "commitment" else plain(p.capacity_type.value)


def recommendation_blocks(r: Recommendation, silenced: bool = False, sources: dict[str, int] | None = None) -> list[dict]:
    """One recommendation: what to do and what it saves, the change, the evidence, the prices;
    ``silenced`` when its team snoozed or exempted it (it is then not posted to the channel).
    ``sources`` (a price source's text -> its number in the message's list of sources) makes each
    price cite its source by number rather than repeat it."""
    now = usd(r.current_usd_per_month)
    after = "" if r.advised_usd_per_month is None else f" → {usd(r.advised_usd_per_month)}"
    lines = [
        f"*{KIND_LABELS.get(r.kind, r.kind)}: {plain(r.summary)}*: {saving_text(r)} ({now}{after} a month)",
        f"Change: {plain(r.change)}",
        "Evidence: " + "; ".join(f"{plain(name)} {plain(value)}" for name, value in r.evidence),
    ]
    prices = [f"{_basis(p)} [{sources[_source(p)]}]" if sources else f"{_basis(p)} {_source(p)}" for p in r.prices]
    notes = [plain(n) for n in r.notes]
    if silenced:
        notes.append("Snoozed or exempt from its request's buttons: not posted to the channel until that ends")
    if r.action is not None:
        # Which advice a button can carry out, so nobody hand-edits what an Approve would patch.
        notes.append("Apply: the team's approvers get a request with Approve/Deny (patches the pod template; "
                     "Restore puts back what was there)")
    return [section("\n".join(lines)), context("Prices: " + " | ".join(prices), *notes)]


def advice_message(
    recs: Sequence[Recommendation], could_save: float, at: datetime, team: str | None = None,
    silenced: Collection[str] = (), later: int = 0,
) -> Message:
    """The answer to ``/gpu advise [team]``: every recommendation, highest saving first, each
    with its evidence and price sources, and what they would save together; those whose key is
    in ``silenced`` (snoozed or exempt) marked so. The first :data:`MAX_SHOWN` are shown and the
    rest counted; ``later`` counts new advice the scheduled post holds for its next post."""
    scope = f" for team {team}" if team else ""
    if not recs:
        text = (f"No advice{scope} at {short_time(at)}: no consumer's GPUs are larger than its use, on-demand where "
                "spot would do, or steady enough to commit to.")
        return Message(text=text, blocks=[section(text)])
    title = f"GPU advice{scope}: could save {usd(could_save)}/month"
    out: list[dict] = [header(title)]
    shown = recs[:MAX_SHOWN]
    # A price source is a sentence or three, and most advice shares one: each is listed once, at the end.
    sources = {text: n for n, text in enumerate(dict.fromkeys(_source(p) for r in shown for p in r.prices), 1)}
    for r in shown:
        out += recommendation_blocks(r, r.key in silenced, sources)
    more = f" ({len(recs) - MAX_SHOWN} more not shown)" if len(recs) > MAX_SHOWN else ""
    if later:
        more += f" ({later} more in the next post; all now: `/gpu advise`)"
    out.append(context(
        f"{len(recs)} recommendation(s){more} at {short_time(at)}. A month is 730 h at the last window's rate; "
        "the total counts each consumer's largest saving once."
    ))
    if sources:
        out.append(context("Price sources: " + " | ".join(f"[{n}] {text}" for text, n in sources.items())))
    return Message(text=plain(title), blocks=out)


def could_save_lines(recs: Sequence[Recommendation], could_save: float, n: int = 3) -> list[str]:
    """The digest's "could save" section: the top ``n`` recommendations and the total."""
    if not recs:
        return []
    lines = [f"*Could save {usd(could_save)}/month*"]
    lines += [f"• {plain(r.summary)}: {saving_text(r)}" for r in recs[:n]]
    if len(recs) > n:
        lines.append(f"• and {len(recs) - n} more: `/gpu advise`")
    return lines
