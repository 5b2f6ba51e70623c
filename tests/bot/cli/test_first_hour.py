"""The first hour with gpu-cost-bot: every command answers bad input and services it cannot reach
with a line or two and an exit code (2 input, 1 service, 3 incomplete data), never a traceback;
`check` catches what would fail later; an empty Prometheus is said to be empty; the console bot
survives what fails under it.

Real Prometheus servers (promtool-backfilled), PostgreSQL, and small HTTP servers on 127.0.0.1
that answer as a broken Prometheus would (503, HTML, slow).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from bot.cli.main import app
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.kubeconfig import write_kubeconfig
from tests.support.paths import DEMO
from tests.support.processes import python_env
from tests.support.prometheus_server import free_port
from tests.support.usage_history import DATA_START

runner = CliRunner()
CLUSTER = str(DEMO / "cluster.json")
TELEMETRY = str(DEMO / "telemetry.json")


def cli(*args: str, env: dict[str, str] | None = None, input: str | None = None):
    """Run the CLI as a user would; a traceback in its output fails the test wherever it came from."""
    result = runner.invoke(app, list(args), env=env, input=input)
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def no_kubeconfig(tmp_path: Path) -> dict[str, str]:
    """An environment with no kubeconfig and not in a pod."""
    return {"KUBECONFIG": str(tmp_path / "no-kubeconfig"), "HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": ""}


# --- Prometheus as it fails in the wild --------------------------------------------------------------


class _Broken(BaseHTTPRequestHandler):
    """Answers every request the way ``self.server.mode`` says: ``503``, ``html`` or ``slow``."""

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        mode = self.server.mode  # type: ignore[attr-defined]
        if mode == "slow":
            threading.Event().wait(3)
        if mode == "503":
            status, body, kind = 503, b"Service Unavailable", "text/plain"
        elif mode == "html":
            status, body, kind = 200, b"<html><body>Grafana login</body></html>", "text/html"
        else:
            status, body, kind = 200, b'{"status":"success","data":{"resultType":"vector","result":[]}}', "application/json"
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up waiting

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@contextmanager
def broken_prometheus(mode: str) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Broken)
    server.mode = mode  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["down", "503", "html", "slow"])
def failing_prometheus(request) -> Iterator[tuple[str, str, str]]:
    """``(url, mode, what the message must say)`` of a Prometheus that fails one way."""
    if request.param == "down":
        url = f"http://127.0.0.1:{free_port()}"
        yield url, "down", f"Prometheus at {url} is unreachable (Connection refused"
        return
    with broken_prometheus(request.param) as url:
        said = {
            "503": f"Prometheus at {url} answered HTTP 503 to the",
            "html": f"Prometheus at {url} answered the peak_engine query with something that is not Prometheus's JSON API",
            "slow": f"Prometheus at {url} did not answer the",
        }[request.param]
        yield url, request.param, said


def _config(tmp_path: Path, url: str, extra: str = "") -> Path:
    path = tmp_path / "bot.yaml"
    path.write_text(f"prometheus: {{url: {url}, timeout_seconds: 1}}\ncosts: {{query_timeout_seconds: 1}}\n{extra}")
    return path


def test_sweep_and_report_name_the_failing_prometheus_and_exit_1(tmp_path, failing_prometheus):
    url, mode, said = failing_prometheus
    config = str(_config(tmp_path, url))
    sweep = cli("sweep", "--once", "--json", "--config", config, "--cluster-state", CLUSTER)
    assert sweep.exit_code == 1, sweep.output
    assert sweep.output.startswith(f"error: {said}")
    assert "DCGM_FI" not in sweep.output  # the PromQL stays in the log, not in front of a person
    assert len(sweep.output.strip().splitlines()) <= 2

    report = cli("report", "--config", config, "--period", "7d", "--cluster-state", CLUSTER)
    assert report.exit_code == 1, report.output
    assert report.output.startswith(f"error: Prometheus at {url}")
    assert "kube_pod" not in report.output


def test_verbose_adds_the_traceback(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    result = runner.invoke(app, ["--verbose", "sweep", "--once", "--json", "--prometheus-url", url, "--cluster-state", CLUSTER])
    assert result.exit_code == 1
    assert "Traceback" in result.output and "TelemetryError" in result.output
    assert f"error: Prometheus at {url} is unreachable" in result.output


# --- files given on the command line -----------------------------------------------------------------


@pytest.mark.parametrize(
    "content, said",
    [
        (None, "no such file; make one with `kubectl get pods,nodes"),
        ("dir", "is a directory, not a kubectl dump"),
        (b"\xff\xfe{", "the kubectl dump is not UTF-8 text (byte 0xff at offset 0)"),
        (b"{not json", "the kubectl dump is not JSON"),
        (b'{"kind": "Pod"}', "the kubectl dump is not a List"),
        (b'{"kind": "List", "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 3}}]}', "Pod (item 0) of the kubectl dump"),
    ],
    ids=["missing", "directory", "not-utf8", "not-json", "not-a-list", "malformed-pod"],
)
def test_a_cluster_state_that_cannot_be_used_is_named_with_how_to_make_one(tmp_path, content, said):
    path = tmp_path / "cluster.json"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    result = cli("sweep", "--once", "--json", "--cluster-state", str(path), "--telemetry", TELEMETRY)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {path}") and said in result.output


def test_no_kubeconfig_and_not_in_a_cluster_says_what_to_set(tmp_path):
    result = cli("sweep", "--once", "--json", "--telemetry", TELEMETRY, env=no_kubeconfig(tmp_path))
    assert result.exit_code == 2, result.output
    assert "error: no usable Kubernetes configuration: not running in a pod" in result.output
    assert "set kubernetes.kubeconfig or KUBECONFIG, or read a dump with --cluster-state FILE" in result.output


def test_report_png_into_a_missing_folder_is_refused_before_any_query(tmp_path):
    result = cli("report", "--png", str(tmp_path / "no" / "such" / "chart.png"), "--prometheus-url", "http://127.0.0.1:9")
    assert result.exit_code == 2
    assert f"the folder {tmp_path / 'no' / 'such'} does not exist" in result.output
    assert "Prometheus" not in result.output  # refused before reaching it


@pytest.mark.postgres
def test_a_database_that_refuses_the_credentials_is_a_service_error(tmp_path, postgres_url):
    from sqlalchemy.engine import make_url

    wrong = make_url(postgres_url).set(username="no_such_role_gpu_cost_bot")
    env = {"GPU_COST_BOT_DATABASE_URL": wrong.render_as_string(hide_password=False)}
    for args in (["migrate"], ["sweep", "--once", "--cluster-state", CLUSTER, "--telemetry", TELEMETRY]):
        result = cli(*args, env=env)
        assert result.exit_code == 1, result.output
        assert "error: the database could not be used" in result.output
        assert "no_such_role_gpu_cost_bot" in result.output and "check database_url" in result.output


def test_sweep_without_once_refuses_json_and_at():
    for extra in (["--json"], ["--at", "2026-11-20T12:00:00Z"]):
        result = cli("sweep", *extra)
        assert result.exit_code == 2
        assert "need --once" in result.output and "gpu-cost-bot sweep --once --json" in result.output


def test_version():
    result = cli("--version")
    assert result.exit_code == 0 and result.output.startswith("gpu-cost-bot ")


# --- check catches what would fail later --------------------------------------------------------------


def _check(tmp_path: Path, text: str | bytes, env: dict[str, str] | None = None):
    path = tmp_path / "bot.yaml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return cli("check", "--config", str(path), env=env)


def test_check_names_a_misspelt_key_with_its_line_and_the_key_meant(tmp_path):
    result = _check(tmp_path, "dry_run: true\nteamz:\n  - name: research\nprometheus:\n  urll: http://p:9090\n")
    assert result.exit_code == 2
    assert "teamz (line 2): unknown setting; did you mean 'teams'?" in result.output
    assert "prometheus.urll (line 5): unknown setting; did you mean 'url'?" in result.output


def test_check_lists_every_bad_approver_and_a_team_without_namespaces(tmp_path):
    result = _check(tmp_path, "teams:\n  - name: research\n    approvers: [bob, U0ALICE, alice@example.com]\n")
    assert result.exit_code == 2
    assert "teams.0.approvers (line 3): 'bob', 'alice@example.com' are not Slack user ids" in result.output
    assert "teams.0.namespaces (line 2): a team owns at least one namespace" in result.output


@pytest.mark.parametrize(
    "text, said",
    [
        ("prometheus: {url: 'prometheus:9090'}\n", "prometheus.url (line 1): 'prometheus:9090' is not an http(s) URL"),
        ("slack: {base_url: 'ftp://slack'}\n", "slack.base_url (line 1): 'ftp://slack' is not an http(s) URL"),
        ("database_url: postgres://bot@db/gpu\n", "write postgresql+psycopg2://bot@db/gpu"),
        ("database_url: mongodb://db/gpu\n", "SQLAlchemy cannot use 'mongodb'"),
        ("", "is empty: run without --config for the defaults"),
        (b"dry_run: \xff\n", "not UTF-8 text"),
    ],
    ids=["prometheus-url", "slack-url", "postgres-scheme", "unknown-dialect", "empty", "not-utf8"],
)
def test_check_rejects_what_would_only_fail_at_run_time(tmp_path, text, said):
    result = _check(tmp_path, text)
    assert result.exit_code == 2 and said in result.output, result.output


def test_check_on_a_directory(tmp_path):
    result = cli("check", "--config", str(tmp_path))
    assert result.exit_code == 2
    assert f"{tmp_path} is a directory; give the config file" in result.output


def test_check_names_unknown_environment_variables(tmp_path):
    env = {"GPU_COST_BOT_PROMETHEUS_URL": "http://x:9090", "GPU_COST_BOT_PROMETHEUS__HEADERS__X_SCOPE_ORGID": "gpu"}
    result = _check(tmp_path, "dry_run: true\n", env=env)
    assert result.exit_code == 2
    assert (
        "environment variable GPU_COST_BOT_PROMETHEUS_URL is not a setting (nested keys take '__'); "
        "did you mean GPU_COST_BOT_PROMETHEUS__URL?"
    ) in result.output
    assert "HEADERS" not in result.output  # a free-form mapping's entries are settings


# --- check --connect ------------------------------------------------------------------------------------


def _current_series() -> str:
    """OpenMetrics of one GPU node as the exporters write it, for the last two minutes: what a
    live Prometheus holds when `check --connect` asks."""
    now = int(time.time())
    gpu = 'gpu="0",UUID="GPU-1",Hostname="gpu-od-1",modelName="NVIDIA H100 80GB HBM3",namespace="ml-research",pod="llm-explore-0"'
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge", "# TYPE DCGM_FI_DEV_POWER_USAGE gauge", "# TYPE kube_pod_info gauge",
             "# TYPE kube_node_labels gauge"]
    rows = []
    for t in range(now - 120, now + 1, 30):
        rows += [
            f"DCGM_FI_DEV_GPU_UTIL{{{gpu}}} 0 {t}",
            f"DCGM_FI_DEV_POWER_USAGE{{{gpu}}} 127 {t}",
            f'kube_pod_info{{namespace="ml-research",pod="llm-explore-0",node="gpu-od-1"}} 1 {t}',
            f'kube_node_labels{{node="gpu-od-1",label_karpenter_sh_capacity_type="on-demand"}} 1 {t}',
        ]
    by_metric = {}
    for row in rows:
        by_metric.setdefault(row.split("{")[0], []).append(row)
    out = []
    for header in lines:
        name = header.split()[2]
        out += [header, *by_metric[name]]
    return "\n".join(out) + "\n# EOF\n"


@pytest.mark.prometheus
def test_check_connect_says_what_each_service_holds(tmp_path):
    from tests.support.prometheus_server import running_prometheus

    db = tmp_path / "bot.db"
    with FakeKubeApi.from_list_json(Path(CLUSTER).read_bytes()) as kube, \
            running_prometheus(_current_series(), tmp_path / "prometheus") as prometheus:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", kube.url)
        config = _config(tmp_path, prometheus, f"database_url: sqlite:///{db}\nkubernetes: {{kubeconfig: {kubeconfig}}}\n")
        before = cli("check", "--connect", "--config", str(config))
        assert cli("migrate", "--config", str(config)).exit_code == 0
        after = cli("check", "--connect", "--config", str(config))
        api_url = kube.url
    lines = before.output.splitlines()
    assert lines[0].startswith("config OK")
    assert f"Prometheus at {prometheus}: DCGM 0 DCGM_FI_PROF_GR_ENGINE_ACTIVE, 1 DCGM_FI_DEV_GPU_UTIL, 1 DCGM_FI_DEV_POWER_USAGE; kube-state-metrics 1 kube_pod_info, 1 kube_node_labels, 0 kube_namespace_labels" in lines
    assert f"Kubernetes API: {api_url}: 3 GPU node(s) with 24 GPUs, 5 GPU pod(s), 3 Notebook(s), Kueue kueue.x-k8s.io/v1beta2 (4 Workloads)" in lines
    assert f"database: {db} does not exist yet; `gpu-cost-bot migrate` (or `run`) creates it" in lines
    assert before.exit_code == 0 and after.exit_code == 0, after.output
    from actions.store.database import Store

    newest = Store(f"sqlite:///{db}").schema_status()[1]
    assert f"database: sqlite:///{db}: schema at {newest}, the newest" in after.output.splitlines()


@pytest.mark.prometheus
def test_check_connect_names_what_prometheus_lacks(tmp_path, fleet_prometheus):
    # The fleet's telemetry is history: at the wall clock's now, this Prometheus holds no series.
    result = cli("check", "--connect", "--config", str(_config(tmp_path, fleet_prometheus)), env=no_kubeconfig(tmp_path))
    assert "  missing: no DCGM activity or power series: install dcgm-exporter and let Prometheus scrape it" in result.output
    assert "  missing: no kube-state-metrics series: install kube-state-metrics (reports need it)" in result.output
    assert result.exit_code == 2  # and there is no kubeconfig: a setting to fix first


def test_check_connect_reports_each_failure_and_exits_with_the_worst(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    result = cli("check", "--connect", "--config", str(_config(tmp_path, url)), env=no_kubeconfig(tmp_path))
    assert result.exit_code == 2  # the missing kubeconfig is a setting; Prometheus down alone would be 1
    assert f"Prometheus at {url}: FAILED: Prometheus at {url} is unreachable" in result.output
    assert "Kubernetes API: FAILED: no usable Kubernetes configuration" in result.output


# --- an honest empty answer -----------------------------------------------------------------------------


@pytest.mark.prometheus
def test_a_sweep_without_dcgm_series_says_so_and_exits_3(fleet_prometheus):
    # The day before the fleet's telemetry starts: the pods run, the exporter has said nothing.
    result = cli("sweep", "--once", "--json", "--prometheus-url", fleet_prometheus, "--cluster-state", CLUSTER,
                 "--at", "2026-11-19T12:00:00Z")
    assert result.exit_code == 3
    answer = json.loads(result.stdout)
    assert answer["findings"] == []
    (warning,) = answer["warnings"]
    assert warning.startswith("no DCGM series (DCGM_FI_PROF_GR_ENGINE_ACTIVE or DCGM_FI_DEV_GPU_UTIL) in the last 1 h")
    assert "install NVIDIA's dcgm-exporter" in warning
    assert f"warning: {warning}" in result.stderr


@pytest.mark.prometheus
def test_a_report_older_than_the_data_says_how_much_it_covers(tmp_path, usage_prometheus):
    # The fleet's history starts on 2026-10-15 (DATA_START), its first hourly presence step at
    # 01:00: of October's 31 days the data holds 16 days 23 hours.
    result = cli("report", "--prometheus-url", usage_prometheus, "--period", "last-month", "--json",
                 "--at", "2026-11-21T00:00:00Z", "--cluster-state", CLUSTER)
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    (warning,) = report["warnings"]
    assert DATA_START.day == 15
    assert warning == (
        "Prometheus holds data only from 2026-10-15 01:00 UTC (its retention?): this report covers 17.0 of the "
        "31.0 days asked for (55%)"
    )
    assert report["covered_from"] == "2026-10-15T01:00:00Z"
    assert report["coverage"] == pytest.approx((16 * 24 + 23) / (31 * 24))


@pytest.mark.prometheus
def test_a_report_of_a_period_prometheus_holds_nothing_of(usage_prometheus):
    result = cli("report", "--prometheus-url", usage_prometheus, "--period", "7d", "--at", "2026-10-01T00:00:00Z",
                 "--cluster-state", CLUSTER)
    assert result.exit_code == 3
    assert "holds no kube-state-metrics series (kube_pod_info) for this period" in result.stderr
    assert "$0.00" in result.stdout  # the table still prints, under the warning


# --- the console bot survives what fails under it ------------------------------------------------------


def test_console_bot_answers_a_failing_backend_and_an_impossible_id_and_keeps_going(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    config = _config(tmp_path, url, "teams:\n  - {name: research, namespaces: [ml-research], monthly_budget_usd: 5000}\n")
    env = {"GPU_COST_BOT_DATABASE_URL": f"sqlite:///{tmp_path / 'bot.db'}"}
    result = cli(
        "run", "--chat", "console", "--config", str(config), "--cluster-state", CLUSTER, "--telemetry", TELEMETRY,
        env=env, input="/gpu budget research\napprove 99999999999999999999\n/gpu cost\n/gpu help\nquit\n",
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "research: $5,000.00/month (from the bot's config)" in out.replace("*", "")
    assert f"spend: unavailable (Prometheus at {url} is unreachable" in out
    assert "There is no request #99999999999999999999." in out
    assert f"I could not build the cost report: Prometheus at {url} is unreachable" in out
    assert "/gpu estimate" in out  # still answering after all that


@pytest.mark.process
def test_console_run_without_a_kubeconfig_posts_to_the_console_and_lets_the_user_approve(tmp_path):
    """A real process: the scheduler's first sweep proposes, then the person at the keyboard,
    an approver from the config, approves."""
    config = tmp_path / "bot.yaml"
    config.write_text(
        f"database_url: sqlite:///{tmp_path / 'bot.db'}\ndry_run: false\n"
        "teams:\n  - {name: research, namespaces: [ml-research], approvers: [U0ALICE]}\n"
    )
    env = python_env(no_kubeconfig(tmp_path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "run", "--chat", "console", "--config", str(config),
         "--cluster-state", CLUSTER, "--telemetry", TELEMETRY, "--user", "U0ALICE"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path,
    )
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while "[approve 1]" not in "".join(out) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "── new message in #console at " in "".join(out), "".join(out)
        proc.stdin.write("approve 1\nquit\n")
        proc.stdin.flush()
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(10)
    text = "".join(out)
    assert "Done · by @U0ALICE" in text and "Traceback" not in text


# --- every command against every service it uses, failing ---------------------------------------------

COMMANDS = {
    "sweep --json": ["sweep", "--once", "--json"],
    "sweep": ["sweep", "--once"],
    "report": ["report", "--period", "7d"],
    "migrate": ["migrate"],
    "check --connect": ["check", "--connect"],
}
# What fails -> the exit code: a missing kubeconfig is a setting to fix (2), the rest are services (1).
FAILURES = {"prometheus down": 1, "no kubeconfig": 2, "database unreachable": 1}
USES = {
    "sweep --json": {"prometheus down", "no kubeconfig"},
    "sweep": {"prometheus down", "no kubeconfig", "database unreachable"},
    "report": {"prometheus down"},
    "migrate": {"database unreachable"},
    "check --connect": {"prometheus down", "no kubeconfig", "database unreachable"},
}


@pytest.mark.parametrize(
    "command, failure", [(c, f) for c in COMMANDS for f in FAILURES if f in USES[c]], ids=lambda v: v.replace(" ", "-")
)
@pytest.mark.prometheus
def test_every_command_says_what_failed_in_a_line_or_two(tmp_path, usage_prometheus, command, failure):
    """One service fails at a time; the others work (the usage fleet's Prometheus, the fake API
    server, a SQLite file)."""
    prometheus = f"http://127.0.0.1:{free_port()}" if failure == "prometheus down" else usage_prometheus
    database = (
        f"postgresql+psycopg2://bot@127.0.0.1:{free_port()}/gpu" if failure == "database unreachable"
        else f"sqlite:///{tmp_path / 'bot.db'}"
    )
    with FakeKubeApi.from_list_json(Path(CLUSTER).read_bytes()) as kube:
        kubernetes = "" if failure == "no kubeconfig" else f"kubernetes: {{kubeconfig: {write_kubeconfig(tmp_path / 'kc', kube.url)}}}\n"
        config = _config(tmp_path, prometheus, f"database_url: {database}\n{kubernetes}")
        args = [*COMMANDS[command], "--config", str(config)]
        if command == "sweep --json" and failure == "no kubeconfig":
            args += ["--telemetry", TELEMETRY]
        if command == "sweep" and failure != "prometheus down":
            args += ["--telemetry", TELEMETRY]
        if command == "report":
            args += ["--at", "2026-11-21T00:00:00Z"]
        result = cli(*args, env=no_kubeconfig(tmp_path))
    assert result.exit_code == FAILURES[failure], result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:") or "FAILED:" in line]
    assert len(errors) == 1, result.output
    assert len(errors[0]) < 400  # a sentence, not a dump of the query or the stack
