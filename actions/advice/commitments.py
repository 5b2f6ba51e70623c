"""Commit to the steady baseline: a team whose GPUs of one family are in use every hour pays
less for that floor under a Reserved Instance or Savings Plan than at the rates it pays now. Pure.

The baseline is the ``AdvicePolicy.baseline_quantile`` (default the 10th percentile) of hourly
GPUs in use over ``commitment_window_seconds`` (default 30 days), rounded down to whole GPUs:
nine hours in ten use at least that many, so a commitment for it is used nearly always. A team
whose GPUs were in use in fewer than ``min_baseline_coverage`` of the hours has a baseline of 0:
the hours with none are its 10th percentile. Committed rates come from
``advice.commitment_rates`` (negotiated or published; each names its source and as-of date),
else from ``prices.instance_types.<type>.reserved_usd_per_hour``, else from AWS's Pricing API (the
1-year standard No Upfront Reserved Instance rate) where live prices are enabled. That live rate is
advice of what a commitment would cost, never the price of capacity: the rate paid now is the
price book's (on-demand after any ``prices.discounts`` already bought).

The opposite (:func:`advise_reserved`): reserved GPUs idle in more than
``reserved_idle_ratio`` of their hours cost that share of what they are billed for nothing; the
advice is to move on-demand work onto them (a Kueue ResourceFlavor for the reserved nodes first
in the ClusterQueue) or to commit to fewer at renewal.
"""

from __future__ import annotations

import math

from actions.advice.model import Recommendation, ReservedUse, TeamBaseline
from actions.model.kube import CapacityType
from actions.model.quote import PriceQuote
from actions.model.times import HOURS_PER_MONTH
from actions.policy.advice import AdvicePolicy
from actions.policy.teams import ADMIN_TEAM
from actions.pricing.book import PriceBook, PriceNotFound
from actions.pricing.catalog import family_key
from actions.text import usd_rate


def configured_commitment(gpu_model: str, policy: AdvicePolicy) -> PriceQuote | None:
    """``policy.commitment_rates`` for ``gpu_model``'s family as a quote (USD per GPU-hour,
    ``basis="commitment"``), or ``None`` when none is configured."""
    family = family_key(gpu_model)
    rate = policy.commitment_rates.get(family)
    if rate is None:
        return None
    return PriceQuote(
        usd_per_gpu_hour=rate.usd_per_gpu_hour, capacity_type=CapacityType.RESERVED,
        source=f"config advice.commitment_rates.{family} ({rate.term}): {rate.source}",
        as_of=rate.as_of, basis="commitment", gpu_model=family,
    )


def committed_rate(b: TeamBaseline, prices: PriceBook, policy: AdvicePolicy) -> PriceQuote | None:
    """What a commitment for ``b``'s GPU family would cost, USD per GPU-hour:
    ``policy.commitment_rates`` first, then :meth:`~actions.pricing.book.PriceBook.commitment_quote`
    (the config's reserved rate for the team's instance type, then a live Reserved Instance rate,
    1-year No Upfront, AWS Pricing API, when ``prices.aws`` is enabled); ``None`` when none is
    known."""
    return configured_commitment(b.gpu_model, policy) or prices.commitment_quote(b.instance_type)


