"""The command line as a user runs it: typer's runner over the real commands."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bot.cli.main import app
from tests.support.paths import DEMO

runner = CliRunner()


def invoke(*args, env=None):
    return runner.invoke(app, list(args), env=env, catch_exceptions=False)


@pytest.mark.prometheus
def test_sweep_json_reads_a_kubectl_dump_and_a_real_prometheus(fleet_prometheus):
    result = invoke(
        "sweep", "--once", "--dry-run", "--json",
        "--prometheus-url", fleet_prometheus,
        "--cluster-state", str(DEMO / "cluster.json"),
        "--at", "2026-11-20T12:00:00Z",
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert (answer["at"], answer["warnings"]) == ("2026-11-20T12:00:00Z", [])
    findings = answer["findings"]
    assert [f["name"] for f in findings] == ["llm-explore"]
    f = findings[0]
    for field in ("kind", "namespace", "name", "team", "gpus", "gpu_model", "idle_seconds", "usd_per_hour", "evidence"):
        assert field in f
    assert (f["kind"], f["namespace"], f["team"], f["gpus"]) == ("idle-notebook", "ml-research", "ml-research", 1)
    assert f["usd_per_hour"] == pytest.approx(6.88)  # p5.48xlarge $55.04 / 8 GPUs = $6.88 per GPU-hour
    assert f["evidence"][0]["verdict"] == "idle"


@pytest.mark.prometheus
def test_sweep_at_a_time_before_the_idle_hour_finds_nothing(fleet_prometheus):
    # At 06:30 only 30 minutes of telemetry exist: coverage is short, so nothing is idle.
    result = invoke(
        "sweep", "--once", "--json", "--prometheus-url", fleet_prometheus,
        "--cluster-state", str(DEMO / "cluster.json"), "--at", "2026-11-20T06:30:00Z",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"at": "2026-11-20T06:30:00Z", "findings": [], "warnings": []}


def test_sweep_rejects_a_time_without_zone():
    result = runner.invoke(app, ["sweep", "--once", "--json", "--at", "2026-11-20 12:00"])
    assert result.exit_code == 2
    assert "2026-11-20T12:00:00Z" in result.output


@pytest.mark.prometheus
def test_sweep_records_and_posts_to_the_console(tmp_path, fleet_prometheus):
    env = {"GPU_COST_BOT_DATABASE_URL": f"sqlite:///{tmp_path / 'bot.db'}", "GPU_COST_BOT_SLACK__DEFAULT_CHANNEL": "#gpus"}
    args = ["sweep", "--once", "--prometheus-url", fleet_prometheus, "--cluster-state", str(DEMO / "cluster.json")]
    result = invoke(*args, "--at", "2026-11-20T12:00:00Z", env=env)
    assert result.exit_code == 0, result.output
    assert "new message in #gpus" in result.output and "idle for" in result.output.lower()
    # Without a config no team names approvers: the one gate offers no Approve, and says why.
    assert "[approve 1]" not in result.output and "team ml-research has no approvers" in result.output
    assert "proposed 1" in result.output
    again = invoke(*args, "--at", "2026-11-20T12:05:00Z", env=env)
    assert "proposed 0" in again.output and "updated 1" in again.output


def test_check_says_precisely_what_is_wrong(tmp_path):
    bad = tmp_path / "bot.yaml"
    bad.write_text(
        "teams:\n"
        "  - name: research\n"
        "    namespaces: [ml]\n"
        "    approvers: [alice]\n"
        "  - name: infra\n"
        "    namespaces: [ml]\n"
        "policy:\n"
        "  engine_idle_pct: 150\n"
        "  windw_seconds: 60\n"
    )
    result = runner.invoke(app, ["check", "--config", str(bad)])
    assert result.exit_code == 2
    out = result.output
    assert "teams.0.approvers" in out and "'alice' is not a Slack user id" in out
    assert "policy.engine_idle_pct" in out and "policy.windw_seconds" in out


def test_check_rejects_schedules_and_thresholds_that_would_fail_later(tmp_path):
    bad = tmp_path / "bot.yaml"
    bad.write_text(
        "costs: {digest_cron: '0 9 * mon', timezone: Europe/Berlin}\n"
        "alerts: {budget_thresholds_percent: [50, 90]}\n"
    )
    result = runner.invoke(app, ["check", "--config", str(bad)])
    assert result.exit_code == 2
    assert "cron '0 9 * mon' needs 5 fields" in result.output
    assert "thresholds [90.0] are not supported" in result.output
    bad.write_text("costs: {timezone: Europe/Berlim}\n")
    result = runner.invoke(app, ["check", "--config", str(bad)])
    assert "'Europe/Berlim' is not an IANA time zone name" in result.output


def test_check_names_the_key_of_a_bad_schedule_or_zone(tmp_path):
    bad = tmp_path / "bot.yaml"
    bad.write_text("costs:\n  timezone: Europe/Berlin\n  digest_cron: '0 99 * * mon'\n")
    result = runner.invoke(app, ["check", "--config", str(bad)])
    assert result.exit_code == 2
    assert "costs.digest_cron (line 3): cron '0 99 * * mon'" in result.stderr
    bad.write_text("costs:\n  timezone: Europe/Berlim\n")
    result = runner.invoke(app, ["check", "--config", str(bad)])
    assert "costs.timezone (line 2): timezone 'Europe/Berlim'" in result.stderr


@pytest.mark.parametrize("written", ["1e309", "1e12", ".inf", ".nan", "1" + "0" * 400])
def test_check_refuses_a_duration_no_clock_can_hold(tmp_path, written):
    # 1e309 reads as infinity and overflowed the first sweep; 1e12 s was a PromQL range
    # Prometheus refused as if it were too old.
    bad = tmp_path / "bot.yaml"
    bad.write_text(f"policy:\n  window_seconds: {written}\n")
    result = runner.invoke(app, ["check", "--config", str(bad)])
    assert result.exit_code == 2, result.output
    assert "policy.window_seconds (line 2): " in result.stderr
    assert "write a finite number of seconds, at most 31622400 (366 days)" in result.stderr


def test_check_refuses_absurd_durations_wherever_they_are_written(tmp_path):
    bad = tmp_path / "bot.yaml"
    bad.write_text(
        "teams:\n"
        "  - {name: research, namespaces: [ml], policy: {exempt_seconds: .inf}}\n"
        "slack: {sync_recent_days: 1e9}\n"
        "advice: {interruption_hours: .nan}\n"
        "prices:\n"
        "  aws: {max_age_seconds: 1e12}\n"
        "ledger: {retention_days: 1000000}\n"
    )
    result = runner.invoke(app, ["check", "--config", str(bad)], env={"GPU_COST_BOT_SWEEP__INTERVAL_SECONDS": "inf"})
    assert result.exit_code == 2
    said = result.stderr
    assert "teams.0.policy.exempt_seconds (line 2): inf is not a usable duration" in said
    assert "slack.sync_recent_days (line 3): '1e9' is not a usable duration: write a finite number of days, at most 366" in said
    assert "advice.interruption_hours (line 4): nan is not a usable duration: write a finite number of hours, at most 8784" in said
    assert "prices.aws.max_age_seconds (line 6): '1e12' is not a usable duration" in said
    assert "ledger.retention_days (line 7): Input should be less than or equal to 3660" in said
    assert "sweep.interval_seconds: 'inf' is not a usable duration" in said
    good = tmp_path / "good.yaml"
    good.write_text("policy: {exempt_seconds: 31622400, window_seconds: 86400}\n")
    assert runner.invoke(app, ["check", "--config", str(good)]).exit_code == 0


def test_check_prints_its_answer_on_stdout_and_warnings_on_stderr(tmp_path):
    config = tmp_path / "bot.yaml"
    config.write_text("teams:\n  - {name: research, namespaces: [ml], channel: C0R}\n")
    result = runner.invoke(app, ["check", "--config", str(config)], env={"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"})
    assert result.exit_code == 0
    assert result.stdout == "config OK: 1 team(s), dry_run=True, database sqlite\n"
    assert result.stderr == "warning: team 'research' has no approvers: nobody can approve its requests\n"


def test_check_rejects_secrets_in_the_file_and_accepts_a_good_config(tmp_path):
    leaky = tmp_path / "leaky.yaml"
    leaky.write_text("slack_bot_token: xoxb-123\n")
    result = runner.invoke(app, ["check", "--config", str(leaky)])
    assert result.exit_code == 2 and "SLACK_BOT_TOKEN" in result.output

    good = tmp_path / "good.yaml"
    good.write_text(
        "dry_run: false\n"
        "teams:\n"
        "  - {name: research, namespaces: [ml-research], channel: C0R, approvers: [U0ALICE, S0PLATFORM]}\n"
        "prices:\n"
        "  gpu_families: {A100: {usd_per_gpu_hour: 1.1}}\n"
    )
    result = runner.invoke(app, ["check", "--config", str(good)], env={"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"})
    assert result.exit_code == 0, result.output
    assert "config OK: 1 team(s), dry_run=False" in result.output
    assert "warning" not in result.output


def test_check_names_the_discount_at_fault_and_accepts_reserved_instances_and_savings_plans(tmp_path):
    bad = tmp_path / "bot.yaml"
    bad.write_text(
        "prices:\n"
        "  discounts:\n"
        "    - {kind: savings-plan, gpu_families: [H100], percent: 28, as_of: '2026-11-01'}\n"
        "    - {kind: reserved, instance_types: [p5.48xlarge], percent: 120, as_of: '2026-10-15'}\n"
        "    - {kind: reserved-instance, gpu_families: [A100], usd_per_hour: 20.0, as_of: '2026-10-15'}\n"
    )
    result = runner.invoke(app, ["check", "--config", str(bad)])
    assert result.exit_code == 2
    out = result.output
    assert "prices.discounts.1.kind (line 4)" in out and "'reserved-instance' or 'savings-plan'" in out
    assert "prices.discounts.1.percent (line 4)" in out and "less than 100" in out
    assert "prices.discounts.2 (line 5)" in out and "usd_per_hour is per instance-hour" in out
    good = tmp_path / "good.yaml"
    good.write_text(
        "prices:\n"
        "  discounts:\n"
        "    - {kind: savings-plan, gpu_families: [H100], percent: 28, as_of: '2026-11-01'}\n"
        "    - {kind: reserved-instance, instance_types: [p4d.24xlarge], usd_per_hour: 14.2, as_of: '2026-10-15'}\n"
    )
    result = runner.invoke(app, ["check", "--config", str(good)], env={"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"})
    assert result.exit_code == 0, result.output


def test_environment_overrides_the_file(tmp_path):
    from bot.settings import load_settings

    path = tmp_path / "bot.yaml"
    path.write_text("prometheus: {url: http://from-file:9090}\ndry_run: false\n")
    import os

    os.environ["GPU_COST_BOT_PROMETHEUS__URL"] = "http://from-env:9090"
    try:
        s = load_settings(path)
    finally:
        del os.environ["GPU_COST_BOT_PROMETHEUS__URL"]
    assert s.prometheus.url == "http://from-env:9090" and s.dry_run is False


def test_estimate_json_gives_the_worked_example():
    result = invoke("estimate", "16", "gpus", "1w", "at", "$3/hr", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["gpu_hours"] == 16 * 168 and data["on_demand"]["total_usd"] == 8064.0


def test_estimate_rejects_ambiguous_input_with_an_example():
    result = runner.invoke(app, ["estimate", "16", "a100"])
    assert result.exit_code == 2
    assert "16 a100 1w" in result.output


def test_demo_runs_the_whole_loop_unattended():
    result = invoke("demo")
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.count("new message in #research-gpus at 12:00 UTC") == 1
    # Messages are named by the time they were posted, as a person reads them, not by Slack's ts.
    assert "message of 12:00 UTC in #research-gpus updated" in out and ".000000" not in out
    assert "Only approvers of team research" in out
    assert "Done: stop Notebook ml-research/llm-explore" in out
    assert "already done" in out
    # 16 A100 for a week on-demand, priced as p4d.24xlarge: $21.957642 / 8 GPUs = $2.7447 per
    # GPU-hour (4 decimals) x 2,688 GPU-hours = $7,377.75.
    assert "$7,377.75" in out
    # /gpu queue joins the pending Workload to the idle notebook of the same GPU model.
    assert "training waits 3h for 8 H100; research holds 1 idle H100 in notebooks (request #1 awaits approval)" in out
    assert "Restored: undid stop Notebook ml-research/llm-explore" in out
    assert out.rstrip().endswith("Demo complete.")
    # After the stop, the notebook's pod is gone; after Restore it is back.
    stopped = out.split("GPU pods running now:")[1].split("\n")[0]
    restored = out.split("GPU pods running now:")[2].split("\n")[0]
    assert "llm-explore-0" not in stopped and "llm-explore-0" in restored


def test_interactive_demo_takes_presses_at_the_prompt():
    result = runner.invoke(app, ["demo", "--interactive"], input="/gpu help\napprove 1\nrestore 1\nquit\n")
    assert result.exit_code == 0, result.output
    assert "/gpu estimate" in result.output  # the help answer
    assert "Done: stop Notebook ml-research/llm-explore" in result.output
    assert "Restored: undid stop Notebook" in result.output


def test_run_with_the_console_chat_answers_commands(tmp_path):
    env = {"GPU_COST_BOT_DATABASE_URL": f"sqlite:///{tmp_path / 'bot.db'}"}
    result = runner.invoke(
        app,
        ["run", "--chat", "console", "--cluster-state", str(DEMO / "cluster.json"),
         "--telemetry", str(DEMO / "telemetry.json")],
        input="/gpu estimate 4 gpus 10h at $3/hr\nquit\n",
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert "$120.00" in result.output
    assert (tmp_path / "bot.db").exists()  # migrated at start


def test_commands_without_a_config_say_where_they_keep_the_database(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default database_url is relative to where the command runs
    db = tmp_path / "gpu-cost-bot.db"
    said = f"database: {db} (SQLite, the default; set database_url to keep it elsewhere)\n"
    status = runner.invoke(app, ["ledger", "status", "--at", "2026-11-20T12:00:00Z"])
    assert status.exit_code == 0, status.output
    assert status.stderr == said and "usage ledger of cluster default" in status.stdout
    assert db.exists()
    ran = runner.invoke(
        app,
        ["run", "--chat", "console", "--cluster-state", str(DEMO / "cluster.json"), "--telemetry", str(DEMO / "telemetry.json")],
        input="quit\n",
    )
    assert ran.exit_code == 0, ran.output
    assert ran.stderr.startswith(said)
    elsewhere = runner.invoke(
        app, ["ledger", "status", "--at", "2026-11-20T12:00:00Z"],
        env={"GPU_COST_BOT_DATABASE_URL": f"sqlite:///{tmp_path / 'chosen.db'}"},
    )
    assert elsewhere.exit_code == 0 and "database:" not in elsewhere.stderr
