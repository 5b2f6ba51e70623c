"""The DCGM history of two one-GPU consumers whose MIG advice is proposed and approved around
:data:`~tests.support.clock.T0`: ``serving/vector-db-0`` (the StatefulSet of
tests/support/kueue_webhook.py) and ``ml-research/llm-explore-0`` (the demo's Kubeflow Notebook),
built from the real H100 trace (tests/support/data/h100_nvml_trace.csv).

Until :data:`GROWN_AT` it is the advice's story: the trace's idle-with-a-model rows, every 3 h
its cell-burst rows, framebuffer scaled to 6 GiB at most and utilization to 9% at most (as
tests/support/advice_fleet.py scales research/explore). From :data:`GROWN_AT` the same rows
unscaled: a larger model is loaded (21,486-21,970 MiB, the trace's own readings), which no
1g.10gb slice holds. dcgm-exporter's pod mapping labels (``pod``, ``namespace``, ``container``),
one GPU each, scraped every 120 s.
"""

from __future__ import annotations

from datetime import timedelta

from actions.advice.round import AdviceSetup
from actions.model.telemetry import GPU_UTIL, POWER_USAGE
from actions.policy.advice import AdvicePolicy
from actions.sources.prometheus.api import PrometheusApi
from actions.sources.prometheus.history import AdviceHistorySource
from tests.support.clock import T0
from tests.support.fleet import FB_USED, model_name, phase_rows
from tests.support.openmetrics import gauge_families, samples

START = T0 - timedelta(hours=3)
GROWN_AT = T0 + timedelta(hours=1)
END = T0 + timedelta(hours=3)
SCRAPE = 120
FB_SCALE = 6144 / 21970  # the trace's largest framebuffer reading becomes 6 GiB
UTIL_SCALE = 0.09  # the trace's 100% bursts become 9%


PODS = (("serving", "vector-db-0", "db"), ("ml-research", "llm-explore-0", "notebook"))


def resize_openmetrics() -> str:
    """OpenMetrics text of each of :data:`PODS`' GPU_UTIL (percent), FB_USED (MiB) and
    POWER_USAGE (W) from :data:`START` to :data:`END`."""
    idle, burst = phase_rows("notebook_idle_model_loaded"), phase_rows("notebook_cell_burst")
    util, fb, power = [], [], []
    for i, (ns, pod, container) in enumerate(PODS):
        labels = {"gpu": "0", "UUID": f"GPU-{pod}", "modelName": model_name(), "Hostname": f"gpu-od-{i + 1}",
                  "namespace": ns, "pod": pod, "container": container}
        series: dict[str, list[tuple[int, float]]] = {GPU_UTIL: [], FB_USED: [], POWER_USAGE: []}
        t, n = START, 0
        while t <= END:
            k = int(((t - START).total_seconds() % (3 * 3600)) // SCRAPE)
            row = burst[k] if k < len(burst) else idle[n % len(idle)]
            grown = t >= GROWN_AT
            ts = int(t.timestamp())
            series[GPU_UTIL].append((ts, row.util_gpu_pct * (1 if grown else UTIL_SCALE)))
            series[FB_USED].append((ts, round(row.fb_used_mib * (1 if grown else FB_SCALE))))
            series[POWER_USAGE].append((ts, row.power_w))
            t, n = t + timedelta(seconds=SCRAPE), n + 1
        util += samples(GPU_UTIL, labels, series[GPU_UTIL])
        fb += samples(FB_USED, labels, series[FB_USED])
        power += samples(POWER_USAGE, labels, series[POWER_USAGE])
    return gauge_families({GPU_UTIL: util, FB_USED: fb, POWER_USAGE: power})


def advice_setup(url: str) -> AdviceSetup:
    """The advice history of the Prometheus at ``url``, judged by the default advice policy (its
    re-check window 1 h)."""
    return AdviceSetup(AdviceHistorySource(PrometheusApi(url)), AdvicePolicy())
