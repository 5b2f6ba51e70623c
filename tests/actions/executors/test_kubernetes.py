"""Executors: the real kubernetes client patching a wire-level fake API server, and the
in-memory cluster used by the demo and dry runs; each action tried first as a server-side dry run
(``dryRun=All``), refused by a Kueue-like admission webhook."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import kubernetes.client
import pytest

from actions.executors.in_memory import InMemoryCluster
from actions.executors.kubernetes import KubernetesWriter
from actions.executors.routing import RoutingWriter
from actions.model.findings import ActionVerb, GpuResize, ProposedAction
from actions.model.kube import ObjectRef
from actions.remedy.patches import (
    STOPPED_ANNOTATION,
    ActionRefused,
    ExecutorError,
    plan_apply,
)
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.kueue_webhook import (
    KUEUE_DENIAL,
    KUEUE_STS_WEBHOOK,
    MIG_NODE,
    TO_MIG,
    kueue_managed,
    one_gpu_statefulset,
)
from tests.support.paths import DEMO_CLUSTER
from tests.support.waiting import wait_for

DUMP = (DEMO_CLUSTER).read_bytes()
NOW = datetime(2026, 11, 20, 12, 5, tzinfo=timezone.utc)
LATER = NOW + timedelta(hours=2)
MERGE = "application/merge-patch+json"

NOTEBOOK = ObjectRef("kubeflow.org/v1", "Notebook", "ml-research", "llm-explore")
BATCH_STS = ObjectRef("apps/v1", "StatefulSet", "serving", "embed-batch")
CHAT_DEPLOYMENT = ObjectRef("apps/v1", "Deployment", "serving", "chat-api")


def action(verb: ActionVerb, target: ObjectRef) -> ProposedAction:
    return ProposedAction(verb=verb, target=target, summary=f"{verb.value} {target}")


def workload_ref(version: str) -> ObjectRef:
    return ObjectRef(f"kueue.x-k8s.io/{version}", "Workload", "training", "job-pretrain-1a2b3")


def three_replica_statefulset() -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": "embed-batch",
            "namespace": "serving",
            "generation": 4,
            "labels": {"app": "embed-batch"},
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "embed-batch"}},
            "serviceName": "embed-batch",
        },
    }


@pytest.fixture
def fake():
    with FakeKubeApi(json.loads(DUMP)["items"] + [three_replica_statefulset()]) as server:
        yield server


@pytest.fixture
def writer(fake):
    return KubernetesWriter(fake.api_client())


def patches(fake: FakeKubeApi) -> list:
    return [r for r in fake.requests if r.method == "PATCH"]


# --- Notebook ---------------------------------------------------------------------------------------


def test_stop_and_restore_notebook(fake, writer):
    undo = writer.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)

    [patch] = patches(fake)
    assert patch.path == "/apis/kubeflow.org/v1/namespaces/ml-research/notebooks/llm-explore"
    assert patch.content_type == MERGE
    assert patch.body == {"metadata": {"annotations": {STOPPED_ANNOTATION: "2026-11-20T12:05:00Z"}}}
    annotations = fake.get("Notebook", "ml-research", "llm-explore")["metadata"]["annotations"]
    assert annotations[STOPPED_ANNOTATION] == "2026-11-20T12:05:00Z"
    assert annotations["notebooks.kubeflow.org/creator"] == "ana@example.com"
    assert undo["stopped_at"] == "2026-11-20T12:05:00Z" and undo["verb"] == "stop-notebook"
    assert json.loads(json.dumps(undo)) == undo

    fake.clear_requests()
    writer.restore(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), undo, LATER)

    [patch] = patches(fake)
    assert patch.body == {"metadata": {"annotations": {STOPPED_ANNOTATION: None}}}
    annotations = fake.get("Notebook", "ml-research", "llm-explore")["metadata"]["annotations"]
    assert STOPPED_ANNOTATION not in annotations
    assert annotations["notebooks.kubeflow.org/creator"] == "ana@example.com"


def test_stop_notebook_twice_is_idempotent(fake, writer):
    first = writer.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    second = writer.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), LATER)
    assert len(patches(fake)) == 1
    assert second == first and first["stopped_at"] == "2026-11-20T12:05:00Z"
    writer.restore(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), first, LATER)
    writer.restore(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), first, LATER)
    assert len(patches(fake)) == 2
    assert (
        STOPPED_ANNOTATION
        not in fake.get("Notebook", "ml-research", "llm-explore")["metadata"]["annotations"]
    )


# --- StatefulSet / Deployment -----------------------------------------------------------------------


def test_scale_statefulset_three_to_zero_and_back_through_its_scale_subresource(fake, writer):
    before = fake.get("StatefulSet", "serving", "embed-batch")["metadata"]["resourceVersion"]
    undo = writer.apply(action(ActionVerb.SCALE_TO_ZERO, BATCH_STS), NOW)

    # Only the scale subresource is read and written: RBAC then grants nothing else of the set.
    scale = "/apis/apps/v1/namespaces/serving/statefulsets/embed-batch/scale"
    assert {r.path for r in fake.requests} == {scale}
    [patch] = patches(fake)
    assert patch.content_type == MERGE
    assert patch.body == {"metadata": {"resourceVersion": before}, "spec": {"replicas": 0}}
    sts = fake.get("StatefulSet", "serving", "embed-batch")
    assert sts["spec"]["replicas"] == 0 and "annotations" not in sts["metadata"]
    assert undo["replicas_before"] == 3

    fake.clear_requests()
    writer.restore(action(ActionVerb.SCALE_TO_ZERO, BATCH_STS), undo, LATER)

    [patch] = patches(fake)
    assert patch.path == scale
    assert patch.body == {"metadata": {"resourceVersion": sts["metadata"]["resourceVersion"]}, "spec": {"replicas": 3}}
    assert fake.get("StatefulSet", "serving", "embed-batch")["spec"]["replicas"] == 3


def test_the_dry_run_plans_the_undo_that_apply_then_returns(fake, writer):
    stop = action(ActionVerb.SCALE_TO_ZERO, BATCH_STS)
    planned = writer.dry_run(stop, NOW)
    assert fake.get("StatefulSet", "serving", "embed-batch")["spec"]["replicas"] == 3  # a dry run changes nothing
    assert writer.apply(stop, NOW) == planned == {
        "verb": "scale-to-zero", "replicas_before": 3,
        "target": {"apiVersion": "apps/v1", "kind": "StatefulSet", "namespace": "serving", "name": "embed-batch"},
    }


def test_a_second_scale_sends_nothing_and_only_the_first_undo_knows_the_count(fake, writer):
    first = writer.apply(action(ActionVerb.SCALE_TO_ZERO, BATCH_STS), NOW)
    second = writer.apply(action(ActionVerb.SCALE_TO_ZERO, BATCH_STS), LATER)
    assert (first["replicas_before"], second["replicas_before"]) == (3, 0)
    assert len(patches(fake)) == 1
    # What current() reads is the Scale, which plans like the object.
    assert writer.current(action(ActionVerb.SCALE_TO_ZERO, BATCH_STS))["kind"] == "Scale"


def test_restore_without_a_replica_count_is_an_error_and_changes_nothing(fake, writer):
    writer.apply(action(ActionVerb.SCALE_TO_ZERO, BATCH_STS), NOW)
    fake.clear_requests()
    with pytest.raises(ExecutorError, match="holds no replica count"):
        writer.restore(action(ActionVerb.SCALE_TO_ZERO, BATCH_STS), {}, LATER)
    assert patches(fake) == [] and fake.get("StatefulSet", "serving", "embed-batch")["spec"]["replicas"] == 0


def test_restore_keeps_a_count_someone_else_set(fake, writer):
    undo = writer.apply(action(ActionVerb.SCALE_TO_ZERO, BATCH_STS), NOW)
    with fake.api_client() as client:
        from kubernetes.client import AppsV1Api

        AppsV1Api(client).patch_namespaced_stateful_set(
            "embed-batch", "serving", {"spec": {"replicas": 1}}, _content_type=MERGE, _preload_content=False
        )
    fake.clear_requests()
    writer.restore(action(ActionVerb.SCALE_TO_ZERO, BATCH_STS), undo, LATER)
    assert fake.get("StatefulSet", "serving", "embed-batch")["spec"]["replicas"] == 1
    assert patches(fake) == []


def test_scale_deployment_retries_a_conflict(fake, writer):
    path = "/apis/apps/v1/namespaces/serving/deployments/chat-api/scale"
    fake.fail("PATCH", path, 409, "Conflict", 'Operation cannot be fulfilled on deployments.apps "chat-api"')
    undo = writer.apply(action(ActionVerb.SCALE_TO_ZERO, CHAT_DEPLOYMENT), NOW)
    assert [r.method for r in fake.requests if r.path == path] == ["GET", "PATCH", "GET", "PATCH"]
    assert undo["replicas_before"] == 1
    assert fake.get("Deployment", "serving", "chat-api")["spec"]["replicas"] == 0
    writer.restore(action(ActionVerb.SCALE_TO_ZERO, CHAT_DEPLOYMENT), undo, LATER)
    assert fake.get("Deployment", "serving", "chat-api")["spec"]["replicas"] == 1


# --- Kueue Workload ---------------------------------------------------------------------------------


@pytest.mark.parametrize("served", [("v1beta2", "v1beta1"), ("v1beta1",)])
def test_deactivate_and_reactivate_workload(served):
    version = served[0]
    with FakeKubeApi(json.loads(DUMP)["items"], kueue_versions=served) as fake:
        writer = KubernetesWriter(fake.api_client())
        undo = writer.apply(action(ActionVerb.DEACTIVATE_WORKLOAD, workload_ref(version)), NOW)

        [patch] = patches(fake)
        assert (
            patch.path == f"/apis/kueue.x-k8s.io/{version}/namespaces/training/workloads/job-pretrain-1a2b3"
        )
        assert (patch.content_type, patch.body) == (MERGE, {"spec": {"active": False}})
        assert fake.get("Workload", "training", "job-pretrain-1a2b3")["spec"]["active"] is False
        assert undo["api_version"] == f"kueue.x-k8s.io/{version}"

        writer.restore(action(ActionVerb.DEACTIVATE_WORKLOAD, workload_ref(version)), undo, LATER)
        assert patches(fake)[-1].body == {"spec": {"active": True}}
        assert fake.get("Workload", "training", "job-pretrain-1a2b3")["spec"]["active"] is True


def test_workload_in_an_unserved_version_is_an_error():
    with FakeKubeApi(json.loads(DUMP)["items"], kueue_versions=("v1beta1",)) as fake:
        with pytest.raises(ExecutorError, match="no longer exists"):
            KubernetesWriter(fake.api_client()).apply(
                action(ActionVerb.DEACTIVATE_WORKLOAD, workload_ref("v1beta2")), NOW
            )


# --- errors -----------------------------------------------------------------------------------------


def test_apply_to_a_deleted_object_says_it_no_longer_exists(fake, writer):
    gone = ObjectRef("kubeflow.org/v1", "Notebook", "ml-research", "deleted-yesterday")
    with pytest.raises(
        ExecutorError, match=r"Notebook ml-research/deleted-yesterday no longer exists"
    ) as info:
        writer.apply(action(ActionVerb.STOP_NOTEBOOK, gone), NOW)
    assert info.value.status == 404 and info.value.target == gone
    assert patches(fake) == []


def test_api_refusal_names_the_object_and_the_message(fake, writer):
    fake.fail(
        "PATCH",
        "/apis/kubeflow.org/v1/namespaces/ml-research/notebooks/llm-explore",
        403,
        "Forbidden",
        'notebooks.kubeflow.org "llm-explore" is forbidden: User "system:serviceaccount:gpu:bot" cannot patch',
    )
    with pytest.raises(ExecutorError) as info:
        writer.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    assert "Notebook ml-research/llm-explore" in str(info.value)
    assert "cannot patch" in str(info.value) and info.value.status == 403


def test_a_hung_api_server_does_not_hold_the_action_and_its_outcome_is_uncertain(fake):
    path = "/apis/kubeflow.org/v1/namespaces/ml-research/notebooks/llm-explore"
    # The API server applies the patch after the client gave up: only reading it back tells.
    fake.stall("PATCH", path, seconds=1.5)
    writer = KubernetesWriter(fake.api_client(), timeout_seconds=0.5)
    started = time.monotonic()
    with pytest.raises(ExecutorError, match="no answer from the Kubernetes API") as info:
        writer.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    assert time.monotonic() - started < 1.5 and info.value.uncertain
    wait_for(lambda: STOPPED_ANNOTATION in annotations(writer.current(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK))), "the late patch to land", 5)


def test_a_hung_read_fails_the_action_before_anything_is_sent(fake):
    path = "/apis/kubeflow.org/v1/namespaces/ml-research/notebooks/llm-explore"
    fake.stall("GET", path, seconds=2, times=5)
    writer = KubernetesWriter(fake.api_client(), timeout_seconds=0.5)
    with pytest.raises(ExecutorError, match="cannot reach the Kubernetes API") as info:
        writer.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    assert not info.value.uncertain and patches(fake) == []


def test_a_refused_connection_is_certain_and_a_gateway_timeout_is_not(fake):
    closed = KubernetesWriter(kubernetes.client.ApiClient(_config("http://127.0.0.1:9")), timeout_seconds=0.5)
    with pytest.raises(ExecutorError) as info:
        closed.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    assert not info.value.uncertain
    fake.fail("PATCH", "/apis/kubeflow.org/v1/namespaces/ml-research/notebooks/llm-explore", 504, "Timeout", "request did not complete")
    with pytest.raises(ExecutorError) as info:
        KubernetesWriter(fake.api_client()).apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    assert info.value.uncertain and info.value.status == 504


def test_a_write_leaves_its_connection_clean_for_the_next_request(fake, writer):
    # The answer to a PATCH arrives in two writes (headers, then body); a body left unread on
    # the kept-alive connection was read as the next request's status line, and that request
    # sent twice, about one time in four here.
    stop = action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK)
    for _ in range(20):
        undo = writer.apply(stop, NOW)
        fake.clear_requests()
        writer.current(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK))
        writer.restore(stop, undo, LATER)
        writer.current(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK))
        assert [r.method for r in fake.requests] == ["GET", "GET", "PATCH", "GET"]


def test_current_reads_the_target_and_says_none_when_it_is_gone(fake, writer):
    assert writer.current(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK))["metadata"]["name"] == "llm-explore"
    assert writer.current(action(ActionVerb.STOP_NOTEBOOK, ObjectRef("kubeflow.org/v1", "Notebook", "ml-research", "nope"))) is None


def _config(host):
    cfg = kubernetes.client.Configuration()
    cfg.host = host
    return cfg


def annotations(obj):
    return (obj.get("metadata") or {}).get("annotations") or {}


def test_verb_that_does_not_fit_the_target_is_refused_before_any_request(fake, writer):
    with pytest.raises(ExecutorError, match="cannot scale-to-zero"):
        writer.apply(action(ActionVerb.SCALE_TO_ZERO, NOTEBOOK), NOW)
    assert fake.requests == []


def test_undo_record_of_another_action_is_refused(fake, writer):
    undo = writer.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    other = ObjectRef("kubeflow.org/v1", "Notebook", "ml-research", "cell-bursts")
    with pytest.raises(ExecutorError, match="not for stop-notebook"):
        writer.restore(action(ActionVerb.STOP_NOTEBOOK, other), undo, LATER)


# --- server-side dry run ---------------------------------------------------------------------------

SERVING_STS = ObjectRef("apps/v1", "StatefulSet", "serving", "vector-db")
CLAIM = ObjectRef("karpenter.sh/v1", "NodeClaim", "", "gpu-h100-7xk2p")


def nodeclaim() -> dict:
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": CLAIM.name, "labels": {"karpenter.sh/nodepool": "gpu"}},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}},
        "status": {"nodeName": "h100-empty"},
    }


def dry_runs(fake: FakeKubeApi) -> list:
    return [r for r in fake.requests if r.query.get("dryRun") == "All"]


def test_a_dry_run_of_a_resize_kueue_forbids_is_refused_in_the_webhooks_words_and_changes_nothing(fake, writer):
    kueue_managed(fake)
    before = fake.get("StatefulSet", "serving", "vector-db")
    resize = ProposedAction(ActionVerb.RESIZE_GPUS, SERVING_STS, "to a MIG slice", TO_MIG)
    fake.clear_requests()

    with pytest.raises(ActionRefused) as info:
        writer.dry_run(resize, NOW)

    refused = info.value
    assert refused.message == f'admission webhook "{KUEUE_STS_WEBHOOK}" denied the request: {KUEUE_DENIAL}'
    assert (refused.status, refused.reason, refused.target) == (403, "Forbidden", SERVING_STS)
    assert refused.message in str(refused) and not refused.uncertain
    assert isinstance(refused, ExecutorError)  # what callers of apply already catch
    # The one write was the PATCH apply would send, planned from the object as read, as a dry run.
    assert [(r.method, r.query) for r in fake.requests] == [("GET", {}), ("PATCH", {"dryRun": "All"})]
    [patch] = patches(fake)
    assert patch.path == "/apis/apps/v1/namespaces/serving/statefulsets/vector-db"
    assert (patch.content_type, patch.body) == (MERGE, plan_apply(resize, before, NOW)[0])
    assert fake.get("StatefulSet", "serving", "vector-db") == before
    # The real request meets the same webhook (apply's error is the ExecutorError it always was).
    with pytest.raises(ExecutorError, match="denied the request") as info:
        writer.apply(resize, NOW)
    assert info.value.status == 403 and fake.get("StatefulSet", "serving", "vector-db") == before


def test_a_dry_run_kueue_allows_passes_and_changes_nothing(fake, writer):
    kueue_managed(fake)  # Kueue allows scaling a set it manages to zero and back from it
    before = fake.get("StatefulSet", "serving", "vector-db")
    fake.clear_requests()
    assert writer.dry_run(action(ActionVerb.SCALE_TO_ZERO, SERVING_STS), NOW)["replicas_before"] == 1
    assert [r.method for r in dry_runs(fake)] == ["PATCH"]
    assert fake.get("StatefulSet", "serving", "vector-db") == before


def test_a_dry_run_of_a_resize_on_an_ordinary_statefulset_passes_changes_nothing_and_is_what_apply_sends(fake, writer):
    fake.add(one_gpu_statefulset({"app": "vector-db"}))
    before = fake.get("StatefulSet", "serving", "vector-db")
    resize = ProposedAction(ActionVerb.RESIZE_GPUS, SERVING_STS, "to a MIG slice", TO_MIG)
    fake.clear_requests()

    assert writer.dry_run(resize, NOW)["verb"] == "resize-gpus"

    [dry] = dry_runs(fake)
    assert (dry.method, dry.path, dry.query) == (
        "PATCH", "/apis/apps/v1/namespaces/serving/statefulsets/vector-db", {"dryRun": "All"})
    assert fake.get("StatefulSet", "serving", "vector-db") == before  # resourceVersion and generation too
    fake.clear_requests()
    writer.apply(resize, NOW)
    [real] = patches(fake)
    assert real.query == {} and (real.content_type, real.body) == (dry.content_type, dry.body)
    assert fake.get("StatefulSet", "serving", "vector-db")["spec"]["template"]["spec"]["nodeSelector"] == dict([MIG_NODE])


def test_a_dry_run_of_an_action_already_applied_sends_no_patch(fake, writer):
    writer.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    fake.clear_requests()
    writer.dry_run(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), LATER)
    assert [r.method for r in fake.requests] == ["GET"]


def test_a_dry_run_of_a_nodeclaim_delete_deletes_nothing(fake, writer):
    fake.add(nodeclaim())
    delete = action(ActionVerb.DELETE_NODECLAIM, CLAIM)
    writer.dry_run(delete, NOW)
    assert [(r.method, r.path, r.query) for r in fake.requests] == [
        ("DELETE", f"/apis/karpenter.sh/v1/nodeclaims/{CLAIM.name}", {"dryRun": "All"})]
    assert fake.get("NodeClaim", "", CLAIM.name) is not None
    writer.apply(delete, NOW)
    assert fake.requests[-1].query == {} and fake.get("NodeClaim", "", CLAIM.name) is None


def test_a_dry_run_of_a_nodeclaim_delete_that_is_refused(fake, writer):
    fake.add(nodeclaim())
    fake.deny("NodeClaim", "", CLAIM.name, group="karpenter.sh", webhook="validation.example.com",
              message="deletes are frozen for the holidays")
    with pytest.raises(ActionRefused) as info:
        writer.dry_run(action(ActionVerb.DELETE_NODECLAIM, CLAIM), NOW)
    assert info.value.message == (
        'admission webhook "validation.example.com" denied the request: deletes are frozen for the holidays')
    assert info.value.status == 403 and fake.get("NodeClaim", "", CLAIM.name) is not None


@pytest.mark.parametrize("verb, gone", [
    (ActionVerb.STOP_NOTEBOOK, ObjectRef("kubeflow.org/v1", "Notebook", "ml-research", "deleted-yesterday")),
    (ActionVerb.DELETE_NODECLAIM, CLAIM),  # apply counts a gone NodeClaim as deleted; a dry run says it is gone
])
def test_a_dry_run_against_a_target_that_is_gone_says_it_no_longer_exists(fake, writer, verb, gone):
    with pytest.raises(ExecutorError, match=f"^{gone} no longer exists$") as info:
        writer.dry_run(action(verb, gone), NOW)
    assert info.value.status == 404 and not isinstance(info.value, ActionRefused)
    assert patches(fake) == []


def test_a_dry_run_that_gets_no_answer_is_an_error_but_never_uncertain(fake):
    fake.stall("PATCH", "/apis/kubeflow.org/v1/namespaces/ml-research/notebooks/llm-explore", seconds=1.5, dry_run=True)
    writer = KubernetesWriter(fake.api_client(), timeout_seconds=0.5)
    with pytest.raises(ExecutorError, match="no answer from the Kubernetes API") as info:
        writer.dry_run(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    assert not info.value.uncertain and not isinstance(info.value, ActionRefused)
    wait_for(lambda: dry_runs(fake), "the stalled dry run to be answered", 5)  # recorded once answered
    assert STOPPED_ANNOTATION not in annotations(fake.get("Notebook", "ml-research", "llm-explore"))


def test_the_routing_writer_sends_the_dry_run_to_the_cluster(fake, writer):
    kueue_managed(fake)
    with pytest.raises(ActionRefused, match="vstatefulset.kb.io"):
        RoutingWriter(writer).dry_run(ProposedAction(ActionVerb.RESIZE_GPUS, SERVING_STS, "resize", TO_MIG), NOW)
    assert [r.method for r in dry_runs(fake)] == ["PATCH"]


def test_the_fake_refuses_a_dry_run_value_it_does_not_know_as_the_api_server_does(fake):
    path = "/apis/apps/v1/namespaces/serving/statefulsets/embed-batch"
    before = fake.get("StatefulSet", "serving", "embed-batch")
    status, body = fake.handle("PATCH", f"{path}?dryRun=Some", b'{"spec": {"replicas": 0}}', MERGE)
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"] == 'PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"'
    assert fake.get("StatefulSet", "serving", "embed-batch") == before


def test_in_memory_dry_run_checks_the_target_and_the_plan_and_changes_nothing():
    cluster = InMemoryCluster.from_kubectl_dump(DUMP)
    before = cluster.dump()
    cluster.dry_run(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    assert cluster.dump() == before
    with pytest.raises(ExecutorError, match="StatefulSet ml-research/nope no longer exists$") as info:
        cluster.dry_run(action(ActionVerb.SCALE_TO_ZERO, ObjectRef("apps/v1", "StatefulSet", "ml-research", "nope")), NOW)
    assert info.value.status == 404
    with pytest.raises(ExecutorError, match="no longer exists"):
        cluster.dry_run(action(ActionVerb.DELETE_NODECLAIM, CLAIM), NOW)
    stale = GpuResize(before=(("nvidia.com/gpu", 8),), after=(("nvidia.com/gpu", 4),))
    with pytest.raises(ExecutorError) as info:
        cluster.dry_run(ProposedAction(ActionVerb.RESIZE_GPUS, NOTEBOOK, "resize", stale), NOW)
    assert info.value.stale and cluster.dump() == before


# --- the in-memory cluster --------------------------------------------------------------------------


def pod_names(cluster: InMemoryCluster, now: datetime) -> set[str]:
    return {p.name for p in cluster.snapshot(now).pods}


def test_in_memory_stop_notebook_removes_its_pod_and_restore_brings_it_back():
    cluster = InMemoryCluster.from_kubectl_dump(DUMP)
    old = next(p for p in cluster.snapshot(NOW).pods if p.name == "llm-explore-0")

    undo = cluster.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    snap = cluster.snapshot(NOW)
    assert "llm-explore-0" not in {p.name for p in snap.pods}
    assert "cell-bursts-0" in {p.name for p in snap.pods}
    assert next(n for n in snap.notebooks if n.name == "llm-explore").stopped
    assert next(s for s in snap.statefulsets if s.name == "llm-explore").replicas == 0
    assert cluster.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), LATER) == undo

    cluster.restore(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), undo, LATER)
    snap = cluster.snapshot(LATER)
    back = next(p for p in snap.pods if p.name == "llm-explore-0")
    assert back.started == LATER and back.created == LATER and back.uid != old.uid
    assert (back.gpus, back.node, back.owners) == (old.gpus, old.node, old.owners)
    assert not next(n for n in snap.notebooks if n.name == "llm-explore").stopped


def test_in_memory_scale_statefulset_to_zero_and_back():
    cluster = InMemoryCluster.from_kubectl_dump(DUMP)
    sts = ObjectRef("apps/v1", "StatefulSet", "ml-research", "cell-bursts")
    undo = cluster.apply(action(ActionVerb.SCALE_TO_ZERO, sts), NOW)
    assert undo["replicas_before"] == 1
    assert "cell-bursts-0" not in pod_names(cluster, NOW)
    assert cluster.get("StatefulSet", "ml-research", "cell-bursts")["spec"]["replicas"] == 0
    cluster.restore(action(ActionVerb.SCALE_TO_ZERO, sts), undo, LATER)
    assert "cell-bursts-0" in pod_names(cluster, LATER)


def test_in_memory_scale_deployment_to_zero_and_back():
    cluster = InMemoryCluster.from_kubectl_dump(DUMP)
    undo = cluster.apply(action(ActionVerb.SCALE_TO_ZERO, CHAT_DEPLOYMENT), NOW)
    assert "chat-api-6f7d8b9c4-x2x9z" not in pod_names(cluster, NOW)
    assert "coredns-5d78c9869d-q8hzt" in {
        p["metadata"]["name"] for p in json.loads(cluster.dump())["items"] if p["kind"] == "Pod"
    }
    cluster.restore(action(ActionVerb.SCALE_TO_ZERO, CHAT_DEPLOYMENT), undo, LATER)
    assert "chat-api-6f7d8b9c4-x2x9z" in pod_names(cluster, LATER)


def test_in_memory_deactivate_workload_evicts_and_reactivate_readmits():
    cluster = InMemoryCluster.from_kubectl_dump(DUMP)
    ref = workload_ref("v1beta2")
    undo = cluster.apply(action(ActionVerb.DEACTIVATE_WORKLOAD, ref), NOW)
    snap = cluster.snapshot(NOW)
    wl = next(w for w in snap.workloads if w.name == "job-pretrain-1a2b3")
    assert (wl.active, wl.admitted, wl.cluster_queue) == (False, False, None)
    assert "pretrain-worker-0" not in {p.name for p in snap.pods}
    assert "finetune-spot-worker-0" in {p.name for p in snap.pods}

    cluster.restore(action(ActionVerb.DEACTIVATE_WORKLOAD, ref), undo, LATER)
    snap = cluster.snapshot(LATER)
    wl = next(w for w in snap.workloads if w.name == "job-pretrain-1a2b3")
    assert (wl.active, wl.admitted, wl.cluster_queue, wl.flavors) == (
        True,
        True,
        "gpu-cluster-queue",
        ("h100-on-demand",),
    )
    assert next(p for p in snap.pods if p.name == "pretrain-worker-0").started == LATER


def test_in_memory_pod_workload_deactivation_is_not_undone_by_its_deployment():
    cluster = InMemoryCluster.from_kubectl_dump(DUMP)
    ref = ObjectRef("kueue.x-k8s.io/v1beta2", "Workload", "serving", "pod-chat-api-6f7d8b9c4-x2x9z-5e6f7")
    undo = cluster.apply(action(ActionVerb.DEACTIVATE_WORKLOAD, ref), NOW)
    cluster.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)  # any later change reconciles again
    assert "chat-api-6f7d8b9c4-x2x9z" not in pod_names(cluster, NOW)
    cluster.restore(action(ActionVerb.DEACTIVATE_WORKLOAD, ref), undo, LATER)
    assert "chat-api-6f7d8b9c4-x2x9z" in pod_names(cluster, LATER)


def test_in_memory_missing_object_and_malformed_dump():
    cluster = InMemoryCluster.from_kubectl_dump(DUMP)
    gone = ObjectRef("apps/v1", "StatefulSet", "ml-research", "nope")
    with pytest.raises(ExecutorError, match="StatefulSet ml-research/nope no longer exists"):
        cluster.apply(action(ActionVerb.SCALE_TO_ZERO, gone), NOW)
    with pytest.raises(ValueError, match="not a List"):
        InMemoryCluster.from_kubectl_dump(b'{"kind": "Pod"}')


def test_in_memory_and_live_writers_send_the_same_patch(fake, writer):
    cluster = InMemoryCluster.from_kubectl_dump(DUMP)
    writer.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    cluster.apply(action(ActionVerb.STOP_NOTEBOOK, NOTEBOOK), NOW)
    live = fake.get("Notebook", "ml-research", "llm-explore")["metadata"]["annotations"]
    assert cluster.get("Notebook", "ml-research", "llm-explore")["metadata"]["annotations"] == live


# --- Restore from zero while Kueue still counts the scale-down's pods --------------------------------


def terminating(fake: FakeKubeApi, pods: int) -> None:
    """The StatefulSet controller's count of vector-db's pods (status.replicas) while the pods of
    the scale to zero terminate, then once they are gone."""
    obj = fake.get("StatefulSet", "serving", "vector-db")
    obj["status"] = {"replicas": pods, "readyReplicas": 0}
    fake.add(obj)


class WaitingClock:
    """The writer's sleep and monotonic clock: each sleep moves the clock and calls ``on_sleep``."""

    def __init__(self, on_sleep=lambda: None):
        self.now, self.slept, self.on_sleep = 0.0, [], on_sleep

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        self.on_sleep()

    def monotonic(self) -> float:
        return self.now


