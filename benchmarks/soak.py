"""Memory that does not grow with time: `run`'s long-running objects swept round after round on a
clock moved by hand, with pods ending and starting between rounds, and the bot's resident memory
after every round.

The fleet is benchmarks/scale_fleet.py's (--gpus GPU pods among --pods pods, a wire-level
FakeKubeApi in its own process) over the days the soak covers (benchmarks/soak_fleet.py): each
round --gpu-churn of the GPU pods an hour end (the pod and its owners deleted) and as many new ones
start on the same GPUs, and --cpu-churn of the CPU-only pods likewise, so the watch caches follow
real ADDED and DELETED events. A real Prometheus holds the matching DCGM and kube-state-metrics
history of every pod that lived, sampled every --scrape-seconds (served with a query lookback
delta of one scrape interval and a minute, so a series is visible at every step as a 60 s scrape
makes it). Slack is the wire-level FakeSlack (its own process); the database a SQLite file or
--database-url.

The bot side is this process: the Runtime as `run` builds it (SlackChat, list+watch caches,
metrics), and each round, at the round's clock time, what `run`'s scheduler and housekeeping
would run then: the idle sweep (every 15 minutes), the usage-ledger rollup (the hours finished
since the last), the digests check (40 teams and the admin summary, each with its chart, daily at
09:00 UTC over the day before), one housekeeping round (settle, verify, message sync). Each job
runs through the scheduler's own ``run_scheduled`` (claimed in ``job_run``, its outcome recorded).
After every round the resident set (VmRSS, no tracemalloc) and Python's allocated blocks are
read; every --every rounds a row is printed, and at the end the verdict: the last round's RSS
against round --every's, within 10% or not. ``--tracemalloc`` (a diagnostic run: slower, more
memory) prints what grew between round --every and the last, by allocation site and, among the
objects the garbage collector tracks, by type (what holds it).

Run from the repository root:

    python benchmarks/soak.py [--rounds 500] [--gpus 10000] [--step-minutes 15]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import urllib.request
from collections import Counter
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.soak_fleet import Churn, Generations, pod_objects, write_history  # noqa: E402

TOKEN = "xoxb-soak"


def proc_mb(field: str, pid: int | str = "self") -> float:
    """``field`` (VmRSS, VmHWM) of process ``pid`` from /proc, MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


# --- the other processes ---------------------------------------------------------------------------


def _build_tsdb(churn: Churn, scrape: int, data: Path) -> None:
    from tests.support.prometheus_server import _binaries

    text = data.parent / f"{data.name}.om"
    samples = write_history(text, churn, scrape)
    _, promtool = _binaries()
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=800h", str(text),
                    str(data)], check=True, capture_output=True)
    text.unlink()
    (data / "done").write_text(json.dumps({"samples": samples}))


def tsdb(cache: Path, churn: Churn, scrape: int) -> Path:
    """The Prometheus data directory of the soak's history, built once under ``cache`` (in a
    child process, so its memory is not the bot's) and reused."""
    def name(rounds: int) -> str:
        return (f"soak-{churn.gpus}-{churn.pods}-{rounds}x{churn.step_seconds}s-{scrape}s"
                f"-{churn.gpu_per_hour:g}-{churn.cpu_per_hour:g}-{churn.at(0):%Y%m%d%H}")

    # A longer soak's history serves a shorter one: its first rounds' churn is the same.
    longer = sorted((int(d.name.split("-")[3].split("x")[0]), d) for d in cache.glob(name(0).replace("-0x", "-*x"))
                    if (d / "done").exists() and int(d.name.split("-")[3].split("x")[0]) >= churn.rounds)
    data = longer[0][1] if longer else cache / name(churn.rounds)
    if not (data / "done").exists():
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True)
        t0 = time.monotonic()
        child = multiprocessing.get_context("fork").Process(target=_build_tsdb, args=(churn, scrape, data))
        child.start()
        child.join()
        if child.exitcode:
            raise RuntimeError(f"building the history failed ({child.exitcode})")
        print(f"history built in {time.monotonic() - t0:.0f} s: {json.loads((data / 'done').read_text())['samples']:,}"
              " samples", flush=True)
    return data


