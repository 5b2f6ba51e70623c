"""``python benchmarks/report.py --ledger``: what a report costs from the usage ledger, beside the
same report straight from Prometheus.

1. The hourly rollup: for --rollup-gpus (default 2000) GPUs, the fleet of benchmarks/report.py over
   the 3 hours ending 2026-11-21T00:00Z loaded into a fresh Prometheus; each of the 3 hours rolled
   up (``LedgerRollup.roll_up``: one set of PromQL queries over one hour) into PostgreSQL; printed:
   wall seconds, the Prometheus server's CPU seconds (utime + stime from /proc), queries, rows.
2. Both paths side by side for each of --gpus (default 100) GPUs over --days (30): the fleet's
   history in Prometheus, a 30-day report straight from it (``PrometheusUsage``) and from the
   ledger filled by the job's backfill of the same history; their USD must agree to the cent.
3. The ledger at fleet scale: synthetic ledger rows for --ledger-gpus (default 10000) GPUs x
   --days, loaded into PostgreSQL with COPY (one ``held`` row per pod and hour with its share of the
   hour, ``capacity`` rows per node), then a 30-day all-teams report read from the ledger alone
   (``LedgerUsage(source="ledger")``: no Prometheus at all, so no PromQL) and priced by
   ``compute_cost_report``; its GPU-hours are checked against the schedule.

PostgreSQL is the server at 127.0.0.1:5432 (trust auth, maintenance database ``test``), or the
URL in ``GPU_COST_BOT_TEST_POSTGRES``, as for the tests; each part uses a database of its own,
dropped at the end.
"""

from __future__ import annotations

import csv
import io
import os
import statistics
import subprocess
import tempfile
import time
import uuid
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Iterator

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from actions.cost.engine import compute_cost_report, consumer_of
from actions.cost.gc_pause import gc_paused
from actions.cost.periods import parse_period
from actions.ledger.rollup import LedgerRollup, LedgerUsage
from actions.model.ledger import CAPACITY, FILLED, REQUESTED
from actions.model.times import HOUR, hours_between
from actions.model.usage import PodOwner
from actions.policy.rules import Policy
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.prometheus.usage import PrometheusUsage
from actions.sources.prometheus.usage_promql import POD_LABELS
from actions.store.database import Store
from actions.store.ledger import LedgerStore, usage_day, usage_hour, usage_hour_filled
from benchmarks.report import NAMESPACES, NOTEBOOK, TEAMS, Server, expected_gpu_hours, make_fleet, write_openmetrics
from tests.support.fixtures.databases import DEFAULT_POSTGRES_SERVER
from tests.support.fleet import model_name
from tests.support.usage_history import END, PRICES

CLUSTER = "bench"
ADMIN = os.environ.get("GPU_COST_BOT_TEST_POSTGRES") or DEFAULT_POSTGRES_SERVER


@contextmanager
def postgres_store() -> Iterator[Store]:
    """A migrated Store on a new PostgreSQL database, dropped on exit."""
    admin = sa.create_engine(ADMIN, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    name = f"gpu_cost_bot_bench_{uuid.uuid4().hex[:12]}"
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    store = Store(make_url(ADMIN).set(database=name).render_as_string(hide_password=False))
    try:
        store.migrate()
        yield store
    finally:
        store.close()
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def cpu_seconds(pid: int) -> float:
    """utime + stime of process ``pid`` so far, seconds (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def prometheus_with(n_gpus: int, start, end, scrape: int, prometheus: str, promtool: str, tmp: Path):
    """A Prometheus holding the report benchmark's fleet of ``n_gpus`` over [start, end + 1 h)."""
    fleet = make_fleet(n_gpus, start, end + HOUR)
    work = tmp / f"prom-{n_gpus}-{uuid.uuid4().hex[:6]}"
    work.mkdir()
    text = work / "series.om"
    with text.open("w", buffering=1 << 22) as f:
        write_openmetrics(fleet, start, end, scrape, f)
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=800h",
                    str(text), str(work / "data")], check=True, capture_output=True, text=True)
    text.unlink()
    server = Server(prometheus, work / "data", work)
    try:
        yield server, fleet
    finally:
        server.stop()


