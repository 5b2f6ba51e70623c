"""``python benchmarks/advice.py --source ledger``: one advice round read from the usage ledger's
advice facts at fleet size.

For each N in --gpus it builds benchmarks/advice.py's fleet of N H100s (pods of 8 under Kueue
Jobs, every second Job of two pods, half of each pod's GPUs replaying the real H100 trace's
training rows and half its idle-with-a-model rows), and:

1. loads --days of the ledger's advice facts into a fresh PostgreSQL database with COPY (one row
   per pod, node and namespace and hour, each hour's figures worked from the same trace rows at
   300 s steps as the rollup would read them);
2. loads the last two hours of the same series (``DCGM_FI_DEV_GPU_UTIL``, ``DCGM_FI_DEV_FB_USED``,
   ``DCGM_FI_DEV_POWER_USAGE`` every 300 s) into a fresh Prometheus, for the pieces read live;
3. runs one round (``gather_advice`` over ``LedgerHistorySource``, as ``run`` wires it with the ledger
   on) in a fresh process, and prints its CPU seconds (process time), wall seconds, peak RSS, the
   PostgreSQL backends' and Prometheus's CPU seconds during the round (utime + stime from /proc),
   the queries each got and the recommendations made.

Run from the repository root (needs ``prometheus``, ``promtool`` and the PostgreSQL of the tests):

    python benchmarks/advice.py --source ledger --gpus 10000 [--days 30] [--window-days 7]
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from actions.model.advice_hours import STEP_SECONDS, encode_steps  # noqa: E402
from actions.model.telemetry import GPU_UTIL  # noqa: E402
from actions.model.times import floor_hour, hours_between  # noqa: E402
from actions.policy.advice import AdvicePolicy  # noqa: E402
from actions.store.advice_hours import advice_hour_filled  # noqa: E402
from actions.store.database import Store  # noqa: E402
from benchmarks.ledger_report import cpu_seconds, postgres_store  # noqa: E402
from tests.support.advice_fleet import ADVISE_AT  # noqa: E402
from tests.support.fleet import model_name, phase_rows  # noqa: E402

CLUSTER = "bench"
LIVE_HOURS = 2


def hour_facts(hour: datetime, start: datetime, policy: AdvicePolicy) -> tuple[str, float, float, float, int, int]:
    """One pod's figures for the hour starting at ``hour``, as the rollup would read them from the
    series benchmarks/advice.py writes (GPUs 0-3 training rows, 4-7 idle rows, one row per 300 s from
    ``start``, cycled): (busy steps encoded, peak FB MiB, peak GPU_UTIL %, power W, GPU-steps,
    idle GPUs at the mark)."""
    busy, idle = phase_rows("training"), phase_rows("notebook_idle_model_loaded")
    steps = [hour + timedelta(seconds=STEP_SECONDS * k) for k in range(1, 13)]
    index = [int((t - start).total_seconds() // STEP_SECONDS) for t in steps]
    rows = [[(busy if g < 4 else idle)[i % len(busy if g < 4 else idle)] for g in range(8)] for i in index]
    counts = [sum(r.util_gpu_pct > policy.busy_engine_pct for r in at) for at in rows]
    power = max(sum(at[g].power_w for at in rows) / len(rows) for g in range(8))
    mark = rows[-1]
    return (encode_steps(counts), max(r.fb_used_mib for at in rows for r in at),
            max(r.util_gpu_pct for at in rows for r in at), power, 8 * len(rows),
            sum(r.util_gpu_pct <= policy.busy_engine_pct for r in mark))


def load_ledger(store: Store, n_gpus: int, days: int, policy: AdvicePolicy) -> tuple[int, float]:
    """COPY ``days`` of advice facts of benchmarks/advice.py's fleet into ``store`` (PostgreSQL);
    the pod rows written and the tables' size on disk, MB (indexes included)."""
    from benchmarks.advice import pods_of

    start = ADVISE_AT - timedelta(days=30) + timedelta(seconds=60)
    hours = hours_between(ADVISE_AT - timedelta(days=days), floor_hour(ADVISE_AT))
    model, pods = model_name(), pods_of(n_gpus)
    namespaces = Counter(ns for ns, _, _ in pods)
    pod_buf, ns_buf, node_buf = io.StringIO(), io.StringIO(), io.StringIO()
    pw, nw, dw = csv.writer(pod_buf), csv.writer(ns_buf), csv.writer(node_buf)
    for h in hours:
        busy, fb, engine, power, steps, idle = hour_facts(h, start, policy)
        at = h.isoformat()
        for ns, pod, node in pods:
            pw.writerow([CLUSTER, at, ns, pod, model, fb, engine, GPU_UTIL, steps, busy, power, "\\N"])
            dw.writerow([CLUSTER, at, node, model, 8, idle])
        for ns, n in namespaces.items():
            nw.writerow([CLUSTER, at, ns, model, 8 * n])
    raw = store.engine.raw_connection()
    try:
        cursor = raw.cursor()
        for table, columns, buf in (
            ("advice_pod_hour", "cluster, hour, namespace, pod, model_name, peak_fb_mib, peak_engine_pct, engine_signal, "
                                "gpu_steps, busy, power_w, containers", pod_buf),
            ("advice_namespace_hour", "cluster, hour, namespace, model_name, gpus", ns_buf),
            ("advice_node_hour", "cluster, hour, node, model_name, gpus, idle", node_buf),
        ):
            buf.seek(0)
            cursor.copy_expert(f"COPY {table} ({columns}) FROM STDIN WITH (FORMAT csv, NULL '\\N')", buf)
        raw.commit()
    finally:
        raw.close()
    with store.engine.begin() as c:
        c.execute(advice_hour_filled.insert(), [dict(cluster=CLUSTER, hour=h, busy_engine_pct=policy.busy_engine_pct,
                                                     pods=len(pods), written_at=ADVISE_AT) for h in hours])
        for table in ("advice_pod_hour", "advice_namespace_hour", "advice_node_hour"):
            c.execute(sa.text(f"ANALYZE {table}"))
        size = c.execute(sa.text("SELECT sum(pg_total_relation_size(t)) FROM unnest(ARRAY['advice_pod_hour', "
                                 "'advice_namespace_hour', 'advice_node_hour']) AS t")).scalar()
    return len(hours) * len(pods), float(size) / 1e6


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM), MB. Not ru_maxrss: Linux carries that over
    an exec from the forking parent, here the benchmark holding the whole fleet."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def backends_cpu(store: Store) -> dict[int, float]:
    """CPU seconds so far of every PostgreSQL backend connected to ``store``'s database, by pid."""
    with store.engine.connect() as c:
        pids = c.execute(sa.text("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")).scalars().all()
    out = {}
    for pid in pids:
        try:
            out[pid] = cpu_seconds(pid)
        except OSError:  # ended meanwhile
            pass
    return out


