"""Data of another time says so: a telemetry recording is read at its own time and named as a
recording, never passed off as live; an empty Prometheus makes cost, budget and advice say the
telemetry is empty instead of answering $0.00 or "nothing to advise" as if all were well."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bot.cli.main import app
from tests.support.paths import DEMO
from tests.support.prometheus_server import running_prometheus

runner = CliRunner()
CLUSTER, TELEMETRY = str(DEMO / "cluster.json"), str(DEMO / "telemetry.json")
RECORDED = "2026-11-20T12:05:00Z"  # the recording's last snapshot (its recheck)


def test_a_sweep_of_a_recording_without_at_reads_it_at_its_own_time_and_says_so():
    result = runner.invoke(app, ["sweep", "--once", "--json", "--cluster-state", CLUSTER, "--telemetry", TELEMETRY])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["at"] == RECORDED
    # The notebook was idle 6 h 5 min when recorded (its samples start at 06:00), not for the
    # days between the recording and today.
    [finding] = answer["findings"]
    assert finding["idle_seconds"] == 6 * 3600 + 300
    assert f"telemetry: a recording of {RECORDED}, read at its own time" in result.stderr


def test_a_posting_sweep_of_a_recording_names_it_beside_its_counts(tmp_path):
    config = tmp_path / "bot.yaml"
    config.write_text(
        f"database_url: sqlite:///{tmp_path / 'bot.db'}\n"
        "teams:\n  - {name: research, namespaces: [ml-research], channel: '#research', approvers: [U0APPROVER]}\n"
    )
    result = runner.invoke(app, ["sweep", "--once", "--config", str(config), "--cluster-state", CLUSTER, "--telemetry", TELEMETRY])
    assert result.exit_code == 0, result.output
    assert f"sweep at {RECORDED}: proposed 1" in result.stdout
    assert f"telemetry: a recording of {RECORDED}, read at its own time" in result.stdout
    assert "Idle for: 6h 5m" in result.stdout and "Idle cost so far: $41.85" in result.stdout  # 6h 5m x $6.88


def test_a_sweep_of_a_recording_at_another_time_says_both_times():
    result = runner.invoke(app, ["sweep", "--once", "--json", "--cluster-state", CLUSTER, "--telemetry", TELEMETRY,
                                 "--at", "2026-11-20T12:00:00Z"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["at"] == "2026-11-20T12:00:00Z"
    assert f"telemetry: a recording of {RECORDED}, read at 2026-11-20T12:00:00Z (not live)" in result.stderr


def test_the_console_bot_on_a_recording_says_it_is_shown_as_if_now(tmp_path):
    env = {"GPU_COST_BOT_DATABASE_URL": f"sqlite:///{tmp_path / 'bot.db'}"}
    result = runner.invoke(app, ["run", "--chat", "console", "--cluster-state", CLUSTER, "--telemetry", TELEMETRY],
                           input="quit\n", env=env)
    assert result.exit_code == 0, result.output
    assert f"telemetry: a recording of {RECORDED}, shown as if now (not live)" in result.stderr


@pytest.mark.prometheus
def test_an_empty_prometheus_makes_cost_budget_and_advice_say_the_telemetry_is_empty(tmp_path):
    with running_prometheus("# EOF\n", tmp_path / "prometheus") as url:
        config = tmp_path / "bot.yaml"
        config.write_text(
            f"prometheus: {{url: {url}}}\ndatabase_url: sqlite:///{tmp_path / 'bot.db'}\n"
            "teams:\n  - {name: research, namespaces: [ml-research], approvers: [U0APPROVER], monthly_budget_usd: 3000}\n"
        )
        result = runner.invoke(
            app, ["run", "--chat", "console", "--config", str(config), "--cluster-state", CLUSTER, "--user", "U0APPROVER"],
            input="/gpu cost\n/gpu budget\n/gpu advise\nquit\n",
        )
    assert result.exit_code == 0, result.output
    out = result.stdout
    empty = f"Prometheus at {url} holds no DCGM series (DCGM_FI_DEV_GPU_UTIL or DCGM_FI_PROF_GR_ENGINE_ACTIVE) for this period either"
    cost, rest = out.split("GPU cost by team")[1].split("research: $3,000.00/month")
    budget, advice = rest.split("No advice at")
    assert empty in cost
    # The budget's $0.00 comes with why it is $0.00.
    assert "spent $0.00 in" in budget and empty in budget
    assert "the history holds no DCGM series for any of the 5 GPU consumers in the window: the telemetry is empty" in advice
