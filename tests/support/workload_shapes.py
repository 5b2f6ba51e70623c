"""GPU workloads in the exact shapes their controllers create them, for the fake API server.

Every shape follows the upstream source of each field, read at these releases:
Kueue v0.19.2 (Workload names, owner references, ``kueue.x-k8s.io/*`` labels and annotations),
JobSet v0.12.0, Kubeflow Trainer v2.3.0, training-operator v1.9.0, mpi-operator v0.8.0, KubeRay
v1.7.0, LWS v0.10.0, AppWrapper v1.2.1, KServe v0.20.0 and kubespawner 7.1.0. Each builder
returns ``(objects, gpu_pod_names)``; UIDs are fixed so Workload names are reproducible.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timedelta, timezone

from actions.model.telemetry import GPU_UTIL, GpuTelemetry, TelemetrySnapshot

NS = "ml"
STARTED = "2026-11-20T06:00:00Z"
CREATED = datetime(2026, 11, 20, 6, 0, tzinfo=timezone.utc)
NODE = "gpu-od-1"
H100 = "NVIDIA-H100-80GB-HBM3"


def uid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def workload_name(owner_kind: str, owner_group: str, owner_name: str, owner_uid: str) -> str:
    """Kueue's ``GetWorkloadNameForOwnerWithGVK`` (kueue v0.19.2
    pkg/controller/jobframework/workload_names.go): ``<lower(kind)>-<name>`` cut to 247
    characters, ``-``, and the first 5 hex digits of sha1(kind, group, name, uid joined by
    newlines). The API version does not enter the hash."""
    prefix = f"{owner_kind.lower()}-{owner_name}"[: 253 - 1 - 5]
    digest = hashlib.sha1("\n".join((owner_kind, owner_group, owner_name, owner_uid)).encode()).hexdigest()
    return f"{prefix}-{digest[:5]}"


def ref(api_version: str, kind: str, name: str, *, controller: bool = True) -> dict:
    out = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid(f"{kind}/{name}")}
    if controller:
        out.update(controller=True, blockOwnerDeletion=True)
    return out


def node() -> dict:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "labels": {
            "node.kubernetes.io/instance-type": "p5.48xlarge", "karpenter.sh/capacity-type": "on-demand",
            "nvidia.com/gpu.product": H100,
        }},
        "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}},
    }


def namespace(annotations: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "annotations": annotations or {}}}


def obj(api_version: str, kind: str, name: str, *, owner: dict | None = None, labels=None, annotations=None,
        spec=None, namespaced: bool = True) -> dict:
    meta = {"name": name, "uid": uid(f"{kind}/{name}"), "creationTimestamp": STARTED,
            "labels": labels or {}, "annotations": annotations or {}}
    if namespaced:
        meta["namespace"] = NS
    if owner:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec or {}}


def pod(name: str, owner: dict | None, *, labels=None, annotations=None, gpus: int = 1) -> dict:
    p = obj("v1", "Pod", name, owner=owner, labels=labels, annotations=annotations)
    p["spec"] = {"nodeName": NODE, "containers": [
        {"name": "main", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"nvidia.com/gpu": str(gpus)}}}
    ]}
    p["status"] = {"phase": "Running", "startTime": STARTED}
    return p


def workload(name: str, owner: dict, *, gpus: int = 1, count: int = 1, annotations=None, queue: str = "team-a") -> dict:
    """An admitted Workload (kueue.x-k8s.io/v1beta2) with the ``job-uid`` label Kueue sets."""
    w = obj("kueue.x-k8s.io/v1beta2", "Workload", name, owner=owner,
            labels={"kueue.x-k8s.io/job-uid": owner["uid"]}, annotations=annotations)
    w["spec"] = {"queueName": queue, "active": True, "podSets": [{"name": "main", "count": count, "template": {"spec": {
        "containers": [{"name": "main", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]}}}]}
    w["status"] = {
        "admission": {"clusterQueue": "gpu-cq", "podSetAssignments": [
            {"name": "main", "count": count, "flavors": {"nvidia.com/gpu": "h100"}, "resourceUsage": {"nvidia.com/gpu": str(gpus * count)}}]},
        "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}],
    }
    return w


def _kueue_wl(kind: str, group: str, name: str) -> str:
    return workload_name(kind, group, name, uid(f"{kind}/{name}"))


# --- the kinds ----------------------------------------------------------------------------------


def batch_job() -> tuple[list[dict], list[str]]:
    """Pod -> Job; Workload owned by the Job. No ``kueue.x-k8s.io/workload`` annotation (a Kueue
    older than 0.14, or TopologyAwareScheduling off): found through the owner walk."""
    job = obj("batch/v1", "Job", "eval", labels={"kueue.x-k8s.io/queue-name": "team-a"})
    wl = workload(_kueue_wl("Job", "batch", "eval"), ref("batch/v1", "Job", "eval"))
    p = pod("eval-x7k2p", ref("batch/v1", "Job", "eval"), labels={
        "batch.kubernetes.io/job-name": "eval", "kueue.x-k8s.io/podset": "main", "kueue.x-k8s.io/queue-name": "team-a"})
    return [job, wl, p], ["eval-x7k2p"]


def jobset() -> tuple[list[dict], list[str]]:
    """Pod -> Job ``pretrain-workers-0`` -> JobSet ``pretrain``; the Workload is the JobSet's
    (JobSet v0.12.0 jobset_controller.go; kueue jobset_controller.go)."""
    js = obj("jobset.x-k8s.io/v1alpha2", "JobSet", "pretrain", labels={"kueue.x-k8s.io/queue-name": "team-a"})
    job = obj("batch/v1", "Job", "pretrain-workers-0", owner=ref("jobset.x-k8s.io/v1alpha2", "JobSet", "pretrain"),
              labels={"jobset.sigs.k8s.io/jobset-name": "pretrain", "kueue.x-k8s.io/queue-name": "team-a"})
    wl = workload(_kueue_wl("JobSet", "jobset.x-k8s.io", "pretrain"), ref("jobset.x-k8s.io/v1alpha2", "JobSet", "pretrain"),
                  gpus=1, count=2)
    labels = {"batch.kubernetes.io/job-name": "pretrain-workers-0", "jobset.sigs.k8s.io/jobset-name": "pretrain",
              "jobset.sigs.k8s.io/replicatedjob-name": "workers", "jobset.sigs.k8s.io/job-index": "0",
              "kueue.x-k8s.io/podset": "workers"}
    pods = [pod(f"pretrain-workers-0-{i}-abcd{i}", ref("batch/v1", "Job", "pretrain-workers-0"), labels=labels) for i in range(2)]
    return [js, job, wl, *pods], [p["metadata"]["name"] for p in pods]


def trainjob() -> tuple[list[dict], list[str]]:
    """Pod -> Job -> JobSet ``llama-sft`` -> TrainJob ``llama-sft``; the Workload is the
    TrainJob's (Trainer v2.3.0 plugins/jobset/jobset.go; kueue trainjob_controller.go)."""
    tj = obj("trainer.kubeflow.org/v1alpha1", "TrainJob", "llama-sft", labels={"kueue.x-k8s.io/queue-name": "team-a"},
             spec={"suspend": False})
    js = obj("jobset.x-k8s.io/v1alpha2", "JobSet", "llama-sft", owner=ref("trainer.kubeflow.org/v1alpha1", "TrainJob", "llama-sft"))
    job = obj("batch/v1", "Job", "llama-sft-node-0", owner=ref("jobset.x-k8s.io/v1alpha2", "JobSet", "llama-sft"))
    wl = workload(_kueue_wl("TrainJob", "trainer.kubeflow.org", "llama-sft"),
                  ref("trainer.kubeflow.org/v1alpha1", "TrainJob", "llama-sft"))
    p = pod("llama-sft-node-0-0-q8wzt", ref("batch/v1", "Job", "llama-sft-node-0"), labels={
        "jobset.sigs.k8s.io/jobset-name": "llama-sft", "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "batch.kubernetes.io/job-name": "llama-sft-node-0", "kueue.x-k8s.io/podset": "node"})
    return [tj, js, job, wl, p], ["llama-sft-node-0-0-q8wzt"]


def rayjob() -> tuple[list[dict], list[str]]:
    """Pod -> RayCluster ``llm-finetune-x7k2p`` -> RayJob ``llm-finetune``; the Workload is the
    RayJob's and the pods carry ``kueue.x-k8s.io/workload`` (TAS on, the default) (KubeRay v1.7.0
    rayjob_controller.go; kueue rayjob_controller.go)."""
    rj = obj("ray.io/v1", "RayJob", "llm-finetune", labels={"kueue.x-k8s.io/queue-name": "team-a"},
             spec={"shutdownAfterJobFinishes": True})
    rc = obj("ray.io/v1", "RayCluster", "llm-finetune-x7k2p", owner=ref("ray.io/v1", "RayJob", "llm-finetune"),
             labels={"ray.io/originated-from-cr-name": "llm-finetune", "ray.io/originated-from-crd": "RayJob"})
    name = _kueue_wl("RayJob", "ray.io", "llm-finetune")
    wl = workload(name, ref("ray.io/v1", "RayJob", "llm-finetune"), count=2)
    pods = [
        pod(f"llm-finetune-x7k2p-gpu-workers-worker-{s}", ref("ray.io/v1", "RayCluster", "llm-finetune-x7k2p"),
            labels={"ray.io/cluster": "llm-finetune-x7k2p", "ray.io/node-type": "worker", "ray.io/group": "gpu-workers",
                    "ray.io/is-ray-node": "yes", "kueue.x-k8s.io/podset": "gpu-workers"},
            annotations={"kueue.x-k8s.io/workload": name})
        for s in ("4xkzq", "9pt2m")
    ]
    return [rj, rc, wl, *pods], [p["metadata"]["name"] for p in pods]


def pytorchjob() -> tuple[list[dict], list[str]]:
    """Pod -> PyTorchJob directly (training-operator v1.9.0 common/job_controller.go)."""
    pj = obj("kubeflow.org/v1", "PyTorchJob", "bert", labels={"kueue.x-k8s.io/queue-name": "team-a"})
    wl = workload(_kueue_wl("PyTorchJob", "kubeflow.org", "bert"), ref("kubeflow.org/v1", "PyTorchJob", "bert"))
    p = pod("bert-master-0", ref("kubeflow.org/v1", "PyTorchJob", "bert"), labels={
        "training.kubeflow.org/job-name": "bert", "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": "master", "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/job-role": "master"})
    return [pj, wl, p], ["bert-master-0"]


def mpijob() -> tuple[list[dict], list[str]]:
    """Worker Pod -> MPIJob (mpi-operator v0.8.0 mpi_job_controller.go newWorker)."""
    mj = obj("kubeflow.org/v2beta1", "MPIJob", "allreduce", labels={"kueue.x-k8s.io/queue-name": "team-a"})
    wl = workload(_kueue_wl("MPIJob", "kubeflow.org", "allreduce"), ref("kubeflow.org/v2beta1", "MPIJob", "allreduce"))
    p = pod("allreduce-worker-0", ref("kubeflow.org/v2beta1", "MPIJob", "allreduce"), labels={
        "training.kubeflow.org/job-name": "allreduce", "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/job-role": "worker", "training.kubeflow.org/replica-index": "0"})
    return [mj, wl, p], ["allreduce-worker-0"]


def appwrapper() -> tuple[list[dict], list[str]]:
    """Pod -> Job -> AppWrapper (AppWrapper v1.2.1 resource_management.go)."""
    aw = obj("workload.codeflare.dev/v1beta2", "AppWrapper", "sweep-7", labels={"kueue.x-k8s.io/queue-name": "team-a"})
    job = obj("batch/v1", "Job", "sweep-7-job", owner=ref("workload.codeflare.dev/v1beta2", "AppWrapper", "sweep-7"),
              labels={"workload.codeflare.dev/appwrapper": "sweep-7"})
    wl = workload(_kueue_wl("AppWrapper", "workload.codeflare.dev", "sweep-7"),
                  ref("workload.codeflare.dev/v1beta2", "AppWrapper", "sweep-7"))
    p = pod("sweep-7-job-n4b2c", ref("batch/v1", "Job", "sweep-7-job"), labels={"workload.codeflare.dev/appwrapper": "sweep-7"})
    return [aw, job, wl, p], ["sweep-7-job-n4b2c"]


def leaderworkerset() -> tuple[list[dict], list[str]]:
    """LWS ``vllm`` with one group of 2 under Kueue: leader Pod ``vllm-0`` -> StatefulSet ``vllm``
    -> LWS; worker Pod ``vllm-0-1`` -> StatefulSet ``vllm-0`` -> leader Pod. One Workload per
    group, owned by the LWS as a non-controller owner; the pods carry its name in
    ``kueue.x-k8s.io/pod-group-name`` (LWS v0.10.0; kueue leaderworkerset_reconciler.go)."""
    lws = obj("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "vllm", labels={"kueue.x-k8s.io/queue-name": "team-a"},
              spec={"replicas": 1, "leaderWorkerTemplate": {"size": 2}})
    leader_sts = obj("apps/v1", "StatefulSet", "vllm", owner=ref("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "vllm"),
                     spec={"replicas": 1, "selector": {"matchLabels": {"leaderworkerset.sigs.k8s.io/name": "vllm"}}})
    worker_sts = obj("apps/v1", "StatefulSet", "vllm-0", owner=ref("v1", "Pod", "vllm-0"),
                     spec={"replicas": 1, "selector": {"matchLabels": {"leaderworkerset.sigs.k8s.io/name": "vllm"}}})
    name = workload_name("LeaderWorkerSet", "leaderworkerset.x-k8s.io", "vllm-0", uid("LeaderWorkerSet/vllm"))
    wl = workload(name, ref("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "vllm", controller=False), count=2,
                  annotations={"kueue.x-k8s.io/job-owner-gvk": "leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet",
                               "kueue.x-k8s.io/job-owner-name": "vllm", "kueue.x-k8s.io/component-workload-index": "0"})
    common = {"leaderworkerset.sigs.k8s.io/name": "vllm", "leaderworkerset.sigs.k8s.io/group-index": "0",
              "kueue.x-k8s.io/managed": "true", "kueue.x-k8s.io/queue-name": "team-a"}
    group = {"leaderworkerset.sigs.k8s.io/size": "2", "kueue.x-k8s.io/pod-group-name": name,
             "kueue.x-k8s.io/prebuilt-workload-name": name, "kueue.x-k8s.io/pod-group-total-count": "2"}
    leader = pod("vllm-0", ref("apps/v1", "StatefulSet", "vllm"),
                 labels={**common, "leaderworkerset.sigs.k8s.io/worker-index": "0", "kueue.x-k8s.io/podset": "leader"},
                 annotations={**group, "kueue.x-k8s.io/role-hash": "leader"})
    worker = pod("vllm-0-1", ref("apps/v1", "StatefulSet", "vllm-0"),
                 labels={**common, "leaderworkerset.sigs.k8s.io/worker-index": "1", "kueue.x-k8s.io/podset": "worker"},
                 annotations={**group, "leaderworkerset.sigs.k8s.io/leader-name": "vllm-0", "kueue.x-k8s.io/role-hash": "worker"})
    return [lws, leader_sts, worker_sts, wl, leader, worker], ["vllm-0", "vllm-0-1"]


def kueue_deployment() -> tuple[list[dict], list[str]]:
    """A Deployment under Kueue's pod integration: each pod is its own Workload ``pod-<pod>-<h>``
    owned by the Pod; the pod carries ``kueue.x-k8s.io/managed`` and the queue label (kueue
    deployment_webhook.go; docs tasks/run/deployment.md)."""
    dep = obj("apps/v1", "Deployment", "embed", labels={"kueue.x-k8s.io/queue-name": "team-a"},
              spec={"replicas": 2, "selector": {"matchLabels": {"app": "embed"}}})
    pods, wls = [], []
    for suffix in ("4xkzq", "9pt2m"):
        name = f"embed-6c9d7f8b5-{suffix}"
        wl_name = workload_name("Pod", "", name, uid(f"Pod/{name}"))
        pods.append(pod(name, ref("apps/v1", "ReplicaSet", "embed-6c9d7f8b5"), labels={
            "app": "embed", "pod-template-hash": "6c9d7f8b5", "kueue.x-k8s.io/managed": "true",
            "kueue.x-k8s.io/queue-name": "team-a", "kueue.x-k8s.io/podset": "main"},
            annotations={"kueue.x-k8s.io/workload": wl_name}))
        wls.append(workload(wl_name, ref("v1", "Pod", name)))
    return [dep, *wls, *pods], [p["metadata"]["name"] for p in pods]


def kueue_statefulset() -> tuple[list[dict], list[str]]:
    """A StatefulSet under Kueue: one Workload for the whole set (a pod group) owned by the
    StatefulSet as a non-controller owner (kueue statefulset_reconciler.go,
    statefulset_pod_reconciler.go)."""
    sts = obj("apps/v1", "StatefulSet", "vector-db", labels={"kueue.x-k8s.io/queue-name": "team-a"},
              spec={"replicas": 2, "selector": {"matchLabels": {"app": "vector-db"}}})
    name = _kueue_wl("StatefulSet", "apps", "vector-db")
    wl = workload(name, ref("apps/v1", "StatefulSet", "vector-db", controller=False), count=2)
    pods = [pod(f"vector-db-{i}", ref("apps/v1", "StatefulSet", "vector-db"), labels={
        "app": "vector-db", "kueue.x-k8s.io/managed": "true", "kueue.x-k8s.io/queue-name": "team-a"},
        annotations={"kueue.x-k8s.io/pod-group-name": name, "kueue.x-k8s.io/pod-group-total-count": "2",
                     "kueue.x-k8s.io/pod-group-serving": "true", "kueue.x-k8s.io/role-hash": "main"}) for i in range(2)]
    return [sts, wl, *pods], [p["metadata"]["name"] for p in pods]


def raycluster() -> tuple[list[dict], list[str]]:
    """A RayCluster of its own, no Kueue: Pod -> RayCluster (KubeRay v1.7.0 raycluster_controller.go)."""
    rc = obj("ray.io/v1", "RayCluster", "interactive", spec={"rayVersion": "2.40.0"})
    p = pod("interactive-gpu-group-worker-8wl2v", ref("ray.io/v1", "RayCluster", "interactive"), labels={
        "ray.io/cluster": "interactive", "ray.io/node-type": "worker", "ray.io/group": "gpu-group", "ray.io/is-ray-node": "yes"})
    return [rc, p], ["interactive-gpu-group-worker-8wl2v"]


def inferenceservice() -> tuple[list[dict], list[str]]:
    """KServe Standard mode: Pod -> ReplicaSet -> Deployment ``llama-predictor`` ->
    InferenceService ``llama`` (KServe v0.20.0 deployment_reconciler.go, predictor.go)."""
    isvc = obj("serving.kserve.io/v1beta1", "InferenceService", "llama",
               annotations={"serving.kserve.io/deploymentMode": "Standard"})
    dep = obj("apps/v1", "Deployment", "llama-predictor", owner=ref("serving.kserve.io/v1beta1", "InferenceService", "llama"),
              spec={"replicas": 1, "selector": {"matchLabels": {"app": "isvc.llama-predictor"}}})
    p = pod("llama-predictor-6c9d7f8b5-4xkzq", ref("apps/v1", "ReplicaSet", "llama-predictor-6c9d7f8b5"), labels={
        "serving.kserve.io/inferenceservice": "llama", "component": "predictor", "app": "isvc.llama-predictor",
        "pod-template-hash": "6c9d7f8b5"})
    return [isvc, dep, p], ["llama-predictor-6c9d7f8b5-4xkzq"]


def pod_group() -> tuple[list[dict], list[str]]:
    """Kueue plain pod group: every pod is a non-controller owner of the Workload named by
    ``kueue.x-k8s.io/pod-group-name`` (kueue pod_controller.go ConstructComposableWorkload)."""
    names = ["sim-0", "sim-1"]
    wl = workload("sim", ref("v1", "Pod", names[0], controller=False), count=2,
                  annotations={"kueue.x-k8s.io/is-group-workload": "true"})
    wl["metadata"]["ownerReferences"].append(ref("v1", "Pod", names[1], controller=False))
    pods = [pod(n, None, labels={"kueue.x-k8s.io/managed": "true", "kueue.x-k8s.io/queue-name": "team-a"},
                annotations={"kueue.x-k8s.io/pod-group-name": "sim", "kueue.x-k8s.io/pod-group-total-count": "2"}) for n in names]
    return [wl, *pods], names


def jupyterhub_server(user: str = "alice", server: str = "gpu") -> tuple[list[dict], list[str]]:
    """A kubespawner 7.1.0 single-user pod: no owner; the raw user name in the annotation."""
    name = f"jupyter-{user}--{server}" if server else f"jupyter-{user}"
    labels = {"hub.jupyter.org/username": user, "hub.jupyter.org/servername": server,
              "component": "singleuser-server", "app.kubernetes.io/component": "singleuser-server",
              "app": "jupyterhub", "heritage": "jupyterhub", "app.kubernetes.io/name": "jupyterhub",
              "app.kubernetes.io/managed-by": "kubespawner"}
    annotations = {"hub.jupyter.org/username": user, "hub.jupyter.org/kubespawner-version": "7.1.0"}
    if server:
        annotations["hub.jupyter.org/servername"] = server
    return [pod(name, None, labels=labels, annotations=annotations)], [name]


def kubeflow_job(kind: str, name: str) -> tuple[list[dict], list[str]]:
    """Pod -> one of training-operator v1.9.0's kubeflow.org/v1 jobs (TFJob, PaddleJob,
    XGBoostJob, JAXJob, PyTorchJob), as :func:`pytorchjob`."""
    job = obj("kubeflow.org/v1", kind, name, labels={"kueue.x-k8s.io/queue-name": "team-a"})
    wl = workload(_kueue_wl(kind, "kubeflow.org", name), ref("kubeflow.org/v1", kind, name))
    p = pod(f"{name}-worker-0", ref("kubeflow.org/v1", kind, name), labels={
        "training.kubeflow.org/job-name": name, "training.kubeflow.org/replica-type": "worker"})
    return [job, wl, p], [f"{name}-worker-0"]


def rayservice() -> tuple[list[dict], list[str]]:
    """Pod -> RayCluster -> RayService (KubeRay v1.7.0 rayservice_controller.go), no Kueue."""
    rs = obj("ray.io/v1", "RayService", "chat")
    rc = obj("ray.io/v1", "RayCluster", "chat-raycluster-x2x9z", owner=ref("ray.io/v1", "RayService", "chat"))
    p = pod("chat-raycluster-x2x9z-gpu-worker-k2m4n", ref("ray.io/v1", "RayCluster", "chat-raycluster-x2x9z"),
            labels={"ray.io/cluster": "chat-raycluster-x2x9z", "ray.io/node-type": "worker"})
    return [rs, rc, p], [p["metadata"]["name"]]


def every_kind() -> list[dict]:
    """One of each kind above in one namespace, an LWS whose leader holds no GPU (so the owner
    walk reads it), and Kueue's queue objects: what the RBAC replay of tests/deploy/test_deploy.py reads."""
    out = [node(), namespace()]
    for build in (batch_job, jobset, trainjob, rayjob, pytorchjob, mpijob, appwrapper, leaderworkerset,
                  kueue_deployment, kueue_statefulset, raycluster, inferenceservice, pod_group, rayservice):
        out += build()[0]
    for kind in ("TFJob", "PaddleJob", "XGBoostJob", "JAXJob"):
        out += kubeflow_job(kind, kind.lower())[0]
    cpu_leader = [o for o in leaderworkerset()[0] if o["kind"] == "Pod" and o["metadata"]["name"] == "vllm-0"][0]
    cpu_leader["spec"]["containers"][0]["resources"] = {}
    out = [o for o in out if not (o["kind"] == "Pod" and o["metadata"]["name"] == "vllm-0")] + [cpu_leader]
    out += [
        obj("kueue.x-k8s.io/v1beta2", "LocalQueue", "team-a", spec={"clusterQueue": "gpu-cq"}),
        obj("kueue.x-k8s.io/v1beta2", "ClusterQueue", "gpu-cq", namespaced=False, spec={"resourceGroups": []}),
        obj("kueue.x-k8s.io/v1beta2", "ResourceFlavor", "h100", namespaced=False, spec={"nodeLabels": {}}),
    ]
    return out


# --- their GPUs' telemetry -------------------------------------------------------------------------

# A sweep six hours after the workloads were created.
NOW = CREATED + timedelta(hours=6)
MODEL = "NVIDIA H100 80GB HBM3"


def telemetry(pods: list[str], *, at=NOW, busy: bool = False, gpus: int = 1) -> TelemetrySnapshot:
    """A window of DCGM telemetry at ``at`` for ``gpus`` GPUs of each pod in namespace NS: busy
    (85% util, 420 W) or idle (0%, 120 W), sampled since CREATED."""
    return TelemetrySnapshot(at=at, window_seconds=3600, gpus=tuple(
        GpuTelemetry(NS, p, str(i), MODEL, GPU_UTIL, 85.0 if busy else 0.0, 420.0 if busy else 120.0, 1.0,
                     node=NODE, first_sample=CREATED)
        for p in pods for i in range(gpus)
    ))