def one_round(database_url: str, prometheus_url: str, dump_path: str, window_days: str) -> None:
    """The round itself, in this (fresh) process: prints one JSON line of figures."""
    from actions.advice.round import gather_advice
    from actions.ledger.advice_history import LedgerHistorySource
    from actions.policy.rules import Policy
    from actions.policy.teams import TeamDirectory
    from actions.pricing.book import PriceBook
    from actions.pricing.catalog import PriceCatalog
    from actions.sources.kube.dump import snapshot_from_kubectl_dump
    from actions.sources.prometheus.advice_hours import PrometheusAdviceHours
    from actions.sources.prometheus.api import PrometheusApi
    from actions.sources.prometheus.history import AdviceHistorySource
    from actions.store.advice_hours import AdviceHourStore

    snapshot = snapshot_from_kubectl_dump(Path(dump_path).read_bytes(), ADVISE_AT)
    store = Store(database_url)
    api = PrometheusApi(prometheus_url, timeout_seconds=600, attempts=1)
    source = LedgerHistorySource(AdviceHourStore(store), CLUSTER, live=PrometheusAdviceHours(api),
                                 whole=AdviceHistorySource(api))
    prices = PriceBook(PriceCatalog.bundled())
    rss_before = peak_rss_mb()
    db_before, cpu0, wall0 = backends_cpu(store), time.process_time(), time.monotonic()
    policy = AdvicePolicy(window_seconds=float(window_days) * 86400)
    result = gather_advice(snapshot, source, prices, Policy(), policy, TeamDirectory([]), ADVISE_AT)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    db_after = backends_cpu(store)
    print(json.dumps({
        "cpu": cpu, "wall": wall, "db_cpu": sum(v - db_before.get(pid, 0.0) for pid, v in db_after.items()),
        "queries": api.requests,
        "read": source.last_read, "recommendations": len(result.recommendations),
        "kinds": dict(Counter(r.kind for r in result.recommendations)),
        "rss_mb": peak_rss_mb(), "rss_before_mb": rss_before,
        "usd": result.could_save_usd_per_month,
    }), flush=True)