def scaled_down_under_kueue(fake: FakeKubeApi, clock: WaitingClock) -> tuple[KubernetesWriter, ProposedAction, dict]:
    kueue_managed(fake)
    writer = KubernetesWriter(fake.api_client(), from_zero_wait_seconds=10, poll_seconds=2,
                              sleep=clock.sleep, monotonic=clock.monotonic)
    stop = action(ActionVerb.SCALE_TO_ZERO, SERVING_STS)
    undo = writer.apply(stop, NOW)
    terminating(fake, 1)  # Restore pressed right after Approve: the pod still terminates
    fake.clear_requests()
    return writer, stop, undo


def test_a_restore_from_zero_waits_for_the_scale_downs_pods_then_scales_up_once(fake):
    # Kueue's webhook (registered for statefulsets, not statefulsets/scale) would deny this
    # scale-up while the pod terminates; the scale subresource skips it, so the writer waits.
    clock = WaitingClock(on_sleep=lambda: terminating(fake, 0))
    writer, stop, undo = scaled_down_under_kueue(fake, clock)
    writer.restore(stop, undo, LATER)
    assert [r.method for r in patches(fake)] == ["PATCH"]  # sent once the pod was gone
    assert clock.slept == [2]
    assert fake.get("StatefulSet", "serving", "vector-db")["spec"]["replicas"] == 1


