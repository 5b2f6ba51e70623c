"""What several clusters cost a sweep: the test fleet (tests/support/data/FLEET.md) in each of N clusters,
each behind its own wire-level API server, all of them in one real Prometheus whose series carry
``cluster`` labels (as a Thanos or Mimir query endpoint shows them).

For each N in --clusters it prints the median seconds of one whole-fleet detection
(``Runtime.detection``: every cluster read in turn, every query narrowed to its cluster), the
seconds per cluster, the Prometheus queries per sweep; then, for the largest N, the same sweep
with one cluster's API server refusing connections and with two hung (they answer after
--hang seconds, more than ``kubernetes.timeout_seconds``; the clusters are read side by side, so
two cost one timeout): what unreachable clusters cost the others. Also the cost of narrowing a query (``promql_scope.scoped``), microseconds per query.

Needs the ``prometheus`` and ``promtool`` binaries. Run from the repository root:

    python benchmarks/clusters.py [--clusters 1,2,4] [--repeat 3] [--hang 8]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from actions.policy.rules import Policy  # noqa: E402
from actions.sources.prometheus.scope import scoped  # noqa: E402
from actions.sources.prometheus.telemetry_promql import telemetry_queries  # noqa: E402
from bot.chat.console import ConsoleChat  # noqa: E402
from bot.settings import load_settings  # noqa: E402
from bot.wiring.runtime import build_runtime  # noqa: E402
from tests.support.clusters import with_clusters
from tests.support.fakes.kube_api import FakeKubeApi  # noqa: E402
from tests.support.fakes.tcp_proxy import TcpProxy  # noqa: E402
from tests.support.fleet import SWEEP_AT, TELEMETRY_END, TELEMETRY_START, fleet_openmetrics  # noqa: E402
from tests.support.kubeconfig import write_kubeconfig
from tests.support.prometheus_server import running_prometheus

DEMO = ROOT / "bot" / "demo_data" / "cluster.json"
TIMEOUT_SECONDS = 5


def _runtime(tmp: Path, url: str, servers: dict[str, str]):
    kubeconfig = write_kubeconfig(tmp / "kubeconfig", servers)
    config = tmp / "bot.yaml"
    config.write_text(yaml.safe_dump({
        "database_url": f"sqlite:///{tmp / 'bot.db'}",
        "prometheus": {"url": url},
        "kubernetes": {"timeout_seconds": TIMEOUT_SECONDS},
        "clusters": [{"name": n, "kubernetes": {"context": n, "kubeconfig": str(kubeconfig)}} for n in servers],
    }))
    return build_runtime(load_settings(config), chat=ConsoleChat(io.StringIO()))


def _sweeps(rt, repeat: int) -> tuple[float, int, int]:
    """(median seconds, Prometheus queries of one sweep, findings)."""
    seconds, queries, found = [], 0, 0
    for _ in range(repeat):
        before = sum(c.telemetry.api.requests for c in rt.clusters)
        started = time.perf_counter()
        found = len(rt.detection(SWEEP_AT).findings)
        seconds.append(time.perf_counter() - started)
        queries = sum(c.telemetry.api.requests for c in rt.clusters) - before
    return statistics.median(seconds), queries, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", default="1,2,4")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--hang", type=float, default=8.0)
    args = parser.parse_args()
    counts = [int(n) for n in args.clusters.split(",")]
    names = [f"gpu-{i}" for i in range(max(counts))]

    queries = list(telemetry_queries(Policy()).values())
    started = time.perf_counter()
    for _ in range(200):
        for q in queries:
            scoped(q, "cluster", "gpu-0")
    print(f"narrowing one query: {(time.perf_counter() - started) / (200 * len(queries)) * 1e6:.0f} us "
          f"(mean over the {len(queries)} telemetry queries, {sum(map(len, queries)) // len(queries)} characters each)")

    fleet = fleet_openmetrics(TELEMETRY_START, TELEMETRY_END)
    text = with_clusters(fleet, {n: (lambda s: True) for n in names})
    data = DEMO.read_bytes()
    with tempfile.TemporaryDirectory(prefix="clusters-bench-") as d, running_prometheus(text, Path(d) / "prom") as url:
        apis = [FakeKubeApi.from_list_json(data).start() for _ in names]
        try:
            print(f"{'clusters':>8}  {'sweep s':>8}  {'s/cluster':>9}  {'queries':>7}  {'findings':>8}")
            for n in counts:
                tmp = Path(d) / f"n{n}"
                tmp.mkdir()
                rt = _runtime(tmp, url, {name: api.url for name, api in zip(names[:n], apis)})
                rt.detection(SWEEP_AT)  # warm: imports, connections, Prometheus's caches
                sec, q, found = _sweeps(rt, args.repeat)
                print(f"{n:>8}  {sec:>8.2f}  {sec / n:>9.2f}  {q:>7}  {found:>8}")
            n = counts[-1]
            if n < 2:
                return
            proxy = TcpProxy(("127.0.0.1", int(apis[-1].url.rsplit(":", 1)[1])))
            tmp = Path(d) / "down"
            tmp.mkdir()
            servers = {name: api.url for name, api in zip(names[:n], apis)}
            servers[names[n - 1]] = f"http://127.0.0.1:{proxy.port}"
            rt = _runtime(tmp, url, servers)
            rt.detection(SWEEP_AT)
            proxy.cut()
            sec, _, found = _sweeps(rt, args.repeat)
            print(f"{n} clusters, one refusing connections: {sec:.2f} s, {found} findings from the others")
            proxy.close()
            for api in apis[n - 2:n]:
                api.stall("GET", "/api/v1/pods", args.hang, times=10 * args.repeat)
            tmp = Path(d) / "hung"
            tmp.mkdir()
            rt = _runtime(tmp, url, {name: api.url for name, api in zip(names[:n], apis)})
            sec, _, found = _sweeps(rt, args.repeat)
            print(f"{n} clusters, two hung ({args.hang:g} s > timeout {TIMEOUT_SECONDS} s, read side by side): {sec:.2f} s, "
                  f"{found} findings from the others")
        finally:
            for api in apis:
                api.stop()


if __name__ == "__main__":
    main()