def run(sizes: list[int], days: int, repeat: int, window_days: float = 7) -> None:
    """Part 3 of the module docstring for each size, each consumer's window ``window_days``
    (``advice.window_seconds``), the commitment window ``days``."""
    from benchmarks.advice import fleet
    from benchmarks.report import Server
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus is None or promtool is None:
        raise SystemExit("needs the prometheus and promtool binaries (Debian package prometheus)")

    policy = AdvicePolicy(commitment_window_seconds=days * 86400)
    print(f"machine: {os.cpu_count()} CPUs, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp, postgres_store() as store:
            t0 = time.monotonic()
            rows, mb = load_ledger(store, n, days, policy)
            loaded = time.monotonic() - t0
            text, dump = fleet(n, since=ADVISE_AT - timedelta(hours=LIVE_HOURS))
            (Path(tmp) / "om").write_text(text)
            (Path(tmp) / "dump.json").write_bytes(dump)
            subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(Path(tmp) / "om"),
                            str(Path(tmp) / "data")], check=True, capture_output=True)
            server = Server(prometheus, Path(tmp) / "data", Path(tmp))
            try:
                for _ in range(repeat):
                    prom0 = cpu_seconds(server.proc.pid)
                    out = subprocess.run(
                        [sys.executable, __file__, "--round", store.engine.url.render_as_string(hide_password=False),
                         server.url, str(Path(tmp) / "dump.json"), str(window_days)],
                        check=True, capture_output=True, text=True, cwd=ROOT)
                    r = json.loads(out.stdout.strip().splitlines()[-1])
                    print(f"{n:6d} GPUs, {window_days:g}-day window, {days} days of ledger, {rows:,} pod-hours in the ledger ({mb:,.0f} MB; loaded in {loaded:.0f} s): "
                          f"bot CPU {r['cpu']:.2f} s (wall {r['wall']:.2f} s), PostgreSQL CPU {r['db_cpu']:.2f} s, "
                          f"Prometheus CPU {cpu_seconds(server.proc.pid) - prom0:.2f} s ({r['queries']} queries; "
                          f"read {r['read']}), peak RSS {r['rss_mb']:.0f} MB ({r['rss_before_mb']:.0f} MB before the round); {r['recommendations']} recommendations "
                          f"{r['kinds']}, ${r['usd']:,.2f}/month", flush=True)
                # What the hourly rollup adds for advice: one hour's facts of the whole fleet.
                from actions.sources.prometheus.advice_hours import PrometheusAdviceHours
                from actions.sources.prometheus.api import PrometheusApi

                hour = floor_hour(ADVISE_AT) - timedelta(hours=1)
                prom0, cpu0 = cpu_seconds(server.proc.pid), time.process_time()
                facts = PrometheusAdviceHours(PrometheusApi(server.url, timeout_seconds=600)).fetch(
                    hour, hour + timedelta(hours=1), policy)
                print(f"{n:6d} GPUs: one hour's advice facts for the rollup: Prometheus CPU "
                      f"{cpu_seconds(server.proc.pid) - prom0:.2f} s, bot CPU {time.process_time() - cpu0:.2f} s, "
                      f"{len(facts.pods)} pods, {len(facts.nodes)} nodes", flush=True)
            finally:
                server.stop()


if __name__ == "__main__" and len(sys.argv) == 6 and sys.argv[1] == "--round":
    one_round(*sys.argv[2:])