def test_a_restore_whose_pods_stay_for_the_whole_wait_changes_nothing_and_says_what_to_do(fake):
    clock = WaitingClock()  # the pod never goes
    writer, stop, undo = scaled_down_under_kueue(fake, clock)
    with pytest.raises(ExecutorError) as info:
        writer.restore(stop, undo, LATER)
    assert "1 pod(s) of the scale-down were still terminating after 10 s" in str(info.value)
    assert "nothing was changed. Press Restore again once they are gone" in str(info.value)
    assert patches(fake) == [] and sum(clock.slept) == 10  # read at 0, 2, ... 10 s
    assert fake.get("StatefulSet", "serving", "vector-db")["spec"]["replicas"] == 0


def test_a_restore_refused_by_rbac_fails_at_once(fake):
    clock = WaitingClock()
    writer, stop, undo = scaled_down_under_kueue(fake, clock)
    terminating(fake, 0)
    # RBAC's own words (k8s.io/apiserver pkg/endpoints/handlers/responsewriters errors.go forbiddenMessage).
    fake.fail("PATCH", "/apis/apps/v1/namespaces/serving/statefulsets/vector-db/scale", 403, "Forbidden",
              'statefulsets.apps "vector-db" is forbidden: User "system:serviceaccount:gpu-cost-bot:gpu-cost-bot" '
              'cannot patch resource "statefulsets/scale" in API group "apps" in the namespace "serving"')
    with pytest.raises(ExecutorError, match="cannot patch resource"):
        writer.restore(stop, undo, LATER)
    assert clock.slept == [] and len(patches(fake)) == 1


def test_a_dry_run_rbac_will_not_let_read_is_the_action_refused(fake, writer):
    # Without deploy/components/resize the bot may not read a Deployment itself, only its scale.
    path = "/apis/apps/v1/namespaces/serving/deployments/chat-api"
    fake.fail("GET", path, 403, "Forbidden",
              'deployments.apps "chat-api" is forbidden: User "system:serviceaccount:gpu-cost-bot:gpu-cost-bot" '
              'cannot get resource "deployments" in API group "apps" in the namespace "serving"')
    resize = ProposedAction(ActionVerb.RESIZE_GPUS, CHAT_DEPLOYMENT, "resize", resize=TO_MIG)
    with pytest.raises(ActionRefused) as info:
        writer.dry_run(resize, NOW)
    assert (info.value.status, info.value.reason) == (403, "Forbidden")
    assert 'cannot get resource "deployments"' in info.value.message
    assert patches(fake) == []
