"""What one cost report costs as the fleet grows: PromQL queries, their time, and the backfill.

For each N in --gpus it builds the kinds of series tests/actions/cost/test_report_prometheus.py builds, for a
fleet of N GPUs over the --days ending 2026-11-21T00:00Z (the tests' END), and loads them into a
fresh Prometheus:

- nodes of 8 GPUs, p5.48xlarge (H100) and p4d.24xlarge (A100), on-demand and spot
  (``kube_node_labels`` with the instance-type and capacity-type labels, hourly, as in the tests);
- each node split into pods of 8, 4, 2 or 1 GPUs: Kubeflow notebooks (whole period), Kueue jobs
  (a new pod every 1-4 days, 2 h apart), serving Deployments (a new pod every week) and plain
  Jobs (a new pod every 12-48 h, 6 h apart), in 12 namespaces: 7 teams (5 by the ``team``
  namespace label, 2 configured) and one namespace in no team (``unallocated``);
- per pod the tests' kube-state-metrics series (``kube_pod_container_resource_requests``,
  ``kube_pod_info``, ``kube_pod_status_phase``, ``kube_pod_owner``, ``kube_pod_labels``);
- per GPU dcgm-exporter ``DCGM_FI_DEV_GPU_UTIL`` and ``DCGM_FI_DEV_POWER_USAGE`` (the report's GPU
  energy), plus ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` on half of the nodes (half of the nodes with the
  ``exported_pod`` label convention), replaying the real H100 trace phases the tests use
  (tests/support/fleet.py ``phase_rows``); between two pods a GPU reports ``empty_idle`` without pod
  labels, as dcgm-exporter does for a GPU no pod requests.

Samples every --scrape-seconds (default 300 s, the tests' step: one sample 60 s after each
5-minute step); the tests' generator (``usage_openmetrics``) is fixed to their 7 pods, so this
script has its own, built from the tests' ``SeriesPod``, label formatting and prices.

It prints, per N: the OpenMetrics size, how long ``promtool tsdb create-blocks-from openmetrics
--max-block-duration=800h`` took (as tests/support/prometheus_server.py runs it) and the TSDB's size on
disk; then per period (--periods, default 7d, 30d, mtd, all ending at 2026-11-21T00:00Z):
``PrometheusUsage(...).fetch`` + ``compute_cost_report``, median of --repeat runs and the first
(cold) run, the part spent in ``compute_cost_report``, the queries one report sends, and the
slowest query (by the names ``PrometheusApi`` gets; each query's median over the runs). The
report's total GPU-hours are checked against the schedule ("ok", else the expected figure).

The default largest fleet is 200 GPUs, not 400. Not for the backfill: 400 GPUs x 30 days (12.7
million samples, 2.3 GB of text) backfilled in about 65 s on 2 CPUs. But a report's time grows
with GPU-days (about 10 ms per GPU-day there; a 30d report at 400 GPUs took 116 s), so 400 GPUs
x 3 periods x 3 runs alone take about 11 minutes; the defaults take about 9. Pass
``--gpus 10,100,400`` (or more) for larger fleets. Reports are made with ``attempts=1``: a query
that fails (the client's 60 s timeout,
Prometheus' 2 min ``--query.timeout`` or its ``--query.max-samples``) is printed as a failure
for that period.

Run from the repository root (needs the ``prometheus`` and ``promtool`` binaries, Debian package
``prometheus``):

    python benchmarks/report.py [--gpus 10,100,200] [--days 30] [--repeat 3]
                                [--periods 7d,30d,mtd] [--scrape-seconds 300]

The temporary Prometheus and its data are removed on exit (Ctrl-C included).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Iterator, TextIO

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from actions.cost.engine import compute_cost_report  # noqa: E402
from actions.cost.periods import parse_period  # noqa: E402
from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE  # noqa: E402
from actions.model.usage import DEFAULT_STEP_SECONDS  # noqa: E402
from actions.policy.rules import Policy  # noqa: E402
from actions.policy.teams import Team, TeamDirectory  # noqa: E402
from actions.pricing.book import PriceBook  # noqa: E402
from actions.pricing.catalog import PriceCatalog  # noqa: E402
from actions.sources.prometheus.api import TelemetryError  # noqa: E402
from actions.sources.prometheus.usage import PrometheusUsage  # noqa: E402
from tests.support.fleet import model_name, phase_rows  # noqa: E402
from tests.support.prometheus_server import CONFIG, _wait_ready, free_port
from tests.support.usage_history import A100, END, PRICES, SeriesPod, hour_phases, label_set

UTC = timezone.utc
GPUS_PER_NODE = 8
# Pod sizes a node is split into, by node number; trailing slots beyond the node's GPUs are dropped.
NODE_LAYOUTS = ((8,), (4, 4), (4, 2, 1, 1), (2, 2, 2, 2), (1,) * 8, (2, 2, 4))
INSTANCE_TYPES = (("p5.48xlarge", "h100"), ("p5.48xlarge", "h100"), ("p4d.24xlarge", "a100"))
# (namespace, team label or None); "ml-research" and "vision" are configured teams, "scratch" none.
NAMESPACES = (
    ("llm-pretrain", "training"), ("llm-finetune", "training"), ("ml-research", None),
    ("vision", None), ("speech", "speech"), ("recsys", "recsys"), ("search-ranking", "recsys"),
    ("chat-serving", "serving"), ("batch-inference", "serving"), ("robotics", "robotics"),
    ("ml-sandbox", "speech"), ("scratch", None),
)
TEAMS = TeamDirectory([Team(name="research", namespaces=["ml-research"]),
                       Team(name="vision", namespaces=["vision"])])
NOTEBOOK = hour_phases((9, "notebook_idle_model_loaded"), (3, "notebook_cell_burst"))
TRAINING = hour_phases((11, "training"), (1, "training_checkpoint_pause"))
SERVING = ("inference_bursty",)
BATCH = ("training",)


@dataclass(frozen=True)
class Fleet:
    pods: tuple[SeriesPod, ...]
    nodes: dict[str, dict[str, str]]  # node -> kube_node_labels labels
    gpus: tuple[tuple[str, int, str, bool, bool], ...]  # (node, gpu, modelName, exported labels, engine active)
    holders: dict[tuple[str, int], list[SeriesPod]]  # (node, gpu) -> the pods that held it, in time order


def _pods_of_slot(node: str, gpus: int, kind: int, tag: str, ns: str, start: datetime, end: datetime,
                  model: str, exported: bool, engine: bool) -> Iterator[SeriesPod]:
    """The pods that hold one slot of ``gpus`` GPUs on ``node`` during [start, end), one after another."""
    common = dict(node=node, gpus=gpus, exported_labels=exported, engine_active=engine, model=model)
    if kind in (0, 1, 2):  # a Kubeflow notebook, the whole time
        yield SeriesPod(ns, f"nb-{tag}-0", start=start, stop=end, hourly_phases=NOTEBOOK,
                        owner=("StatefulSet", f"nb-{tag}"), labels=(("label_notebook_name", f"nb-{tag}"),),
                        **common)
        return
    t, j = start, 0
    while t < end:
        if kind in (3, 4, 5):  # Kueue jobs of 1-4 days, 2 h apart
            life, gap = timedelta(days=1 + (j + len(tag)) % 4), timedelta(hours=2)
            yield SeriesPod(ns, f"train-{tag}-{j}-worker-0", start=t, stop=min(t + life, end),
                            hourly_phases=TRAINING, owner=("Job", f"train-{tag}-{j}"),
                            labels=(("label_kueue_x_k8s_io_queue_name", f"{ns}-queue"),), **common)
        elif kind in (6, 7):  # a serving Deployment, a new pod every week
            life, gap = timedelta(days=7), timedelta(0)
            rs = f"serve-{tag}-{j:x}7d9f8c6b"
            yield SeriesPod(ns, f"{rs}-abcde", start=t, stop=min(t + life, end), hourly_phases=SERVING,
                            owner=("ReplicaSet", rs), **common)
        else:  # plain Jobs of 12-48 h, 6 h apart
            life, gap = timedelta(hours=12 * (1 + (j + len(tag)) % 4)), timedelta(hours=6)
            yield SeriesPod(ns, f"batch-{tag}-{j}", start=t, stop=min(t + life, end), hourly_phases=BATCH,
                            owner=("Job", f"batch-{tag}-{j}"), **common)
        t, j = t + life + gap, j + 1


def make_fleet(n_gpus: int, start: datetime, end: datetime) -> Fleet:
    """N GPUs on nodes of 8 and the pods that hold them during [start, end). Deterministic."""
    h100 = model_name()
    pods: list[SeriesPod] = []
    nodes: dict[str, dict[str, str]] = {}
    gpus = []
    holders: dict[tuple[str, int], list[SeriesPod]] = {}
    for k in range(math.ceil(n_gpus / GPUS_PER_NODE)):
        itype, short = INSTANCE_TYPES[k % len(INSTANCE_TYPES)]
        capacity = "spot" if k % 4 == 3 else "on-demand"
        node = f"{short}-{'spot' if capacity == 'spot' else 'od'}-{k:04d}"
        nodes[node] = {"label_node_kubernetes_io_instance_type": itype, "label_karpenter_sh_capacity_type": capacity}
        model = A100 if short == "a100" else h100
        exported, engine = k % 2 == 1, k % 4 in (0, 1)
        on_node = min(GPUS_PER_NODE, n_gpus - k * GPUS_PER_NODE)
        gpus += [(node, g, model, exported, engine) for g in range(on_node)]
        used = 0
        for s, size in enumerate(NODE_LAYOUTS[k % len(NODE_LAYOUTS)]):
            if used + size > on_node:
                break
            ns = NAMESPACES[(k * 5 + s) % len(NAMESPACES)][0]
            slot = list(_pods_of_slot(node, size, (k * 7 + s * 3) % 10, f"{k:04d}{s}", ns, start, end, model,
                                      exported, engine))
            for g in range(used, used + size):
                holders[(node, g)] = slot
            pods += slot
            used += size
        if used < on_node:  # a last slot for what the layout left over
            slot = list(_pods_of_slot(node, on_node - used, 9, f"{k:04d}x", NAMESPACES[k % len(NAMESPACES)][0],
                                      start, end, model, exported, engine))
            for g in range(used, on_node):
                holders[(node, g)] = slot
            pods += slot
    return Fleet(tuple(pods), nodes, tuple(gpus), holders)


def expected_gpu_hours(fleet: Fleet, start: datetime, end: datetime) -> float:
    """Requested GPU-hours in [start, end] by the schedule: a pod requests its GPUs for [start, stop)."""
    return sum(p.gpus * max(0.0, (min(p.stop, end) - max(p.start, start)).total_seconds()) / 3600
               for p in fleet.pods)


def write_openmetrics(fleet: Fleet, start: datetime, end: datetime, scrape: int, out: TextIO) -> tuple[int, int]:
    """Write the fleet's series from ``start`` to ``end`` + 1 h (the tests' DATA_END: samples after
    the period must not count) as OpenMetrics to ``out``: families contiguous, each series in time
    order, samples ``scrape // 5`` s after each scrape boundary (60 s at 300 s, as in the tests).
    Returns (series, samples)."""
    data_end = int((end + timedelta(hours=1)).timestamp())
    offset = scrape // 5
    series = samples = 0

    def times(a: datetime, b: datetime) -> range:
        return range(int(a.timestamp()) + offset, min(int(b.timestamp()), data_end), scrape)

    def emit(name: str, labels: str, values: Callable[[int], str] | str, ts: range) -> None:
        nonlocal series, samples
        if not ts:
            return
        prefix = f"{name}{{{labels}}} "
        if isinstance(values, str):
            out.write("".join(f"{prefix}{values} {t}\n" for t in ts))
        else:
            out.write("".join(f"{prefix}{values(i)} {t}\n" for i, t in enumerate(ts)))
        series += 1
        samples += len(ts)

    ksm = {}
    for p in fleet.pods:
        uid = f"uid-{p.namespace}-{p.pod}"
        ksm[p] = {
            "kube_pod_container_resource_requests": label_set(namespace=p.namespace, pod=p.pod, container="main",
                                                            node=p.node, resource="nvidia_com_gpu", unit="integer"),
            "kube_pod_info": label_set(namespace=p.namespace, pod=p.pod, node=p.node, host_ip="10.0.0.1", uid=uid),
            "kube_pod_status_phase": label_set(namespace=p.namespace, pod=p.pod, phase=p.phase, uid=uid),
            "kube_pod_owner": label_set(namespace=p.namespace, pod=p.pod, owner_kind=p.owner[0],
                                      owner_name=p.owner[1], owner_is_controller="true") if p.owner else None,
            "kube_pod_labels": label_set(namespace=p.namespace, pod=p.pod, **dict(p.labels)),
        }
    for family in ("kube_pod_container_resource_requests", "kube_pod_info", "kube_pod_status_phase",
                   "kube_pod_owner", "kube_pod_labels"):
        out.write(f"# TYPE {family} gauge\n")
        for p in fleet.pods:
            if ksm[p][family] is not None:
                emit(family, ksm[p][family], str(p.gpus) if family.endswith("requests") else "1",
                     times(p.start, p.stop))

    # dcgm-exporter: per GPU, one series per pod that held it and one per gap between pods.
    util = {ph: [f"{r.util_gpu_pct:g}" for r in phase_rows(ph)] for ph in
            ("empty_idle", *NOTEBOOK, *TRAINING, *SERVING, *BATCH)}
    ratio = {ph: [f"{float(v) / 100:g}" for v in vals] for ph, vals in util.items()}
    power = {ph: [f"{r.power_w:g}" for r in phase_rows(ph)] for ph in util}
    spans = []  # (labels, hourly phases, times, engine)
    for node, g, model, exported, engine in fleet.gpus:
        base = dict(gpu=str(g), UUID=f"GPU-{node}-{g}", modelName=model, Hostname=node, device=f"nvidia{g}")
        if exported:
            base.update(pod="dcgm-exporter-x1", namespace="gpu-operator")
        cursor = start
        for p in fleet.holders.get((node, g), []):
            if p.start > cursor:
                spans.append((label_set(**base), ("empty_idle",), times(cursor, p.start), engine))
            held = dict(base, **({"exported_pod": p.pod, "exported_namespace": p.namespace} if exported
                                 else {"pod": p.pod, "namespace": p.namespace}))
            spans.append((label_set(**held), p.hourly_phases, times(p.start, p.stop), engine))
            cursor = p.stop
        if cursor < end + timedelta(hours=1):
            spans.append((label_set(**base), ("empty_idle",), times(cursor, end + timedelta(hours=1)), engine))

    def values(table: dict[str, list[str]], phases: tuple[str, ...]) -> Callable[[int], str]:
        def at(i: int) -> str:  # as usage_openmetrics: phase by sample, row by sample, both cycled
            rows = table[phases[i % len(phases)]]
            return rows[i % len(rows)]
        return at

    for family, table in ((GPU_UTIL, util), (ENGINE_ACTIVE, ratio), (POWER_USAGE, power)):
        out.write(f"# TYPE {family} gauge\n")
        for labels, phases, ts, engine in spans:
            if family != ENGINE_ACTIVE or engine:
                emit(family, labels, values(table, phases), ts)
    hourly = range(int(start.timestamp()) + 60, data_end, 3600)
    out.write("# TYPE kube_node_labels gauge\n")
    for node, labels in fleet.nodes.items():
        emit("kube_node_labels", label_set(node=node, **labels), "1", hourly)
    out.write("# TYPE kube_namespace_labels gauge\n")
    for ns, team in NAMESPACES:
        emit("kube_namespace_labels", label_set(namespace=ns, **({"label_team": team} if team else {})), "1", hourly)
    out.write("# EOF\n")
    return series, samples


# --- running it ------------------------------------------------------------------------------------


def dir_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


class Server:
    """A Prometheus serving ``data`` on a free port of 127.0.0.1, terminated by :meth:`stop`."""

    def __init__(self, prometheus: str, data: Path, workdir: Path):
        config = workdir / "prometheus.yml"
        config.write_text(CONFIG)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log = workdir / "prometheus.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [prometheus, f"--config.file={config}", f"--storage.tsdb.path={data}",
                 "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"],
                stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
        try:
            _wait_ready(self.url, self.proc, self.log)
        except BaseException:
            self.stop()
            raise

    def peak_rss_mb(self) -> float:
        """The server's peak resident memory so far (VmHWM), MB; NaN where /proc cannot say."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return math.nan

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class Run:
    seconds: float
    compute: float
    queries: list[tuple[str, float]]
    gpu_hours: float