def prices() -> PriceBook:
    return PriceBook(PriceCatalog.bundled(), PRICES)


def rollup_costs(n_gpus: int, scrape: int, prometheus: str, promtool: str, tmp: Path) -> None:
    print(f"\nL1. One hour's rollup at {n_gpus} GPUs (samples every {scrape} s): one set of PromQL queries over one hour")
    print(f"{'hour (UTC)':>16} | {'wall s':>6} {'Prometheus CPU s':>16} {'queries':>7} {'rows':>6}")
    start = END - 3 * HOUR
    with prometheus_with(n_gpus, start, END, scrape, prometheus, promtool, tmp) as (server, _), postgres_store() as store:
        source = PrometheusUsage(server.url, team_label="team", attempts=1, timeout_seconds=600)
        rollup = LedgerRollup(source, LedgerStore(store), cluster=CLUSTER, team_label="team", prices=prices())
        walls, cpus = [], []
        for hour in hours_between(start, END):
            q0, c0, t0 = source.requests, cpu_seconds(server.proc.pid), time.perf_counter()
            rolled = rollup.roll_up(hour, Policy(), END + HOUR)
            wall, cpu = time.perf_counter() - t0, cpu_seconds(server.proc.pid) - c0
            walls.append(wall)
            cpus.append(cpu)
            print(f"{hour:%Y-%m-%d %H:%M} | {wall:>6.2f} {cpu:>16.2f} {source.requests - q0:>7} {rolled.rows:>6}", flush=True)
        print(f"{'median':>16} | {statistics.median(walls):>6.2f} {statistics.median(cpus):>16.2f}")


def side_by_side(sizes: list[int], days: int, repeat: int, scrape: int, prometheus: str, promtool: str,
                 tmp: Path) -> list[tuple]:
    print(f"\nL2. A {days}-day all-teams report both ways (medians of {repeat}); the ledger filled by the job's backfill")
    print(f"{'GPUs':>6} | {'Prometheus: s':>13} {'CPU s':>6} {'queries':>7} | {'backfill s':>10} {'hours':>5} |"
          f" {'ledger: s':>9} {'queries':>7} | {'USD equal':>9}")
    out = []
    start = END - timedelta(days=days)
    for n in sizes:
        with prometheus_with(n, start, END, scrape, prometheus, promtool, tmp) as (server, _), postgres_store() as store:
            source = PrometheusUsage(server.url, team_label="team", attempts=1, timeout_seconds=600)
            p_start, p_end = parse_period(f"{days}d", END)
            runs, cpu = [], []
            for _ in range(repeat):
                q0, c0, t0 = source.requests, cpu_seconds(server.proc.pid), time.perf_counter()
                direct = compute_cost_report(source.fetch(p_start, p_end, Policy()), prices(), TEAMS, team_label="team")
                runs.append(time.perf_counter() - t0)
                cpu.append(cpu_seconds(server.proc.pid) - c0)
            queries = (source.requests - q0)
            rollup = LedgerRollup(source, LedgerStore(store), cluster=CLUSTER, team_label="team", prices=prices())
            t0 = time.perf_counter()
            filled = rollup.backfill(p_start, p_end, Policy())
            fill = time.perf_counter() - t0
            ledger = LedgerUsage(LedgerStore(store), None, cluster=CLUSTER, team_label="team", source="ledger")
            lruns = []
            for _ in range(repeat):
                q0, t0 = source.requests, time.perf_counter()
                mine = compute_cost_report(ledger.fetch(p_start, p_end, Policy()), prices(), TEAMS, team_label="team")
                lruns.append(time.perf_counter() - t0)
            equal = round(mine.cost_usd, 2) == round(direct.cost_usd, 2) and all(
                round(mine.teams[t].cost_usd, 2) == round(r.cost_usd, 2) for t, r in direct.teams.items())
            row = (n, statistics.median(runs), statistics.median(cpu), queries, fill, len(filled),
                   statistics.median(lruns), source.requests - q0, equal)
            out.append(row)
            print(f"{n:>6} | {row[1]:>13.2f} {row[2]:>6.1f} {row[3]:>7} | {fill:>10.1f} {len(filled):>5} |"
                  f" {row[6]:>9.3f} {row[7]:>7} | {'yes' if equal else 'NO':>9}", flush=True)
    return out


