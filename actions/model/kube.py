"""The cluster's objects as the bot reads them: nodes, their NodePools and tenants, GPU pods,
the objects that own them (scalable owners, Notebooks), and the API groups of the custom resources
the bot reads and patches. Plain immutable data, no I/O.

Conventions: times are timezone-aware ``datetime`` in UTC; durations are seconds; money is USD;
GPUs are physical-GPU equivalents (a MIG slice or a shared replica a fraction of one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Iterable, Mapping

from actions.hardware.gpus import GPU_RESOURCE, gpu_equivalents, gpu_family, mig_profile
from actions.model.disruption import FOREVER, DisruptionBudget

# API groups of the custom resources the bot reads and patches.
KUEUE_GROUP = "kueue.x-k8s.io"
KUBEFLOW_GROUP = "kubeflow.org"
KARPENTER_GROUP = "karpenter.sh"
NOTEBOOK_API_VERSION = "kubeflow.org/v1"
RAY_API_VERSION = "ray.io/v1"  # KubeRay v1.x
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"  # LWS v0.10.0
KSERVE_API_VERSION = "serving.kserve.io/v1beta1"  # KServe v0.20.0
# A JupyterHub single-user server is no Kubernetes object: the bot addresses it as
# ``JupyterHubServer <namespace>/<user>/<server name>`` and reaches it through the Hub's REST API.
JUPYTER_SERVER_API_VERSION = "hub.jupyter.org/v1"
JUPYTER_SERVER_KIND = "JupyterHubServer"


class CapacityType(str, Enum):
    """How a node is bought. Values are Karpenter's ``karpenter.sh/capacity-type`` spellings."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"
    RESERVED = "reserved"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class ObjectRef:
    """A Kubernetes object by API version, kind, namespace (empty for cluster-scoped) and name."""

    api_version: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@dataclass(frozen=True)
class OwnerRef:
    """One entry of ``metadata.ownerReferences``."""

    api_version: str
    kind: str
    name: str
    controller: bool = False
    uid: str = ""

    @property
    def group(self) -> str:
        """The API group (``""`` for the core group)."""
        return api_group(self.api_version)


def api_group(api_version: str) -> str:
    """``"jobset.x-k8s.io"`` for ``"jobset.x-k8s.io/v1alpha2"``; ``""`` for ``"v1"``."""
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def controller_of(owners: Iterable[OwnerRef]) -> OwnerRef | None:
    """Of an object's ``ownerReferences``, the one with ``controller: true`` (Kubernetes allows
    at most one), None when none has it: the link every owner walk follows upward."""
    return next((o for o in owners if o.controller), None)


@dataclass(frozen=True)
class KubeObject:
    """Any object on a GPU pod's owner chain (a Job, JobSet, TrainJob, RayJob, RayCluster,
    PyTorchJob, MPIJob, AppWrapper, LeaderWorkerSet, InferenceService, a leader Pod, ...), reduced
    to its metadata and the spec fields the bot reads: ``replicas`` (``spec.replicas``, ``None``
    when the kind has none or it is unset), ``suspend`` (``spec.suspend``, ``None`` when unset)
    and ``backoff_limit`` (a Job's ``spec.backoffLimit``, ``None`` when unset)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""
    owners: tuple[OwnerRef, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    replicas: int | None = None
    suspend: bool | None = None
    backoff_limit: int | None = None

    @property
    def group(self) -> str:
        return api_group(self.api_version)

    @property
    def controller(self) -> OwnerRef | None:
        """The owner reference with ``controller: true``, if any."""
        return controller_of(self.owners)


@dataclass(frozen=True)
class Taint:
    """One of a node's ``spec.taints``: ``effect`` ``NoSchedule``, ``PreferNoSchedule`` or
    ``NoExecute`` (core/v1 TaintEffect)."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Toleration:
    """One of a pod's ``spec.tolerations``: ``operator`` ``Equal`` (or empty) or ``Exists``; an
    empty ``key`` with ``Exists`` tolerates every taint, an empty ``effect`` every effect."""

    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""


@dataclass(frozen=True)
class NodeSelectorRequirement:
    """A ``matchExpressions`` or ``matchFields`` entry of a node selector term: ``operator``
    ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt`` or ``Lt`` over ``values``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeSelectorTerm:
    """One term of ``requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``: its
    requirements, all of which must hold (``match_fields`` name ``metadata.name``)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True)
