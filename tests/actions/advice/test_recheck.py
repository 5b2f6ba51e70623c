"""Whether right-sizing advice still holds over the re-check window (actions.advice.recheck):
pure, over the figures a history source reads per pod (actions.model.history.PodHistory). The
figures on the wire, from a real Prometheus, are tests/bot/chat/test_advice_recheck.py's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from actions.advice.recheck import no_longer_holds, recheck_seconds
from actions.model.findings import AdviceLimits, GpuResize
from actions.model.history import PodHistory
from actions.policy.advice import AdvicePolicy
from tests.support.clock import T0

HOUR = 3600.0
TO_TWO = GpuResize(before=(("nvidia.com/gpu", 8),), after=(("nvidia.com/gpu", 2),), limits=AdviceLimits(busy_gpus=2))
TO_SLICE = GpuResize(before=(("nvidia.com/gpu", 1),), after=(("nvidia.com/mig-1g.10gb", 1),),
                     limits=AdviceLimits(fb_mib=8670.0, engine_pct=100 / 7, busy_gpus=1))


def pod(**figures) -> PodHistory:
    return PodHistory("research", "sweep-k8v2n", "NVIDIA H100 80GB HBM3", **figures)


@pytest.mark.parametrize("advised_ago, window", [
    (timedelta(minutes=5), HOUR),  # at least the re-check window
    (timedelta(hours=5), 5 * HOUR),  # since the advice
    (timedelta(days=30), 7 * 86400.0),  # at most the advice's own window
])
def test_the_window_runs_since_the_advice_within_its_bounds(advised_ago, window):
    assert recheck_seconds(T0 - advised_ago, T0, AdvicePolicy()) == window


def test_fewer_gpus_hold_while_no_more_are_busy_at_once():
    assert no_longer_holds(TO_TWO, [pod(busy_gpus=2.0, peak_fb_mib=21970)], {}, HOUR) is None
    why = no_longer_holds(TO_TWO, [pod(busy_gpus=4.0)], {}, HOUR)
    assert why == "4 GPUs busy at once in the last 1h 0m, more than the 2 advised"


def test_a_slice_holds_while_memory_and_engine_fit_it():
    assert no_longer_holds(TO_SLICE, [pod(peak_fb_mib=6144, peak_engine_pct=9.0, busy_gpus=1.0)], {}, HOUR) is None
    why = no_longer_holds(TO_SLICE, [pod(peak_fb_mib=6144, peak_engine_pct=35.0, busy_gpus=1.0)], {}, HOUR)
    assert why == "peak engine activity 35.0% in the last 1h 0m, more than the advised size's 14.3% of the GPU"


def test_a_slice_whose_memory_went_unmeasured_is_not_confirmed():
    why = no_longer_holds(TO_SLICE, [pod(peak_engine_pct=3.0, busy_gpus=0.0)], {}, HOUR)
    assert why == "no DCGM_FI_DEV_FB_USED samples in the last 1h 0m, so its memory cannot be confirmed"


def test_one_container_is_judged_by_its_own_gpus():
    trainer = GpuResize(before=(("nvidia.com/gpu", 4),), after=(("nvidia.com/gpu", 1),), container="trainer",
                        limits=AdviceLimits(busy_gpus=1))
    p = pod(busy_gpus=2.0)  # the pod: trainer's 1 and indexer's 1
    assert no_longer_holds(trainer, [p], {("research", "sweep-k8v2n", "trainer"): 1.0,
                                          ("research", "sweep-k8v2n", "indexer"): 1.0}, HOUR) is None
    why = no_longer_holds(trainer, [p], {("research", "sweep-k8v2n", "trainer"): 3.0}, HOUR)
    assert why == "3 GPUs busy at once in the last 1h 0m, more than the 1 advised"


def test_no_pod_or_no_samples_leaves_the_advice_unconfirmed():
    assert "none of its pods runs now" in no_longer_holds(TO_TWO, [], {}, HOUR)
    assert no_longer_holds(TO_TWO, [pod()], {}, HOUR) == (
        "no DCGM samples of pod sweep-k8v2n in the last 1h 0m, so the advice cannot be confirmed")


def test_a_change_recorded_without_limits_is_judged_by_its_gpu_request_alone():
    old = GpuResize(before=(("nvidia.com/gpu", 8),), after=(("nvidia.com/gpu", 2),))
    assert no_longer_holds(old, [], {}, HOUR) is None