def _owner(p) -> tuple[str, str, str | None]:
    labels = {POD_LABELS[k]: v for k, v in p.labels if k in POD_LABELS}
    owner = PodOwner(p.namespace, p.pod, p.owner[0] if p.owner else None, p.owner[1] if p.owner else None, labels)
    return consumer_of(owner, p.namespace, p.pod)


def synthetic_ledger(store: Store, n_gpus: int, days: int) -> tuple[int, float, float]:
    """Load ``n_gpus`` x ``days`` of ledger rows with COPY, then their day sums with one
    INSERT ... SELECT; ``(rows, seconds, expected GPU-hours)``."""
    start = END - timedelta(days=days)
    fleet = make_fleet(n_gpus, start, END + HOUR)
    h100 = model_name()
    teams = dict(NAMESPACES)
    columns = [c.name for c in usage_hour.columns if c.name != "id"]
    hours = hours_between(start, END)
    rows = 0
    t0 = time.perf_counter()
    buf = io.StringIO()
    w = csv.writer(buf)
    for node, labels in fleet.nodes.items():
        facts = dict(instance_type=labels["label_node_kubernetes_io_instance_type"],
                     capacity_type=labels["label_karpenter_sh_capacity_type"])
        for hour in hours:
            w.writerow(_csv(hour, dict(measure=CAPACITY, namespace="", owner_kind="", owner_name="", node=node,
                                       gpu_hours=8.0, **facts), columns))
            rows += 1
    for p in fleet.pods:
        kind, name, queue = _owner(p)
        labels = fleet.nodes[p.node]
        common = dict(measure=REQUESTED, namespace=p.namespace, namespace_team=teams.get(p.namespace), owner_kind=kind,
                      owner_name=name, queue=queue, node=p.node, gpu_model=p.model or h100,
                      instance_type=labels["label_node_kubernetes_io_instance_type"],
                      capacity_type=labels["label_karpenter_sh_capacity_type"])
        idle = 0.75 if p.hourly_phases == NOTEBOOK else 0.0
        first = max(p.start, start).replace(minute=0, second=0, microsecond=0)
        for hour in hours_between(first, min(p.stop, END) + HOUR):
            held = (min(p.stop, hour + HOUR, END) - max(p.start, hour)).total_seconds() / 3600
            if held > 0:
                w.writerow(_csv(hour, dict(common, gpu_hours=p.gpus * held, idle_gpu_hours=p.gpus * held * idle),
                                columns))
                rows += 1
    buf.seek(0)
    key = [c.name for c in usage_day.columns if c.name not in ("id", "day", "key_hash", "last_hour", "hours", *SUMMED)]
    digest = "md5(concat_ws(chr(31), " + ", ".join(f"coalesce({k}::text, chr(1))" for k in key) + "))"
    raw = store.engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.copy_expert(f"COPY usage_hour ({', '.join(columns)}) FROM STDIN WITH (FORMAT csv, NULL '\\N')", buf)
        cursor.execute(
            f"INSERT INTO usage_day (day, key_hash, {', '.join(key)}, last_hour, hours, {', '.join(SUMMED)}) "
            f"SELECT day, {digest}, {', '.join(key)}, max(hour), count(*), {', '.join(f'sum({c})' for c in SUMMED)} "
            f"FROM usage_hour GROUP BY day, {', '.join(key)}"
        )
        raw.commit()
    finally:
        raw.close()
    with store.engine.begin() as c:
        c.execute(usage_hour_filled.insert(), [
            {"cluster": CLUSTER, "hour": h, "status": FILLED, "rows": 0, "written_at": END} for h in hours])
        c.execute(sa.text("ANALYZE usage_hour"))
        c.execute(sa.text("ANALYZE usage_day"))
    return rows, time.perf_counter() - t0, expected_gpu_hours(fleet, start, END)


