"""Secrets never shown (issue 22, item 4): a config file holding one is refused with where to put
it instead, and a URL with credentials from the environment is shown masked wherever the bot
names it (check's and check --connect's output, a chat answer, the error a source raises). Through
the real CLI (typer's runner), as a newcomer meets it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from actions.sources.prometheus.api import PrometheusApi, TelemetryError
from actions.text import shown_url
from bot.cli.main import app
from tests.support.clock import T0
from tests.support.paths import DEMO
from tests.support.prometheus_server import free_port

runner = CliRunner()
PASSWORD = "s3cret-pw"


def check(tmp_path: Path, text: str, *args: str, env: dict[str, str] | None = None):
    path = tmp_path / "bot.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["check", *args, "--config", str(path)], env=env)
    assert "Traceback" not in result.output, result.output
    return result


@pytest.mark.parametrize("text, said", [
    (f"prometheus: {{url: 'http://bot:{PASSWORD}@prom:9090'}}\n",
     "prometheus.url: the URL http://REDACTED@prom:9090 carries a password, which is read only from the environment; "
     "remove it from the file and set the whole URL in the environment as GPU_COST_BOT_PROMETHEUS__URL"),
    (f"prometheus: {{headers: {{Authorization: 'Bearer {PASSWORD}'}}}}\n",
     "prometheus.headers.Authorization: a header that carries a credential is read only from the environment; "
     "remove it from the file and set it in the environment as GPU_COST_BOT_PROMETHEUS__HEADERS__AUTHORIZATION "
     "(a bearer token for Prometheus: PROMETHEUS_BEARER_TOKEN)"),
    (f"prometheus: {{headers: {{X-Api-Key: '{PASSWORD}'}}}}\n", "GPU_COST_BOT_PROMETHEUS__HEADERS__X_API_KEY"),
    (f"database_url: 'postgresql+psycopg2://bot:{PASSWORD}@postgres/gpu_cost_bot'\n",
     "database_url: the URL postgresql+psycopg2://REDACTED@postgres/gpu_cost_bot carries a password"),
    ("clusters:\n  - name: west\n    kubernetes: {context: west}\n"
     f"    prometheus: {{url: 'https://bot:{PASSWORD}@prom.west:9090'}}\n",
     "clusters.0.prometheus.url: the URL https://REDACTED@prom.west:9090 carries a password"),
    (f"slack_bot_token: xoxb-{PASSWORD}\n", "slack_bot_token: secrets are read only from the environment"),
], ids=["url-password", "authorization-header", "api-key-header", "database-password", "cluster-url", "token"])
def test_a_config_file_holding_a_secret_is_refused_and_says_where_it_goes(tmp_path, text, said):
    result = check(tmp_path, text)
    assert result.exit_code == 2 and said in result.output, result.output
    assert PASSWORD not in result.output


def test_what_is_no_secret_stays_in_the_file(tmp_path):
    text = ("database_url: postgresql+psycopg2://bot@127.0.0.1/gpu_cost_bot\n"
            "prometheus: {url: 'http://prom:9090', headers: {X-Scope-OrgID: gpu}}\n")
    result = check(tmp_path, text)
    assert result.exit_code == 0, result.output


def test_a_url_with_credentials_from_the_environment_is_shown_masked(tmp_path):
    down = f"http://127.0.0.1:{free_port()}"
    env = {"GPU_COST_BOT_PROMETHEUS__URL": down.replace("http://", f"http://bot:{PASSWORD}@"),
           "KUBECONFIG": str(tmp_path / "none")}
    result = check(tmp_path, "prometheus: {timeout_seconds: 1}\n", "--connect", env=env)
    masked = down.replace("http://", "http://REDACTED@")
    assert f"Prometheus at {masked}: FAILED: Prometheus at {masked} is unreachable" in result.output, result.output
    assert PASSWORD not in result.output


@pytest.mark.prometheus
def test_a_chat_answer_never_shows_the_password(tmp_path):
    down = f"http://127.0.0.1:{free_port()}"
    env = {"GPU_COST_BOT_PROMETHEUS__URL": down.replace("http://", f"http://bot:{PASSWORD}@"),
           "GPU_COST_BOT_DATABASE_URL": f"sqlite:///{tmp_path / 'bot.db'}"}
    path = tmp_path / "bot.yaml"
    path.write_text("prometheus: {timeout_seconds: 1}\ncosts: {query_timeout_seconds: 1}\n")
    result = runner.invoke(app, [
        "run", "--chat", "console", "--config", str(path), "--cluster-state", str(DEMO / "cluster.json"),
        "--telemetry", str(DEMO / "telemetry.json")], env=env, input="/gpu cost\nquit\n")
    assert result.exit_code == 0, result.output
    assert "I could not build the cost report: Prometheus at http://REDACTED@127.0.0.1:" in result.output
    assert PASSWORD not in result.output


def test_the_error_a_source_raises_names_the_url_masked():
    port = free_port()
    api = PrometheusApi(f"http://bot:{PASSWORD}@127.0.0.1:{port}", timeout_seconds=1, attempts=1)
    with pytest.raises(TelemetryError) as info:
        api.instant("idle", "up", T0)
    assert f"Prometheus at http://REDACTED@127.0.0.1:{port} is unreachable" in str(info.value)
    assert PASSWORD not in str(info.value) and PASSWORD not in info.value.url


@pytest.mark.parametrize("url, shown", [
    ("http://bot:pw@prom:9090/x?y=1", "http://REDACTED@prom:9090/x?y=1"),
    ("https://token@prom", "https://REDACTED@prom"),
    ("http://prom:9090", "http://prom:9090"),
])
def test_shown_url_masks_user_and_password(url, shown):
    assert shown_url(url) == shown
