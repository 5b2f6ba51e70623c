"""``/gpu queue``: Kueue Workloads read through the wire-level Kubernetes API fake in both served
versions (v1beta2 and v1beta1), the bundled demo cluster and its recorded telemetry, and the
pure queue decisions on hand-made Workloads."""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone

import pytest

from actions.executors.kubernetes import KubernetesWriter
from actions.kueue.queues import queue_report, wait_sentence
from actions.model.findings import Finding
from actions.model.kube import CapacityType
from actions.model.kueue import Workload
from actions.model.ledger import FILLED, REQUESTED, LedgerRow
from actions.model.quote import PriceQuote
from actions.model.snapshot import ClusterSnapshot
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.kube.reader import KubernetesSource
from actions.sources.recording import RecordedTelemetry
from actions.store.database import Store
from actions.store.ledger import LedgerStore
from bot.chat.commands import CommandContext, dispatch
from bot.chat.console import ConsoleChat
from bot.chat.proposals import Proposals
from bot.runtime.runtime import Runtime
from tests.support import workload_shapes as shapes
from tests.support.clock import T0, Clock
from tests.support.demo_world import APPROVER
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.paths import DEMO
from tests.support.replies import text_of

TEAMS = TeamDirectory(
    [
        Team(name="research", namespaces=["ml-research"], channel="C0RESEARCH"),
        Team(name="training", namespaces=["training"], channel="C0TRAINING"),
        Team(name="serving", namespaces=["serving"], channel="C0SERVING"),
    ]
)
CONTEXT = "training waits 3h for 8 H100; research holds 1 idle H100 in notebooks (request #1 awaits approval)"


def runtime(kube: FakeKubeApi, database_url: str) -> Runtime:
    store = Store(database_url)
    store.migrate()
    clock = Clock()
    clock.now = T0
    return Runtime(
        store=store,
        chat=ConsoleChat(io.StringIO()),
        cluster=KubernetesSource(kube.api_client(), page_size=3),
        telemetry=RecordedTelemetry.from_file(DEMO / "telemetry.json"),
        writer=None,  # type: ignore[arg-type] - queues never write
        prices=PriceBook(PriceCatalog.bundled()),
        teams=TEAMS,
        policy=Policy(),
        dry_run=True,
        clock=clock,
    )


@pytest.mark.parametrize("versions", [("v1beta2", "v1beta1"), ("v1beta1",)], ids=["v1beta2", "v1beta1"])
def test_queue_shows_waits_and_idle_gpus_elsewhere_in_both_kueue_versions(versions, sqlite_url):
    with FakeKubeApi.from_list_json((DEMO / "cluster.json").read_bytes(), kueue_versions=versions) as kube:
        rt = runtime(kube, sqlite_url)
        now = rt.clock()
        Proposals(rt).reconcile(rt.detect(now), now)  # proposes the idle research notebook: request #1
        kube.clear_requests()
        reply = dispatch("queue", CommandContext(user="U1", prices=rt.prices, rt=rt))
        paths = [r.path for r in kube.requests]

    assert f"/apis/kueue.x-k8s.io/{versions[0]}/workloads" in paths
    text = text_of(reply)
    assert CONTEXT in text
    assert "ClusterQueue gpu-cluster-queue* (GPU flavors h100-on-demand, h100-spot): 3 admitted · 4 GPUs, 1 pending · 8 GPUs, oldest pending 3h 0m" in text
    assert "LocalQueue training/training-queue (team training): 2 admitted · 3 GPUs, 1 pending · 8 GPUs" in text
    assert "LocalQueue serving/serving-queue (team serving): 1 admitted · 1 GPU, 0 pending · 0 GPUs, nothing pending" in text
    assert "job-eval-4d5e6 waits 3h 0m, asks 8 × H100 (h100-on-demand, h100-spot)" in text
    assert f"Workloads read as kueue.x-k8s.io/{versions[0]}" in text
    assert reply.ephemeral


def test_queue_for_one_team_leaves_the_others_out(sqlite_url):
    with FakeKubeApi.from_list_json((DEMO / "cluster.json").read_bytes()) as kube:
        rt = runtime(kube, sqlite_url)
        text = text_of(dispatch("queue serving", CommandContext(user="U1", prices=rt.prices, rt=rt)))
    assert "serving/serving-queue" in text
    assert "training" not in text.split("Workloads read as")[0]


def test_queue_without_kueue_says_so(sqlite_url):
    with FakeKubeApi.from_list_json((DEMO / "cluster.json").read_bytes(), kueue_versions=()) as kube:
        rt = runtime(kube, sqlite_url)
        text = text_of(dispatch("queue", CommandContext(user="U1", prices=rt.prices, rt=rt)))
    assert "Kueue is not installed" in text


