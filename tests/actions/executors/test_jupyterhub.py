"""JupyterHub single-user servers, stopped and started again through a real Hub.

A real ``jupyterhub`` process (DummyAuthenticator, SimpleLocalProcessSpawner, the npm
``configurable-http-proxy``) runs user alice's named server ``gpu``, spawned by the real
``jupyterhub-singleuser``. The bot reads the kubespawner-shaped pod of that server from the fake
API server (kubespawner 7.1.0: no owner, the raw user name in the ``hub.jupyter.org/username``
annotation, the server name in ``hub.jupyter.org/servername``), proposes to stop it, and on
Approve stops it through the Hub's REST API (jupyterhub ``apihandlers/users.py``) with a service
token that has only the ``servers`` scope; Restore starts the same named server again with the
``user_options`` it ran with.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import subprocess
import sys
import textwrap
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest

from actions.executors.in_memory import InMemoryCluster
from actions.executors.jupyterhub import HubClient, HubWriter
from actions.executors.kubernetes import KubernetesWriter
from actions.executors.routing import RoutingWriter
from actions.model.findings import ActionVerb, ProposedAction
from actions.model.kube import ObjectRef
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.remedy.patches import ExecutorError
from actions.sources.kube.reader import KubernetesSource
from actions.sources.recording import RecordedTelemetry
from actions.store.database import Store
from bot.chat.approvals import Approvals
from bot.chat.console import ConsoleChat
from bot.chat.proposals import Proposals
from bot.runtime.runtime import Runtime
from tests.support import workload_shapes as shapes
from tests.support.clock import Clock
from tests.support.demo_world import APPROVER
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.needs import needs
from tests.support.prometheus_server import free_port
from tests.support.waiting import wait_for
from tests.support.workload_shapes import NOW, telemetry

PROXY = shutil.which("configurable-http-proxy")
USER, SERVER = "alice", "gpu"
OPTIONS = {"profile": "h100-1"}

# In CI (.ci/run) a missing proxy is a failure, not a skip.
pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(
        PROXY is None and not os.environ.get("TESTS_REQUIRE_JUPYTERHUB"),
        reason="the JupyterHub proxy is the npm package configurable-http-proxy: npm install -g configurable-http-proxy",
    ),
]


class Hub:
    """A JupyterHub process on free ports, with a service token of the given scopes."""

    def __init__(self, workdir: Path, scopes: list[str]):
        needs("process")
        self.port, self.hub_port, self.proxy_api = free_port(), free_port(), free_port()
        self.token = secrets.token_hex(16)
        self.admin_token = secrets.token_hex(16)
        config = workdir / "jupyterhub_config.py"
        config.write_text(textwrap.dedent(f"""
            c.JupyterHub.ip = "127.0.0.1"
            c.JupyterHub.port = {self.port}
            c.JupyterHub.hub_ip = "127.0.0.1"
            c.JupyterHub.hub_port = {self.hub_port}
            c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{self.proxy_api}"
            c.ConfigurableHTTPProxy.command = [{json.dumps(PROXY or "configurable-http-proxy")}]
            c.JupyterHub.authenticator_class = "dummy"
            c.JupyterHub.spawner_class = "simple"
            c.Spawner.cmd = [{json.dumps(str(Path(sys.executable).parent / "jupyterhub-singleuser"))}]
            # CI runs as root, which jupyter-server refuses without this flag.
            c.Spawner.args = ["--allow-root"]
            c.Spawner.start_timeout = 60
            c.Spawner.http_timeout = 60
            c.Authenticator.allowed_users = {{"{USER}"}}
            c.JupyterHub.allow_named_servers = True
            c.JupyterHub.db_url = "sqlite:///{workdir}/jupyterhub.sqlite"
            c.JupyterHub.cookie_secret_file = "{workdir}/cookie_secret"
            c.ConfigurableHTTPProxy.pid_file = "{workdir}/proxy.pid"
            c.JupyterHub.services = [
                {{"name": "gpu-cost-bot", "api_token": "{self.token}"}},
                {{"name": "test-admin", "api_token": "{self.admin_token}"}},
            ]
            c.JupyterHub.load_roles = [
                {{"name": "gpu-cost-bot", "scopes": {json.dumps(scopes)}, "services": ["gpu-cost-bot"]}},
                {{"name": "test-admin", "scopes": ["admin:servers", "admin:users"], "services": ["test-admin"]}},
            ]
        """))
        self.log = open(workdir / "hub.log", "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config)], cwd=workdir, stdout=self.log,
            stderr=subprocess.STDOUT, env={**os.environ, "HOME": str(workdir)},
        )
        self.api = f"http://127.0.0.1:{self.port}/hub/api"
        self.workdir = workdir
        wait_for(self._up, "the Hub's API", timeout=60)

    def _up(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"jupyterhub exited with {self.process.returncode}: {(self.workdir / 'hub.log').read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{self.api}/", timeout=2):
                return True
        except OSError:
            return False

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict | None]:
        request = urllib.request.Request(
            f"{self.api}{path}", method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.admin_token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                data = r.read()
                return r.status, json.loads(data) if data else None
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def server(self) -> dict | None:
        _, user = self.call("GET", f"/users/{USER}")
        return (user.get("servers") or {}).get(SERVER)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


@pytest.fixture(scope="module")
def hub_process(tmp_path_factory):
    """The module's Hub: one process for its tests (each starts in the state ``hub`` sets)."""
    h = Hub(tmp_path_factory.mktemp("hub"), ["servers"])
    try:
        yield h
    finally:
        h.stop()


