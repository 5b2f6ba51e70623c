"""What a CLI command says when a service it needs is down: one error naming the service and
why, not urllib3's warning before each retry nor its "Max retries exceeded with url: <query>"."""

from __future__ import annotations

import logging

from typer.testing import CliRunner

from bot.cli.main import app
from tests.support.kubeconfig import write_kubeconfig
from tests.support.paths import DEMO
from tests.support.prometheus_server import free_port


def test_an_unreachable_kubernetes_api_is_one_error_without_urllib3s_retries(tmp_path, caplog):
    port = free_port()
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
    config = tmp_path / "bot.yaml"
    config.write_text(f"database_url: sqlite:///{tmp_path / 'bot.db'}\nkubernetes: {{kubeconfig: {kubeconfig}}}\n")
    caplog.set_level(logging.WARNING)
    result = CliRunner().invoke(
        app, ["sweep", "--once", "--config", str(config), "--telemetry", str(DEMO / "telemetry.json")],
        env={"KUBERNETES_SERVICE_HOST": ""},
    )
    assert result.exit_code == 1, result.output
    [error] = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert error == (f"error: reading pods from the Kubernetes API failed: HTTPConnection(host='127.0.0.1', port={port}): "
                     "Failed to establish a new connection: [Errno 111] Connection refused")
    # urllib3 warns before each of the client's retries; the error above already says it all.
    assert not [r for r in caplog.records if r.name.startswith("urllib3")]


def test_a_new_database_is_migrated_without_a_line_per_step(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    result = CliRunner().invoke(app, ["migrate", "--config", str(_config(tmp_path))])
    assert result.exit_code == 0, result.output
    assert not [r for r in caplog.records if r.name.startswith("alembic")]


def _config(tmp_path):
    path = tmp_path / "bot.yaml"
    path.write_text(f"database_url: sqlite:///{tmp_path / 'bot.db'}\n")
    return path
