"""Reading the cluster: the kubectl dump decoder and the live source against a wire-level fake."""

from __future__ import annotations

import copy
import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from actions.model.disruption import FOREVER, protected_until
from actions.model.kube import CapacityType, OwnerRef
from actions.sources.kube.dump import snapshot_from_kubectl_dump
from actions.sources.kube.objects import capacity_type
from actions.sources.kube.reader import ClusterReadError, KubernetesSource
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.paths import DEMO_CLUSTER

DUMP_PATH = DEMO_CLUSTER
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
T0 = datetime(2026, 11, 19, 8, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def dump() -> bytes:
    return DUMP_PATH.read_bytes()


def _items(dump: bytes) -> list[dict]:
    return json.loads(dump)["items"]


def _as_list(items: list[dict]) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}).encode()


# --- the kubectl dump --------------------------------------------------------------------------------


def test_dump_gives_the_fleets_gpu_pods_only(dump):
    snap = snapshot_from_kubectl_dump(dump, NOW)
    pods = {(p.namespace, p.name): p for p in snap.pods}
    assert set(pods) == {
        ("ml-research", "llm-explore-0"),
        ("ml-research", "cell-bursts-0"),
        ("training", "pretrain-worker-0"),
        ("serving", "chat-api-6f7d8b9c4-x2x9z"),
        ("training", "finetune-spot-worker-0"),
    }  # not coredns, not the CPU notebook, not the Succeeded data-prep pod
    assert {k: p.gpus for k, p in pods.items()} == {
        ("ml-research", "llm-explore-0"): 1,
        ("ml-research", "cell-bursts-0"): 1,
        ("training", "pretrain-worker-0"): 2,
        ("serving", "chat-api-6f7d8b9c4-x2x9z"): 1,
        ("training", "finetune-spot-worker-0"): 1,
    }
    explore = pods["ml-research", "llm-explore-0"]
    assert explore.owners == (OwnerRef("apps/v1", "StatefulSet", "llm-explore", controller=True, uid="8774e707-f074-5a77-a2a9-3a5301b1caa7"),)
    assert explore.labels["notebook-name"] == "llm-explore"
    assert explore.node == "gpu-od-1" and explore.phase == "Running"
    assert explore.created == T0 and explore.started == T0
    assert explore.gpu_resource == "nvidia.com/gpu"
    assert pods["serving", "chat-api-6f7d8b9c4-x2x9z"].owners[0].kind == "ReplicaSet"
    assert pods["training", "pretrain-worker-0"].owners == (
        OwnerRef("batch/v1", "Job", "pretrain", controller=True, uid="f0b81c1e-5336-5eaa-b39a-5753b01f7591"),
    )


def test_dump_gives_nodes_with_capacity_and_instance_type(dump):
    nodes = snapshot_from_kubectl_dump(dump, NOW).nodes
    assert {n: (v.capacity_type, v.nodepool) for n, v in nodes.items()} == {
        "gpu-od-1": (CapacityType.ON_DEMAND, "gpu-on-demand"),
        "gpu-od-2": (CapacityType.ON_DEMAND, "gpu-on-demand"),
        "gpu-spot-1": (CapacityType.SPOT, "gpu-spot"),
    }
    for node in nodes.values():
        assert node.instance_type == "p5.48xlarge"
        assert node.gpu_product == "NVIDIA-H100-80GB-HBM3"
        assert node.gpu_capacity == 8


def test_dump_gives_workloads_notebooks_and_owners(dump):
    snap = snapshot_from_kubectl_dump(dump, NOW)
    assert snap.workload_api_version == "kueue.x-k8s.io/v1beta2"
    wls = {w.name: w for w in snap.workloads}
    assert set(wls) == {
        "job-pretrain-1a2b3",
        "pod-chat-api-6f7d8b9c4-x2x9z-5e6f7",
        "job-finetune-spot-9f8e7",
        "job-eval-4d5e6",
    }
    pretrain = wls["job-pretrain-1a2b3"]
    assert (pretrain.queue_name, pretrain.cluster_queue, pretrain.admitted, pretrain.active) == (
        "training-queue",
        "gpu-cluster-queue",
        True,
        True,
    )
    assert pretrain.gpus == 2 and pretrain.flavors == ("h100-on-demand",)
    assert pretrain.owners == (OwnerRef("batch/v1", "Job", "pretrain", controller=True, uid="f0b81c1e-5336-5eaa-b39a-5753b01f7591"),)
    assert wls["job-finetune-spot-9f8e7"].flavors == ("h100-spot",)
    assert wls["pod-chat-api-6f7d8b9c4-x2x9z-5e6f7"].owners[0].kind == "Pod"
    pending = wls["job-eval-4d5e6"]
    assert (pending.admitted, pending.cluster_queue, pending.flavors, pending.gpus) == (False, None, (), 8)
    assert pending.created == datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)
    assert {n.name: n.stopped for n in snap.notebooks} == {
        "llm-explore": False,
        "cell-bursts": False,
        "cpu-scratch": False,
    }
    assert {(s.name, s.replicas) for s in snap.statefulsets} == {
        ("llm-explore", 1),
        ("cell-bursts", 1),
        ("cpu-scratch", 1),
    }
    assert snap.statefulsets[0].owners[0].kind == "Notebook"
    assert {(d.namespace, d.name) for d in snap.deployments} == {
        ("serving", "chat-api"),
        ("kube-system", "coredns"),
    }
    assert dict(next(d for d in snap.deployments if d.name == "chat-api").selector) == {"app": "chat-api"}