def test_queue_rejects_extra_words_with_an_example(sqlite_url):
    with FakeKubeApi.from_list_json((DEMO / "cluster.json").read_bytes()) as kube:
        rt = runtime(kube, sqlite_url)
        reply = dispatch("queue training serving", CommandContext(user="U1", prices=rt.prices, rt=rt))
    assert reply.ephemeral and "at most one team" in reply.message.text and "/gpu queue research" in reply.message.text


# --- the pure decisions ----------------------------------------------------------------------------

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)


def wl(name, ns, queue, *, gpus=8, admitted=False, cq=None, flavors=(), created=NOW - timedelta(hours=2), **kw):
    return Workload(
        namespace=ns, name=name, uid=f"uid-{name}", api_version="kueue.x-k8s.io/v1beta2", queue_name=queue,
        active=kw.pop("active", True), created=created, admitted=admitted, cluster_queue=cq, gpus=gpus,
        flavors=flavors, **kw,
    )


def finding(ns, name, team, gpus, model, kind="idle-notebook", usd=10.0):
    price = PriceQuote(1.0, CapacityType.ON_DEMAND, "test", "2026-11-01", "gpu-model")
    return Finding(
        kind=kind, key=f"{kind}/{ns}/{name}", namespace=ns, name=name, team=team, consumer_kind="Notebook",
        pods=(name,), node="n1", gpus=gpus, gpu_model=model, idle_seconds=7200, usd_per_hour=usd, price=price,
        evidence=(), detected_at=NOW, window_seconds=3600,
    )


def test_pending_workload_learns_its_cluster_queue_and_flavor_from_admitted_ones():
    teams = TeamDirectory([Team(name="a", namespaces=["ns-a"]), Team(name="b", namespaces=["ns-b"])])
    snap_workloads = (
        wl("running", "ns-a", "q", admitted=True, cq="cq-gpu", flavors=("a100-reserved",)),
        wl("waiting", "ns-a", "q", created=NOW - timedelta(hours=3)),
        wl("stopped", "ns-a", "q", active=False),  # deactivated: waits for nobody
        wl("done", "ns-a", "q", finished=True),
        wl("cpu-only", "ns-a", "q", gpus=0),
    )
    snap = ClusterSnapshot(taken_at=NOW, workloads=snap_workloads, workload_api_version="kueue.x-k8s.io/v1beta2")
    findings = [
        finding("ns-b", "nb1", "b", 4, "NVIDIA A100-SXM4-80GB"),
        finding("ns-b", "nb2", "b", 2, "NVIDIA A100-SXM4-80GB", kind="idle-workload", usd=5.0),
        finding("ns-a", "own", "a", 8, "NVIDIA A100-SXM4-80GB"),  # the waiting team's own: not "elsewhere"
        finding("ns-b", "h", "b", 8, "NVIDIA H100 80GB HBM3"),  # another GPU family
    ]
    report = queue_report(snap, findings, teams, NOW, open_requests={"idle-notebook/ns-b/nb1": 12})
    (lq,) = report.local_queues
    assert [p.workload.name for p in lq.pending] == ["waiting"]
    assert [w.name for w in lq.admitted] == ["running"]
    p = lq.pending[0]
    assert (p.cluster_queue, p.flavors, p.gpu_family, p.waiting_seconds) == ("cq-gpu", ("a100-reserved",), "A100", 10800)
    (idle,) = report.idle_elsewhere["uid-waiting"]
    assert (idle.team, idle.gpus, idle.usd_per_hour, idle.where, idle.request_ids) == (
        "b", 6, 15.0, ("notebooks", "jobs"), (12,)
    )
    assert wait_sentence(p, report.idle_elsewhere["uid-waiting"]) == (
        "a waits 3h for 8 A100; b holds 6 idle A100 in notebooks and jobs (request #12 awaits approval)"
    )


def test_unknown_gpu_family_matches_nothing_and_explicit_mappings_win():
    teams = TeamDirectory([])
    snap = ClusterSnapshot(
        taken_at=NOW,
        workloads=(
            wl("r", "ns-a", "q", admitted=True, cq="cq", flavors=("default-flavor",)),
            wl("w", "ns-a", "q"),
            wl("lonely", "ns-c", "other-q"),  # no admitted sibling: ClusterQueue unknown
        ),
    )
    findings = [finding("ns-b", "nb", "ns-b", 4, "NVIDIA L4")]
    report = queue_report(snap, findings, teams, NOW)
    assert report.idle_elsewhere == {}
    assert {c.name for c in report.cluster_queues} == {"cq", "(unknown ClusterQueue)"}

    mapped = queue_report(
        snap, findings, teams, NOW,
        local_queue_cluster_queues={("ns-c", "other-q"): "cq"},
        flavor_gpu_models={"default-flavor": "NVIDIA L4"},
    )
    assert {c.name for c in mapped.cluster_queues} == {"cq"}
    assert mapped.pending[0].gpu_family == "L4"
    assert [i.team for i in mapped.idle_elsewhere["uid-w"]] == ["ns-b"]


