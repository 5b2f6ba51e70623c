"""The cheapest smaller GPU model a consumer's peak fits, on the same cloud. Pure.

A GPU model fits when its memory (:mod:`actions.hardware.specs`, decimal GB) holds the peak
framebuffer x (1 + headroom) and the peak engine activity, scaled to the slower GPU, stays at
or under a ceiling (``AdvicePolicy.smaller_gpu_max_pct``, default 80%). The scaling is honest
about what a smaller GPU lacks: work that kept the current GPU busy p% of the time is assumed
to keep the other busy p% x the larger of the two datasheet ratios, dense FP16/BF16 tensor
TFLOPS and memory bandwidth (compute-bound work slows by the first, memory-bound by the
second). Activity is the share of time a kernel ran, not of the FLOPS used, so this is an
upper-bound guess, and the advice says so.

Candidates are the price catalog's instance types on the consumer's cloud (the cloud of its own
instance type's catalog entry), priced through the price book (config overrides and live prices
first) at the consumer's capacity type; the cheapest per GPU-hour wins, and it must be cheaper
than what the consumer pays now. A consumer whose instance type is not in the catalog, or whose
GPU no datasheet figure covers, gets no such advice.
"""

from __future__ import annotations

from dataclasses import dataclass

from actions.hardware.specs import GpuSpec, gpu_spec
from actions.model.kube import CapacityType
from actions.model.quote import PriceQuote
from actions.pricing.book import PriceBook, PriceNotFound


@dataclass(frozen=True)
class SmallerGpu:
    """A fit: ``spec`` the advised GPU beside ``current``; ``quote`` its price per GPU-hour on
    ``quote.instance_type``; ``cloud`` both run on; ``needed_mib`` (peak FB x (1 + headroom),
    MiB); ``slowdown`` (ratio, the larger of the TFLOPS and bandwidth ratios current/advised);
    ``scaled_pct`` (peak activity x slowdown, percent 0-100)."""

    spec: GpuSpec
    current: GpuSpec
    quote: PriceQuote
    cloud: str
    needed_mib: float
    slowdown: float
    scaled_pct: float

    @property
    def tflops_ratio(self) -> float:
        return self.current.tflops / self.spec.tflops

    @property
    def bandwidth_ratio(self) -> float:
        return self.current.bandwidth_gbs / self.spec.bandwidth_gbs


def smaller_gpu(
    gpu_model: str, quote: PriceQuote, prices: PriceBook, peak_fb_mib: float, peak_engine_pct: float,
    *, headroom: float = 0.10, max_pct: float = 80.0,
) -> SmallerGpu | None:
    """The cheapest GPU model on the cloud of ``quote.instance_type`` (the consumer's price, USD
    per GPU-hour, at its capacity type) whose memory holds ``peak_fb_mib`` (MiB) x (1 +
    ``headroom``, ratio 0-1) and on which ``peak_engine_pct`` (percent 0-100 of ``gpu_model``)
    scaled by the slowdown stays at or under ``max_pct`` (percent 0-100); ``None`` when none is
    cheaper than ``quote`` or the facts to judge are missing. Pure."""
    current = gpu_spec(gpu_model)
    here = prices.catalog.entry(quote.instance_type) if quote.instance_type else None
    if current is None or here is None:
        return None
    needed = peak_fb_mib * (1 + headroom)
    strict = quote.capacity_type is CapacityType.SPOT  # a spot consumer is compared with spot prices only
    best: SmallerGpu | None = None
    for entry in prices.catalog.entries:
        spec = gpu_spec(entry.gpu_model, entry.gpu_memory)
        if entry.cloud != here.cloud or spec is None or spec == current or spec.memory_mib < needed:
            continue
        slowdown = max(current.tflops / spec.tflops, current.bandwidth_gbs / spec.bandwidth_gbs)
        scaled = peak_engine_pct * slowdown
        if scaled > max_pct:
            continue
        try:
            offer = prices.quote(entry.instance_type, quote.capacity_type, entry.gpu_model, strict=strict)
        except PriceNotFound:
            continue
        if round(offer.usd_per_gpu_hour, 4) >= round(quote.usd_per_gpu_hour, 4):
            continue
        if best is None or (offer.usd_per_gpu_hour, entry.instance_type) < (
            best.quote.usd_per_gpu_hour, best.quote.instance_type or ""
        ):
            best = SmallerGpu(spec, current, offer, here.cloud, needed, slowdown, scaled)
    return best