def advise_commitment(b: TeamBaseline, prices: PriceBook, policy: AdvicePolicy) -> Recommendation | None:
    """A commitment for ``b``'s steady baseline (module docstring), or ``None`` when the team's
    use swings below one GPU, is already reserved, or the committed rate is no cheaper. Without
    a committed rate the advice carries no dollars and says how to set one. Pure."""
    if b.capacity is CapacityType.RESERVED or b.hours <= 0:
        return None
    coverage = b.hours_in_use / b.hours
    baseline = b.baseline_gpus if coverage >= policy.min_baseline_coverage else 0.0
    gpus = math.floor(baseline + 1e-9)
    if gpus < 1:
        return None
    family = family_key(b.gpu_model)
    paying = CapacityType.ON_DEMAND if b.capacity is CapacityType.UNKNOWN else b.capacity
    try:
        paid = prices.quote(b.instance_type, paying, b.gpu_model)
    except PriceNotFound:
        return None
    paid_rate = round(paid.usd_per_gpu_hour, 4)
    gpu_hours = gpus * HOURS_PER_MONTH
    current = round(gpu_hours * paid_rate, 2)
    pct = round(policy.baseline_quantile * 100, 2)
    days = policy.commitment_window_seconds / 86400
    evidence: list[tuple[str, str]] = [
        (f"hourly {family} GPUs in use, p{pct:g} over {days:g} days", f"{b.baseline_gpus:g}"),
        ("hours with GPUs in use", f"{b.hours_in_use:g} of {b.hours:g}"),
    ]
    if b.peak_gpus is not None:
        evidence.append(("most GPUs in use in an hour", f"{b.peak_gpus:g}"))
    evidence.append((f"paid now ({paying.value})", f"{usd_rate(paid_rate)}/GPU-hour"))
    summary = f"commit to {gpus} {family} GPU{'s' if gpus > 1 else ''} for team {b.team}"
    change = (
        f"buy a Reserved Instance or Savings Plan covering {gpus} {family} GPU{'s' if gpus > 1 else ''}"
        + (f" ({b.instance_type})" if b.instance_type else "")
        + "; once bought, add it to prices.discounts and list its node pool in policy.reserved_nodepools"
    )
    committed = committed_rate(b, prices, policy)
    key = f"commitment/{b.team}/{family}"
    if committed is None:
        return Recommendation(
            kind="commitment", key=key, team=b.team, namespace="", subject=f"team {b.team}, {family}",
            summary=summary, change=change, current_usd_per_month=current, advised_usd_per_month=None,
            saving_usd_per_month=None, evidence=tuple(evidence), prices=(paid,),
            notes=(f"no committed rate known for {family}: set advice.commitment_rates.{family} "
                   "(usd_per_gpu_hour, term, source, as_of) to see the saving",),
        )
    rate = round(committed.usd_per_gpu_hour, 4)
    if rate >= paid_rate:
        return None
    advised = round(gpu_hours * rate, 2)
    evidence.append(("committed rate", f"{usd_rate(rate)}/GPU-hour"))
    return Recommendation(
        kind="commitment", key=key, team=b.team, namespace="", subject=f"team {b.team}, {family}",
        summary=summary, change=change, current_usd_per_month=current, advised_usd_per_month=advised,
        saving_usd_per_month=round(current - advised, 2), evidence=tuple(evidence), prices=(paid, committed),
        notes=(f"{gpus} GPUs x 730 h x ({usd_rate(paid_rate)} - {usd_rate(rate)}) per GPU-hour",),
    )


def advise_reserved(r: ReservedUse, prices: PriceBook, policy: AdvicePolicy) -> Recommendation | None:
    """Advice for reserved GPUs idle in more than ``policy.reserved_idle_ratio`` of their hours,
    for the cluster admins: what the idle share costs a month at the committed rate
    (``policy.commitment_rates``), else at what reserved capacity is billed (the price book's
    reserved quote: ``reserved_usd_per_hour``, else the on-demand price after any
    ``prices.discounts``, as its source says; never a live Reserved Instance rate). ``None`` when
    they are used enough or no price is known. Pure."""
    if r.gpus <= 0 or r.idle_share <= policy.reserved_idle_ratio:
        return None
    family = family_key(r.gpu_model)
    quote = configured_commitment(r.gpu_model, policy)
    if quote is None:
        try:
            quote = prices.quote(r.instance_type, CapacityType.RESERVED, r.gpu_model)
        except PriceNotFound:
            return None
    rate = round(quote.usd_per_gpu_hour, 4)
    paid = round(r.gpus * HOURS_PER_MONTH * rate, 2)
    idle = round(paid * r.idle_share, 2)
    days = policy.commitment_window_seconds / 86400
    idle_gpus = r.gpus * r.idle_share
    return Recommendation(
        kind="reserved-idle", key=f"reserved-idle/{family}", team=ADMIN_TEAM, namespace="",
        subject=f"reserved {family} GPUs",
        summary=f"use or shrink {r.gpus:g} reserved {family} GPUs idle {r.idle_share:.0%} of the time",
        change="order a ResourceFlavor for the reserved nodes first in the ClusterQueues so on-demand work lands on "
        f"them, or commit to about {r.gpus - idle_gpus:.0f} at renewal",
        current_usd_per_month=paid, advised_usd_per_month=round(paid - idle, 2), saving_usd_per_month=idle,
        evidence=(
            (f"reserved {family} GPUs", f"{r.gpus:g} on {len(r.nodes)} node(s)"),
            (f"idle GPU-hours over {days:g} days (activity <= {policy.busy_engine_pct:g}%)", f"{r.idle_share:.1%}"),
            ("paid", f"{usd_rate(rate)}/GPU-hour, used or not"),
        ),
        prices=(quote,),
        notes=(f"{r.gpus:g} GPUs x 730 h x {usd_rate(rate)} x {r.idle_share:.1%} idle",),
    )
