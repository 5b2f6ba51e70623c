"""Fleet scale II: 100,000 GPUs over ten clusters, what the bot and the query engine pay.

1. Sweeps inside ``run`` at --gpus (default 100,000: ten clusters of 10,000 GPUs and 50,000 pods,
   each behind its own wire-level FakeKubeApi in a process of its own, the test fleet of
   benchmarks/scale_fleet.py). The bot runs in a fresh process as ``run`` builds it (watch caches
   of every cluster): a first sweep with an empty store, the caches started and synced, then
   sweeps every 15 minutes (``sweep.interval_seconds`` 900) as ``run`` makes them, and the alerts job
   at the last one's time (it takes each cluster's findings from that sweep): CPU seconds of
   the bot's process (its own threads included, the fakes not), the query engine's CPU (utime +
   stime from /proc), peak RSS (VmHWM). One machine cannot hold 100,000 GPUs of history in one
   Prometheus (promtool and the server's memory), so at --gpus each cluster's queries are
   answered from one cluster of the same fleet (``OneClusterAnswers``: the ``cluster`` matcher
   dropped, every query computed afresh by Prometheus over 10,000 GPUs' series): the bot gets
   ten full answers, and Prometheus's CPU is ten clusters' worth of work.
2. The query side as the fleet grows, --curve (default 1,000, 10,000, 30,000 GPUs in all): one
   Prometheus holding all ten clusters' DCGM series with a ``cluster`` label (2 h of history),
   the same sweeps (and fakes of that size), then the hourly rollup (``LedgerRollup.roll_up``,
   one hour, each cluster narrowed to its label) over benchmarks/report.py's fleet of that size
   (kube-state-metrics and DCGM series, every 5 minutes) into PostgreSQL. Growth per GPU is the
   slope between the two largest sizes, and 100,000 GPUs is extrapolated from it.
3. The ledger on PostgreSQL at --gpus over ten clusters for --days (30): benchmarks/ledger_report.py's
   synthetic ledger of one cluster, its daily rows and filled hours copied under nine more names by
   the database (its hourly rows too with --hourly: a report of whole days reads the daily ones),
   then a 30-day report of all clusters (``build_fleet_report``: the clusters' reports side by side),
   the same ten reports made one after another, and one cluster's, wall and bot CPU.

Needs ``prometheus`` and ``promtool`` and PostgreSQL as benchmarks/ledger_report.py. Run from the
repository root:

    python benchmarks/ten_clusters.py [--gpus 100000] [--curve 1000,10000,30000] [--parts 1,2,3]

(``--parts r``: part 2's rollups alone.)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import scale_fleet  # noqa: E402
from benchmarks.report import Server  # noqa: E402
from benchmarks.scale_fleet import NOW  # noqa: E402
from tests.support.clusters import with_clusters_file  # noqa: E402
from tests.support.prometheus_server import CONFIG, _wait_ready, free_port  # noqa: E402

CLUSTERS = 10
PODS_PER_GPU = 5
# The first sweep, then sweeps every interval as `run` makes them; the last ones span the
# policy's 1 h window, after which no coverage subquery is sent.
FIRST_AT = NOW - timedelta(minutes=60)
RUN_AT = [NOW - timedelta(minutes=m) for m in (45, 30, 15, 0)]
CURVE_HISTORY_HOURS = 2
QUERY_CONCURRENCY = 2


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def proc_cpu(pid: int) -> float:
    """utime + stime of process ``pid`` so far, seconds (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def names(n: int = CLUSTERS) -> list[str]:
    return [f"gpu-{i}" for i in range(n)]


# --- the bot's side, in a process of its own ---------------------------------------------------------


def bot_child(workdir: str, prom_pid: int) -> dict:
    """The bot as ``run`` builds it, with every cluster's watch cache; its sweeps measured."""
    sys.modules["kubernetes_validate"] = None  # as installed: see benchmarks/sweep.py
    import bot.cli.main  # noqa: F401 - the CLI's own imports, as `gpu-cost-bot run` pays them
    from bot.settings import load_settings
    from bot.wiring.jobs import alerts_for, sweep_for
    from bot.wiring.runtime import build_runtime, cluster_caches, keep_alive_to_exit
    from bot.wiring.sources import kueue_by_cluster

    now = [FIRST_AT]
    settings = load_settings(Path(workdir) / "bot.yaml")
    keep_alive_to_exit()
    with open(os.devnull, "w") as devnull:
        rt = build_runtime(settings, clock=lambda: now[0], out=devnull, watch=True)
        keep_alive_to_exit()
        sweep = sweep_for(rt)
        detect, seen = sweep.detection, {}

        def counted(at):
            c0 = time.process_time()
            found = detect(at)
            seen.update(findings=len(found.findings), detect_cpu=time.process_time() - c0)
            return found

        sweep.detection = counted

        def measured(at) -> dict:
            now[0] = at
            c0, p0, t0 = time.process_time(), proc_cpu(prom_pid), time.perf_counter()
            counts = sweep.run(at).counts
            return {"at": at.strftime("%H:%M"), "cpu": time.process_time() - c0, "prom": proc_cpu(prom_pid) - p0,
                    "wall": time.perf_counter() - t0, "counts": counts, **seen}

        first = measured(FIRST_AT)
        c0, t0 = time.process_time(), time.perf_counter()
        caches = [c.start() for c in cluster_caches(rt)]
        while not all(c.synced for c in caches):
            time.sleep(0.1)
        sync = {"cpu": time.process_time() - c0, "wall": time.perf_counter() - t0, "caches": len(caches)}
        inside = [measured(at) for at in RUN_AT[:-1]]
        spy = _py_spy(os.environ.get("TEN_CLUSTERS_PROFILE"))
        inside.append(measured(RUN_AT[-1]))
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait()
        # The alerts job runs on the sweep's interval: each cluster's queues read, its idle findings
        # the sweep's (Runtime.read_queues); part of what a round inside `run` costs.
        job = alerts_for(rt, settings, kueue=kueue_by_cluster(settings))
        c0, p0 = time.process_time(), proc_cpu(prom_pid)
        counts = job.run(RUN_AT[-1])
        alerts = {"cpu": time.process_time() - c0, "prom": proc_cpu(prom_pid) - p0, "counts": counts}
        rss = _status("VmRSS")
        for c in caches:
            c.stop()
    return {"first": first, "sync": sync, "inside": inside, "alerts": alerts, "rss_mb": rss,
            "peak_rss_mb": _status("VmHWM")}


def _py_spy(out: str | None) -> subprocess.Popen | None:
    """py-spy sampling this process's threads into ``out`` (collapsed stacks), when asked."""
    if not out:
        return None
    spy = subprocess.Popen(["py-spy", "record", "--pid", str(os.getpid()), "--format", "raw", "--rate", "200",
                            "--nonblocking", "--threads", "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached before the sweep starts
    return spy


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_bot(work: Path, prom_url: str, prom_pid: int, servers: list[str]) -> dict:
    from tests.support.kubeconfig import write_kubeconfig

    work.mkdir(parents=True, exist_ok=True)
    kubeconfig = write_kubeconfig(work / "kubeconfig", dict(zip(names(len(servers)), servers)))
    (work / "bot.yaml").write_text(yaml.safe_dump({
        "dry_run": True, "database_url": f"sqlite:///{work / 'bot.db'}",
        "slack": {"default_channel": "C0GPUCOST"},  # the console chat, into /dev/null
        "prometheus": {"url": prom_url, "timeout_seconds": 900},
        "kubernetes": {"timeout_seconds": 120},
        "clusters": [{"name": n, "kubernetes": {"context": n, "kubeconfig": str(kubeconfig)}}
                     for n in names(len(servers))],
    }))
    proc = subprocess.run([sys.executable, __file__, "--child", str(work), str(prom_pid)], cwd=ROOT,
                          capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"the bot failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def print_bot(label: str, r: dict, fakes_mb: float) -> None:
    f, s = r["first"], r["sync"]
    print(f"{label}: first sweep (empty store, lists) bot {f['cpu']:.1f} s CPU, query engine {f['prom']:.1f} s,"
          f" {f['wall']:.0f} s wall, {f['findings']} findings")
    print(f"   {s['caches']} watch caches (pods, nodes, owners of ten clusters) synced: bot {s['cpu']:.1f} s CPU,"
          f" {s['wall']:.0f} s wall")
    for k in r["inside"]:
        print(f"   sweep inside run at {k['at']}: bot {k['cpu']:.2f} s CPU (detection {k['detect_cpu']:.2f}),"
              f" query engine {k['prom']:.2f} s CPU, {k['wall']:.1f} s wall, {k['findings']} findings")
    a = r["alerts"]
    print(f"   alerts job at {r['inside'][-1]['at']} (each cluster's queues read, the sweep's findings):"
          f" bot {a['cpu']:.2f} s CPU, query engine {a['prom']:.2f} s CPU, {a['counts']}")
    print(f"   bot RSS {r['rss_mb']:.0f} MB with the caches, peak {r['peak_rss_mb']:.0f} MB;"
          f" the fake API servers {fakes_mb:.0f} MB (PSS, not the bot's); {load()}", flush=True)


def sweeps(per: int, prometheus: str, data: Path, work: Path, one_cluster: bool) -> dict:
    """Ten fakes of ``per`` GPUs each and a Prometheus serving ``data``; the bot's run."""
    from tests.support.fleet_servers import OneClusterAnswers, fake_clusters, pss_mb

    with fake_clusters(scale_fleet.cluster_objects(per, PODS_PER_GPU * per), CLUSTERS) as fakes:
        server = Prometheus(prometheus, data, _fresh(work / "prom"))
        try:
            if one_cluster:
                with OneClusterAnswers(server.url) as proxy:
                    r = run_bot(work / "bot", proxy.url, server.proc.pid, [u for u, _ in fakes])
            else:
                r = run_bot(work / "bot", server.url, server.proc.pid, [u for u, _ in fakes])
            r["fakes_mb"] = sum(pss_mb(pid) for _, pid in fakes)
            r["prom_peak_mb"] = server.peak_rss_mb()
        finally:
            server.stop()
    return r


class Prometheus(Server):
    """benchmarks/report.py's Server, with at most :data:`QUERY_CONCURRENCY` queries evaluated
    at once: eight clusters' first sweeps side by side (7-day lookbacks over 10,000 GPUs each)
    took one Prometheus past 10 GB here, and two cores do no more at once anyway."""

    def __init__(self, prometheus: str, data: Path, workdir: Path):  # not super(): its flags differ
        (config := workdir / "prometheus.yml").write_text(CONFIG)
        port = free_port()
        self.url, self.log = f"http://127.0.0.1:{port}", workdir / "prometheus.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [prometheus, f"--config.file={config}", f"--storage.tsdb.path={data}", "--storage.tsdb.retention.time=100y",
                 f"--web.listen-address=127.0.0.1:{port}", f"--query.max-concurrency={QUERY_CONCURRENCY}",
                 "--query.timeout=15m"], stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
        try:
            _wait_ready(self.url, self.proc, self.log)
        except BaseException:
            self.stop()
            raise


def _fresh(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


# --- the query side: Prometheus data of ten clusters ---------------------------------------------------


def blocks(text: Path, data: Path, promtool: str) -> Path:
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=800h", str(text),
                    str(data)], check=True, capture_output=True)
    text.unlink()
    (data / "done").write_text("")
    return data


def sweep_tsdb(cache: Path, per: int, promtool: str) -> Path:
    """Ten clusters of ``per`` GPUs: scale_fleet's DCGM history, :data:`CURVE_HISTORY_HOURS` of it."""
    data = cache / f"ten-sweep-{CLUSTERS}x{per}-{CURVE_HISTORY_HOURS}h"
    if (data / "done").exists():
        return data
    kept, scale_fleet.HISTORY_HOURS = scale_fleet.HISTORY_HOURS, CURVE_HISTORY_HOURS
    try:
        scale_fleet.write_openmetrics(one := cache / "one.om", per)
    finally:
        scale_fleet.HISTORY_HOURS = kept
    with_clusters_file(one, text := cache / "ten.om", names())
    one.unlink()
    return blocks(text, data, promtool)


def rollup_tsdb(cache: Path, per: int, promtool: str) -> Path:
    """Ten clusters of benchmarks/report.py's fleet of ``per`` GPUs over the 2 h before its END
    and the hour after (samples every 300 s)."""
    from actions.model.times import HOUR
    from benchmarks.report import make_fleet, write_openmetrics
    from tests.support.usage_history import END

    data = cache / f"ten-rollup-{CLUSTERS}x{per}"
    if (data / "done").exists():
        return data
    start = END - 2 * HOUR
    with (one := cache / "one.om").open("w", buffering=1 << 22) as f:
        write_openmetrics(make_fleet(per, start, END + HOUR), start, END, 300, f)
    with_clusters_file(one, text := cache / "ten.om", names())
    one.unlink()
    return blocks(text, data, promtool)


def rollups(per: int, prometheus: str, data: Path, work: Path) -> dict:
    """One hour rolled up for each of the ten clusters into PostgreSQL, its usage and advice's
    facts, as ``run`` wires the rollup: the query engine's CPU and the bot's."""
    from actions.ledger.rollup import AdviceHours, LedgerRollup
    from actions.model.times import HOUR
    from actions.policy.advice import AdvicePolicy
    from actions.policy.rules import Policy
    from actions.sources.prometheus.advice_hours import PrometheusAdviceHours
    from actions.sources.prometheus.api import PrometheusApi
    from actions.sources.prometheus.usage import PrometheusUsage
    from actions.store.advice_hours import AdviceHourStore
    from actions.store.ledger import LedgerStore
    from benchmarks.ledger_report import postgres_store, prices
    from tests.support.usage_history import END

    server = Prometheus(prometheus, data, _fresh(work / "rollup-prom"))
    try:
        with postgres_store() as store:
            c0, p0, t0, rows, queries = time.process_time(), proc_cpu(server.proc.pid), time.perf_counter(), 0, 0
            for name in names():
                source = PrometheusUsage(server.url, team_label="team", attempts=1, timeout_seconds=900,
                                         scope=("cluster", name))
                api = PrometheusApi(server.url, attempts=1, timeout_seconds=900, scope=("cluster", name))
                advice = AdviceHours(PrometheusAdviceHours(api), AdviceHourStore(store), AdvicePolicy())
                rollup = LedgerRollup(source, LedgerStore(store), cluster=name, team_label="team", prices=prices(),
                                      advice=advice)
                rows += rollup.roll_up(END - HOUR, Policy(), END + HOUR).rows
                queries += source.requests + api.requests
            return {"prom": proc_cpu(server.proc.pid) - p0, "cpu": time.process_time() - c0,
                    "wall": time.perf_counter() - t0, "rows": rows, "queries": queries,
                    "prom_peak_mb": server.peak_rss_mb()}
    finally:
        server.stop()


def curve(sizes: list[int], prometheus: str, promtool: str, cache: Path, work: Path) -> None:
    print(f"\n2. The query side over ten clusters in one Prometheus ({CURVE_HISTORY_HOURS} h of DCGM history,"
          " `cluster` labels); sweeps inside run as in 1, then one hour's rollup of all ten")
    print(f"{'GPUs':>7} | {'bot CPU/sweep':>13} {'query CPU/sweep':>15} {'peak MB':>7} {'prom MB':>7} |"
          f" {'rollup query CPU':>16} {'bot CPU':>7} {'queries':>7} {'rows':>7} {'prom MB':>7} | load")
    points = []
    for total in sizes:
        per = total // CLUSTERS
        s = sweeps(per, prometheus, sweep_tsdb(cache, per, promtool), _fresh(work / f"curve-{total}"), False)
        r = rollups(per, prometheus, rollup_tsdb(cache, per, promtool), work / f"curve-{total}")
        last = s["inside"][-1]
        points.append((total, last["prom"], r["prom"], last["cpu"]))
        print(f"{total:>7} | {last['cpu']:>13.2f} {last['prom']:>15.2f} {s['peak_rss_mb']:>7.0f} {s['prom_peak_mb']:>7.0f} |"
              f" {r['prom']:>16.2f} {r['cpu']:>7.2f} {r['queries']:>7} {r['rows']:>7} {r['prom_peak_mb']:>7.0f} | {load()}",
              flush=True)
        print("        sweeps inside run: " + "; ".join(f"{k['at']} bot {k['cpu']:.2f} query {k['prom']:.2f}"
                                                      for k in s["inside"]), flush=True)
    if len(points) > 1:
        (a, sa, ra, _), (b, sb, rb, _) = points[-2], points[-1]
        for what, x, y in (("a sweep inside run", sa, sb), ("the hourly rollup", ra, rb)):
            slope = (y - x) / (b - a)
            print(f"   {what}: {slope * 1e3:.3f} ms of query-engine CPU per GPU ({a}-{b} GPUs);"
                  f" at 100,000 GPUs about {y + slope * (100_000 - b):.0f} s")


def rollup_curve(sizes: list[int], prometheus: str, promtool: str, cache: Path, work: Path) -> None:
    """Part 2's rollups alone (``--parts r``)."""
    print("\n2r. One hour's rollup of all ten clusters (query-engine CPU)")
    points = []
    for total in sizes:
        per = total // CLUSTERS
        r = rollups(per, prometheus, rollup_tsdb(cache, per, promtool), _fresh(work / f"rollup-{total}"))
        points.append((total, r["prom"]))
        print(f"{total:>7} GPUs: query engine {r['prom']:.2f} s CPU, bot {r['cpu']:.2f} s, {r['queries']} queries,"
              f" {r['rows']} rows, Prometheus peak {r['prom_peak_mb']:.0f} MB; {load()}", flush=True)
    if len(points) > 1:
        (a, x), (b, y) = points[-2:]
        slope = (y - x) / (b - a)
        print(f"   {slope * 1e3:.3f} ms of query-engine CPU per GPU ({a}-{b} GPUs); at 100,000 GPUs about"
              f" {y + slope * (100_000 - b):.0f} s")


# --- the ledger ----------------------------------------------------------------------------------------


def ledger(gpus: int, days: int, repeat: int, hourly: bool) -> None:
    import sqlalchemy as sa

    from actions.cost.fleet import fleet_report
    from actions.cost.periods import parse_period
    from actions.cost.reporting import CostSetup, build_fleet_report, build_report
    from actions.ledger.rollup import LedgerUsage
    from actions.policy.rules import Policy
    from actions.store.ledger import LedgerStore, usage_day, usage_hour, usage_hour_filled
    from benchmarks.ledger_report import CLUSTER, TEAMS, postgres_store, prices, synthetic_ledger
    from tests.support.usage_history import END

    per = gpus // CLUSTERS
    others = [f"gpu-{i}" for i in range(1, CLUSTERS)]
    print(f"\n3. The ledger on PostgreSQL: {CLUSTERS} clusters x {per} GPUs x {days} days")
    with postgres_store() as store:
        rows, seconds, _ = synthetic_ledger(store, per, days)
        t0 = time.perf_counter()
        tables = [usage_day, usage_hour_filled] + ([usage_hour] if hourly else [])
        with store.engine.begin() as c:
            for table in tables:
                cols = [col.name for col in table.columns if col.name != "id"]
                for name in others:
                    picked = ", ".join(f"'{name}'" if col == "cluster" else
                                       f"md5(key_hash || '{name}')" if col == "key_hash" else col for col in cols)
                    c.execute(sa.text(f"INSERT INTO {table.name} ({', '.join(cols)}) SELECT {picked}"
                                      f" FROM {table.name} WHERE cluster = '{CLUSTER}'"))
            for table in tables:
                c.execute(sa.text(f"ANALYZE {table.name}"))
        with store.engine.connect() as c:
            counts = {t.name: c.execute(sa.select(sa.func.count()).select_from(t)).scalar() for t in
                      (usage_hour, usage_day, usage_hour_filled)}
        print(f"   rows: {counts} (one cluster's {rows} hourly rows made in {seconds:.0f} s, copied to"
              f" {len(others)} more in {time.perf_counter() - t0:.0f} s"
              + ("" if hourly else "; hourly rows of one cluster only: a report of whole days reads the daily") + ")")
        start, end = parse_period(f"{days}d", END)

        def setup(name: str) -> CostSetup:
            return CostSetup(LedgerUsage(LedgerStore(store), None, cluster=name, team_label="team", source="ledger"))

        clusters = [CLUSTER, *others]

        def one_after_another():
            # What build_fleet_report did before it made the clusters' reports side by side.
            made = {n: build_report(setup(n), prices(), TEAMS, Policy(), start, end, None) for n in clusters}
            return fleet_report(made, {}, start, end).fleet

        for label, make in (
            ("all ten clusters (fleet report)", lambda: build_fleet_report(
                [(n, setup(n), None) for n in clusters], prices(), TEAMS, Policy(), start, end).fleet),
            ("all ten clusters, one after another", one_after_another),
            ("one cluster", lambda: build_report(setup(CLUSTER), prices(), TEAMS, Policy(), start, end, None)),
        ):
            walls, cpus = [], []
            for _ in range(repeat):
                t0, c0 = time.perf_counter(), time.process_time()
                report = make()
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
            print(f"   a {days}-day report of {label}: {sorted(walls)[len(walls) // 2]:.2f} s"
                  f" (runs {', '.join(f'{w:.2f}' for w in walls)}), bot CPU {sorted(cpus)[len(cpus) // 2]:.2f} s,"
                  f" {report.gpu_hours:,.0f} GPU-hours; {load()}", flush=True)


# --- main ----------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, default=100_000, help="parts 1 and 3: GPUs over the ten clusters")
    ap.add_argument("--curve", default="1000,10000,30000", help="part 2: GPUs over the ten clusters")
    ap.add_argument("--parts", default="1,2,3")
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hourly", action="store_true", help="part 3: copy every cluster's hourly rows too")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "gpu-cost-bot-bench"),
                    help="where Prometheus data is built once and kept")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(bot_child(args.child[0], int(args.child[1])), default=str))
        return
    from tests.support.prometheus_server import _binaries

    prometheus, promtool = _binaries()
    parts, cache = set(args.parts.split(",")), Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    print(f"gpu-cost-bot ten-cluster benchmark: {load()} at start")
    with tempfile.TemporaryDirectory(prefix="ten-clusters-") as tmp:
        if "1" in parts:
            per = args.gpus // CLUSTERS
            print(f"\n1. Sweeps inside run at {args.gpus} GPUs: {CLUSTERS} clusters x {per} GPUs,"
                  f" {PODS_PER_GPU * per} pods each (own API server processes); Prometheus with one cluster's"
                  f" {scale_fleet.HISTORY_HOURS} h of history answering each cluster's queries in full")
            r = sweeps(per, prometheus, scale_fleet.tsdb(cache, per), _fresh(Path(tmp) / "fleet"), True)
            print_bot(f"{args.gpus} GPUs", r, r["fakes_mb"])
            print(f"   Prometheus peak RSS {r['prom_peak_mb']:.0f} MB")
        if "2" in parts:
            curve([int(s) for s in args.curve.split(",")], prometheus, promtool, cache, Path(tmp))
        if "r" in parts:
            rollup_curve([int(s) for s in args.curve.split(",")], prometheus, promtool, cache, Path(tmp))
    if "3" in parts:
        ledger(args.gpus, args.days, args.repeat, args.hourly)
    print(f"\n{load()} at the end")


if __name__ == "__main__":
    main()
