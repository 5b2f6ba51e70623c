"""How fast the real bot acknowledges Slack while slow work runs, and what hostile bodies cost it.

Starts ``gpu-cost-bot run`` in Slack HTTP mode (as tests/reliability does: FakeSlack for the Web
API, FakeKubeApi through a kubeconfig, a Prometheus that answers every query after --delay
seconds, SQLite) and prints:

1. ack latency (client side: request sent to response read, signed requests over HTTP) of
   slash commands (``/gpu help``) and button presses (Snooze on a request id that names none:
   audited, answered), --acks of each, first idle, then with ten slow cost commands in flight
   (four computing, six queued: ``server.command_workers: 4``, ``command_queue: 6``), and with
   --clients concurrent clients;
2. the process's resident and peak memory before and after ten unsigned 10 MiB bodies arrive at
   once (Content-Length and chunked).

The target (issue 16): ack p99 under 50 ms with ten slow cost commands in flight, peak RSS under
300 MiB. tests/reliability asserts both loosely; this script measures them.

    python benchmarks/acks.py [--acks 200] [--clients 20] [--delay 60]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.bot_process import DEMO, OTHER, BotProcess  # noqa: E402
from tests.support.fakes.kube_api import FakeKubeApi  # noqa: E402
from tests.support.fakes.prometheus_api import FakePrometheus  # noqa: E402
from tests.support.fakes.slack_api import FakeSlack  # noqa: E402
from tests.support.raw_http import big_post

PERIODS = ["30d", "7d", "mtd", "last-month", "12h", "2w", "1d", "3d", "5d", "6h"]


def timed(call) -> float:
    started = time.perf_counter()
    status, _ = call()
    if status != 200:
        raise SystemExit(f"unexpected status {status}")
    return (time.perf_counter() - started) * 1000


def measure(bot: BotProcess, n: int, clients: int, tag: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"command": [], "press": []}
    lock = threading.Lock()

    def client(c: int) -> None:
        for i in range(c, n, clients):
            cmd = timed(lambda: bot.command("help", f"{tag}-h-{i}"))
            press = timed(lambda: bot.press("gpu_snooze", 10**6 + i, f"{tag}-p-{i}", user=OTHER))
            with lock:
                out["command"].append(cmd)
                out["press"].append(press)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def line(what: str, ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=100)
    return f"  {what:<40} n={len(ms):<4} p50 {q[49]:6.1f} ms   p99 {q[98]:6.1f} ms   max {max(ms):6.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acks", type=int, default=200, help="acks of each kind per measurement")
    parser.add_argument("--clients", type=int, default=20, help="concurrent clients in the last measurement")
    parser.add_argument("--delay", type=float, default=120, help="seconds each Prometheus query takes")
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.system()}")
    with FakeSlack() as slack, FakeKubeApi.from_list_json((DEMO / "cluster.json").read_bytes()) as kube, \
            FakePrometheus() as prometheus, tempfile.TemporaryDirectory() as tmp:
        config = {"server": {"command_workers": 4, "command_queue": 6, "log_level": "WARNING"}}
        with BotProcess(Path(tmp), f"sqlite:///{tmp}/bot.db", slack, kube, prometheus.url, config=config) as bot:
            bot.proposal()
            print("\n1. ack latency, signed requests over HTTP to the real process")
            idle = measure(bot, args.acks, 1, "idle")
            print(line("idle, 1 client: /gpu help", idle["command"]))
            print(line("idle, 1 client: button press", idle["press"]))
            prometheus.delay_seconds = args.delay
            for i, period in enumerate(PERIODS):
                bot.command(f"cost {period}", f"slow-{i}")
            busy = measure(bot, args.acks, 1, "busy")
            print(line("10 cost commands in flight: /gpu help", busy["command"]))
            print(line("10 cost commands in flight: button press", busy["press"]))
            crowd = measure(bot, args.acks, args.clients, "crowd")
            print(line(f"10 in flight, {args.clients} clients: /gpu help", crowd["command"]))
            print(line(f"10 in flight, {args.clients} clients: button press", crowd["press"]))
            print(f"  cost answers received meanwhile: {sum(bool(slack.responses_to(f'slow-{i}')) for i in range(10))} of 10")

            print("\n2. memory, ten unsigned 10 MiB bodies at once")
            for chunked in (False, True):
                rss, peak = bot.memory_mib()
                results: list = []
                threads = [threading.Thread(target=lambda: results.append(big_post(bot.port, 10 * 1024 * 1024, chunked)))
                           for _ in range(10)]
                started = time.monotonic()
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                after, peak_after = bot.memory_mib()
                statuses = sorted({s for s, _ in results}, key=str)
                print(
                    f"  {'chunked' if chunked else 'Content-Length'}: RSS {rss:.0f} -> {after:.0f} MiB, "
                    f"peak {peak:.0f} -> {peak_after:.0f} MiB, answers {statuses}, {time.monotonic() - started:.2f} s"
                )


if __name__ == "__main__":
    main()
