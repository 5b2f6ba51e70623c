"""Advice that saves money on GPUs used badly, not only idle ones. Pure: usage history and
prices in, :class:`~actions.advice.model.Recommendation` out, highest USD per month saved first.

Per consumer (:func:`advise_consumer`), over the last ``AdvicePolicy.window_seconds``:

- **fewer GPUs**: ``N`` whole GPUs requested but at most ``k < N`` busy at once (the
  ``busy_quantile``, default the 99th percentile, of GPUs above ``busy_engine_pct``): ``k``
  GPUs, saving ``(N - k) / N`` of its cost, when a node its pods can land on offers that many
  whole GPUs of its model;
- **a MIG profile**: one GPU (or one needed) whose peak framebuffer x (1 + ``fb_headroom``) and
  peak engine activity fit a MIG profile of its GPU that a node its pods can land on offers
  (:mod:`actions.advice.targets`: ``nvidia.com/mig-<profile>`` allocatable under the ``mixed``
  strategy, or the ``single`` strategy's product); it then costs the profile's share of the GPU
  (``1g`` of 7 slices: 1/7), as the bot's GPU accounting charges a MIG instance. When a profile
  of the MIG table would fit but no such node offers one, no profile is advised and the advice
  says why (advice only, no saving);
- **a smaller GPU**: the same fit on a cheaper GPU model of the catalog on the same cloud
  (:mod:`actions.advice.smaller_gpu`: memory from NVIDIA's datasheets, peak activity scaled by the
  datasheets' throughput ratio under ``smaller_gpu_max_pct``); when both fit, the one that costs
  less is advised and the other named in its notes, so a consumer gets one right-sizing advice;
- **spot**: an on-demand job (never a notebook, never serving) that restarts cleanly and has DCGM
  history in the window, priced at the interruption-adjusted spot rate ``spot x I / (I - C/2)`` of
  :mod:`actions.estimate`.

Per team and GPU family (:mod:`actions.advice.commitments`): a commitment for the steady baseline.

A consumer Kueue manages is never resized in place (:data:`actions.advice.targets.KUEUE_RULE`):
its advice says to resubmit with the advised size and carries no resize action.

Money: a consumer's GPU-hours a month are its window's GPU-hours x 730 h / window hours;
a rate is rounded to 4 decimals (USD per GPU-hour) and a monthly figure to the cent, so the
figures shown multiply out. Right-sizing and spot for one consumer overlap: :func:`could_save`
counts only the larger of them per consumer.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Iterable, Sequence

from actions.advice.commitments import advise_commitment, advise_reserved
from actions.advice.energy import gpus_freed_kwh
from actions.advice.model import (
    CHECKPOINT_ANNOTATION,
    INTERRUPTION_ANNOTATION,
    ConsumerUsage,
    Recommendation,
    ReservedUse,
    TeamBaseline,
)
from actions.advice.smaller_gpu import SmallerGpu, smaller_gpu
from actions.advice.targets import KUEUE_RULE, MigOffer, mig_fit, no_mig_reason, resubmit, whole_gpus_fit
from actions.estimate.price import interruption_overhead
from actions.hardware.mig import smallest_profile
from actions.hardware.mig_names import gfd_name
from actions.model.findings import AdviceLimits, GpuResize
from actions.model.kube import CapacityType
from actions.model.quote import PriceQuote
from actions.policy.advice import AdvicePolicy
from actions.pricing.book import PriceBook, PriceNotFound
from actions.text import format_hours, usd, usd_rate

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$")
_UNIT_HOURS = {"s": 1 / 3600, "m": 1 / 60, "h": 1.0, "d": 24.0}


def rate4(usd_per_gpu_hour: float) -> float:
    """A rate rounded to 4 decimals, USD per GPU-hour, as shown."""
    return round(usd_per_gpu_hour + 0.0, 4)


def money(usd: float) -> float:
    """USD to the cent."""
    return round(usd + 0.0, 2)


def duration_hours(text: str | None) -> float | None:
    """Hours in an annotation value: ``"30m"``, ``"3h"``, ``"1d"``, ``"1800s"`` or plain
    seconds (``"1800"``); ``None`` for a value that is none of these."""
    if not text:
        return None
    match = _DURATION.match(text)
    if match is None:
        return None
    return float(match.group(1)) * _UNIT_HOURS[match.group(2) or "s"]


def _mib(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB ({mib:,.0f} MiB)"


def _price(u: ConsumerUsage, prices: PriceBook) -> PriceQuote | None:
    try:
        return prices.quote(u.instance_type, u.capacity, u.gpu_model)
    except PriceNotFound:
        return None


def _history(u: ConsumerUsage, window: str) -> list[tuple[str, str]]:
    out = [("window", window)]
    if u.gpu_hours is not None:
        out.append(("GPU-hours in the window", f"{u.gpu_hours:,.1f}"))
    return out


def works_unseen(u: ConsumerUsage, policy: AdvicePolicy) -> bool:
    """Whether the GPUs drew more than idle power while engine activity never rose above
    ``busy_engine_pct``: light serving on a real H100 reads GPU_UTIL 0% at 190-250 W, so activity
    cannot tell how much GPU such a consumer needs."""
    return (
        u.peak_engine_pct is not None and u.peak_engine_pct <= policy.busy_engine_pct
        and u.mean_power_w is not None and u.idle_power_ceiling_w is not None
        and u.mean_power_w > u.idle_power_ceiling_w
    )


# The kinds whose pod template is at spec.template.spec.containers and that the executors patch.
RESIZABLE = {("kubeflow.org/v1", "Notebook"), ("apps/v1", "Deployment"), ("apps/v1", "StatefulSet")}


def resize_of(u: ConsumerUsage, after: tuple[tuple[str, int], ...],
              node_selector: tuple[tuple[str, str], ...] = (), *, limits: AdviceLimits) -> GpuResize | None:
    """The pod template change that makes right-sizing advice: ``nvidia.com/gpu: whole_gpus``
    -> ``after`` in its one pod's template (and ``node_selector`` labels added), holding while
    its GPUs stay within ``limits`` (re-checked before acting), or ``None``
    (advice only) when the consumer runs more than one pod (the GPUs are spread over replicas:
    fewer pods is a person's call), its object is not a Notebook, Deployment or StatefulSet, or
    Kueue manages it (resubmitted, never patched in place)."""
    t = u.target
    if t is None or (t.api_version, t.kind) not in RESIZABLE or len(u.pods) != 1 or u.kueue:
        return None
    return GpuResize(before=(("nvidia.com/gpu", u.whole_gpus),), after=after, node_selector=node_selector,
                     limits=limits)


def container_plan(u: ConsumerUsage) -> list[tuple[str, int, int]]:
    """For one pod of several containers requesting whole GPUs, each such container as ``(name,
    GPUs now, GPUs it needs)``: the most it had busy at once (its own quantile), at least 1 and
    at most what it requests. Empty when any of them has no per-container figure. Pure."""
    whole = [c for c in u.containers if c[1] > 0]
    if len(whole) < 2 or any(b is None for _, _, b in whole):
        return []
    return [(n, c, min(c, max(1, math.ceil(b - 1e-9)))) for n, c, b in whole if b is not None]


def container_resize(u: ConsumerUsage, change: tuple[str, int, int]) -> GpuResize | None:
    """The pod template change of one container: ``(name, GPUs now, GPUs advised)``, naming the
    container; ``None`` (advice only) where :func:`resize_of` would give none."""
    name, now, advised = change
    limits = AdviceLimits(busy_gpus=advised)  # the container's own GPUs busy at once
    whole = resize_of(u, (("nvidia.com/gpu", advised),), limits=limits)
    return None if whole is None else GpuResize(
        before=(("nvidia.com/gpu", now),), after=(("nvidia.com/gpu", advised),), container=name, limits=limits)


def mig_node_selector(gpu_model: str, profile: str) -> tuple[tuple[str, str], ...]:
    """The node label that says a node offers MIG ``profile`` of ``gpu_model`` (its NVML name,
    as DCGM's ``modelName`` gives it): GPU Feature Discovery, under the ``mixed`` MIG strategy,
    labels such a node ``nvidia.com/mig-<profile>.product: <name, spaces as dashes>-MIG-<profile>``
    (its value is the same whatever the count, unlike ``.count``; and it names the parent GPU, so
    an A100's 1g.10gb is not taken for an H100's). Empty when the model is unknown. The advice
    names the label of the node that offers the profile; this is what GFD would write."""
    if not gpu_model.strip():
        return ()
    return ((f"nvidia.com/mig-{profile}.product", f"{gfd_name(gpu_model)}-MIG-{profile}"),)


def _mig(u: ConsumerUsage, fit, offer: MigOffer, quote: PriceQuote, current: float, base: list,
         policy: AdvicePolicy) -> Recommendation:
    signal = u.engine_signal or "engine activity"
    rate, monthly = rate4(quote.usd_per_gpu_hour), u.gpu_hours_per_month
    nodes = sorted(n.node for n in u.landing if offer in n.mig)
    shown = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
    evidence = [
        *base,
        ("peak framebuffer used (DCGM_FI_DEV_FB_USED)", _mib(u.peak_fb_mib or 0)),
        (f"needed with {policy.fb_headroom:.0%} headroom", _mib(fit.needed_mib)),
        (f"peak {signal}", f"{u.peak_engine_pct:.1f}%"),
        (f"MIG {fit.profile}", f"{_mib(fit.memory_mib)}, {fit.slices} of {fit.gpu_slices} compute slices ({fit.share:.1%})"),
        (f"offered (MIG strategy {offer.strategy}) by", f"{len(nodes)} node(s) it can land on: {shown}"),
    ]
    advised = money(current * fit.share / u.whole_gpus)
    key, value = offer.selector
    what = (f"`{offer.resource}: 1`" if offer.strategy == "mixed"
            else f"`nvidia.com/gpu: 1` (one {offer.name.profile} instance, MIG strategy single)")
    change = (f"request {what} instead of `nvidia.com/gpu: {u.whole_gpus}`, nodeSelector `{key}: {value}` "
              f"(a node whose GPUs are partitioned with {offer.name.profile}, GPU Operator mig.strategy {offer.strategy})")
    return Recommendation(
        kind="mig", key=f"mig/{u.key}", team=u.team, namespace=u.namespace, subject=u.subject,
        summary=f"run {u.subject} on MIG {fit.profile} instead of {u.whole_gpus} whole {u.gpu_model}",
        change=resubmit(u.kueue, change),
        current_usd_per_month=current, advised_usd_per_month=advised,
        saving_usd_per_month=money(current - advised), evidence=tuple(evidence), prices=(quote,),
        notes=(f"{usd_rate(rate)}/GPU-hour x {monthly:,.1f} GPU-hours a month; a {fit.profile} instance "
               f"is charged {fit.slices}/{fit.gpu_slices} of a GPU",),
        target=u.target, resize=resize_of(u, ((offer.resource, 1),), (offer.selector,), limits=AdviceLimits(
            fb_mib=fit.memory_mib / (1 + policy.fb_headroom), engine_pct=100 * fit.share, busy_gpus=1)),
    )


def _no_mig(u: ConsumerUsage, fit, why: str, quote: PriceQuote, current: float, base: list) -> Recommendation:
    """Advice only: a profile of the MIG table would fit, but no node it can land on offers one."""
    advised = money(current * fit.share / u.whole_gpus)
    return Recommendation(
        kind="mig", key=f"mig/{u.key}", team=u.team, namespace=u.namespace, subject=u.subject,
        summary=f"no MIG profile for {u.subject}: {why}",
        change=f"none a team can make: a node its pods can land on must offer {fit.profile} of {u.gpu_model} "
        "(the cluster admins' GPU Operator mig.strategy and mig-parted config) before it can be requested",
        current_usd_per_month=current, advised_usd_per_month=None, saving_usd_per_month=None,
        evidence=tuple(base), prices=(quote,),
        notes=(f"on such a node {fit.profile} would cost {usd(advised)} a month instead of {usd(current)}",),
        target=u.target,
    )


def _smaller(u: ConsumerUsage, fit: SmallerGpu, quote: PriceQuote, current: float, base: list,
             policy: AdvicePolicy) -> Recommendation:
    signal = u.engine_signal or "engine activity"
    offer, spec, was = fit.quote, fit.spec, fit.current
    per_gpu = u.gpu_hours_per_month / u.whole_gpus
    rate = rate4(offer.usd_per_gpu_hour)
    advised = money(per_gpu * rate)
    evidence = [
        *base,
        ("peak framebuffer used (DCGM_FI_DEV_FB_USED)", _mib(u.peak_fb_mib or 0)),
        (f"needed with {policy.fb_headroom:.0%} headroom", _mib(fit.needed_mib)),
        (f"{spec.name} memory", f"{_mib(spec.memory_mib)} ({spec.source}, read {spec.as_of})"),
        (f"peak {signal}", f"{u.peak_engine_pct:.1f}%"),
        ("compute assumed", f"{was.name} -> {spec.name}: {was.tflops:g} -> {spec.tflops:g} dense FP16/BF16 tensor "
         f"TFLOPS (x{fit.tflops_ratio:.2f}), {was.bandwidth_gbs:g} -> {spec.bandwidth_gbs:g} GB/s memory bandwidth "
         f"(x{fit.bandwidth_ratio:.2f}); its work assumed to take the larger: {u.peak_engine_pct:.1f}% x "
         f"{fit.slowdown:.2f} = {fit.scaled_pct:.1f}% of the {spec.family}, at most {policy.smaller_gpu_max_pct:g}%"),
        (f"cheapest {spec.family} on {fit.cloud}", f"{offer.instance_type} at {usd_rate(rate)}/GPU-hour"),
    ]
    one = "one" if u.whole_gpus > 1 else "an"
    return Recommendation(
        kind="smaller-gpu", key=f"smaller-gpu/{u.key}", team=u.team, namespace=u.namespace, subject=u.subject,
        summary=f"run {u.subject} on {one} {spec.family} ({offer.instance_type}) instead of "
        f"{u.whole_gpus} {u.gpu_model}",
        change=f"schedule it on {spec.family} nodes: nodeSelector `node.kubernetes.io/instance-type: "
        f"{offer.instance_type}` (or a node pool of {spec.family} instances) with `nvidia.com/gpu: 1`",
        current_usd_per_month=current, advised_usd_per_month=advised,
        saving_usd_per_month=money(current - advised), evidence=tuple(evidence), prices=(quote, offer),
        notes=(f"{usd_rate(rate)}/GPU-hour x {per_gpu:,.1f} GPU-hours a month on one {spec.family}; the pod's CPU "
               f"and memory requests must fit {offer.instance_type}, or a larger {spec.family} instance type is "
               "needed at its own price",),
        target=u.target,
    )


def _right_size(u: ConsumerUsage, quote: PriceQuote, prices: PriceBook, policy: AdvicePolicy,
                window: str) -> Recommendation | None:
    """Fewer GPUs, or, when one GPU is all it needs, a MIG profile or a smaller GPU model:
    whichever costs less, the other named in its notes."""
    if u.whole_gpus < 1 or u.busy_gpus is None:
        return None
    if works_unseen(u, policy):
        return None
    rate = rate4(quote.usd_per_gpu_hour)
    monthly = u.gpu_hours_per_month
    current = money(monthly * rate)
    needed = max(1, math.ceil(u.busy_gpus - 1e-9))
    signal = u.engine_signal or "engine activity"
    pct = round(policy.busy_quantile * 100, 2)
    evidence = [
        *_history(u, window),
        (f"p{pct:g} of GPUs busy at once ({signal} > {policy.busy_engine_pct:g}%)", f"{u.busy_gpus:g} of {u.whole_gpus}"),
    ]
    plan = container_plan(u)
    whole_containers = [c for c in u.containers if c[1] > 0]
    if len(whole_containers) > 1:
        # Each container keeps its own GPUs: no fewer than one each, and, known per container,
        # what it used at once.
        needed = sum(k for _, _, k in plan) if plan else max(needed, len(whole_containers))
        if plan:
            evidence.append((f"p{pct:g} of GPUs busy at once per container",
                             ", ".join(f"{n} {b:g} of {c}" for n, c, b in whole_containers)))
    wanted = why = None  # a MIG profile that would fit and why no node offers it
    if needed == 1 and u.peak_fb_mib is not None and u.peak_engine_pct is not None:
        offered = mig_fit(u.gpu_model, u.peak_fb_mib, u.peak_engine_pct, policy.fb_headroom, u.landing)
        wanted = None if offered else smallest_profile(u.gpu_model, u.peak_fb_mib, u.peak_engine_pct, policy.fb_headroom)
        why = no_mig_reason(u.gpu_model, wanted, u.landing) if wanted else None
        smaller = smaller_gpu(u.gpu_model, quote, prices, u.peak_fb_mib, u.peak_engine_pct,
                              headroom=policy.fb_headroom, max_pct=policy.smaller_gpu_max_pct)
        options = sorted(
            [r for r in (offered and _mig(u, *offered, quote, current, evidence, policy),
                         smaller and _smaller(u, smaller, quote, current, evidence, policy)) if r],
            key=lambda r: (r.advised_usd_per_month, r.kind),
        )
        if options:
            best, *other = options
            # One piece of advice per consumer: the cheaper one, the other named beside it.
            return replace(best, notes=best.notes + tuple(
                f"also fits: {o.summary.removeprefix('run ' + u.subject + ' on ')} at {usd(o.advised_usd_per_month)}"
                f" a month, saving less" for o in other) + ((f"not MIG {wanted.profile}: {why}",) if why else ()))
        if why and needed >= u.whole_gpus:
            return _no_mig(u, wanted, why, quote, current, evidence)
    if needed >= u.whole_gpus:
        return None
    per_pod = needed if len(u.pods) <= 1 else math.ceil(needed / len(u.pods))
    if not whole_gpus_fit(per_pod, u.gpu_model, u.landing):
        return None  # no node its pods can land on offers that many of its GPUs
    advised = money(current * needed / u.whole_gpus)
    changed = [(n, c, k) for n, c, k in plan if k < c]
    if len(whole_containers) > 1:
        change = ("; ".join(f"set `nvidia.com/gpu: {k}` in container `{n}` (now {c})" for n, c, k in changed)
                  if changed else f"run it on {needed} GPUs in all (now {u.whole_gpus} over {len(whole_containers)} "
                  "containers): fewer GPUs in the containers that use fewer")
        resize = container_resize(u, changed[0]) if len(changed) == 1 else None
    elif len(u.pods) == 1:
        change, resize = f"set `nvidia.com/gpu: {needed}` in its pod template (now {u.whole_gpus})", resize_of(
            u, (("nvidia.com/gpu", needed),), limits=AdviceLimits(busy_gpus=needed))
    else:
        change, resize = (f"run it on {needed} GPUs in all (now {u.whole_gpus} over {len(u.pods)} pods): fewer pods "
                          "or fewer GPUs each"), None
    if u.kueue:
        change = f"resubmit it with {needed} GPU{'s' if needed > 1 else ''} ({u.kueue}; {KUEUE_RULE}): {change}"
    return Recommendation(
        kind="fewer-gpus", key=f"fewer-gpus/{u.key}", team=u.team, namespace=u.namespace, subject=u.subject,
        summary=f"give {u.subject} {needed} GPU{'s' if needed > 1 else ''} instead of {u.whole_gpus}",
        change=change,
        current_usd_per_month=current, advised_usd_per_month=advised,
        saving_usd_per_month=money(current - advised), evidence=tuple(evidence), prices=(quote,),
        notes=(f"{usd_rate(rate)}/GPU-hour x {monthly:,.1f} GPU-hours a month x {needed}/{u.whole_gpus}",
               *((f"not MIG {wanted.profile}: {why}",) if wanted and why else ())),
        target=u.target, resize=resize, energy_saved_kwh_per_month=gpus_freed_kwh(u, u.whole_gpus - needed),
    )


def _spot(u: ConsumerUsage, quote: PriceQuote, prices: PriceBook, policy: AdvicePolicy, window: str) -> Recommendation | None:
    # Notebooks have a person waiting on them and serving has users: an interruption is an outage.
    if u.role != "job" or u.capacity is not CapacityType.ON_DEMAND or u.restarts_cleanly is None:
        return None
    if u.gpu_hours is None:
        return None  # its saving is GPU-hours x rates: unknown without history ("no advice for them")
    try:
        spot = prices.quote(u.instance_type, CapacityType.SPOT, u.gpu_model, strict=True)
    except PriceNotFound:
        return None
    interruption = duration_hours(u.annotations.get(INTERRUPTION_ANNOTATION)) or policy.interruption_hours
    checkpoint = duration_hours(u.annotations.get(CHECKPOINT_ANNOTATION))
    checkpoint = policy.checkpoint_hours if checkpoint is None else checkpoint
    if checkpoint / 2 >= interruption:
        return None  # it would never make progress on spot
    factor = interruption_overhead(interruption, checkpoint)
    od_rate, spot_rate = rate4(quote.usd_per_gpu_hour), rate4(spot.usd_per_gpu_hour)
    effective = rate4(spot_rate * factor)
    if effective >= od_rate:
        return None
    monthly = u.gpu_hours_per_month
    current, advised = money(monthly * od_rate), money(monthly * effective)
    said = "from its annotations" if INTERRUPTION_ANNOTATION in u.annotations or CHECKPOINT_ANNOTATION in u.annotations else "assumed"
    evidence = [
        *_history(u, window),
        ("capacity", "on-demand"),
        ("restarts cleanly", u.restarts_cleanly),
        (f"interruption every / checkpoint every ({said})", f"{format_hours(interruption)} / {format_hours(checkpoint)}"),
        ("spot, interruption-adjusted", f"{usd_rate(spot_rate)} x {factor:.4f} = {usd_rate(effective)}/GPU-hour"),
    ]
    return Recommendation(
        kind="spot", key=f"spot/{u.key}", team=u.team, namespace=u.namespace, subject=u.subject,
        summary=f"run {u.subject} on spot: {usd_rate(effective)} instead of {usd_rate(od_rate)} per GPU-hour",
        change="schedule it on spot nodes: nodeSelector `karpenter.sh/capacity-type: spot` in its pod template, "
        "or a spot ResourceFlavor first in its ClusterQueue",
        current_usd_per_month=current, advised_usd_per_month=advised,
        saving_usd_per_month=money(current - advised), evidence=tuple(evidence), prices=(quote, spot),
        notes=(f"each interruption redoes half a checkpoint interval: spot x {format_hours(interruption)} / "
               f"({format_hours(interruption)} - {format_hours(checkpoint)}/2)",),
        target=u.target,
    )


def advise_consumer(u: ConsumerUsage, prices: PriceBook, policy: AdvicePolicy) -> list[Recommendation]:
    """Right-sizing (fewer GPUs or MIG) and spot for one consumer (see the module docstring).
    Nothing for reserved capacity (paid for, used or not) or a consumer no price covers. Pure."""
    if u.capacity is CapacityType.RESERVED:
        return []
    quote = _price(u, prices)
    if quote is None:
        return []
    window = format_hours(u.window_seconds / 3600)
    found = [_right_size(u, quote, prices, policy, window), _spot(u, quote, prices, policy, window)]
    return [r for r in found if r is not None]


def advise(
    usages: Iterable[ConsumerUsage],
    baselines: Iterable[TeamBaseline],
    prices: PriceBook,
    policy: AdvicePolicy,
    *,
    team: str | None = None,
    reserved: Iterable[ReservedUse] = (),
) -> list[Recommendation]:
    """Every recommendation for ``usages``, ``baselines`` and ``reserved`` capacity (only
    ``team``'s when given; reserved capacity only without a team) saving
    at least ``policy.min_saving_usd_per_month``, highest USD per month saved first; advice
    without a price (a commitment with no committed rate known) last. Pure."""
    out: list[Recommendation] = []
    for u in usages:
        if team is None or u.team == team:
            out += advise_consumer(u, prices, policy)
    for b in baselines:
        if team is None or b.team == team:
            rec = advise_commitment(b, prices, policy)
            if rec is not None:
                out.append(rec)
    if team is None:  # reserved capacity belongs to the cluster, not a team
        out += [rec for rec in (advise_reserved(r, prices, policy) for r in reserved) if rec is not None]
    kept = [r for r in out if r.saving_usd_per_month is None or r.saving_usd_per_month >= policy.min_saving_usd_per_month]
    return sorted(kept, key=lambda r: (r.saving_usd_per_month is None, -(r.saving_usd_per_month or 0), r.key))


def could_save(recs: Sequence[Recommendation]) -> float:
    """USD per month the advice would save together: per consumer only its largest saving
    (fewer GPUs, MIG and spot for one consumer overlap), plus every commitment and idle
    reservation. Pure."""
    best: dict[str, float] = {}
    for r in recs:
        if r.saving_usd_per_month is None:
            continue
        who = r.key if r.kind in ("commitment", "reserved-idle") else r.key.split("/", 1)[1]
        best[who] = max(best.get(who, 0.0), r.saving_usd_per_month)
    return money(sum(best.values()))