def test_dump_reads_v1beta1_workloads(dump):
    items = _items(dump)
    for item in items:
        if item["kind"] == "Workload":
            item["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    snap = snapshot_from_kubectl_dump(_as_list(items), NOW)
    assert snap.workload_api_version == "kueue.x-k8s.io/v1beta1"
    assert {w.api_version for w in snap.workloads} == {"kueue.x-k8s.io/v1beta1"}
    assert next(w for w in snap.workloads if w.name == "job-pretrain-1a2b3").flavors == ("h100-on-demand",)


def test_mig_slices_limits_only_and_deactivated(dump):
    items = _items(dump)
    pod = copy.deepcopy(next(i for i in items if i["metadata"]["name"] == "llm-explore-0"))
    pod["metadata"]["name"] = "mig-0"
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/mig-1g.10gb": "2"}}
    wl = next(i for i in items if i["metadata"]["name"] == "job-finetune-spot-9f8e7")
    wl["spec"]["active"] = False
    wl["status"]["conditions"].append({"type": "Finished", "status": "True", "reason": "Succeeded"})
    snap = snapshot_from_kubectl_dump(_as_list(items + [pod]), NOW)
    mig = next(p for p in snap.pods if p.name == "mig-0")
    assert (mig.gpus, mig.gpu_resource) == (2, "nvidia.com/mig-1g.10gb")
    finetune = next(w for w in snap.workloads if w.name == "job-finetune-spot-9f8e7")
    assert (finetune.active, finetune.finished) == (False, True)


@pytest.mark.parametrize(
    "labels, expected",
    [
        ({"karpenter.sh/capacity-type": "spot"}, CapacityType.SPOT),
        ({"karpenter.sh/capacity-type": "on-demand"}, CapacityType.ON_DEMAND),
        ({"karpenter.sh/capacity-type": "reserved"}, CapacityType.RESERVED),
        ({"eks.amazonaws.com/capacityType": "ON_DEMAND"}, CapacityType.ON_DEMAND),
        ({"eks.amazonaws.com/capacityType": "SPOT"}, CapacityType.SPOT),
        # EKS CreateNodegroup capacityType CAPACITY_BLOCK (EC2 Capacity Blocks for ML): paid up front
        ({"eks.amazonaws.com/capacityType": "CAPACITY_BLOCK"}, CapacityType.RESERVED),
        ({"cloud.google.com/gke-spot": "true"}, CapacityType.SPOT),
        ({"cloud.google.com/gke-preemptible": "true"}, CapacityType.SPOT),
        ({"kubernetes.azure.com/scalesetpriority": "spot"}, CapacityType.SPOT),
        ({"node.kubernetes.io/instance-type": "p5.48xlarge"}, CapacityType.UNKNOWN),
    ],
)
def test_capacity_type_from_cloud_labels(labels, expected):
    assert capacity_type(labels) is expected


@pytest.mark.parametrize(
    "data, problem",
    [
        (b"not json", "malformed kubectl dump"),
        (b"[]", "malformed kubectl dump"),
        (b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}', "missing required field `items`"),
        (b'{"items": [{"metadata": {"name": "x"}}]}', "no kind/apiVersion"),
        (
            b'{"items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n", '
            b'"creationTimestamp": "2026-11-19T08:00:00Z"}, "spec": {"containers": [{"resources": '
            b'{"requests": {"nvidia.com/gpu": "500m"}}}]}}]}',
            "not a whole number",
        ),
        (
            b'{"items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, '
            b'"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}]}',
            "creationTimestamp",
        ),
        (
            b'{"items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": "oops"}}]}',
            "Node (item 0)",
        ),
    ],
)
def test_malformed_dump_names_the_problem(data, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        snapshot_from_kubectl_dump(data, NOW)


# --- the live source --------------------------------------------------------------------------------


def test_live_snapshot_pages_and_matches_the_dump(dump):
    with FakeKubeApi.from_list_json(dump) as fake:
        snap = KubernetesSource(fake.api_client(), page_size=2).snapshot(NOW)
        requests = fake.requests
    assert snap == snapshot_from_kubectl_dump(dump, NOW)
    pod_lists = [r for r in requests if r.path == "/api/v1/pods"]
    assert len(pod_lists) == 4  # 6 pods not Succeeded/Failed in pages of 2, the last one short
    assert all(r.query["limit"] == "2" for r in pod_lists)
    assert "continue" not in pod_lists[0].query
    assert all(r.query.get("continue") for r in pod_lists[1:])
    assert len({r.query["continue"] for r in pod_lists[1:]}) == 3
    assert pod_lists[0].query["fieldSelector"] == "status.phase!=Succeeded,status.phase!=Failed"
    assert [r.path for r in requests if r.path.startswith("/apis/kueue")][:2] == [
        "/apis/kueue.x-k8s.io",
        "/apis/kueue.x-k8s.io/v1beta2/workloads",
    ]
    assert all(r.method == "GET" for r in requests)


def test_live_snapshot_uses_v1beta1_when_only_it_is_served(dump):
    with FakeKubeApi.from_list_json(dump, kueue_versions=("v1beta1",)) as fake:
        snap = KubernetesSource(fake.api_client()).snapshot(NOW)
        paths = [r.path for r in fake.requests]
    assert snap.workload_api_version == "kueue.x-k8s.io/v1beta1"
    assert len(snap.workloads) == 4 and {w.api_version for w in snap.workloads} == {"kueue.x-k8s.io/v1beta1"}
    assert "/apis/kueue.x-k8s.io/v1beta1/workloads" in paths
    assert not any("v1beta2" in p for p in paths)


def test_live_snapshot_without_kueue_or_kubeflow(dump):
    with FakeKubeApi.from_list_json(dump, kueue_versions=(), kubeflow=False) as fake:
        snap = KubernetesSource(fake.api_client()).snapshot(NOW)
        paths = [r.path for r in fake.requests]
    assert snap.workloads == () and snap.workload_api_version is None
    assert snap.notebooks == ()
    assert len(snap.pods) == 5
    assert not any(p.startswith("/apis/kueue.x-k8s.io/") for p in paths)


def test_live_snapshot_reads_namespace_labels(dump):
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "ml-research", "labels": {"team": "research"}},
    }
    with FakeKubeApi(_items(dump) + [namespace]) as fake:
        snap = KubernetesSource(fake.api_client()).snapshot(NOW)
    assert snap.namespace_labels == {"ml-research": {"team": "research"}}


