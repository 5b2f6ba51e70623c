"""What one round of advice costs as the fleet grows: queries, their time, and the backfill.

For each N in --gpus it builds a fleet of N H100s in pods of 8 (batch/v1 Jobs under Kueue, one
pod each, in N/32 namespaces rounded up, one team per namespace, every second Job of two pods so
the multi-pod busy query is exercised), with 30 days of ``DCGM_FI_DEV_GPU_UTIL`` every 300 s and
7 days of ``DCGM_FI_DEV_FB_USED`` and ``DCGM_FI_DEV_POWER_USAGE``, replaying the real H100 trace's
phases (tests/support/fleet.py ``phase_rows``: half the GPUs of each pod training, half idle with a model
loaded), loads them into a fresh Prometheus as tests/support/prometheus_server.py does, and times
``gather_advice`` (median of --repeat runs, and the first) with the queries it sent.

Run from the repository root (needs the ``prometheus`` and ``promtool`` binaries):

    python benchmarks/advice.py [--gpus 16,64,128] [--repeat 3]

``--source ledger`` reads the round from the usage ledger's advice facts instead, at fleet size
(benchmarks/advice_ledger.py says how):

    python benchmarks/advice.py --source ledger --gpus 10000 [--days 30] [--window-days 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actions.advice.round import gather_advice  # noqa: E402
from actions.model.telemetry import GPU_UTIL, POWER_USAGE  # noqa: E402
from actions.policy.advice import AdvicePolicy  # noqa: E402
from actions.policy.rules import Policy  # noqa: E402
from actions.policy.teams import TeamDirectory  # noqa: E402
from actions.pricing.book import PriceBook  # noqa: E402
from actions.pricing.catalog import PriceCatalog  # noqa: E402
from actions.sources.kube.dump import snapshot_from_kubectl_dump  # noqa: E402
from actions.sources.prometheus.api import PrometheusApi  # noqa: E402
from actions.sources.prometheus.history import AdviceHistorySource  # noqa: E402
from tests.support.advice_fleet import ADVISE_AT, H100_PRODUCT, STARTED  # noqa: E402
from tests.support.fleet import FB_USED, model_name, phase_rows  # noqa: E402
from tests.support.prometheus_server import running_prometheus

SCRAPE = 300


def pods_of(n_gpus: int) -> list[tuple[str, str, str]]:
    """(namespace, pod, node) of the fleet's pods of 8 GPUs: four a namespace, every second Job of
    two pods."""
    out = []
    for j in range(max(1, n_gpus // 8)):
        job = f"job-{j // 2 if j % 4 >= 2 else j}"
        out.append((f"team-{j // 4}", f"{job}-{j}", f"node-{j}"))
    return out


def fleet(n_gpus: int, since: datetime | None = None) -> tuple[str, bytes]:
    """(OpenMetrics text, kubectl dump) of ``n_gpus`` H100s in Jobs of 8 under Kueue; the series
    from ``since`` on only when given (rows still counted from 30 days back)."""
    busy, idle = phase_rows("training"), phase_rows("notebook_idle_model_loaded")
    start = ADVISE_AT - timedelta(days=30) + timedelta(seconds=60)
    week = max(ADVISE_AT - timedelta(days=7), since or start)
    steps = int((ADVISE_AT - start).total_seconds() // SCRAPE) + 1
    times = [int((start + timedelta(seconds=i * SCRAPE)).timestamp()) for i in range(steps)]
    recent = [i for i, t in enumerate(times) if t > week.timestamp()]
    series, items = [], []
    for ns, pod, node in pods_of(n_gpus):
        job = pod.rsplit("-", 1)[0]
        items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {
            "node.kubernetes.io/instance-type": "p5.48xlarge", "karpenter.sh/capacity-type": "on-demand",
            "nvidia.com/gpu.product": H100_PRODUCT}}, "status": {"capacity": {"nvidia.com/gpu": "8"}}})
        items.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": pod, "namespace": ns, "uid": f"uid-{pod}", "creationTimestamp": STARTED,
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": f"uid-{ns}-{job}",
                                 "controller": True}]},
            "spec": {"nodeName": node, "containers": [{"name": "m", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]},
            "status": {"phase": "Running", "startTime": STARTED}})
        if not any(i["kind"] == "Job" and i["metadata"]["name"] == job and i["metadata"]["namespace"] == ns for i in items):
            items.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
                "name": job, "namespace": ns, "uid": f"uid-{ns}-{job}", "creationTimestamp": STARTED}, "spec": {}})
        for g in range(8):
            rows = busy if g < 4 else idle
            labels = f'Hostname="{node}",UUID="GPU-{node}-{g}",gpu="{g}",modelName="{model_name()}",namespace="{ns}",pod="{pod}"'
            series.append((labels, rows))
    out = []
    for name, value, which in ((GPU_UTIL, lambda r: r.util_gpu_pct, range(steps) if since is None else recent),
                               (FB_USED, lambda r: r.fb_used_mib, recent), (POWER_USAGE, lambda r: r.power_w, recent)):
        out += [f"# HELP {name} {name}", f"# TYPE {name} gauge"]
        for labels, rows in series:
            out.extend(f"{name}{{{labels}}} {value(rows[i % len(rows)]):g} {times[i]}" for i in which)
    out.append("# EOF")
    return "\n".join(out) + "\n", json.dumps({"apiVersion": "v1", "kind": "List", "items": items}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", default="16,64,128")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--source", choices=("prometheus", "ledger"), default="prometheus")
    parser.add_argument("--days", type=int, default=30, help="--source ledger: days of ledger (the commitment window)")
    parser.add_argument("--window-days", type=float, default=7, help="--source ledger: each consumer's window")
    args = parser.parse_args()
    if args.source == "ledger":
        from benchmarks.advice_ledger import run
        return run([int(x) for x in args.gpus.split(",")], args.days, args.repeat, args.window_days)
    prices, policy = PriceBook(PriceCatalog.bundled()), AdvicePolicy()
    for n in (int(x) for x in args.gpus.split(",")):
        text, dump = fleet(n)
        snapshot = snapshot_from_kubectl_dump(dump, ADVISE_AT)
        with tempfile.TemporaryDirectory() as tmp:
            began = time.monotonic()
            with running_prometheus(text, Path(tmp)) as url:
                loaded = time.monotonic() - began
                api = PrometheusApi(url, timeout_seconds=600, attempts=1)
                runs, recs, queries = [], 0, 0
                for _ in range(args.repeat):
                    before = api.requests
                    t0 = time.monotonic()
                    result = gather_advice(snapshot, AdviceHistorySource(api), prices, Policy(), policy,
                                           TeamDirectory([]), ADVISE_AT)
                    runs.append(time.monotonic() - t0)
                    recs, queries = len(result.recommendations), api.requests - before
        print(f"{n:5d} GPUs: {len(text) / 1e6:7.1f} MB OpenMetrics, backfill+start {loaded:6.1f} s; advice "
              f"median {statistics.median(runs):6.2f} s (first {runs[0]:.2f} s), {queries} queries, "
              f"{recs} recommendations", flush=True)


if __name__ == "__main__":
    main()
