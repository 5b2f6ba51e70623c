"""Issue 22, items 2-4, against the real `gpu-cost-bot run` process in HTTP mode: a Prometheus
that drips its answer or sends 500 MiB (tests/support/hostile_http.py) costs a `/gpu cost` bounded
time and memory under the pod's 1 GiB limit, and a password in the Prometheus URL (given in the
environment, where it may be) reaches no Slack call and no log line."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.bot_process import BotProcess
from tests.support.hostile_http import drip, flood, upstream

pytestmark = pytest.mark.process

PASSWORD = "pr0m-s3cret"
POD_LIMIT = 1024 * 1024 * 1024  # deploy/base/deployment.yaml resources.limits.memory: 1Gi


def peak_rss(bot: BotProcess) -> int:
    """The process's high-water resident set (VmHWM), bytes."""
    for line in open(f"/proc/{bot.proc.pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def hostile_bot(tmp_path, sqlite_url, slack, kube, url: str) -> BotProcess:
    with_password = url.replace("http://", f"http://bot:{PASSWORD}@")
    return BotProcess(tmp_path, sqlite_url, slack, kube, "http://127.0.0.1:9", env={
        "GPU_COST_BOT_PROMETHEUS__URL": with_password,
        "GPU_COST_BOT_PROMETHEUS__TIMEOUT_SECONDS": "3", "GPU_COST_BOT_COSTS__QUERY_TIMEOUT_SECONDS": "3",
    })


def test_a_dripping_prometheus_costs_a_command_its_timeout_and_no_password_shows(tmp_path, sqlite_url, slack, kube):
    with upstream(drip) as (url, _), hostile_bot(tmp_path, sqlite_url, slack, kube, url) as bot:
        started = time.monotonic()
        assert bot.command("cost", "drip")[0] == 200
        (answer,) = bot.answers("drip", timeout=60)
        took = time.monotonic() - started
        assert "did not answer" in answer["text"] and "within 3 s" in answer["text"], answer["text"]
        assert took < 30  # every query of the report given up at its 3 s
        assert "REDACTED@127.0.0.1" in answer["text"]
        everything = json.dumps([slack.calls, slack.responses], default=str) + bot.log_text()
        assert PASSWORD not in everything


def test_a_500_mib_answer_is_refused_under_the_pods_memory_limit(tmp_path, sqlite_url, slack, kube):
    with upstream(flood(declared=False, mib=500)) as (url, sent), \
            hostile_bot(tmp_path, sqlite_url, slack, kube, url) as bot:
        assert bot.command("cost", "flood")[0] == 200
        (answer,) = bot.answers("flood", timeout=120)
        assert "with more than the bot reads" in answer["text"], answer["text"]
        assert peak_rss(bot) < POD_LIMIT / 2
        assert sent["bytes"] < 200 * 1024 * 1024  # read to the 128 MiB limit, then the connection closed
        assert PASSWORD not in bot.log_text()
