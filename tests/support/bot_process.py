"""The real bot process for the reliability tests: ``gpu-cost-bot run`` in Slack HTTP mode, its
Slack Web API the wire fake (FakeSlack), its Kubernetes API the wire fake (FakeKubeApi, reached
through a kubeconfig file like a real cluster), its Prometheus a slow fake, its database a real
SQLite file or PostgreSQL database, its idle telemetry the bundled recording.

Requests reach it as Slack sends them: signed with the signing secret, over HTTP, through its own
server. Nothing of the bot is imported or patched here; the tests see only what Slack, the
cluster, the database and the process's own logs and ``/proc`` entry show.
"""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from actions.store.database import Store
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import block_actions_body, sign, slash_command_body
from tests.support.paths import DEMO, ROOT
from tests.support.processes import python_env
from tests.support.prometheus_server import free_port
from tests.support.waiting import wait_for

SECRET = "reliability-signing-secret"
APPROVER, OTHER = "U0APPROVER", "U0OTHER"
CHANNEL = "C0RESEARCH"
NOTEBOOK_PATH = "/apis/kubeflow.org/v1/namespaces/ml-research/notebooks/llm-explore"
STOPPED = "kubeflow-resource-stopped"


def deep_merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for k, v in extra.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


class BotProcess:
    """One ``gpu-cost-bot run`` process. ``config`` is merged over the defaults below; ``env`` is
    added to its environment."""

    def __init__(
        self, tmp_path: Path, database_url: str, slack: FakeSlack, kube: FakeKubeApi, prometheus_url: str,
        *, config: dict | None = None, telemetry: Path = DEMO / "telemetry.json", env: dict[str, str] | None = None,
    ):
        self.tmp, self.database_url, self.slack, self.kube = tmp_path, database_url, slack, kube
        self.port = free_port()
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": kube.url}}],
            "users": [{"name": "bot", "user": {"token": "fake-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "bot"}}],
        }))
        defaults = {
            "dry_run": False,
            "database_url": database_url,
            "prometheus": {"url": prometheus_url, "timeout_seconds": 120},
            "kubernetes": {"kubeconfig": str(kubeconfig), "timeout_seconds": 2},
            "slack": {"mode": "http", "http_port": self.port, "base_url": slack.base_url},
            "server": {
                "port": self.port, "shutdown_grace_seconds": 5, "log_format": "json", "log_level": "INFO",
                "housekeeping_seconds": 1,
            },
            "actions": {"recheck_timeout_seconds": 5, "settle_seconds": 5},
            "costs": {"query_timeout_seconds": 120},
            "teams": [{"name": "research", "namespaces": ["ml-research"], "channel": CHANNEL, "approvers": [APPROVER]}],
        }
        self.config_path = tmp_path / "bot.yaml"
        self.config_path.write_text(json.dumps(deep_merge(defaults, config or {})))
        self.telemetry = telemetry
        self.env = env or {}  # more environment: settings that may not be in the file (a URL with credentials)
        self.log_path = tmp_path / f"bot-{self.port}.log"
        self.proc: subprocess.Popen | None = None
        self._log = None
        self._store: Store | None = None

    # --- life cycle -------------------------------------------------------------------------------

    def start(self, timeout: float = 40) -> "BotProcess":
        env = python_env({"SLACK_BOT_TOKEN": "xoxb-reliability", "SLACK_SIGNING_SECRET": SECRET, **self.env})
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "run", "--config", str(self.config_path), "--telemetry", str(self.telemetry)],
            env=env, stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT,
        )
        wait_for(lambda: self.proc.poll() is not None or self.status("/readyz") == 200, "the bot to be ready", timeout)
        assert self.proc.poll() is None, self.log_text()[-3000:]
        return self

    def stop(self, timeout: float = 40) -> tuple[int, float]:
        """SIGTERM; returns (exit code, seconds it took)."""
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        self._log.close()
        return code, time.monotonic() - started

    def kill(self) -> None:
        """SIGKILL: the process dies wherever it is."""
        self.proc.kill()
        self.proc.wait(10)
        self._log.close()

    def __enter__(self) -> "BotProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self._log is not None and not self._log.closed:
            self._log.close()
        if self._store is not None:
            self._store.close()

    # --- looking at it ----------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self.proc.pid

    def memory_mib(self) -> tuple[float, float]:
        """(resident, peak resident) MiB from /proc."""
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{self.pid}/status").read_text().splitlines() if ":" in line
        )
        return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_lines(self) -> list[dict]:
        out = []
        for line in self.log_text().splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def store(self) -> Store:
        """The bot's database, as another client sees it."""
        if self._store is None:
            self._store = Store(self.database_url)
        return self._store

    # --- talking to it ----------------------------------------------------------------------------

    def status(self, path: str) -> int | None:
        try:
            return self.request("GET", path)[0]
        except OSError:
            return None

    def request(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None, timeout: float = 30):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, response.read().decode("utf-8", "replace")
        finally:
            conn.close()

    def signed(self, body: str, *, timestamp: int | None = None, timeout: float = 30) -> tuple[int, str]:
        ts = int(time.time()) if timestamp is None else timestamp
        return self.request("POST", "/slack/events", body.encode(), sign(SECRET, body, ts), timeout)

    def command(self, text: str, name: str, user: str = APPROVER) -> tuple[int, str]:
        return self.signed(slash_command_body(text=text, user_id=user, channel_id=CHANNEL, response_url=self.slack.response_url(name)))

    def press(self, action_id: str, value: Any, name: str, user: str = APPROVER, ts: str = "1.0") -> tuple[int, str]:
        return self.signed(block_actions_body(action_id, str(value), user, CHANNEL, ts, self.slack.response_url(name)))

    def answers(self, name: str, timeout: float = 30) -> list[dict]:
        return wait_for(lambda: self.slack.responses_to(name), f"an answer at response_url {name}", timeout)

    def proposal(self, timeout: float = 30):
        """The first sweep's request (its message posted)."""
        def posted():
            reqs = self.store().list_requests()
            return reqs and reqs[0].message_ts and reqs[0]
        return wait_for(posted, "the first sweep's proposal to be posted", timeout)

    def message(self, req) -> dict:
        return self.slack.messages(CHANNEL)[req.message_ts]


def buttons(message: dict) -> list[str]:
    return [e["action_id"] for b in message.get("blocks", []) if b["type"] == "actions" for e in b["elements"]]


def stopped(kube: FakeKubeApi) -> bool:
    nb = kube.get("Notebook", "ml-research", "llm-explore") or {}
    return STOPPED in ((nb.get("metadata") or {}).get("annotations") or {})