def one_report(url: str, period: str) -> Run:
    source = PrometheusUsage(url, team_label="team", attempts=1)
    timings: list[tuple[str, float]] = []
    counts: dict[str, int] = {}

    def timed(kind: str, fn: Callable) -> Callable:
        def call(name: str, promql: str, *args):
            key = f"{name} {kind}"
            counts[key] = counts.get(key, 0) + 1
            t0 = time.perf_counter()
            try:
                return fn(name, promql, *args)
            finally:
                timings.append((key + (f" #{counts[key]}" if counts[key] > 1 else ""), time.perf_counter() - t0))
        return call

    source.api.instant = timed("instant", source.api.instant)  # type: ignore[method-assign]
    source.api.range = timed("range", source.api.range)  # type: ignore[method-assign]
    start, end = parse_period(period, END)
    prices = PriceBook(PriceCatalog.bundled(), PRICES)
    t0 = time.perf_counter()
    usage = source.fetch(start, end, Policy())
    t1 = time.perf_counter()
    report = compute_cost_report(usage, prices, TEAMS, team_label="team")
    t2 = time.perf_counter()
    assert source.requests == len(timings)
    return Run(t2 - t0, t2 - t1, timings, report.gpu_hours)


def prometheus_version(prometheus: str) -> str:
    out = subprocess.run([prometheus, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\S+)", out)
    return m.group(1) if m else "(version unknown)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", default="10,100,200", help="comma-separated fleet sizes (GPUs)")
    ap.add_argument("--days", type=int, default=30, help="days of history ending 2026-11-21T00:00Z")
    ap.add_argument("--repeat", type=int, default=3, help="reports per period (the median is printed)")
    ap.add_argument("--periods", default="7d,30d,mtd", help="comma-separated report periods")
    ap.add_argument("--scrape-seconds", type=int, default=300, help="sample interval of every pod and GPU series")
    ap.add_argument("--ledger", action="store_true", help="the usage ledger beside Prometheus (benchmarks/ledger_report.py)")
    ap.add_argument("--rollup-gpus", type=int, default=2000, help="--ledger: GPUs of the hourly-rollup fleet")
    ap.add_argument("--ledger-gpus", type=int, default=10000, help="--ledger: GPUs of the synthetic ledger")
    args = ap.parse_args()
    # SIGTERM unwinds like Ctrl-C, so the finally blocks stop Prometheus and remove the data.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not prometheus or not promtool:
        sys.exit("prometheus and promtool must be on PATH (Debian package prometheus)")
    if args.ledger:
        from benchmarks.ledger_report import run as ledger_mode

        return ledger_mode(args, prometheus, promtool)
    sizes = [int(s) for s in args.gpus.split(",") if s.strip()]
    periods = [p.strip() for p in args.periods.split(",") if p.strip()]
    start, end = END - timedelta(days=args.days), END
    print(f"gpu-cost-bot report benchmark: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"Prometheus {prometheus_version(prometheus)}; {args.days} days of series every {args.scrape_seconds} s "
          f"ending {END:%Y-%m-%dT%H:%MZ}; report step {DEFAULT_STEP_SECONDS} s; medians of {args.repeat} runs\n")
    results: dict[int, dict[str, tuple[list[Run] | str, float, float]]] = {}
    print("1. Loading the history: OpenMetrics text, promtool backfill (--max-block-duration=800h), TSDB on disk")
    print(f"{'GPUs':>5} {'nodes':>5} {'pods':>5} | {'series':>7} {'samples':>10} {'text MB':>7} {'gen s':>6} |"
          f" {'backfill s':>10} {'TSDB MB':>7} {'B/sample':>8} | {'start s':>7}")
    with tempfile.TemporaryDirectory(prefix="report-bench-") as tmp:
        for n in sizes:
            work = Path(tmp) / f"gpus-{n}"
            work.mkdir()
            fleet = make_fleet(n, start, end + timedelta(hours=1))  # pods run on past the period's end
            text = work / "series.om"
            t0 = time.perf_counter()
            with text.open("w", buffering=1 << 22) as f:
                series, samples = write_openmetrics(fleet, start, end, args.scrape_seconds, f)
            gen = time.perf_counter() - t0
            text_mb = text.stat().st_size / 1e6
            data = work / "data"
            t0 = time.perf_counter()
            subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=800h",
                            str(text), str(data)], check=True, capture_output=True, text=True)
            backfill = time.perf_counter() - t0
            text.unlink()
            tsdb_mb = dir_mb(data)
            t0 = time.perf_counter()
            server = Server(prometheus, data, work)
            started = time.perf_counter() - t0
            print(f"{n:>5} {len(fleet.nodes):>5} {len(fleet.pods):>5} | {series:>7} {samples:>10} {text_mb:>7.0f}"
                  f" {gen:>6.1f} | {backfill:>10.1f} {tsdb_mb:>7.1f} {tsdb_mb * 1e6 / samples:>8.2f} |"
                  f" {started:>7.1f}", flush=True)
            try:
                results[n] = {}
                for period in periods:
                    expected = expected_gpu_hours(fleet, *parse_period(period, END))
                    try:
                        results[n][period] = ([one_report(server.url, period) for _ in range(args.repeat)], expected,
                                              server.peak_rss_mb())
                    except TelemetryError as e:  # e.g. a query over --query.max-samples or the timeout
                        results[n][period] = (str(e)[-300:], expected, server.peak_rss_mb())
            finally:
                server.stop()
                shutil.rmtree(work, ignore_errors=True)
    print("\n2. One report: PrometheusUsage.fetch + compute_cost_report (s = seconds; slowest query by its"
          " median over the runs;\n   share = its part of the report; Prometheus MB = the server's peak RSS so far)")
    print(f"{'GPUs':>5} {'period':>6} | {'median s':>8} {'1st s':>6} {'compute s':>9} | {'queries':>7} |"
          f" {'slowest query':<26} {'s':>6} {'share':>5} | {'GPU-h':>9} {'check':>5} | {'Prometheus MB':>13}")
    for n, by_period in results.items():
        for period in periods:
            runs, expected, rss = by_period[period]
            if isinstance(runs, str):
                print(f"{n:>5} {period:>6} | failed: {runs}")
                continue
            med = statistics.median(r.seconds for r in runs)
            per_query: dict[str, list[float]] = {}
            for r in runs:
                for name, s in r.queries:
                    per_query.setdefault(name, []).append(s)
            slow_name, slow = max(((k, statistics.median(v)) for k, v in per_query.items()), key=lambda kv: kv[1])
            gh = runs[0].gpu_hours
            check = "ok" if abs(gh - expected) < 1e-6 * max(1, expected) else f"!{expected:.0f}"
            print(f"{n:>5} {period:>6} | {med:>8.2f} {runs[0].seconds:>6.2f}"
                  f" {statistics.median(r.compute for r in runs):>9.3f} | {len(runs[0].queries):>7} |"
                  f" {slow_name:<26} {slow:>6.2f} {slow / med:>5.0%} | {gh:>9.0f} {check:>5} | {rss:>13.0f}")
    print("\n3. Median seconds per query, largest fleet")
    n = sizes[-1]
    names: list[str] = []
    table: dict[str, dict[str, float]] = {}
    for period in periods:
        runs = results[n][period][0]
        if isinstance(runs, str):
            continue
        per_query = {}
        for r in runs:
            for name, s in r.queries:
                per_query.setdefault(name, []).append(s)
                if name not in names:
                    names.append(name)
        table[period] = {k: statistics.median(v) for k, v in per_query.items()}
    print(f"{'query':<26} " + " ".join(f"{p:>7}" for p in table))
    for name in names:
        print(f"{name:<26} " + " ".join(f"{table[p][name]:>7.2f}" if name in table[p] else f"{'-':>7}" for p in table))


if __name__ == "__main__":
    main()