@pytest.mark.parametrize(
    "path, resource", [("/api/v1/pods", "pods"), ("/apis/kubeflow.org/v1/notebooks", "notebooks")]
)
def test_api_errors_raise_cluster_read_error(dump, path, resource):
    with FakeKubeApi.from_list_json(dump) as fake:
        fake.fail(
            "GET",
            path,
            403,
            "Forbidden",
            f'{resource} is forbidden: User "system:serviceaccount:gpu:bot" cannot list',
        )
        with pytest.raises(ClusterReadError, match="forbidden") as info:
            KubernetesSource(fake.api_client()).snapshot(NOW)
    assert info.value.status == 403
    assert resource in info.value.resource


def test_unreachable_api_server_raises_cluster_read_error(dump):
    fake = FakeKubeApi.from_list_json(dump).start()
    client = fake.api_client()
    fake.stop()
    with pytest.raises(ClusterReadError) as info:
        KubernetesSource(client).snapshot(NOW)
    assert info.value.status == 0 and info.value.resource == "pods"


def test_load_kube_config_reads_a_kubeconfig_file(dump, tmp_path):
    from actions.sources.kube.reader import load_kube_config

    with FakeKubeApi.from_list_json(dump) as fake:
        kubeconfig = tmp_path / "config"
        kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "fake", "cluster": {"server": fake.url}}],
                    "users": [{"name": "bot", "user": {"token": "t0ken"}}],
                    "contexts": [
                        {"name": "other", "context": {"cluster": "nowhere", "user": "bot"}},
                        {"name": "fake", "context": {"cluster": "fake", "user": "bot"}},
                    ],
                    "current-context": "other",
                }
            )
        )
        client = load_kube_config(str(kubeconfig), "fake")
        assert len(KubernetesSource(client).snapshot(NOW).pods) == 5
        assert {r.authorization for r in fake.requests} == {"Bearer t0ken"}


STARTED = datetime(2026, 11, 20, 6, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "value, on_pod, until",
    # Karpenter's karpenter.sh/do-not-disrupt: "true", or on a pod a Go duration after the pod's
    # start at which the protection ends (karpenter.sh reference "Well-Known Annotations";
    # kubernetes-sigs/karpenter pkg/apis/v1 DoNotDisruptAnnotationKey). A node takes "true" only.
    [("true", True, FOREVER), ("true", False, FOREVER), ("30m", True, STARTED + timedelta(minutes=30)),
     ("1h30m", True, STARTED + timedelta(hours=1, minutes=30)), ("30m", False, None), ("false", True, None),
     ("", True, None), ("yes", True, None), ("30", True, None), (None, True, None)],
)
def test_do_not_disrupt_values(value, on_pod, until):
    assert protected_until(value, STARTED, on_pod=on_pod) == until
    # A pod not started yet: its clock has not begun.
    assert protected_until(value, None, on_pod=on_pod) == (None if until is None else FOREVER)
