"""The GPU pods' owners and Kueue's queue objects, decoded from JSON into model types. Pure.

An owner of any kind (a Job, JobSet, TrainJob, RayJob, RayCluster, PyTorchJob, MPIJob,
AppWrapper, LeaderWorkerSet, InferenceService, a leader Pod) is read as one small Struct: its
metadata and ``spec.replicas`` / ``spec.suspend``, which is all the owner walk and the actions
need; msgspec skips the rest. The kinds the walk may follow, and where each is served, are in
:data:`OWNER_KINDS`; the kinds read whole every sweep (the ones an action targets, whose pods
vanish when stopped) in :data:`LISTED_KINDS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from actions.kueue.quota import quantity
from actions.model.kube import KubeObject, controller_of
from actions.model.kueue import ClusterQueue, LocalQueue, ResourceFlavor
from actions.sources.kube.objects import is_gpu_resource, owner_refs
from actions.sources.kube.shared_strings import shared, shared_map
from actions.sources.kube.structs import ListMeta, ObjectMeta, decode


@dataclass(frozen=True)
class Served:
    """Where a kind is served: ``group`` (``""`` for core), ``plural``, and the version the bot
    reads it with when listing (the owner walk uses the ownerReference's own version)."""

    group: str
    plural: str
    version: str
    namespaced: bool = True


# Owners a GPU pod's controller chain passes through, read one by one (GET) as the walk meets
# them. Sources: kueue v0.19.2 pkg/controller/jobs/* (the integrations), JobSet v0.12.0, Trainer
# v2.3.0, training-operator v1.9.0, mpi-operator v0.8.0, KubeRay v1.7.0, AppWrapper v1.2.1.
OWNER_KINDS: dict[tuple[str, str], Served] = {
    ("", "Pod"): Served("", "pods", "v1"),
    ("batch", "Job"): Served("batch", "jobs", "v1"),
    ("jobset.x-k8s.io", "JobSet"): Served("jobset.x-k8s.io", "jobsets", "v1alpha2"),
    ("trainer.kubeflow.org", "TrainJob"): Served("trainer.kubeflow.org", "trainjobs", "v1alpha1"),
    ("ray.io", "RayJob"): Served("ray.io", "rayjobs", "v1"),
    ("ray.io", "RayService"): Served("ray.io", "rayservices", "v1"),
    ("kubeflow.org", "PyTorchJob"): Served("kubeflow.org", "pytorchjobs", "v1"),
    ("kubeflow.org", "TFJob"): Served("kubeflow.org", "tfjobs", "v1"),
    ("kubeflow.org", "PaddleJob"): Served("kubeflow.org", "paddlejobs", "v1"),
    ("kubeflow.org", "XGBoostJob"): Served("kubeflow.org", "xgboostjobs", "v1"),
    ("kubeflow.org", "JAXJob"): Served("kubeflow.org", "jaxjobs", "v1"),
    ("kubeflow.org", "MPIJob"): Served("kubeflow.org", "mpijobs", "v2beta1"),
    ("workload.codeflare.dev", "AppWrapper"): Served("workload.codeflare.dev", "appwrappers", "v1beta2"),
}

# Read whole every sweep: the kinds an action targets whose pods are gone once stopped, so the
# snapshot still shows them (for Restore and for settling an interrupted action).
LISTED_KINDS: dict[tuple[str, str], Served] = {
    ("ray.io", "RayCluster"): Served("ray.io", "rayclusters", "v1"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): Served("leaderworkerset.x-k8s.io", "leaderworkersets", "v1"),
    ("serving.kserve.io", "InferenceService"): Served("serving.kserve.io", "inferenceservices", "v1beta1"),
}

# Kueue's queue objects (kueue v0.19.2 apis/kueue/v1beta2 localqueue_types.go,
# clusterqueue_types.go, resourceflavor_types.go); read with the Workloads' version.
QUEUE_PLURALS = {"LocalQueue": "localqueues", "ClusterQueue": "clusterqueues", "ResourceFlavor": "resourceflavors"}


class _Spec(msgspec.Struct, rename="camel"):
    replicas: int | None = None
    suspend: bool | None = None
    backoff_limit: int | None = None  # batch/v1 Job


class Owner(msgspec.Struct, rename="camel"):
    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _Spec = msgspec.field(default_factory=_Spec)


class _OwnerPage(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Owner] | None = None


class _LocalQueueSpec(msgspec.Struct, rename="camel"):
    cluster_queue: str = ""
    stop_policy: str = "None"  # kueue apis/kueue/v1beta1 localqueue_types.go: +kubebuilder:default="None"


class K8sLocalQueue(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _LocalQueueSpec = msgspec.field(default_factory=_LocalQueueSpec)


class _ResourceQuota(msgspec.Struct, rename="camel"):
    name: str = ""
    nominal_quota: Any = None  # a Kubernetes quantity: 8 or "8"


class _FlavorQuotas(msgspec.Struct):
    name: str = ""
    resources: list[_ResourceQuota] = []


class _ResourceGroup(msgspec.Struct, rename="camel"):
    covered_resources: list[str] = []
    flavors: list[_FlavorQuotas] = []


class _ClusterQueueSpec(msgspec.Struct, rename="camel"):
    cohort: str = ""  # v1beta1
    cohort_name: str = ""  # v1beta2
    resource_groups: list[_ResourceGroup] = []


class K8sClusterQueue(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _ClusterQueueSpec = msgspec.field(default_factory=_ClusterQueueSpec)


class _FlavorSpec(msgspec.Struct, rename="camel"):
    node_labels: dict[str, str] = {}


class K8sResourceFlavor(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _FlavorSpec = msgspec.field(default_factory=_FlavorSpec)


class _LocalQueuePage(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[K8sLocalQueue] | None = None


class _ClusterQueuePage(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[K8sClusterQueue] | None = None


class _ResourceFlavorPage(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[K8sResourceFlavor] | None = None


OWNER = msgspec.json.Decoder(Owner)
_OWNER_PAGE = msgspec.json.Decoder(_OwnerPage)
LOCAL_QUEUE = msgspec.json.Decoder(K8sLocalQueue)
CLUSTER_QUEUE = msgspec.json.Decoder(K8sClusterQueue)
RESOURCE_FLAVOR = msgspec.json.Decoder(K8sResourceFlavor)
_PAGES = {
    "LocalQueue": msgspec.json.Decoder(_LocalQueuePage),
    "ClusterQueue": msgspec.json.Decoder(_ClusterQueuePage),
    "ResourceFlavor": msgspec.json.Decoder(_ResourceFlavorPage),
}


def kube_object(obj: Owner, api_version: str = "", kind: str = "") -> KubeObject:
    """An owner as a model ``KubeObject``; ``api_version``/``kind`` fill in what list items of
    built-in kinds leave out."""
    meta = obj.metadata
    return KubeObject(
        api_version=shared(obj.api_version or api_version),
        kind=shared(obj.kind or kind),
        namespace=shared(meta.namespace),
        name=meta.name,
        uid=meta.uid,
        owners=owner_refs(meta),
        labels=shared_map(meta.labels),
        annotations=shared_map(meta.annotations),
        replicas=obj.spec.replicas,
        suspend=obj.spec.suspend,
        backoff_limit=obj.spec.backoff_limit,
    )


def decode_owner(data: bytes, api_version: str, kind: str) -> KubeObject:
    """One object (a GET's body) as a ``KubeObject``. Raises ValueError when malformed."""
    return kube_object(decode(OWNER, data, kind), api_version, kind)


def decode_owner_page(data: bytes, api_version: str, kind: str) -> tuple[list[KubeObject], str]:
    """One page of a list of ``kind``. Returns ``(objects, continue_token)``; raises ValueError."""
    page = decode(_OWNER_PAGE, data, f"{kind}List")
    return [kube_object(o, api_version, kind) for o in page.items or ()], page.metadata.continue_


def local_queue(obj: K8sLocalQueue) -> LocalQueue:
    return LocalQueue(obj.metadata.namespace, obj.metadata.name, obj.spec.cluster_queue,
                      obj.spec.stop_policy or "None", dict(obj.metadata.annotations))


def cluster_queue(obj: K8sClusterQueue) -> ClusterQueue:
    """A ClusterQueue with the flavors of the resource groups that cover a GPU resource and its
    GPU ``nominalQuota`` summed over them (None when it sets none)."""
    flavors: dict[str, None] = {}
    quota: float | None = None
    for group in obj.spec.resource_groups:
        if any(is_gpu_resource(r) for r in group.covered_resources):
            for f in group.flavors:
                flavors[f.name] = None
                for r in f.resources:
                    if is_gpu_resource(r.name) and r.nominal_quota is not None:
                        try:
                            quota = (quota or 0.0) + quantity(r.nominal_quota)
                        except ValueError:
                            continue  # a quantity this reader cannot read: the quota stays unknown for it
    return ClusterQueue(obj.metadata.name, obj.spec.cohort_name or obj.spec.cohort or None, tuple(flavors), quota)


def resource_flavor(obj: K8sResourceFlavor) -> ResourceFlavor:
    return ResourceFlavor(obj.metadata.name, dict(obj.spec.node_labels))


_CONVERT = {"LocalQueue": local_queue, "ClusterQueue": cluster_queue, "ResourceFlavor": resource_flavor}


def decode_queue_page(data: bytes, kind: str) -> tuple[list, str]:
    """One page of LocalQueues, ClusterQueues or ResourceFlavors (``kind``). Returns
    ``(objects, continue_token)``; raises ValueError."""
    page = decode(_PAGES[kind], data, f"{kind}List")
    return [_CONVERT[kind](o) for o in page.items or ()], page.metadata.continue_


def owners_of_gpu_pods(snapshot_pods, objects, known) -> list[KubeObject]:
    """Of ``objects`` (owners read from a dump), the kinds of :data:`LISTED_KINDS` and those the
    GPU pods' controller chains reach, the same set the live source reads; sorted as
    :func:`sort_objects`. ``known`` maps (namespace, kind, name) -> owner references of the
    objects the snapshot holds otherwise (StatefulSets, Deployments, Notebooks, GPU pods)."""
    by_key = {(o.namespace, o.kind, o.name): o for o in objects}
    keep = {k: o for k, o in by_key.items() if (o.group, o.kind) in LISTED_KINDS}
    links = {**known, **{k: o.owners for k, o in by_key.items()}}
    for pod in snapshot_pods:
        owners = pod.owners
        for _ in range(8):
            ref = controller_of(owners)
            if ref is None:
                break
            key = (pod.namespace, ref.kind, ref.name)
            if key in by_key and (by_key[key].group, ref.kind) in OWNER_KINDS:
                keep[key] = by_key[key]
            if key not in links:
                break
            owners = links[key]
    return sort_objects(keep.values())


def sort_objects(objects) -> list[KubeObject]:
    """Owners in one order whatever read them: by kind, namespace and name."""
    return sorted(objects, key=lambda o: (o.kind, o.namespace, o.name))
