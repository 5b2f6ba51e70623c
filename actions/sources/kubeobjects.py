"""Kubernetes JSON, decoded straight into the bot's model types.

The API server's objects are large (a realistic GPU pod is about 5 KB of JSON) and the bot needs a
handful of fields, so the Structs below name only those fields and msgspec skips the rest while
decoding. Decoding a list page this way is some fifty times faster and uses a twentieth of the
memory of the ``kubernetes`` client's models (measured: shared/DESIGN.md).

Everything here is pure: bytes in, ``actions.model`` objects out. Malformed input raises
``ValueError`` naming what was being decoded and where msgspec found the problem.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Iterable, Mapping

import msgspec

from actions.model import (
    GPU_RESOURCE,
    MIG_RESOURCE_PREFIX,
    CapacityType,
    ClusterSnapshot,
    GpuPod,
    Node,
    Notebook,
    OwnerRef,
    ScalableOwner,
    Workload,
)

KUEUE_GROUP = "kueue.x-k8s.io"
KUBEFLOW_GROUP = "kubeflow.org"
NOTEBOOK_API_VERSION = "kubeflow.org/v1"

# Pods in these phases hold no GPU any more (the kubelet released their devices).
_FINISHED_PHASES = frozenset({"Succeeded", "Failed"})

# Node labels naming the node's pool, in the order the bot trusts them.
_NODEPOOL_LABELS = (
    "karpenter.sh/nodepool",
    "eks.amazonaws.com/nodegroup",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
)
_INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")


# --- the fields the bot reads -----------------------------------------------------------------------

Quantity = str | int | float
# RFC 3339 with a zone, as the API server writes it; a naive time would be ambiguous.
Time = Annotated[datetime, msgspec.Meta(tz=True)]


class OwnerReference(msgspec.Struct, rename="camel"):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    controller: bool | None = None


class ObjectMeta(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    creation_timestamp: Time | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []


class ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    # "continue" is a Python keyword, hence the explicit name.
    continue_: str = msgspec.field(default="", name="continue")


class ResourceRequirements(msgspec.Struct):
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}


class Container(msgspec.Struct):
    name: str = ""
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)


class PodSpec(msgspec.Struct, rename="camel"):
    containers: list[Container] = []
    node_name: str | None = None


class PodStatus(msgspec.Struct, rename="camel"):
    phase: str = "Pending"
    start_time: Time | None = None


class Pod(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class NodeStatus(msgspec.Struct):
    capacity: dict[str, Quantity] = {}
    allocatable: dict[str, Quantity] = {}


class K8sNode(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class LabelSelector(msgspec.Struct, rename="camel"):
    match_labels: dict[str, str] = {}


class ScalableSpec(msgspec.Struct):
    # Both StatefulSet and Deployment default spec.replicas to 1 when it is omitted.
    replicas: int | None = 1
    selector: LabelSelector = msgspec.field(default_factory=LabelSelector)


class Scalable(msgspec.Struct):
    """A StatefulSet or a Deployment: the fields of the two that the bot reads are the same."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ScalableSpec = msgspec.field(default_factory=ScalableSpec)


class K8sNotebook(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class PodTemplateSpec(msgspec.Struct):
    spec: PodSpec = msgspec.field(default_factory=PodSpec)


class PodSet(msgspec.Struct):
    """``spec.podSets[]``: identical in v1beta1 and v1beta2 for the fields read here."""

    name: str = "main"
    count: int = 1
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)


class WorkloadSpec(msgspec.Struct, rename="camel"):
    queue_name: str = ""
    # Kueue defaults spec.active to true; null means the default.
    active: bool | None = True
    pod_sets: list[PodSet] = []


class PodSetAssignment(msgspec.Struct):
    name: str = "main"
    # resource name -> ResourceFlavor name (v1beta1 and v1beta2 alike)
    flavors: dict[str, str] = {}


class Admission(msgspec.Struct, rename="camel"):
    cluster_queue: str = ""
    pod_set_assignments: list[PodSetAssignment] = []


class Condition(msgspec.Struct):
    type: str = ""
    status: str = "Unknown"
    reason: str = ""


class WorkloadStatus(msgspec.Struct):
    admission: Admission | None = None
    conditions: list[Condition] = []