class Node:
    """A node, reduced to what pricing and the GPU accounting need.

    ``capacity_type`` is read from ``karpenter.sh/capacity-type``, ``eks.amazonaws.com/capacityType``,
    ``cloud.google.com/gke-spot`` / ``gke-preemptible`` or ``kubernetes.azure.com/scalesetpriority``;
    ``instance_type`` from ``node.kubernetes.io/instance-type``; ``gpu_product`` from GPU Feature
    Discovery's ``nvidia.com/gpu.product``; ``gpu_capacity`` is ``status.capacity`` of
    ``nvidia.com/gpu`` and ``gpu_devices`` every GPU resource's capacity (whole, shared, MIG).
    ``nodeclaim`` is the Karpenter NodeClaim that launched the node (None outside Karpenter);
    ``workload_pods`` counts the pods bound to it that are not DaemonSet pods (any that hold it);
    ``do_not_disrupt`` names those annotated ``karpenter.sh/do-not-disrupt`` and
    ``do_not_disrupt_until`` says until when each is protected (see :meth:`protected_by`);
    ``daemonset_pods`` names (``namespace/name``) the DaemonSet pods bound to it, dcgm-exporter's
    among them; ``gpu_allocatable`` every GPU resource's ``status.allocatable`` (what the device
    plugin offers pods: ``nvidia.com/mig-<profile>`` under the ``mixed`` MIG strategy);
    ``taints`` its ``spec.taints``.
    """

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    instance_type: str | None = None
    capacity_type: CapacityType = CapacityType.UNKNOWN
    nodepool: str | None = None
    gpu_product: str | None = None
    gpu_capacity: int = 0
    gpu_devices: Mapping[str, int] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    nodeclaim: str | None = None
    workload_pods: int = 0
    do_not_disrupt: tuple[str, ...] = ()
    daemonset_pods: tuple[str, ...] = ()
    do_not_disrupt_until: Mapping[str, datetime] = field(default_factory=dict)
    gpu_allocatable: Mapping[str, int] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()

    def protected_by(self, now: datetime) -> tuple[str, ...]:
        """The pods of :attr:`do_not_disrupt` whose protection still holds at ``now``: ``"true"``,
        or a duration after the pod's start that has not run out."""
        return tuple(p for p in self.do_not_disrupt if self.do_not_disrupt_until.get(p, FOREVER) > now)

    @property
    def mig_strategy(self) -> str:
        """GPU Feature Discovery's ``nvidia.com/mig.strategy`` (``single`` or ``mixed``), or
        ``none``: GFD sets no label under ``none`` (k8s-device-plugin internal/lm/strategy.go)."""
        return self.labels.get("nvidia.com/mig.strategy") or "none"

    @property
    def gpu_family(self) -> str | None:
        """The family of its GPUs (``"H100"``), from GFD's product label."""
        return gpu_family(self.gpu_product) if self.gpu_product else None

    @property
    def gpu_replicas(self) -> int:
        """How many replicas each GPU is advertised as (GFD ``nvidia.com/gpu.replicas``; 1 when
        not shared or not labelled)."""
        try:
            return max(1, int(self.labels.get("nvidia.com/gpu.replicas", "1")))
        except ValueError:
            return 1

    @property
    def physical_gpus(self) -> float:
        """The physical GPUs behind its GPU resources: whole GPUs, MIG slices and shared replicas
        counted as equivalents (GFD ``nvidia.com/gpu.count`` when it says more). GFD counts GPUs
        before replication, and under the MIG ``single`` strategy counts MIG devices (56 on eight
        A100s cut seven ways: k8s-device-plugin internal/lm/mig-strategy.go), each then its
        profile's share of a GPU."""
        devices = self.gpu_devices or ({GPU_RESOURCE: self.gpu_capacity} if self.gpu_capacity else {})
        counted = gpu_equivalents(devices, self.gpu_family, self.gpu_replicas, self.gpu_product)
        try:
            count = float(self.labels.get("nvidia.com/gpu.count", "0"))
        except ValueError:
            count = 0.0
        labelled = gpu_equivalents({GPU_RESOURCE: count}, self.gpu_family, 1, self.gpu_product)
        return max(counted, labelled)

    def equivalents(self, devices: Mapping[str, float]) -> float:
        """Physical-GPU equivalents of ``devices`` (resource -> count) requested on this node."""
        return gpu_equivalents(devices, self.gpu_family, self.gpu_replicas, self.gpu_product)

    def mig_profile(self) -> str | None:
        """The MIG profile every ``nvidia.com/gpu`` is under the ``single`` MIG strategy."""
        return mig_profile(self.gpu_product) if self.gpu_product and "-MIG-" in self.gpu_product.upper() else None


