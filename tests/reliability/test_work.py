"""Failure 5 of issue 16, against the real process: Slack waits. Acks must come at once while slow
cost commands run, a full pool says "busy" at once, the same report is computed once for everyone
asking, and SIGTERM ends within the grace period with queued work told it was cancelled.
(Ack latency is measured properly in ``benchmarks/acks.py``; here it is asserted loosely.)
"""

from __future__ import annotations

import statistics
import threading
import time

import pytest

from tests.support.bot_process import APPROVER
from tests.support.waiting import wait_for

pytestmark = pytest.mark.process

PERIODS = ["30d", "7d", "mtd", "last-month", "12h", "2w", "1d", "3d", "5d", "6h"]
SLOW = {"server": {"command_workers": 4, "command_queue": 6, "shutdown_grace_seconds": 4}}


def timed(fn) -> float:
    started = time.perf_counter()
    status, _ = fn()
    assert status == 200
    return time.perf_counter() - started


def test_acks_come_at_once_while_ten_slow_cost_commands_run(make_sqlite_bot, prometheus, slack):
    prometheus.delay_seconds = 30
    with make_sqlite_bot(SLOW) as bot:
        req = bot.proposal()
        for i, period in enumerate(PERIODS):
            assert timed(lambda: bot.command(f"cost {period}", f"slow-{i}")) < 1
        # Ten in flight: four computing, six queued. An eleventh is told at once.
        started = time.perf_counter()
        status, body = bot.command("cost 4d", "eleventh")
        assert status == 200 and "busy" in body and time.perf_counter() - started < 1
        assert 'gpu_cost_bot_work_refused_total{pool="commands"} 1.0' in bot.request("GET", "/metrics")[1]
        acks = []
        for i in range(40):
            acks.append(timed(lambda: bot.command("help", f"help-{i}")))
            acks.append(timed(lambda: bot.press("gpu_snooze", 10**6 + i, f"press-{i}", user=APPROVER)))
        p99 = statistics.quantiles(acks, n=100)[98]
        assert p99 < 0.25, f"ack p99 {p99 * 1000:.0f} ms"
        # A press waits for no cost report: its answer comes while all ten still run.
        (answer,) = bot.answers("press-0", timeout=10)
        assert "There is no request" in answer["text"] and not slack.responses_to("slow-0")
        assert bot.store().get(req.id).state == "proposed"


def test_the_same_report_asked_five_times_at_once_is_computed_once(sqlite_bot, prometheus):
    prometheus.delay_seconds = 0.1
    assert sqlite_bot.command("cost 7d", "alone")[0] == 200
    sqlite_bot.answers("alone")
    one_report = len(prometheus.queries)
    assert one_report >= 5
    threads = [threading.Thread(target=sqlite_bot.command, args=("cost 30d", f"same-{i}")) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    answers = [sqlite_bot.answers(f"same-{i}")[0] for i in range(5)]
    assert len(prometheus.queries) == 2 * one_report
    assert len({a["text"] for a in answers}) == 1 and "GPU cost by team" in answers[0]["text"]


def test_sigterm_with_cost_commands_in_flight_ends_within_the_grace(make_sqlite_bot, prometheus, slack):
    prometheus.delay_seconds = 60
    bot = make_sqlite_bot(SLOW).start()
    bot.proposal()
    for i, period in enumerate(PERIODS):
        assert bot.command(f"cost {period}", f"slow-{i}")[0] == 200
    wait_for(lambda: len(prometheus.queries) >= 4, "four reports to be computing")
    code, took = bot.stop()
    assert code == 0 and took < 4 + 3, f"exit {code} after {took:.1f} s"
    # The six queued were cancelled and told so; none of the ten got a report.
    cancelled = [slack.responses_to(f"slow-{i}") for i in range(10)]
    told = [r for r in cancelled if r and "restarting" in r[0]["text"]]
    assert len(told) == 6
    messages = [line["message"] for line in bot.log_lines()]
    assert "stopped" in messages and any("6 queued task(s) cancelled" in m for m in messages)
