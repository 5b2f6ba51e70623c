"""Advice as Block Kit: ``/gpu advise``, ``gpu-cost-bot advise`` (through the console's text) and
the digest's "could save" section. Pure: recommendations in, :class:`~bot.runtime.chat.Message` out."""

from __future__ import annotations

from datetime import datetime
from typing import Collection, Mapping, Sequence

from actions.advice.energy import could_save_co2e_kg, could_save_kwh
from actions.advice.model import Recommendation
from actions.energy.settings import EnergyFactors
from actions.text import co2e, kwh
from bot.chat.blocks import context, header, plain, section, short_time, usd
from bot.runtime.chat import Message

MAX_SHOWN = 15  # 3 blocks each stays under Slack's 50 per message
KIND_LABELS = {"fewer-gpus": "Fewer GPUs", "mig": "MIG profile", "smaller-gpu": "Smaller GPU", "spot": "Spot",
               "commitment": "Commitment"}


def saving_text(r: Recommendation) -> str:
    """``"saves $4,304.91/month, 438 kWh/month"`` (the energy where GPUs are given back), or why
    there is no figure."""
    if r.saving_usd_per_month is None:
        return "no saving until a node offers it" if r.kind == "mig" else "saving unknown: no committed rate"
    energy = r.energy_saved_kwh_per_month
    return f"saves {usd(r.saving_usd_per_month)}/month" + (f", {kwh(energy)}/month" if energy else "")


def energy_total(recs: Sequence[Recommendation],
                 energy: EnergyFactors | Mapping[str, EnergyFactors | None] | None = None) -> str:
    """``" and 438 kWh/month (120 kg CO2e)"``: what the advice would save at the GPUs together
    (each consumer once), with the CO2e when the cluster's ``energy`` factors give it; ``""``
    when no advice saves measured energy."""
    total = could_save_kwh(recs)
    if not total:
        return ""
    kg = could_save_co2e_kg(recs, energy)
    return f" and {kwh(total)}/month" + (f" ({co2e(kg)})" if kg is not None else "")


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
    energy: EnergyFactors | Mapping[str, EnergyFactors | None] | None = None,
) -> Message:
    """The answer to ``/gpu advise [team]``: every recommendation, highest saving first, each
    with its evidence and price sources, and what they would save together (USD, and kWh at the
    GPUs with its CO2e when ``energy``, the cluster's factors or each cluster's by name, gives
    it); those whose key is in ``silenced`` (snoozed or exempt) marked so. The first
    :data:`MAX_SHOWN` are shown and the rest counted; ``later`` counts new advice the scheduled
    post holds for its next post."""
    scope = f" for team {team}" if team else ""
    if not recs:
        text = (f"No advice{scope} at {short_time(at)}: no consumer's GPUs are larger than its use, on-demand where "
                "spot would do, or steady enough to commit to.")
        return Message(text=text, blocks=[section(text)])
    title = f"GPU advice{scope}: could save {usd(could_save)}/month{energy_total(recs, energy)}"
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
        "the total counts each consumer's largest saving once. Energy is at the GPUs, measured "
        "(DCGM_FI_DEV_POWER_USAGE), for GPUs given back only."
        + (f" CO2e: {plain(energy.describe())}." if isinstance(energy, EnergyFactors) else "")
    ))
    if sources:
        out.append(context("Price sources: " + " | ".join(f"[{n}] {text}" for text, n in sources.items())))
    return Message(text=plain(title), blocks=out)


def could_save_lines(recs: Sequence[Recommendation], could_save: float, n: int = 3) -> list[str]:
    """The digest's "could save" section: the top ``n`` recommendations and the total."""
    if not recs:
        return []
    lines = [f"*Could save {usd(could_save)}/month{energy_total(recs)}*"]
    lines += [f"• {plain(r.summary)}: {saving_text(r)}" for r in recs[:n]]
    if len(recs) > n:
        lines.append(f"• and {len(recs) - n} more: `/gpu advise`")
    return lines