@dataclass(frozen=True)
class Tenant:
    """A live pod bound to a node, as far as the node's use is concerned: ``pod`` is
    ``namespace/name``; ``daemonset`` when a DaemonSet owns it (it runs on every node and keeps
    none); ``do_not_disrupt`` when annotated ``karpenter.sh/do-not-disrupt`` and
    ``do_not_disrupt_until`` until when (:func:`actions.model.disruption.protected_until`)."""

    node: str
    pod: str
    daemonset: bool = False
    do_not_disrupt: bool = False
    do_not_disrupt_until: datetime | None = None


@dataclass(frozen=True)
class NodePool:
    """A Karpenter NodePool (karpenter.sh/v1), reduced to what decides whether Karpenter will
    consolidate its nodes: ``consolidation_policy`` (``WhenEmpty`` or
    ``WhenEmptyOrUnderutilized``), ``consolidate_after`` (a duration, or ``"Never"``) and its
    disruption ``budgets``."""

    name: str
    consolidation_policy: str = "WhenEmptyOrUnderutilized"
    consolidate_after: str | None = None
    budgets: tuple[DisruptionBudget, ...] = ()

    def forbidding(self, reason: str, now: datetime) -> DisruptionBudget | None:
        """The first budget that allows no node to be disrupted for ``reason`` (``Empty``,
        ``Underutilized``, ``Drifted``) at ``now``; None when Karpenter itself could disrupt one."""
        return next((b for b in self.budgets if b.forbids(reason, now)), None)


@dataclass(frozen=True)
class GpuPod:
    """A pod that requests GPUs.

    ``gpus`` counts whole GPUs (``nvidia.com/gpu``) plus MIG slices (``nvidia.com/mig-*``), summed
    over containers (init containers excluded); ``gpu_resource`` is the resource name that was
    requested (the first one found if several); ``containers`` the GPU resources of each
    container that requests any, by container name. ``ready`` is the ``Ready`` condition being
    ``True``; ``unschedulable`` the scheduler's message (``"0/8 nodes are available: 8 Insufficient
    nvidia.com/mig-1g.10gb."``) while ``PodScheduled`` is ``False``, else None.
    """

    namespace: str
    name: str
    uid: str
    node: str | None
    phase: str
    created: datetime
    started: datetime | None
    gpus: int
    gpu_resource: str = GPU_RESOURCE
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    owners: tuple[OwnerRef, ...] = ()
    devices: Mapping[str, int] = field(default_factory=dict)
    # Each container that requests GPUs: (name, ((resource, count), ...)); empty when not read.
    containers: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()
    # Where it may run: spec.nodeSelector, the terms of its required node affinity (None: none
    # required) and spec.tolerations.
    node_selector: Mapping[str, str] = field(default_factory=dict)
    node_affinity: tuple[NodeSelectorTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()
    ready: bool = False
    unschedulable: str | None = None

    @property
    def requested(self) -> Mapping[str, int]:
        """The GPU resources it requests, resource name -> count (``devices``, or ``gpus`` of
        ``gpu_resource`` when read by an older writer)."""
        return self.devices or {self.gpu_resource: self.gpus}


@dataclass(frozen=True)
class ScalableOwner:
    """A StatefulSet or Deployment (the objects an executor can scale to zero)."""

    kind: str  # "StatefulSet" | "Deployment"
    namespace: str
    name: str
    replicas: int
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    owners: tuple[OwnerRef, ...] = ()
    selector: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Notebook:
    """A Kubeflow ``Notebook`` (kubeflow.org/v1). ``stopped`` is true when the
    ``kubeflow-resource-stopped`` annotation is present."""

    namespace: str
    name: str
    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def stopped(self) -> bool:
        return "kubeflow-resource-stopped" in self.annotations