class K8sWorkload(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
    status: WorkloadStatus = msgspec.field(default_factory=WorkloadStatus)


class K8sNamespace(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class ObjectList(msgspec.Struct):
    """A ``List`` of objects of any kind, each kept undecoded until its kind is known."""

    items: list[msgspec.Raw]


class TypeMeta(msgspec.Struct, rename="camel"):
    api_version: str = ""
    kind: str = ""


class _PodPage(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Pod] | None = None


class _NodePage(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[K8sNode] | None = None


class _ScalablePage(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Scalable] | None = None


class _NotebookPage(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[K8sNotebook] | None = None


class _WorkloadPage(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[K8sWorkload] | None = None


class _NamespacePage(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[K8sNamespace] | None = None


_POD_PAGE = msgspec.json.Decoder(_PodPage)
_NODE_PAGE = msgspec.json.Decoder(_NodePage)
_SCALABLE_PAGE = msgspec.json.Decoder(_ScalablePage)
_NOTEBOOK_PAGE = msgspec.json.Decoder(_NotebookPage)
_WORKLOAD_PAGE = msgspec.json.Decoder(_WorkloadPage)
_NAMESPACE_PAGE = msgspec.json.Decoder(_NamespacePage)
_DUMP = msgspec.json.Decoder(ObjectList)
_TYPE_META = msgspec.json.Decoder(TypeMeta)


def _decode(decoder: msgspec.json.Decoder, data: bytes, what: str) -> Any:
    try:
        return decoder.decode(data)
    except msgspec.DecodeError as e:
        raise ValueError(f"malformed {what}: {e}") from e


# --- pages of one kind -> model types ----------------------------------------------------------------


def decode_pod_page(data: bytes) -> tuple[list[GpuPod], str]:
    """Decode one page of a PodList (JSON bytes).

    Returns ``(gpu_pods, continue_token)``: only pods that request ``nvidia.com/gpu`` or a
    ``nvidia.com/mig-*`` resource and are not Succeeded/Failed; the token is ``""`` on the last
    page. Raises ValueError on malformed JSON or a non-integer GPU quantity.
    """
    page = _decode(_POD_PAGE, data, "PodList")
    pods = [p for p in (gpu_pod(item) for item in page.items or ()) if p is not None]
    return pods, page.metadata.continue_


def decode_node_page(data: bytes) -> tuple[list[Node], str]:
    """Decode one page of a NodeList. Returns ``(nodes, continue_token)``; raises ValueError."""
    page = _decode(_NODE_PAGE, data, "NodeList")
    return [node(item) for item in page.items or ()], page.metadata.continue_


def decode_scalable_page(data: bytes, kind: str) -> tuple[list[ScalableOwner], str]:
    """Decode one page of a StatefulSetList or DeploymentList (``kind`` is ``"StatefulSet"`` or
    ``"Deployment"``). Returns ``(owners, continue_token)``; raises ValueError."""
    page = _decode(_SCALABLE_PAGE, data, f"{kind}List")
    return [scalable_owner(item, kind) for item in page.items or ()], page.metadata.continue_


def decode_notebook_page(data: bytes) -> tuple[list[Notebook], str]:
    """Decode one page of a kubeflow.org/v1 NotebookList. Returns ``(notebooks, continue_token)``;
    raises ValueError."""
    page = _decode(_NOTEBOOK_PAGE, data, "NotebookList")
    return [notebook(item) for item in page.items or ()], page.metadata.continue_


def decode_workload_page(data: bytes, api_version: str) -> tuple[list[Workload], str]:
    """Decode one page of a Kueue WorkloadList read as ``api_version``
    (``"kueue.x-k8s.io/v1beta2"`` or ``"kueue.x-k8s.io/v1beta1"``).

    Returns ``(workloads, continue_token)``; raises ValueError.
    """
    page = _decode(_WORKLOAD_PAGE, data, "WorkloadList")
    return [workload(item, api_version) for item in page.items or ()], page.metadata.continue_


def decode_namespace_page(data: bytes) -> tuple[list[tuple[str, dict[str, str]]], str]:
    """Decode one page of a NamespaceList into ``([(namespace, labels)], continue_token)``;
    raises ValueError."""
    page = _decode(_NAMESPACE_PAGE, data, "NamespaceList")
    return [(ns.metadata.name, dict(ns.metadata.labels)) for ns in page.items or ()], page.metadata.continue_


# --- one object -> model type ------------------------------------------------------------------------


def is_gpu_resource(name: str) -> bool:
    """True for ``nvidia.com/gpu`` and MIG slices ``nvidia.com/mig-<profile>``."""
    return name == GPU_RESOURCE or name.startswith(MIG_RESOURCE_PREFIX)


def _count(value: Quantity, resource: str, where: str) -> int:
    """An extended resource's quantity as an integer; GPUs cannot be fractional."""
    if isinstance(value, bool):
        raise ValueError(f"{where}: {resource} quantity {value!r} is not a number")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"{where}: {resource} quantity {value!r} is not a whole number") from None


def containers_gpus(containers: Iterable[Container], where: str) -> tuple[int, str | None]:
    """GPUs (whole GPUs plus MIG slices) requested by ``containers`` and the first GPU resource
    name seen. A container's request defaults to its limit, as the API server does for extended
    resources. Raises ValueError for a non-integer quantity."""
    total = 0
    first: str | None = None
    for c in containers:
        names = dict.fromkeys(r for r in (*c.resources.requests, *c.resources.limits) if is_gpu_resource(r))
        for resource in names:
            raw = c.resources.requests.get(resource, c.resources.limits.get(resource))
            n = _count(raw, resource, where)
            if n > 0:
                total += n
                first = first or resource
    return total, first


def _owners(meta: ObjectMeta) -> tuple[OwnerRef, ...]:
    return tuple(
        OwnerRef(api_version=o.api_version, kind=o.kind, name=o.name, controller=bool(o.controller))
        for o in meta.owner_references
    )


def _created(meta: ObjectMeta, what: str) -> datetime:
    if meta.creation_timestamp is None:
        raise ValueError(f"{what} {meta.namespace}/{meta.name} has no metadata.creationTimestamp")
    return meta.creation_timestamp


def gpu_pod(pod: Pod) -> GpuPod | None:
    """The pod as a ``GpuPod``, or ``None`` when it requests no GPU or has finished.
    Raises ValueError when it lacks a creation time or has a non-integer GPU quantity."""
    if pod.status.phase in _FINISHED_PHASES:
        return None
    meta = pod.metadata
    gpus, resource = containers_gpus(pod.spec.containers, f"Pod {meta.namespace}/{meta.name}")
    if gpus == 0 or resource is None:
        return None
    return GpuPod(
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        node=pod.spec.node_name,
        phase=pod.status.phase,
        created=_created(meta, "Pod"),
        started=pod.status.start_time,
        gpus=gpus,
        gpu_resource=resource,
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
        owners=_owners(meta),
    )


def capacity_type(labels: Mapping[str, str]) -> CapacityType:
    """How a node is bought, from Karpenter, EKS managed node group, GKE or AKS labels;
    ``UNKNOWN`` when none of them says."""
    karpenter = labels.get("karpenter.sh/capacity-type")
    if karpenter is not None:
        try:
            return CapacityType(karpenter.lower())
        except ValueError:
            return CapacityType.UNKNOWN
    eks = labels.get("eks.amazonaws.com/capacityType")
    if eks is not None:
        return {"ON_DEMAND": CapacityType.ON_DEMAND, "SPOT": CapacityType.SPOT}.get(
            eks.upper(), CapacityType.UNKNOWN
        )
    if (
        labels.get("cloud.google.com/gke-spot") == "true"
        or labels.get("cloud.google.com/gke-preemptible") == "true"
    ):
        return CapacityType.SPOT
    azure = labels.get("kubernetes.azure.com/scalesetpriority")
    if azure is not None:
        return CapacityType.SPOT if azure.lower() == "spot" else CapacityType.UNKNOWN
    return CapacityType.UNKNOWN


def _first_label(labels: Mapping[str, str], keys: Iterable[str]) -> str | None:
    return next((labels[k] for k in keys if labels.get(k)), None)


def node(obj: K8sNode) -> Node:
    """The node as a model ``Node``. Raises ValueError for a non-integer GPU capacity."""
    labels = obj.metadata.labels
    raw_gpus = obj.status.capacity.get(GPU_RESOURCE, 0)
    return Node(
        name=obj.metadata.name,
        labels=dict(labels),
        instance_type=_first_label(labels, _INSTANCE_TYPE_LABELS),
        capacity_type=capacity_type(labels),
        nodepool=_first_label(labels, _NODEPOOL_LABELS),
        gpu_product=labels.get("nvidia.com/gpu.product"),
        gpu_capacity=_count(raw_gpus, GPU_RESOURCE, f"Node {obj.metadata.name} status.capacity"),
    )


def scalable_owner(obj: Scalable, kind: str) -> ScalableOwner:
    """A StatefulSet or Deployment (``kind``) as a ``ScalableOwner``."""
    meta = obj.metadata
    return ScalableOwner(
        kind=kind,
        namespace=meta.namespace,
        name=meta.name,
        replicas=1 if obj.spec.replicas is None else obj.spec.replicas,
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
        owners=_owners(meta),
        selector=dict(obj.spec.selector.match_labels),
    )


def notebook(obj: K8sNotebook) -> Notebook:
    """A Kubeflow Notebook as a model ``Notebook``."""
    meta = obj.metadata
    return Notebook(
        namespace=meta.namespace, name=meta.name, annotations=dict(meta.annotations), labels=dict(meta.labels)
    )


def _condition_true(conditions: Iterable[Condition], type_: str) -> bool:
    return any(c.type == type_ and c.status == "True" for c in conditions)


def workload(obj: K8sWorkload, api_version: str) -> Workload:
    """A Kueue Workload read as ``api_version`` as a model ``Workload``.

    ``gpus`` sums count x GPUs per pod over ``spec.podSets``; ``flavors`` are the distinct
    ResourceFlavors assigned to GPU resources in ``status.admission.podSetAssignments``.
    Raises ValueError when it lacks a creation time or has a non-integer GPU quantity.
    """
    meta = obj.metadata
    where = f"Workload {meta.namespace}/{meta.name}"
    gpus = 0
    for ps in obj.spec.pod_sets:
        per_pod, _ = containers_gpus(ps.template.spec.containers, f"{where} podSet {ps.name}")
        gpus += per_pod * ps.count
    admission = obj.status.admission
    flavors: dict[str, None] = {}
    if admission is not None:
        for psa in admission.pod_set_assignments:
            for resource, flavor in psa.flavors.items():
                if is_gpu_resource(resource):
                    flavors[flavor] = None
    conditions = obj.status.conditions
    return Workload(
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        api_version=api_version,
        queue_name=obj.spec.queue_name,
        active=obj.spec.active is not False,
        created=_created(meta, "Workload"),
        admitted=_condition_true(conditions, "Admitted"),
        cluster_queue=(admission.cluster_queue or None) if admission is not None else None,
        finished=_condition_true(conditions, "Finished"),
        gpus=gpus,
        flavors=tuple(flavors),
        owners=_owners(meta),
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
    )


# --- a kubectl dump ---------------------------------------------------------------------------------

_POD = msgspec.json.Decoder(Pod)
_NODE = msgspec.json.Decoder(K8sNode)
_SCALABLE = msgspec.json.Decoder(Scalable)
_NOTEBOOK = msgspec.json.Decoder(K8sNotebook)
_WORKLOAD = msgspec.json.Decoder(K8sWorkload)
_NAMESPACE = msgspec.json.Decoder(K8sNamespace)


def snapshot_from_kubectl_dump(data: bytes, taken_at: datetime) -> ClusterSnapshot:
    """Decode the output of ``kubectl get pods,nodes,statefulsets,deployments,
    workloads.kueue.x-k8s.io,notebooks.kubeflow.org -A -o json`` (a ``List`` of mixed kinds;
    Namespaces are read too when present) into a ``ClusterSnapshot`` taken at ``taken_at``.

    Items are dispatched on ``kind`` and ``apiVersion``; kinds the bot does not read are skipped.
    ``workload_api_version`` is the apiVersion of the Workloads in the dump (``None`` if there
    are none). Raises ValueError naming the problem (not JSON, no ``items``, an item without
    ``kind``, a malformed field).
    """
    page = _decode(_DUMP, data, "kubectl dump (expected a JSON object with an 'items' list)")
    pods: list[GpuPod] = []
    nodes: dict[str, Node] = {}
    notebooks: list[Notebook] = []
    statefulsets: list[ScalableOwner] = []
    deployments: list[ScalableOwner] = []
    workloads: list[Workload] = []
    workload_api_version: str | None = None
    namespace_labels: dict[str, dict[str, str]] = {}
    for index, raw in enumerate(page.items):
        head = _decode(_TYPE_META, raw, f"item {index} of the kubectl dump")
        if not head.kind or not head.api_version:
            raise ValueError(f"item {index} of the kubectl dump has no kind/apiVersion")
        group = head.api_version.split("/", 1)[0] if "/" in head.api_version else ""
        what = f"{head.kind} (item {index}) of the kubectl dump"
        if head.kind == "Pod" and group == "":
            p = gpu_pod(_decode(_POD, raw, what))
            if p is not None:
                pods.append(p)
        elif head.kind == "Node" and group == "":
            n = node(_decode(_NODE, raw, what))
            nodes[n.name] = n
        elif head.kind == "Namespace" and group == "":
            ns = _decode(_NAMESPACE, raw, what)
            namespace_labels[ns.metadata.name] = dict(ns.metadata.labels)
        elif head.kind == "StatefulSet" and group == "apps":
            statefulsets.append(scalable_owner(_decode(_SCALABLE, raw, what), "StatefulSet"))
        elif head.kind == "Deployment" and group == "apps":
            deployments.append(scalable_owner(_decode(_SCALABLE, raw, what), "Deployment"))
        elif head.kind == "Notebook" and group == KUBEFLOW_GROUP:
            notebooks.append(notebook(_decode(_NOTEBOOK, raw, what)))
        elif head.kind == "Workload" and group == KUEUE_GROUP:
            workloads.append(workload(_decode(_WORKLOAD, raw, what), head.api_version))
            workload_api_version = workload_api_version or head.api_version
    return ClusterSnapshot(
        taken_at=taken_at,
        pods=tuple(pods),
        nodes=nodes,
        notebooks=tuple(notebooks),
        statefulsets=tuple(statefulsets),
        deployments=tuple(deployments),
        workloads=tuple(workloads),
        workload_api_version=workload_api_version,
        namespace_labels=namespace_labels,
    )
