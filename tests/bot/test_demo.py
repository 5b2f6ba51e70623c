"""``gpu-cost-bot demo`` with its 30 days of bundled history (bot/demo_data/history.json): every
command answers with figures on a fresh state, with no Prometheus and no cluster.

The figures asserted follow by hand from the history file and the bundled price of a p5.48xlarge
($55.04 / 8 GPUs = $6.88 per H100-hour); none could be printed without the history loaded."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from bot.cli.main import app
from tests.support.prometheus_server import free_port

runner = CliRunner()


@pytest.fixture
def no_prometheus(monkeypatch, tmp_path):
    """Nothing listens at the configured Prometheus, and the working folder is fresh (the
    demo's store is a new temporary SQLite file either way)."""
    monkeypatch.chdir(tmp_path)
    return {"GPU_COST_BOT_PROMETHEUS__URL": f"http://127.0.0.1:{free_port()}"}


def test_the_interactive_demo_answers_cost_budget_advise_and_queue_from_its_history(no_prometheus):
    typed = "/gpu cost\n/gpu cost research 30d\n/gpu budget\n/gpu advise\n/gpu queue\nquit\n"
    result = runner.invoke(app, ["demo", "--interactive"], input=typed, env=no_prometheus)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "unreachable" not in out and "Prometheus at" not in out
    assert "/gpu cost`, `/gpu budget`, `/gpu advise`" in out  # the prompt lists what can be tried

    # /gpu cost: serving's chat-api ran all 720 hours of the 30 days on one on-demand H100 in the
    # capture's light-serving phase (GPU_UTIL 0%): 720 x $6.88 = $4,953.60, all of it idle.
    assert "serving            720     $4,953.60  100.0%    0.0%    0.0%" in out
    # training: pretrain-v1 2 GPUs x 14 days + pretrain 2 GPUs x 2 days on-demand (768 h), and on
    # spot finetune-spot 20:00-08:00 + data-prep 02:00-04:00 every day (420 h): 1,188 h, spot
    # 420/1,188 = 35.4%; idle 12.0% = the capture's 12 checkpoint-pause samples of 100.
    assert "training         1,188" in out and "12.0%   88.0%   35.4%" in out
    # Whole hours from the ledger: nothing is missing, nothing read live.
    assert "does not hold" not in out
    # /gpu cost research: the MIG notebook is priced as its 1/7 of an H100.
    assert "• H100 MIG 1g.10gb on-demand 19 hrs × $6.88 = $132.69" in out
    assert "1. Notebook ml-research/llm-explore: 720 hrs, $4,953.60, idle 100%" in out

    # /gpu budget: serving's November to the demo's noon of the 20th is 468 hours x $6.88.
    assert "serving: $2,500.00/month (from the bot's config)\n    spent $3,219.84 in 2026-11 (129%)" in out

    # /gpu advise: the idle notebook's peak framebuffer is the real capture's, and serving held
    # an H100 in every one of the 720 hours.
    assert "GPU advice: could save $" in out
    assert "peak framebuffer used (DCGM_FI_DEV_FB_USED) 21.5 GiB (21,970 MiB)" in out
    assert "hours with GPUs in use 720 of 720" in out

    # /gpu queue: the pending Workload of the recorded cluster.
    assert "job-eval-4d5e6 waits 3h 0m, asks 8 × H100" in out


def test_the_demo_writes_the_chart_of_its_30_days(no_prometheus, tmp_path):
    chart = tmp_path / "cost.png"
    result = runner.invoke(app, ["demo", "--png", str(chart)], env=no_prometheus)
    assert result.exit_code == 0, result.output
    data = chart.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert "2026-10-21 – 2026-11-20 (30 days)" in result.output
    assert "total            2,911    $18,163.44" in result.output
    assert f"the daily cost chart of these 30 days (the demo's bundled history) is in {chart}" in result.output


def test_the_demo_chart_into_a_missing_folder_is_refused(tmp_path):
    result = runner.invoke(app, ["demo", "--png", str(tmp_path / "no" / "chart.png")])
    assert result.exit_code == 2
    assert "does not exist" in result.output