def _serve_kube(churn: Churn, conn) -> None:
    """The fake API server of the fleet; on ``("round", r)`` it applies round ``r``'s churn and
    answers (its resourceVersion after it, its RSS MB)."""
    from tests.support.fakes.kube_api import FakeKubeApi

    fake = FakeKubeApi(pod_objects(churn))
    fake.bookmark_seconds = 0.2  # kinds without changes catch up to the version within this
    gens = Generations()
    with fake:
        conn.send(fake.url)
        while (msg := conn.recv()) != "stop":
            r = msg[1]
            for kind, slots in (("gpu", churn.gpu[r]), ("cpu", churn.cpu[r])):
                for k in slots:
                    gone, new = gens.replace(kind, k, churn.at(r))
                    for kind_, ns, name, group in gone:
                        fake.delete(kind_, ns, name, group)
                    for obj in new:
                        fake.add(obj)
            conn.send((int(fake.resource_version), proc_mb("VmRSS")))


def _serve_slack(conn) -> None:
    """FakeSlack until told to stop; answers ``stats`` with the Web API calls by method."""
    from collections import Counter

    from tests.support.fakes.slack_api import FakeSlack

    with FakeSlack() as fake:
        conn.send(fake.base_url)
        while conn.recv() != "stop":
            with fake._lock:
                conn.send((dict(Counter(c.method for c in fake.calls)), proc_mb("VmRSS")))
                fake.calls.clear()  # the fake's own memory: only the counts are wanted


def prometheus_rss_mb(url: str) -> float:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("process_resident_memory_bytes "):
                return float(line.split()[1]) / 2**20
    return 0.0


# --- the bot side ----------------------------------------------------------------------------------


def write_config(work: Path, kube_url: str, slack_url: str, prom: str, database_url: str) -> Path:
    from tests.support.kubeconfig import write_kubeconfig

    teams = [{"name": f"team-{t:02d}", "namespaces": [f"team-{t:02d}"], "channel": f"C0TEAM{t:02d}"} for t in range(40)]
    (path := work / "bot.yaml").write_text(json.dumps({
        "database_url": database_url,
        "slack": {"mode": "http", "base_url": slack_url, "admin_channel": "C0ADMIN"},
        "prometheus": {"url": prom, "timeout_seconds": 600},
        "kubernetes": {"kubeconfig": str(write_kubeconfig(work / "kubeconfig", kube_url)), "timeout_seconds": 120},
        "costs": {"digest_cron": "0 9 * * *", "digest_period_days": 1, "query_timeout_seconds": 600},
        "ledger": {"enabled": True},
        "teams": teams,
    }))
    return path