@pytest.fixture
def hub(hub_process):
    """The Hub with alice's named server gpu running and ready, started with OPTIONS, and her
    default server not running: as a fresh Hub that just started the one server."""
    h = hub_process
    _, user = h.call("GET", f"/users/{USER}")
    servers = user.get("servers") or {}
    if "" in servers:
        status, _ = h.call("DELETE", f"/users/{USER}/server")
        assert status in (202, 204), status
        wait_for(lambda: "" not in (h.call("GET", f"/users/{USER}")[1].get("servers") or {}), "the default server to stop")
    gpu = servers.get(SERVER)
    if gpu is not None and gpu.get("user_options") != OPTIONS:
        status, _ = h.call("DELETE", f"/users/{USER}/servers/{SERVER}")
        assert status in (202, 204), status
        wait_for(lambda: h.server() is None, "alice's server gpu to stop")
        gpu = None
    if gpu is None:
        status, _ = h.call("POST", f"/users/{USER}/servers/{SERVER}", OPTIONS)
        assert status in (201, 202), status
    wait_for(lambda: (h.server() or {}).get("ready"), "alice's server gpu to be ready", timeout=60)
    return h


def test_an_idle_named_server_is_stopped_and_started_again_through_the_hub(hub, sqlite_url):
    objects, pods = shapes.jupyterhub_server(USER, SERVER)
    with FakeKubeApi([shapes.node(), shapes.namespace(), *objects]) as fake:
        store = Store(sqlite_url)
        store.migrate()
        clock = Clock()
        clock.now = NOW
        hub_writer = HubWriter({shapes.NS: HubClient(hub.api, hub.token, settle_seconds=60)})
        rt = Runtime(
            store=store, chat=ConsoleChat(io.StringIO()), cluster=KubernetesSource(fake.api_client()),
            telemetry=RecordedTelemetry([telemetry(pods)]),
            writer=RoutingWriter(KubernetesWriter(fake.api_client()), hub_writer),
            prices=PriceBook(PriceCatalog.bundled()),
            teams=TeamDirectory([Team(name="ml", namespaces=[shapes.NS], channel="C0ML", approvers=[APPROVER])]),
            policy=Policy(), dry_run=False, clock=clock,
        )
        (f,) = rt.detect(NOW)
        assert (f.consumer_kind, f.name) == ("JupyterHub", f"{USER}/{SERVER}")
        assert f.action.verb is ActionVerb.STOP_JUPYTER_SERVER
        assert (f.action.target.kind, f.action.target.name) == ("JupyterHubServer", "alice/gpu")
        Proposals(rt).reconcile([f], NOW)
        (req,) = rt.store.list_requests()

        clock.now = NOW + timedelta(minutes=5)
        outcome = Approvals(rt).approve(req.id, APPROVER)
        assert outcome.ok, outcome.message
        assert hub.server() is None  # stopped: the Hub lists active servers only
        assert json.loads(rt.store.get(req.id).undo_json)["user_options"] == OPTIONS
        assert [r for r in fake.requests if r.method == "PATCH"] == []  # nothing patched in Kubernetes

        outcome = Approvals(rt).restore(req.id, APPROVER)
        assert outcome.ok, outcome.message
        server = hub.server()
        assert server is not None and server["ready"] and server["user_options"] == OPTIONS
        assert rt.store.get(req.id).state == "restored"


def test_the_default_server_and_a_missing_scope(hub, tmp_path):
    action = ProposedAction(
        ActionVerb.STOP_JUPYTER_SERVER, ObjectRef("hub.jupyter.org/v1", "JupyterHubServer", shapes.NS, f"{USER}/"), "stop",
    )
    writer = HubWriter({shapes.NS: HubClient(hub.api, hub.token)})
    # alice's default server is not running: stopping it changes nothing, and undo starts nothing.
    undo = writer.apply(action, NOW)
    assert undo["user_options"] == {} and hub.server()["ready"]
    # A token without the servers scope is refused, and the error says which scope it needs.
    with pytest.raises(ExecutorError, match="servers scope"):
        HubWriter({shapes.NS: HubClient(hub.api, "not-a-token")}).apply(
            ProposedAction(ActionVerb.STOP_JUPYTER_SERVER, ObjectRef("hub.jupyter.org/v1", "JupyterHubServer", shapes.NS, "alice/gpu"), "stop"),
            NOW,
        )
    assert hub.server()["ready"]


def test_a_dry_run_reads_the_server_and_stops_nothing(hub):
    """The Hub's REST API has no dry run: HubWriter.dry_run reads the user and plans the stop."""
    stop = ProposedAction(
        ActionVerb.STOP_JUPYTER_SERVER, ObjectRef("hub.jupyter.org/v1", "JupyterHubServer", shapes.NS, f"{USER}/{SERVER}"),
        "stop",
    )
    writer = RoutingWriter(InMemoryCluster([]), HubWriter({shapes.NS: HubClient(hub.api, hub.token)}))
    started = hub.server()["started"]
    # Its plan: what Restore would start the server with.
    assert writer.dry_run(stop, NOW)["user_options"] == hub.server()["user_options"]
    server = hub.server()
    assert server["ready"] and server["started"] == started  # still the same running server
    gone = ProposedAction(
        ActionVerb.STOP_JUPYTER_SERVER, ObjectRef("hub.jupyter.org/v1", "JupyterHubServer", shapes.NS, "bob/gpu"), "stop",
    )
    with pytest.raises(ExecutorError, match="bob/gpu no longer exists in the Hub") as info:
        writer.dry_run(gone, NOW)
    assert info.value.status == 404