def _pending(name: str, gpus: int, created: str, priority: int) -> dict:
    w = shapes.workload(name, shapes.ref("batch/v1", "Job", name), gpus=gpus)
    w["metadata"]["creationTimestamp"] = created
    w["spec"]["priority"] = priority
    w["status"] = {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending"}]}
    return w


def _notebook(name: str) -> list[dict]:
    sts = shapes.obj("apps/v1", "StatefulSet", name, owner=shapes.ref("kubeflow.org/v1", "Notebook", name), spec={"replicas": 1})
    p = shapes.pod(f"{name}-0", shapes.ref("apps/v1", "StatefulSet", name), labels={"notebook-name": name}, gpus=4)
    return [shapes.obj("kubeflow.org/v1", "Notebook", name), sts, p]


def test_queue_shows_when_each_pending_workload_likely_starts_and_what_would_admit_it_now(sqlite_url):
    kueue = "kueue.x-k8s.io/v1beta2"
    cq = shapes.obj(kueue, "ClusterQueue", "gpu-cq", namespaced=False, spec={"cohortName": "all", "resourceGroups": [
        {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "4"}]}]}]})
    running = shapes.workload("job-run", shapes.ref("batch/v1", "Job", "run"), gpus=4)
    running["metadata"]["creationTimestamp"] = "2026-11-20T06:00:00Z"  # has run 6 h at shapes.NOW (12:00)
    objects = [
        shapes.node(), shapes.namespace(), shapes.obj(kueue, "LocalQueue", "team-a", spec={"clusterQueue": "gpu-cq"}), cq,
        shapes.obj(kueue, "ResourceFlavor", "h100", namespaced=False, spec={"nodeLabels": {"nvidia.com/gpu.product": shapes.H100}}),
        *_notebook("explore-a"), *_notebook("explore-b"), running,
        _pending("job-urgent", 4, "2026-11-20T10:00:00Z", 100), _pending("job-train", 4, "2026-11-20T08:00:00Z", 0),
    ]
    store = Store(sqlite_url)
    store.migrate()
    # team-a's history: ten finished runs of 2, 2, 3, 3, 4, 8, 8, 9, 10 and 12 h, 14 h apart.
    ledger, start = LedgerStore(store), shapes.NOW - timedelta(days=9)
    busy = {}
    for i, hours in enumerate((2, 2, 3, 3, 4, 8, 8, 9, 10, 12)):
        for h in range(hours):
            busy[start + timedelta(hours=1 + 14 * i + h)] = f"job-{i}"
    for h in range(14 * 10 + 2):
        at = start + timedelta(hours=h)
        rows = [LedgerRow(at, "default", REQUESTED, shapes.NS, "Workload", busy[at], "n1", 4.0, queue="team-a")] if at in busy else []
        ledger.write_hour("default", at, rows, FILLED, shapes.NOW)
    with FakeKubeApi(objects) as fake:
        clock = Clock()
        clock.now = shapes.NOW
        rt = Runtime(
            store=store, chat=ConsoleChat(io.StringIO()), cluster=KubernetesSource(fake.api_client()),
            telemetry=RecordedTelemetry([shapes.telemetry(["explore-a-0", "explore-b-0"], gpus=4)]),
            writer=KubernetesWriter(fake.api_client()), prices=PriceBook(PriceCatalog.bundled()),
            teams=TeamDirectory([Team(name="ml", namespaces=[shapes.NS], channel="C0ML", approvers=[APPROVER])]),
            policy=Policy(), dry_run=False, clock=clock,
        )
        Proposals(rt).reconcile(rt.detect(shapes.NOW), shapes.NOW)  # the two idle notebooks: requests #1 and #2
        text = text_of(dispatch("queue", CommandContext(user="U1", prices=rt.prices, rt=rt)))
    # The quota is not read yet: the 4 running GPUs stand for it. After 6 h, the runs of 8-12 h
    # have 2, 2, 3, 4, 6 h left (p50 3 h, p90 5.2 h); a run lasts 6 h (p50) or 10.2 h (p90).
    assert "job-urgent waits 2h 0m, asks 4 × H100 (h100), 1st in ClusterQueue gpu-cq; starts likely in 3-5 h" in text
    assert "approving the idle notebook in this cohort frees 4 H100s (request #" in text
    assert "job-train waits 4h 0m, asks 4 × H100 (h100), 2nd in ClusterQueue gpu-cq, behind 1 Workload asking 4 GPUs; " \
           "starts likely in 9-15 h" in text
    assert "approving the 2 idle notebooks in this cohort frees 8 H100s (requests #1, #2)" in text
