"""Every kind of GPU workload, built in the exact shape its controller creates it
(tests/support/workload_shapes.py, each shape naming its upstream source), served by the wire-level fake
API server and read by the real source: the idle one is proposed with the right verb on the
right object, naming the job kind and the Kueue Workload; Approve patches it; Restore puts back
exactly what was there; a busy one is never proposed, and one that turns busy before Approve is
left alone."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable

import pytest

from actions.executors.kubernetes import KubernetesWriter
from actions.model.findings import ActionVerb
from actions.model.telemetry import TelemetrySnapshot
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.remedy.patches import STOPPED_ANNOTATION
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
from tests.support.waiting import wait_for
from tests.support.workload_shapes import NOW, telemetry


def test_workload_names_follow_kueues_hash():
    # The upstream test vector (kueue v0.19.2 pkg/controller/jobframework/workload_names_test.go).
    assert shapes.workload_name("Job", "batch", "name", "uid") == "job-name-ef3a1"


def runtime(fake: FakeKubeApi, url: str, recording: list[TelemetrySnapshot], policy: Policy | None = None) -> Runtime:
    store = Store(url)
    store.migrate()
    clock = Clock()
    clock.now = NOW
    return Runtime(
        store=store, chat=ConsoleChat(io.StringIO()), cluster=KubernetesSource(fake.api_client(), page_size=3),
        telemetry=RecordedTelemetry(recording), writer=KubernetesWriter(fake.api_client()),
        prices=PriceBook(PriceCatalog.bundled()),
        teams=TeamDirectory([Team(name="ml", namespaces=[shapes.NS], channel="C0ML", approvers=[APPROVER])]),
        policy=policy or Policy(), dry_run=False, clock=clock,
    )


def spec(fake, kind, name, group=None):
    return fake.get(kind, shapes.NS, name, group) or {}


@dataclass(frozen=True)
class Case:
    build: Callable[[], tuple[list[dict], list[str]]]
    consumer_kind: str
    name: str
    workload: str | None
    verb: ActionVerb
    target: tuple[str, str, str]  # apiVersion, kind, name
    applied: Callable[[FakeKubeApi], bool]
    restored: Callable[[FakeKubeApi], bool]


def wl_active(name: str, active: bool):
    return lambda fake: spec(fake, "Workload", name)["spec"]["active"] is active


def replicas(kind: str, name: str, count: int, group: str | None = None):
    return lambda fake: spec(fake, kind, name, group)["spec"]["replicas"] == count


JOB_WL = shapes._kueue_wl("Job", "batch", "eval")
JOBSET_WL = shapes._kueue_wl("JobSet", "jobset.x-k8s.io", "pretrain")
TRAINJOB_WL = shapes._kueue_wl("TrainJob", "trainer.kubeflow.org", "llama-sft")
RAYJOB_WL = shapes._kueue_wl("RayJob", "ray.io", "llm-finetune")
PYTORCH_WL = shapes._kueue_wl("PyTorchJob", "kubeflow.org", "bert")
MPI_WL = shapes._kueue_wl("MPIJob", "kubeflow.org", "allreduce")
AW_WL = shapes._kueue_wl("AppWrapper", "workload.codeflare.dev", "sweep-7")
LWS_WL = shapes.workload_name("LeaderWorkerSet", "leaderworkerset.x-k8s.io", "vllm-0", shapes.uid("LeaderWorkerSet/vllm"))
STS_WL = shapes._kueue_wl("StatefulSet", "apps", "vector-db")
KUEUE_V = "kueue.x-k8s.io/v1beta2"

CASES = {
    "Job": Case(shapes.batch_job, "Job", "eval", JOB_WL, ActionVerb.DEACTIVATE_WORKLOAD, (KUEUE_V, "Workload", JOB_WL),
                wl_active(JOB_WL, False), wl_active(JOB_WL, True)),
    "JobSet": Case(shapes.jobset, "JobSet", "pretrain", JOBSET_WL, ActionVerb.DEACTIVATE_WORKLOAD,
                   (KUEUE_V, "Workload", JOBSET_WL), wl_active(JOBSET_WL, False), wl_active(JOBSET_WL, True)),
    "TrainJob": Case(shapes.trainjob, "TrainJob", "llama-sft", TRAINJOB_WL, ActionVerb.DEACTIVATE_WORKLOAD,
                     (KUEUE_V, "Workload", TRAINJOB_WL), wl_active(TRAINJOB_WL, False), wl_active(TRAINJOB_WL, True)),
    "RayJob": Case(shapes.rayjob, "RayJob", "llm-finetune", RAYJOB_WL, ActionVerb.DEACTIVATE_WORKLOAD,
                   (KUEUE_V, "Workload", RAYJOB_WL), wl_active(RAYJOB_WL, False), wl_active(RAYJOB_WL, True)),
    "PyTorchJob": Case(shapes.pytorchjob, "PyTorchJob", "bert", PYTORCH_WL, ActionVerb.DEACTIVATE_WORKLOAD,
                       (KUEUE_V, "Workload", PYTORCH_WL), wl_active(PYTORCH_WL, False), wl_active(PYTORCH_WL, True)),
    "MPIJob": Case(shapes.mpijob, "MPIJob", "allreduce", MPI_WL, ActionVerb.DEACTIVATE_WORKLOAD,
                   (KUEUE_V, "Workload", MPI_WL), wl_active(MPI_WL, False), wl_active(MPI_WL, True)),
    "AppWrapper": Case(shapes.appwrapper, "AppWrapper", "sweep-7", AW_WL, ActionVerb.DEACTIVATE_WORKLOAD,
                       (KUEUE_V, "Workload", AW_WL), wl_active(AW_WL, False), wl_active(AW_WL, True)),
    "LeaderWorkerSet": Case(
        shapes.leaderworkerset, "LeaderWorkerSet", "vllm", LWS_WL, ActionVerb.SCALE_TO_ZERO,
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "vllm"),
        replicas("LeaderWorkerSet", "vllm", 0), replicas("LeaderWorkerSet", "vllm", 1),
    ),
    "Deployment under Kueue": Case(
        shapes.kueue_deployment, "Deployment", "embed", None, ActionVerb.SCALE_TO_ZERO, ("apps/v1", "Deployment", "embed"),
        replicas("Deployment", "embed", 0), replicas("Deployment", "embed", 2),
    ),
    "StatefulSet under Kueue": Case(
        shapes.kueue_statefulset, "StatefulSet", "vector-db", STS_WL, ActionVerb.SCALE_TO_ZERO,
        ("apps/v1", "StatefulSet", "vector-db"), replicas("StatefulSet", "vector-db", 0), replicas("StatefulSet", "vector-db", 2),
    ),
    "RayCluster": Case(
        shapes.raycluster, "RayCluster", "interactive", None, ActionVerb.SUSPEND_RAYCLUSTER, ("ray.io/v1", "RayCluster", "interactive"),
        lambda f: spec(f, "RayCluster", "interactive")["spec"].get("suspend") is True,
        lambda f: "suspend" not in spec(f, "RayCluster", "interactive")["spec"],
    ),
    "InferenceService": Case(
        shapes.inferenceservice, "InferenceService", "llama", None, ActionVerb.STOP_INFERENCE_SERVICE,
        ("serving.kserve.io/v1beta1", "InferenceService", "llama"),
        lambda f: spec(f, "InferenceService", "llama")["metadata"]["annotations"].get("serving.kserve.io/stop") == "true",
        lambda f: spec(f, "InferenceService", "llama")["metadata"]["annotations"] == {"serving.kserve.io/deploymentMode": "Standard"},
    ),
}


def fake_for(case: Case) -> tuple[FakeKubeApi, list[str]]:
    objects, pods = case.build()
    return FakeKubeApi([shapes.node(), shapes.namespace(), *objects]), pods


@pytest.mark.parametrize("kind", list(CASES))
def test_an_idle_one_is_proposed_approved_and_restored_exactly(kind, sqlite_url):
    case = CASES[kind]
    fake, pods = fake_for(case)
    with fake:
        before = {k: v for k, v in ((o["kind"], fake.get(o["kind"], shapes.NS, o["metadata"]["name"])) for o in case.build()[0])}
        rt = runtime(fake, sqlite_url, [telemetry(pods)])
        findings = rt.detect(NOW)
        (f,) = findings
        assert (f.consumer_kind, f.name, f.workload) == (case.consumer_kind, case.name, case.workload)
        assert f.action.verb is case.verb
        assert (f.action.target.api_version, f.action.target.kind, f.action.target.name) == case.target
        assert set(f.pods) == set(pods) and f.gpus == len(pods)
        assert f.subject.startswith(f"{case.consumer_kind} {shapes.NS}/{case.name}")
        if case.workload:
            assert f.subject.endswith(f"Workload {case.workload}")
        Proposals(rt).reconcile(findings, NOW)
        (req,) = rt.store.list_requests()

        rt.clock.now = NOW + timedelta(minutes=5)
        outcome = Approvals(rt).approve(req.id, APPROVER)
        assert outcome.ok, outcome.message
        assert case.applied(fake)
        patches = [r for r in fake.changes() if r.method == "PATCH"]
        # A scale to zero writes only the set's scale subresource (RBAC grants nothing more).
        written = f"/{case.target[1].lower()}s/{case.target[2]}" + ("/scale" if case.verb is ActionVerb.SCALE_TO_ZERO else "")
        assert len(patches) == 1 and patches[0].path.endswith(written)
        assert rt.store.get(req.id).state == "done"

        outcome = Approvals(rt).restore(req.id, APPROVER)
        assert outcome.ok, outcome.message
        assert case.restored(fake)
        assert rt.store.get(req.id).state == "restored"
        target = fake.get(case.target[1], shapes.NS, case.target[2])
        original = before[case.target[1]]
        assert target["spec"] == original["spec"]
        assert (target["metadata"].get("annotations") or {}) == (original["metadata"].get("annotations") or {})


@pytest.mark.parametrize("kind", list(CASES))
def test_a_busy_one_is_left_alone(kind, sqlite_url):
    case = CASES[kind]
    fake, pods = fake_for(case)
    with fake:
        rt = runtime(fake, sqlite_url, [telemetry(pods, busy=True)])
        assert rt.detect(NOW) == []
        # Idle at the sweep, busy again when Approve re-checks: nothing is patched.
        later = NOW + timedelta(minutes=5)
        rt = runtime(fake, sqlite_url, [telemetry(pods), telemetry(pods, at=later, busy=True)])
        Proposals(rt).reconcile(rt.detect(NOW), NOW)
        (req,) = rt.store.list_requests(states=["proposed"])
        rt.clock.now = later
        assert not Approvals(rt).approve(req.id, APPROVER).ok
        assert rt.store.get(req.id).state == "superseded"
        assert [r for r in fake.changes() if r.method == "PATCH"] == []


def test_a_kueue_pod_group_is_reported_never_deactivated(sqlite_url):
    objects, pods = shapes.pod_group()
    with FakeKubeApi([shapes.node(), shapes.namespace(), *objects]) as fake:
        rt = runtime(fake, sqlite_url, [telemetry(pods)])
        (f,) = rt.detect(NOW)
        assert f.action is None and f.workload == "sim" and "no exact Restore" in f.report_reason


def test_a_notebook_is_still_stopped_through_its_annotation(sqlite_url):
    nb = shapes.obj("kubeflow.org/v1", "Notebook", "explore")
    sts = shapes.obj("apps/v1", "StatefulSet", "explore", owner=shapes.ref("kubeflow.org/v1", "Notebook", "explore"),
                     spec={"replicas": 1})
    p = shapes.pod("explore-0", shapes.ref("apps/v1", "StatefulSet", "explore"), labels={"notebook-name": "explore"})
    with FakeKubeApi([shapes.node(), shapes.namespace(), nb, sts, p]) as fake:
        rt = runtime(fake, sqlite_url, [telemetry(["explore-0"])])
        (f,) = rt.detect(NOW)
        assert f.action.verb is ActionVerb.STOP_NOTEBOOK and f.subject == "Notebook ml/explore"
        Proposals(rt).reconcile([f], NOW)
        (req,) = rt.store.list_requests()
        assert Approvals(rt).approve(req.id, APPROVER).ok
        assert STOPPED_ANNOTATION in fake.get("Notebook", shapes.NS, "explore")["metadata"]["annotations"]


def test_a_scale_to_zero_whose_answer_never_came_is_settled_done_with_the_count_it_had(sqlite_url):
    case = CASES["Deployment under Kueue"]
    fake, pods = fake_for(case)
    with fake:
        rt = runtime(fake, sqlite_url, [telemetry(pods)])
        rt.writer = KubernetesWriter(fake.api_client(), timeout_seconds=0.5)
        Proposals(rt).reconcile(rt.detect(NOW), NOW)
        (req,) = rt.store.list_requests()
        rt.clock.now = NOW + timedelta(minutes=5)
        # The API server applies the scale after the client gave up waiting for its answer.
        fake.stall("PATCH", f"/apis/apps/v1/namespaces/{shapes.NS}/deployments/embed/scale", seconds=1.5)
        outcome = Approvals(rt).approve(req.id, APPROVER)
        assert not outcome.ok and "did not answer in time" in outcome.message
        assert rt.store.get(req.id).state == "uncertain"
        wait_for(lambda: case.applied(fake), "the late scale to land", 5)
        # The Deployment now shows 0 replicas: only the plan stored before the write knows it had 2.
        assert "dry-run-accepted" in [e.event for e in rt.store.events(req.id)]
        rt.clock.now += timedelta(seconds=rt.timeouts.settle + 1)
        assert Proposals(rt).settle(rt.clock.now) == {"done": 1}
        assert json.loads(rt.store.get(req.id).undo_json)["replicas_before"] == 2
        assert Approvals(rt).restore(req.id, APPROVER).ok and case.restored(fake)


@pytest.mark.parametrize("server, name, target", [("", "alice", "alice/"), ("gpu", "alice/gpu", "alice/gpu")])
def test_a_jupyterhub_server_is_named_as_people_know_it(server, name, target, sqlite_url):
    # kubespawner 7.1.0: the default server's pod has an empty servername label and no annotation.
    objects, pods = shapes.jupyterhub_server("alice", server)
    with FakeKubeApi([shapes.node(), shapes.namespace(), *objects]) as fake:
        (f,) = runtime(fake, sqlite_url, [telemetry(pods)]).detect(NOW)
    assert (f.consumer_kind, f.name, f.action.target.name) == ("JupyterHub", name, target)
    assert f.subject.startswith(f"JupyterHub {shapes.NS}/{name}") and f"{shapes.NS}/{name}/" not in f.subject
    assert ("default server of alice" if not server else "server 'gpu' of alice") in f.action.summary
