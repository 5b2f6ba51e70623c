"""The fields of Kubernetes objects the bot reads, as msgspec Structs, and the decoders of their
list pages.

The API server's objects are large (a realistic GPU pod is about 5 KB of JSON) and the bot needs a
handful of fields, so the Structs name only those fields and msgspec skips the rest while
decoding: some fifty times faster and a twentieth of the memory of the ``kubernetes`` client's
models (shared/DESIGN.md, "Measured facts"). Field names follow the Kubernetes API reference
(core/v1 Pod and Node, apps/v1, kubeflow.org/v1 Notebook, kueue.x-k8s.io Workload,
karpenter.sh/v1 NodeClaim and NodePool).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec

# Pods in these phases hold no GPU any more (the kubelet released their devices).
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
# The field selector of the pods the sources list and watch: filtering finished ones server-side
# saves their bytes on the wire.
LIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"


# --- the fields the bot reads -----------------------------------------------------------------------

Quantity = str | int | float
# RFC 3339 with a zone, as the API server writes it; a naive time would be ambiguous.
Time = Annotated[datetime, msgspec.Meta(tz=True)]


class OwnerReference(msgspec.Struct, rename="camel"):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
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


class NodeSelectorRequirement(msgspec.Struct):
    key: str = ""
    operator: str = ""
    values: list[str] = []


class NodeSelectorTerm(msgspec.Struct, rename="camel"):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(msgspec.Struct, rename="camel"):
    node_selector_terms: list[NodeSelectorTerm] = []


class NodeAffinity(msgspec.Struct, rename="camel"):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None


class Affinity(msgspec.Struct, rename="camel"):
    node_affinity: NodeAffinity | None = None


class Toleration(msgspec.Struct):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""


class PodSpec(msgspec.Struct, rename="camel"):
    containers: list[Container] = []
    node_name: str | None = None
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []


class PodStatus(msgspec.Struct, rename="camel"):
    phase: str = "Pending"
    start_time: Time | None = None
    # Ready, PodScheduled, ... (core/v1 PodCondition); the scheduler sets PodScheduled False with
    # reason Unschedulable and its FitError message ("0/8 nodes are available: ...").
    conditions: list[Condition] = []


class Pod(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class NodeStatus(msgspec.Struct):
    capacity: dict[str, Quantity] = {}
    allocatable: dict[str, Quantity] = {}


class Taint(msgspec.Struct):
    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSpec(msgspec.Struct):
    taints: list[Taint] = []


class K8sNode(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
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
    priority: int | None = None


class PodSetAssignment(msgspec.Struct):
    name: str = "main"
    # resource name -> ResourceFlavor name (v1beta1 and v1beta2 alike)
    flavors: dict[str, str] = {}
    # Pods admitted; fewer than spec.podSets[].count under partial admission. Absent on
    # Workloads admitted before Kueue had the field (kueue apis/kueue/v1beta1 PodSetAssignment.Count).
    count: int | None = None


class Admission(msgspec.Struct, rename="camel"):
    cluster_queue: str = ""
    pod_set_assignments: list[PodSetAssignment] = []


class Condition(msgspec.Struct):
    """A condition of a Pod (core/v1 PodCondition) or a Workload: the fields read here."""

    type: str = ""
    status: str = "Unknown"
    reason: str = ""
    message: str = ""


class WorkloadStatus(msgspec.Struct):
    admission: Admission | None = None
    conditions: list[Condition] = []


class K8sWorkload(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
    status: WorkloadStatus = msgspec.field(default_factory=WorkloadStatus)


class K8sNamespace(msgspec.Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class NodeClaimStatus(msgspec.Struct, rename="camel"):
    node_name: str = ""


class K8sNodeClaim(msgspec.Struct):
    """karpenter.sh/v1 NodeClaim: the fields read here."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    status: NodeClaimStatus = msgspec.field(default_factory=NodeClaimStatus)


class DisruptionBudget(msgspec.Struct):
    nodes: str = "10%"
    schedule: str | None = None
    duration: str | None = None
    reasons: list[str] | None = None


class Disruption(msgspec.Struct, rename="camel"):
    consolidation_policy: str = "WhenEmptyOrUnderutilized"
    consolidate_after: str | None = None
    budgets: list[DisruptionBudget] = []


class NodePoolSpec(msgspec.Struct):
    disruption: Disruption = msgspec.field(default_factory=Disruption)


class K8sNodePool(msgspec.Struct):
    """karpenter.sh/v1 NodePool: its disruption settings."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodePoolSpec = msgspec.field(default_factory=NodePoolSpec)


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


class _NodeClaimPage(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[K8sNodeClaim] | None = None


class _NodePoolPage(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[K8sNodePool] | None = None


POD_PAGE = msgspec.json.Decoder(_PodPage)
NODE_PAGE = msgspec.json.Decoder(_NodePage)
SCALABLE_PAGE = msgspec.json.Decoder(_ScalablePage)
NOTEBOOK_PAGE = msgspec.json.Decoder(_NotebookPage)
WORKLOAD_PAGE = msgspec.json.Decoder(_WorkloadPage)
NAMESPACE_PAGE = msgspec.json.Decoder(_NamespacePage)
NODECLAIM_PAGE = msgspec.json.Decoder(_NodeClaimPage)
NODEPOOL_PAGE = msgspec.json.Decoder(_NodePoolPage)


def decode(decoder: msgspec.json.Decoder, data: bytes, what: str) -> Any:
    try:
        return decoder.decode(data)
    except msgspec.DecodeError as e:
        raise ValueError(f"malformed {what}: {e}") from e