class Clock:
    """The bot's clock, moved by the soak (tests/support/clock.Clock's way)."""

    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def caught_up(caches, version: int, timeout: float = 60) -> float:
    """Wait until every synced watch of ``caches`` has seen ``version``; returns the seconds."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        reflectors = [r for c in caches for r in (c.pods, c.nodes, *c.on_demand.values()) if not r.gave_up]
        if all(r.synced and int(r.resource_version or 0) >= version for r in reflectors):
            return time.monotonic() - t0
        time.sleep(0.02)
    raise TimeoutError(f"the watch caches did not reach resourceVersion {version} in {timeout} s")


def _live_types() -> Counter:
    """How many objects of each type the garbage collector tracks (containers and instances; not
    strings or numbers)."""
    return Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())


def soak(args, churn: Churn, settings_path: Path, kube, slack, prom: str) -> None:
    os.environ["SLACK_BOT_TOKEN"] = TOKEN
    import bot.cli.main  # noqa: F401 - the CLI's own imports, as `run` pays them
    from bot.chat.slack.web import SlackChat, UserGroups, web_client
    from bot.jobs import digests, ledger, sweep
    from bot.jobs.scheduler import JobBinding, ScheduledJob, run_scheduled
    from bot.service import logs
    from bot.service.metrics import BotMetrics
    from bot.settings import load_settings
    from bot.wiring.jobs import digests_for, ledger_job, sweep_for
    from bot.wiring.process import housekeeping
    from bot.wiring.runtime import build_runtime, cluster_caches, keep_alive_to_exit

    logging.basicConfig(filename=str(settings_path.parent / "bot.log"), level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logs.quiet_libraries(logging.INFO)
    settings = load_settings(settings_path)
    clock = Clock(churn.at(0))
    metrics = BotMetrics(clusters=[t.name for t in settings.cluster_targets()])
    client = web_client(TOKEN, settings.slack.base_url)
    rt = build_runtime(settings, chat=SlackChat(client, metrics), group_members=UserGroups(client, metrics=metrics).members,
                       clock=clock, metrics=metrics, watch=True)
    sweeper, rollup, digest = sweep_for(rt), ledger_job(rt, settings), digests_for(rt, settings)
    keeper = housekeeping(rt, settings)
    keep_alive_to_exit()  # as `run` does once start-up is done
    caches = [c.start() for c in cluster_caches(rt)]
    notes: dict = {"hours": 0, "digests": 0, "failed": [], "calls": {}}

    def roll(at: datetime) -> None:
        notes["hours"] += len(rollup.run(clock()).rolled)

    def digest_check(at: datetime) -> None:
        notes["digests"] += sum(r.outcome == "sent" for r in digest.run(at))

    jobs = [ScheduledJob(sweep.JOB_ID, None, sweeper.scheduled), ScheduledJob(ledger.JOB_ID, None, roll),
            ScheduledJob(digests.JOB_ID, None, digest_check)]
    bindings = [JobBinding(j, rt.store, "soak", clock) for j in jobs]
    caught_up(caches, 0, timeout=600)
    print(f"{'round':>5} {'clock (UTC)':>16} {'RSS MB':>7} {'peak MB':>7} {'blocks K':>8} {'s/round':>7}"
          f" {'fake MB':>7} {'prom MB':>7}  ledger hours, digests, failed runs", flush=True)
    curve, base, last_print, snap, kinds = [], None, time.monotonic(), None, Counter()
    spent: dict[str, float] = {}

    def lap(name: str, since: float) -> float:
        now = time.monotonic()
        spent[name] = spent.get(name, 0.0) + now - since
        return now
    if args.tracemalloc:
        tracemalloc.start(8)
    for r in range(args.rounds + 1):
        clock.now = at = churn.at(r)
        fake_mb, t = 0.0, time.monotonic()
        if r:
            kube.send(("round", r))
            version, fake_mb = kube.recv()
            caught_up(caches, version)
        t = lap("churn", t)
        for b in bindings:
            # The rollup's other runs (every 5 minutes) find no finished hour to roll up.
            if b.job.id == ledger.JOB_ID and r and at.hour == churn.at(r - 1).hour:
                continue
            if run_scheduled(b.job.id, scheduled_at=at, binding=b) != "ran":
                notes["failed"].append(f"{b.job.id}@{r}")
            t = lap(b.job.id, t)
        keeper()
        lap("housekeeping", t)
        rss = proc_mb("VmRSS")
        curve.append({"round": r, "at": at.isoformat(), "rss_mb": rss, "blocks": sys.getallocatedblocks()})
        if r == args.every:
            base = rss
            if args.tracemalloc:
                gc.collect()
                snap = tracemalloc.take_snapshot()
                kinds = _live_types()
        if r % args.every == 0 or r == args.rounds:
            slack.send("stats")
            calls, slack_mb = slack.recv()
            for method, n in calls.items():
                notes["calls"][method] = notes["calls"].get(method, 0) + n
            seconds = (time.monotonic() - last_print) / (args.every if r else 1)
            last_print = time.monotonic()
            print(f"{r:>5} {at:%a %d %H:%M} {rss:>7.1f} {proc_mb('VmHWM'):>7.1f} {curve[-1]['blocks'] / 1000:>8.0f}"
                  f" {seconds:>7.2f} {fake_mb:>7.0f} {prometheus_rss_mb(prom):>7.0f}  {notes['hours']}, {notes['digests']},"
                  f" {len(notes['failed'])}; s: " + " ".join(f"{k} {v:.1f}" for k, v in spent.items()), flush=True)
            spent.clear()
    for c in caches:
        c.stop()
    final = curve[-1]["rss_mb"]
    if base is not None:
        growth = (final - base) / base * 100
        print(f"\nRSS after round {args.every}: {base:.1f} MB; after round {args.rounds}: {final:.1f} MB"
              f" ({growth:+.1f}%): {'within' if abs(growth) <= 10 else 'NOT within'} 10%")
    print(f"failed runs: {notes['failed'][:10] or 'none'}; ledger hours rolled up: {notes['hours']};"
          f" digests sent: {notes['digests']}; Slack calls: {notes['calls']}")
    if args.json:
        Path(args.json).write_text(json.dumps(curve))
    if snap is not None:
        gc.collect()
        print(f"\ntracemalloc: what grew between round {args.every} and round {args.rounds}")
        for stat in tracemalloc.take_snapshot().compare_to(snap, "traceback")[:args.top]:
            print(f"{stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks")
            for line in stat.traceback.format()[-8:]:
                print("    " + line)
        # Where the allocation sites say what grew, the live objects by type say what holds it.
        grown = (_live_types() - kinds).most_common(args.top)
        print("\nlive objects the collector tracks, by type, more than at round "
              f"{args.every}: " + ", ".join(f"{name} +{n}" for name, n in grown))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=500, help="sweep rounds after the first")
    ap.add_argument("--gpus", type=int, default=10000, help="GPU pods (one GPU each)")
    ap.add_argument("--pods", type=int, default=None, help="pods in all, the rest CPU-only (default 5 x --gpus)")
    ap.add_argument("--step-minutes", type=int, default=15, help="clock minutes between rounds")
    ap.add_argument("--scrape-seconds", type=int, default=900, help="the history's sample interval")
    ap.add_argument("--gpu-churn", type=float, default=0.02, help="fraction of the GPU pods replaced an hour")
    ap.add_argument("--cpu-churn", type=float, default=0.01, help="fraction of the CPU-only pods replaced an hour")
    ap.add_argument("--every", type=int, default=20, help="print a row every this many rounds (the baseline round)")
    ap.add_argument("--database-url", default=None, help="default: a SQLite file in a temporary directory")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "gpu-cost-bot-bench"),
                    help="where the Prometheus history is built once and kept")
    ap.add_argument("--json", default=None, help="write the per-round curve here")
    ap.add_argument("--tracemalloc", action="store_true", help="diagnostic: what grew, by allocation site")
    ap.add_argument("--top", type=int, default=15, help="with --tracemalloc: sites printed")
    args = ap.parse_args()
    # As installed in production: without the test extra's kubernetes-validate (see benchmarks/sweep.py).
    sys.modules["kubernetes_validate"] = None  # type: ignore[assignment]
    churn = Churn(args.gpus, args.pods or 5 * args.gpus, args.rounds, args.step_minutes * 60,
                  args.gpu_churn, args.cpu_churn)
    print(f"soak: {args.rounds} rounds of {args.step_minutes} min from {churn.at(0):%Y-%m-%d %H:%M} UTC, {churn.gpus} GPU"
          f" pods among {churn.pods}; churn a round: {len(churn.gpu[1])} GPU pods, {len(churn.cpu[1])} CPU pods"
          f" replaced; history every {args.scrape_seconds} s", flush=True)
    data = tsdb(Path(args.cache), churn, args.scrape_seconds)
    from tests.support.prometheus_server import serving_tsdb

    ctx = multiprocessing.get_context("fork")
    kube, kube_end = ctx.Pipe()
    slack, slack_end = ctx.Pipe()
    children = [ctx.Process(target=_serve_kube, args=(churn, kube_end), daemon=True),
                ctx.Process(target=_serve_slack, args=(slack_end,), daemon=True)]
    for c in children:
        c.start()
    lookback = f"--query.lookback-delta={args.scrape_seconds + 60}s"
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp, \
            serving_tsdb(data, Path(tmp), extra_args=(lookback, "--query.timeout=10m")) as prom:
        work = Path(tmp)
        database_url = args.database_url or f"sqlite:///{work / 'bot.db'}"
        settings_path = write_config(work, kube.recv(), slack.recv(), prom, database_url)
        try:
            soak(args, churn, settings_path, kube, slack, prom)
        finally:
            kube.send("stop")
            slack.send("stop")
            for c in children:
                c.join(10)


if __name__ == "__main__":
    main()
