"""Queue position from Kueue's visibility API, the ClusterQueue from LocalQueue spec.clusterQueue
and the GPU model from ResourceFlavor nodeLabels (kueue v0.19.2 apis/kueue/v1beta2,
apis/visibility/v1beta2), on the wire-level fake API server; and the queue-wait alert's one
proposal that frees enough idle GPUs for a waiting Workload, approved with one press."""

from __future__ import annotations

import io
import re
from datetime import timedelta

from actions.executors.kubernetes import KubernetesWriter
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.remedy.patches import STOPPED_ANNOTATION
from actions.sources.kube.reader import KubernetesSource
from actions.sources.recording import RecordedTelemetry
from actions.store.database import Store
from bot.chat.approvals import Approvals
from bot.chat.approve_all import request_ids as approve_all_ids
from bot.chat.commands import CommandContext, dispatch
from bot.chat.console import ConsoleChat
from bot.chat.proposals import Proposals
from bot.jobs.alerts import AlertsJob
from bot.runtime.runtime import Runtime
from bot.settings import AlertSettings
from tests.support import workload_shapes as shapes
from tests.support.clock import Clock
from tests.support.demo_world import APPROVER
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.replies import text_of
from tests.support.workload_shapes import NOW, telemetry

KUEUE = "kueue.x-k8s.io/v1beta2"


def queues() -> list[dict]:
    """LocalQueue ``team-a`` -> ClusterQueue ``gpu-cq``, whose GPU resource group offers the
    flavor ``big-gpus``: its nodeLabels select the H100 node (the name says nothing about it)."""
    lq = shapes.obj(KUEUE, "LocalQueue", "team-a", spec={"clusterQueue": "gpu-cq"})
    cq = shapes.obj(KUEUE, "ClusterQueue", "gpu-cq", namespaced=False, spec={
        "cohortName": "all", "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "96"}]}]},
            {"coveredResources": ["nvidia.com/gpu"], "flavors": [
                {"name": "big-gpus", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]},
        ]})
    rf = shapes.obj(KUEUE, "ResourceFlavor", "big-gpus", namespaced=False,
                    spec={"nodeLabels": {"node.kubernetes.io/instance-type": "p5.48xlarge"}})
    default = shapes.obj(KUEUE, "ResourceFlavor", "default", namespaced=False, spec={})
    return [lq, cq, rf, default]


def pending(name: str, gpus: int, created: str, priority: int = 0) -> dict:
    w = shapes.workload(name, shapes.ref("batch/v1", "Job", name.split("-", 1)[1].rsplit("-", 1)[0]), gpus=gpus)
    w["metadata"]["creationTimestamp"] = created
    w["spec"]["priority"] = priority
    w["status"] = {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending"}]}
    return w


def notebook(name: str) -> list[dict]:
    nb = shapes.obj("kubeflow.org/v1", "Notebook", name)
    sts = shapes.obj("apps/v1", "StatefulSet", name, owner=shapes.ref("kubeflow.org/v1", "Notebook", name), spec={"replicas": 1})
    p = shapes.pod(f"{name}-0", shapes.ref("apps/v1", "StatefulSet", name), labels={"notebook-name": name}, gpus=4)
    return [nb, sts, p]


def test_position_flavor_and_the_proposal_that_frees_enough(sqlite_url):
    objects = [
        shapes.node(), shapes.namespace(), *queues(), *notebook("explore-a"), *notebook("explore-b"),
        pending("job-train-llm-1a2b3", 8, "2026-11-20T08:00:00Z"),
        pending("job-urgent-4d5e6", 4, "2026-11-20T10:00:00Z", priority=100),
    ]
    with FakeKubeApi(objects) as fake:
        store = Store(sqlite_url)
        store.migrate()
        clock = Clock()
        clock.now = NOW
        out = io.StringIO()
        rt = Runtime(
            store=store, chat=ConsoleChat(out), cluster=KubernetesSource(fake.api_client()),
            telemetry=RecordedTelemetry([telemetry(["explore-a-0", "explore-b-0"], gpus=4)]),
            writer=KubernetesWriter(fake.api_client()), prices=PriceBook(PriceCatalog.bundled()),
            teams=TeamDirectory([Team(name="ml", namespaces=[shapes.NS], channel="C0ML", approvers=[APPROVER])]),
            policy=Policy(), dry_run=False, clock=clock,
        )
        Proposals(rt).reconcile(rt.detect(NOW), NOW)  # the two idle notebooks: requests #1 and #2
        fake.clear_requests()
        reply = dispatch("queue", CommandContext(user="U1", prices=rt.prices, rt=rt))
        paths = [r.path for r in fake.requests]
        assert "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/gpu-cq/pendingworkloads" in paths
        text = text_of(reply)
        # Higher priority first, as Kueue admits: the urgent job is 1st though younger.
        assert "job-train-llm-1a2b3 waits 4h 0m, asks 8 × H100 (big-gpus), 2nd in ClusterQueue gpu-cq, behind 1 Workload asking 4 GPUs" in text
        assert "job-urgent-4d5e6 waits 2h 0m, asks 4 × H100 (big-gpus), 1st in ClusterQueue gpu-cq" in text

        job = AlertsJob(store=store, chat=rt.chat, teams=rt.teams, settings=AlertSettings(), read_queues=rt.read_queues,
                        budgets=lambda: {}, clock=clock)
        assert job.run(NOW)["posted"] == 3  # two queue waits, and the idle on-demand H100s
        posted = out.getvalue()
        assert "Approve these 2 notebooks (8 idle H100, $55.04/h) and ml/job-train-llm-1a2b3 (asks 8 H100) can be admitted" in posted
        # The button names its alert; the store holds the requests it approves together.
        (value,) = [v for v in re.findall(r"\[approve-all (alert:\d+)\]", posted) if approve_all_ids(store, v) == [1, 2]]
        assert "Position: 2nd in ClusterQueue gpu-cq" in posted

        clock.now = NOW + timedelta(minutes=5)
        outcome = Approvals(rt).approve_all(approve_all_ids(store, value), APPROVER)
        assert outcome.ok, outcome.message
        for name in ("explore-a", "explore-b"):
            assert STOPPED_ANNOTATION in fake.get("Notebook", shapes.NS, name)["metadata"]["annotations"]


def test_no_proposal_when_the_idle_gpus_are_not_enough(sqlite_url):
    objects = [shapes.node(), shapes.namespace(), *queues(), *notebook("explore-a"),
               pending("job-train-llm-1a2b3", 8, "2026-11-20T08:00:00Z")]
    with FakeKubeApi(objects) as fake:
        store = Store(sqlite_url)
        store.migrate()
        out = io.StringIO()
        clock = Clock()
        clock.now = NOW
        rt = Runtime(
            store=store, chat=ConsoleChat(out), cluster=KubernetesSource(fake.api_client()),
            telemetry=RecordedTelemetry([telemetry(["explore-a-0"], gpus=4)]),
            writer=KubernetesWriter(fake.api_client()), prices=PriceBook(PriceCatalog.bundled()),
            teams=TeamDirectory([Team(name="ml", namespaces=[shapes.NS], channel="C0ML", approvers=[APPROVER])]),
            policy=Policy(), dry_run=False, clock=clock,
        )
        Proposals(rt).reconcile(rt.detect(NOW), NOW)
        AlertsJob(store=store, chat=rt.chat, teams=rt.teams, settings=AlertSettings(), read_queues=rt.read_queues,
                  budgets=lambda: {}, clock=clock).run(NOW)
        posted = out.getvalue()
        assert "has waited 4h" in posted and "approve-all" not in posted and "can be admitted" not in posted
