"""Whether right-sizing advice still holds right before its change is applied: the pod's GPUs,
read again over the re-check window, still within what the advice relied on (its
:class:`~actions.model.findings.AdviceLimits`). Pure.

The window runs from when the advice was made to now, at least ``recheck_window_seconds`` and at
most the advice's own ``window_seconds`` (:func:`recheck_seconds`). Missing telemetry is not
taken as fitting: a pod with no DCGM samples in the window, or no pod at all, leaves the advice
unconfirmed and nothing is changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from actions.model.findings import GpuResize
from actions.model.history import PodHistory
from actions.policy.advice import AdvicePolicy
from actions.text import duration, plural


def recheck_seconds(advised_at: datetime, now: datetime, policy: AdvicePolicy) -> float:
    """The re-check window in seconds: from ``advised_at`` to ``now``, at least
    ``policy.recheck_window_seconds``, at most ``policy.window_seconds``."""
    since = (now - advised_at).total_seconds()
    return min(max(since, policy.recheck_window_seconds), policy.window_seconds)


def _gib(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB"


def no_longer_holds(
    resize: GpuResize, pods: Sequence[PodHistory], container_busy: Mapping[tuple[str, str, str], float],
    window_seconds: float,
) -> str | None:
    """Why ``resize``'s advice no longer holds over the last ``window_seconds`` (seconds), read
    from ``pods`` (the target's pods now, each as the history source read it over that window)
    and ``container_busy`` ((namespace, pod, container) -> GPUs busy at once, the advice's
    quantile): one sentence, or None when every limit it recorded still holds. A resize without
    limits (recorded before they were) is not judged here: None."""
    limits = resize.limits
    if limits is None:
        return None
    window = duration(window_seconds)
    if not pods:
        return f"none of its pods runs now, so its GPU use over the last {window} cannot confirm the advice"
    seen = [p for p in pods if p.peak_fb_mib is not None or p.peak_engine_pct is not None or p.busy_gpus is not None]
    if not seen:
        names = ", ".join(p.pod for p in pods)
        return f"no DCGM samples of pod {names} in the last {window}, so the advice cannot be confirmed"
    out = []
    fb = max((p.peak_fb_mib for p in seen if p.peak_fb_mib is not None), default=None)
    if limits.fb_mib is not None and fb is None:
        out.append(f"no DCGM_FI_DEV_FB_USED samples in the last {window}, so its memory cannot be confirmed")
    elif limits.fb_mib is not None and fb > limits.fb_mib:
        out.append(f"peak framebuffer used {_gib(fb)} in the last {window}, more than the {_gib(limits.fb_mib)} "
                   "the advised size holds with its headroom")
    engine = max((p.peak_engine_pct for p in seen if p.peak_engine_pct is not None), default=None)
    if limits.engine_pct is not None and engine is not None and engine > limits.engine_pct + 1e-9:
        out.append(f"peak engine activity {engine:.1f}% in the last {window}, more than the advised size's "
                   f"{limits.engine_pct:.1f}% of the GPU")
    busy = _busy(resize, seen, container_busy)
    if limits.busy_gpus is not None and busy is not None and busy > limits.busy_gpus + 1e-9:
        out.append(f"{plural(busy, 'GPU')} busy at once in the last {window}, "
                   f"more than the {limits.busy_gpus:g} advised")
    return "; ".join(out) or None


def _busy(resize: GpuResize, pods: Sequence[PodHistory], container_busy: Mapping) -> float | None:
    if resize.container is not None:
        values = [v for (ns, pod, c), v in container_busy.items()
                  if c == resize.container and any((p.namespace, p.pod) == (ns, pod) for p in pods)]
        return max(values, default=None)
    known = [p.busy_gpus for p in pods if p.busy_gpus is not None]
    return sum(known) if known else None