# The figures usage_day sums per key (the rest of its columns are the key).
SUMMED = ("gpu_hours", "idle_gpu_hours", "energy_kwh", "idle_energy_kwh", "energy_gpu_hours")


def _csv(hour, values: dict, columns: list[str]) -> list:
    row = {"hour": hour.isoformat(), "day": hour.date().isoformat(), "cluster": CLUSTER, "replicas": 1,
           "idle_gpu_hours": 0.0, "energy_kwh": 0.0, "idle_energy_kwh": 0.0, "energy_gpu_hours": 0.0, **values}
    return ["\\N" if row.get(c) is None else row[c] for c in columns]


def fleet_scale(n_gpus: int, days: int, repeat: int) -> tuple:
    print(f"\nL3. The ledger at {n_gpus} GPUs x {days} days on PostgreSQL (synthetic rows), a {days}-day all-teams report")
    with postgres_store() as store:
        rows, load, expected = synthetic_ledger(store, n_gpus, days)
        source = LedgerUsage(LedgerStore(store), None, cluster=CLUSTER, team_label="team", source="ledger")
        p_start, p_end = parse_period(f"{days}d", END)
        runs, cpus, reads, computes = [], [], [], []
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            usage = source.fetch(p_start, p_end, Policy())
            t1 = time.perf_counter()
            with gc_paused():  # as build_report prices every report
                report = compute_cost_report(usage, prices(), TEAMS, team_label="team")
            runs.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            reads.append(t1 - t0)
            computes.append(time.perf_counter() - t1)
        with store.engine.connect() as c:
            day_rows = c.execute(sa.select(sa.func.count()).select_from(usage_day)).scalar()
        ok = abs(report.gpu_hours - expected) < 1e-6 * expected
        print(f"{'hour rows':>10} {'day rows':>8} {'load s':>6} | {'report s':>8} {'bot CPU s':>9} {'read s':>6}"
              f" {'price s':>7} {'PromQL':>6} | {'teams':>5} {'GPU-h':>10} {'check':>5}")
        print(f"{rows:>10} {day_rows:>8} {load:>6.0f} | {statistics.median(runs):>8.2f} {statistics.median(cpus):>9.2f}"
              f" {statistics.median(reads):>6.2f} {statistics.median(computes):>7.2f} {0:>6} |"
              f" {len(report.teams):>5} {report.gpu_hours:>10.0f} {'ok' if ok else f'!{expected:.0f}':>5}", flush=True)
        return n_gpus, statistics.median(runs)


def run(args, prometheus: str, promtool: str) -> None:
    """The ledger mode of benchmarks/report.py (see the module docstring)."""
    print(f"gpu-cost-bot ledger benchmark: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    sizes = [int(s) for s in args.gpus.split(",") if s.strip()]
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
        rollup_costs(args.rollup_gpus, args.scrape_seconds, prometheus, promtool, Path(tmp))
        both = side_by_side(sizes, args.days, args.repeat, args.scrape_seconds, prometheus, promtool, Path(tmp))
    scale = fleet_scale(args.ledger_gpus, args.days, args.repeat)
    print(f"\nSide by side, a {args.days}-day all-teams report (seconds):")
    print(f"{'GPUs':>6} | {'from Prometheus':>15} | {'from the ledger':>15}")
    for n, prom, _cpu, _q, _fill, _h, led, _lq, _eq in both:
        print(f"{n:>6} | {prom:>15.2f} | {led:>15.3f}")
    if both:
        n, prom = both[-1][0], both[-1][1]
        est = prom / (n * args.days) * scale[0] * args.days
        print(f"{scale[0]:>6} | {'~' + format(est, '.0f') + ' (linear)':>15} | {scale[1]:>15.2f}")
