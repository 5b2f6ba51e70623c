"""The bot's plain data: what the sources read, what the decisions return.

Everything here is immutable and free of I/O, so a snapshot of the cluster and its telemetry can be
written to JSON, read back and replayed through the same decision code (``gpu-cost-bot sweep
--cluster-state``, the demo, the tests).

Conventions: times are timezone-aware ``datetime`` in UTC; durations are seconds; money is USD;
engine activity is a percent 0-100 (``DCGM_FI_PROF_GR_ENGINE_ACTIVE``, a ratio 0-1 on the wire, is
scaled by 100 at the source); power is watts; coverage is a ratio 0-1.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Mapping

from actions.gpus import GPU_RESOURCE, MIG_RESOURCE_PREFIX, gpu_equivalents, gpu_family, mig_profile

__all__ = ["GPU_RESOURCE", "MIG_RESOURCE_PREFIX"]  # re-exported: the sources name resources through the model

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

ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"


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
        return next((o for o in self.owners if o.controller), None)


@dataclass(frozen=True)
class LocalQueue:
    """A Kueue LocalQueue and the ClusterQueue its ``spec.clusterQueue`` names."""

    namespace: str
    name: str
    cluster_queue: str


@dataclass(frozen=True)
class ClusterQueue:
    """A Kueue ClusterQueue: its cohort (``spec.cohortName`` in v1beta2, ``spec.cohort`` in
    v1beta1) and the ResourceFlavors its ``spec.resourceGroups`` offer for GPU resources, in
    the order Kueue tries them."""

    name: str
    cohort: str | None = None
    gpu_flavors: tuple[str, ...] = ()


@dataclass(frozen=True)
class PendingPosition:
    """Where a pending Workload stands, as Kueue's visibility API says
    (``visibility.kueue.x-k8s.io`` ``PendingWorkload``): 0-based positions in its ClusterQueue
    and its LocalQueue, and its priority."""

    namespace: str
    name: str
    cluster_queue: str
    local_queue: str
    position_in_cluster_queue: int
    position_in_local_queue: int
    priority: int = 0


@dataclass(frozen=True)
class ResourceFlavor:
    """A Kueue ResourceFlavor and its ``spec.nodeLabels``: the nodes its quota lands on."""

    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)


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
    ``do_not_disrupt`` names those annotated ``karpenter.sh/do-not-disrupt: "true"``;
    ``daemonset_pods`` names (``namespace/name``) the DaemonSet pods bound to it, dcgm-exporter's
    among them.
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
        """Physical-GPU equivalents of ``devices`` (resource -> count) held on this node."""
        return gpu_equivalents(devices, self.gpu_family, self.gpu_replicas, self.gpu_product)

    def mig_profile(self) -> str | None:
        """The MIG profile every ``nvidia.com/gpu`` is under the ``single`` MIG strategy."""
        return mig_profile(self.gpu_product) if self.gpu_product and "-MIG-" in self.gpu_product.upper() else None


_GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def asks_not_to_disrupt(value: str | None) -> bool:
    """Whether a ``karpenter.sh/do-not-disrupt`` annotation value holds the pod or node: ``"true"``,
    or since Karpenter v1.12 a duration (``"30m"``, ``"2h"``) for which it does."""
    return value is not None and (value.strip() == "true" or bool(_GO_DURATION.match(value.strip())))


@dataclass(frozen=True)
class Tenant:
    """A live pod bound to a node, as far as the node's use is concerned: ``pod`` is
    ``namespace/name``; ``daemonset`` when a DaemonSet owns it (it runs on every node and keeps
    none); ``do_not_disrupt`` when annotated ``karpenter.sh/do-not-disrupt`` (:func:`asks_not_to_disrupt`)."""

    node: str
    pod: str
    daemonset: bool = False
    do_not_disrupt: bool = False


@dataclass(frozen=True)
class NodePool:
    """A Karpenter NodePool (karpenter.sh/v1), reduced to what decides whether Karpenter will
    consolidate its nodes: ``consolidation_policy`` (``WhenEmpty`` or
    ``WhenEmptyOrUnderutilized``), ``consolidate_after`` (a duration, or ``"Never"``) and
    ``blocked`` (a disruption budget of 0 nodes at all times)."""

    name: str
    consolidation_policy: str = "WhenEmptyOrUnderutilized"
    consolidate_after: str | None = None
    blocked: bool = False


@dataclass(frozen=True)
class GpuPod:
    """A pod that requests GPUs.

    ``gpus`` counts whole GPUs (``nvidia.com/gpu``) plus MIG slices (``nvidia.com/mig-*``), summed
    over containers (init containers excluded); ``gpu_resource`` is the resource name that was
    requested (the first one found if several); ``containers`` the GPU resources of each
    container that requests any, by container name.
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


@dataclass(frozen=True)
class Workload:
    """A Kueue ``Workload`` (kueue.x-k8s.io, ``api_version`` is the version it was read with).

    ``gpus`` sums ``count x nvidia.com/gpu`` over ``spec.podSets``; ``flavors`` are the
    ResourceFlavors assigned to GPU resources in ``status.admission`` (empty while pending).
    """

    namespace: str
    name: str
    uid: str
    api_version: str
    queue_name: str
    active: bool
    created: datetime
    admitted: bool
    cluster_queue: str | None = None
    finished: bool = False
    gpus: int = 0
    flavors: tuple[str, ...] = ()
    owners: tuple[OwnerRef, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    priority: int = 0


@dataclass(frozen=True)
class ClusterSnapshot:
    """The cluster at one instant: GPU pods and the objects that own or schedule them.

    ``workload_api_version`` is the Kueue version the Workloads were read with (``None`` when Kueue
    is not installed). ``namespace_labels`` and ``namespace_annotations`` map namespace -> its
    labels / annotations where they were read. ``objects`` holds the GPU pods' owners other than
    StatefulSets, Deployments and Notebooks (Jobs, JobSets, RayClusters, LeaderWorkerSets,
    InferenceServices, ...); ``local_queues``, ``cluster_queues`` and ``resource_flavors`` are
    Kueue's queue objects; ``nodepools`` are Karpenter's NodePools by name (empty without
    Karpenter).
    """

    taken_at: datetime
    pods: tuple[GpuPod, ...] = ()
    nodes: Mapping[str, Node] = field(default_factory=dict)
    notebooks: tuple[Notebook, ...] = ()
    statefulsets: tuple[ScalableOwner, ...] = ()
    deployments: tuple[ScalableOwner, ...] = ()
    workloads: tuple[Workload, ...] = ()
    workload_api_version: str | None = None
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    objects: tuple[KubeObject, ...] = ()
    namespace_annotations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    local_queues: tuple[LocalQueue, ...] = ()
    cluster_queues: tuple[ClusterQueue, ...] = ()
    resource_flavors: tuple[ResourceFlavor, ...] = ()
    nodepools: Mapping[str, NodePool] = field(default_factory=dict)


@dataclass(frozen=True)
class GpuTelemetry:
    """One GPU's signals over a window, as computed server-side in PromQL.

    ``engine_signal`` names the DCGM field used for activity (``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` when
    exported, else ``DCGM_FI_DEV_GPU_UTIL``); ``peak_engine_pct`` is its maximum over the window as
    percent 0-100; ``mean_power_w`` the mean of ``DCGM_FI_DEV_POWER_USAGE`` in watts; ``coverage``
    the ratio 0-1 of evaluation steps in the window at which the activity signal had a sample;
    ``last_active`` the last time within the lookback that activity was above the idle threshold
    (``None`` if never, or unknown) and ``first_sample`` the earliest sample within the lookback,
    so the GPU has been idle since ``last_active or first_sample``. Any field may be ``None`` when
    its series is missing. ``gpu`` is the UUID, ``<UUID>/<GPU_I_ID>`` for a MIG instance, whose
    ``mig_profile`` is dcgm-exporter's ``GPU_I_PROFILE`` (``"1g.10gb"``); ``power_limit_w`` is
    the GPU's enforced power limit in watts, when exported.
    """

    namespace: str
    pod: str
    gpu: str
    model_name: str
    engine_signal: str | None
    peak_engine_pct: float | None
    mean_power_w: float | None
    coverage: float
    node: str | None = None
    last_active: datetime | None = None
    first_sample: datetime | None = None
    mig_profile: str | None = None
    power_limit_w: float | None = None


@dataclass(frozen=True)
class TelemetrySnapshot:
    """Per-GPU telemetry for a window ending at ``at`` (``window_seconds`` long)."""

    at: datetime
    window_seconds: float
    gpus: tuple[GpuTelemetry, ...] = ()

    def for_pod(self, namespace: str, pod: str) -> tuple[GpuTelemetry, ...]:
        """The GPUs attributed to one pod (empty if none)."""
        return tuple(g for g in self.gpus if g.namespace == namespace and g.pod == pod)


@dataclass(frozen=True)
class PriceQuote:
    """A price per GPU-hour in USD with where it came from.

    ``source`` names the origin (e.g. ``"bundled catalog: AWS EC2 on-demand, us-east-1"`` or
    ``"config override"``) and ``as_of`` the date the figure was published or fetched.
    ``basis`` says what was matched: ``"instance-type"``, ``"gpu-model"`` or ``"default"``.
    """

    usd_per_gpu_hour: float
    capacity_type: CapacityType
    source: str
    as_of: str
    basis: str
    instance_type: str | None = None
    gpu_model: str | None = None


@dataclass(frozen=True)
class GpuEvidence:
    """Why one GPU was judged idle (or not): the measured values beside the thresholds."""

    gpu: str
    model_name: str
    engine_signal: str | None
    peak_engine_pct: float | None
    engine_threshold_pct: float
    mean_power_w: float | None
    power_ceiling_w: float | None
    coverage: float
    verdict: str  # "idle" | "busy" | "unknown"
    reason: str
    ceiling_source: str | None = None  # where power_ceiling_w came from


class ActionVerb(str, Enum):
    """What an executor can do, each with an exact inverse but one (see :attr:`restorable`)."""

    STOP_NOTEBOOK = "stop-notebook"  # Notebook: add kubeflow-resource-stopped; undo removes it
    # StatefulSet/Deployment/LeaderWorkerSet: replicas 0; undo restores the count
    SCALE_TO_ZERO = "scale-to-zero"
    DEACTIVATE_WORKLOAD = "deactivate-workload"  # Workload: spec.active false; undo sets true
    SUSPEND_RAYCLUSTER = "suspend-raycluster"  # RayCluster: spec.suspend true; undo sets it back
    # InferenceService: annotation serving.kserve.io/stop "true"; undo puts back what was there
    STOP_INFERENCE_SERVICE = "stop-inferenceservice"
    # JupyterHub server: DELETE through the Hub's REST API; undo starts the same named server
    STOP_JUPYTER_SERVER = "stop-jupyter-server"
    # Karpenter NodeClaim: deleted (Karpenter drains and terminates the node); nothing to undo:
    # Karpenter provisions again for pods that need the capacity.
    DELETE_NODECLAIM = "delete-nodeclaim"
    # Notebook/Deployment/StatefulSet: a pod template container's GPU resources swapped for the
    # advised ones (fewer nvidia.com/gpu, or a MIG slice); undo puts back the values that were there
    RESIZE_GPUS = "resize-gpus"

    @property
    def restorable(self) -> bool:
        """Whether the action has an exact inverse a Restore button can apply."""
        return self is not ActionVerb.DELETE_NODECLAIM


MODES = ("ask", "auto", "report")


@dataclass(frozen=True)
class Handling:
    """How the bot handles one finding, from the policy in force for its namespace.

    ``mode``: ``ask`` (only an approver's Approve acts), ``auto`` (the policy acts after
    ``grace_seconds`` unless someone pressed Snooze, Exempt or Deny) or ``report`` (never acts).
    The durations are seconds. ``source`` says where the policy came from (``"global"``,
    ``"team research"``, ``"namespace ml annotations"``).
    """

    mode: str = "ask"
    grace_seconds: float = 4 * 3600
    request_ttl_seconds: float = 86400
    snooze_seconds: float = 4 * 3600
    exempt_seconds: float = 7 * 86400
    deny_cooldown_seconds: float = 86400
    source: str = "global"


@dataclass(frozen=True)
class GpuResize:
    """A right-sizing change to one pod template container's GPU resources (``RESIZE_GPUS``).

    ``before`` is what the advice was made from and ``after`` what it advises, each as
    ``(resource name, count per pod)`` pairs: ``(("nvidia.com/gpu", 2),)`` ->
    ``(("nvidia.com/gpu", 1),)``, or ``(("nvidia.com/gpu", 1),)`` ->
    ``(("nvidia.com/mig-1g.10gb", 1),)`` (NVIDIA device plugin, MIG strategy mixed).
    ``container`` names the container; ``None`` means the only one that requests ``before``.
    ``node_selector`` holds ``(label, value)`` pairs the change adds to the pod template's
    ``nodeSelector`` so the pod lands where ``after`` is offered (a MIG profile's node).
    """

    before: tuple[tuple[str, int], ...]
    after: tuple[tuple[str, int], ...]
    container: str | None = None
    node_selector: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ProposedAction:
    """An action on one object, proposed but not applied. ``resize`` is the change a
    ``RESIZE_GPUS`` action makes (``None`` for every other verb)."""

    verb: ActionVerb
    target: ObjectRef
    summary: str
    resize: GpuResize | None = None


@dataclass(frozen=True)
class Finding:
    """Something wasteful the bot found.

    ``key`` is stable across sweeps for the same consumer (used to update instead of re-posting).
    ``idle_seconds`` is how long the GPUs have been idle as far as the telemetry can tell;
    ``gpus`` counts physical-GPU equivalents (a MIG 1g slice of an H100 is 1/7, a replica of a GPU
    shared 4 ways 1/4) and ``devices`` the GPU resources as requested (resource -> count);
    ``usd_per_hour`` is what they cost (``gpus x price.usd_per_gpu_hour``). On reserved capacity
    (``reserved``) that money is paid whether or not the GPUs work, so stopping them frees
    capacity for the queue rather than saving dollars. ``action`` is ``None`` when no executor
    can act on this consumer (the finding is then reported only; ``report_reason`` says why);
    ``notes`` say what the evidence alone does not (why a node was not consolidated, what
    bin-packing would free). ``job`` is the object a person recognises (``RayJob ml/tune-7b``)
    and ``workload`` the name of the Kueue Workload that admitted it (``None`` outside Kueue).
    ``handling`` is the policy the finding was made under. ``cluster`` names the cluster it was
    found in when the bot watches several (``clusters:``); empty for a bot of one cluster.
    """

    kind: str  # "idle-notebook" | "idle-workload" | "idle-serving" | "unrequested-gpus"
    key: str
    namespace: str
    name: str
    team: str
    # "Notebook", "JupyterHub", "StatefulSet", "Deployment", "LeaderWorkerSet", "RayCluster",
    # "InferenceService", a Kueue job kind ("Job", "JobSet", "TrainJob", "RayJob", ...), "Pod"
    consumer_kind: str
    pods: tuple[str, ...]
    node: str | None
    gpus: float
    gpu_model: str
    idle_seconds: float
    usd_per_hour: float
    price: PriceQuote
    evidence: tuple[GpuEvidence, ...]
    detected_at: datetime
    window_seconds: float
    action: ProposedAction | None = None
    job: ObjectRef | None = None
    workload: str | None = None
    handling: Handling = field(default_factory=Handling)
    report_reason: str | None = None

    @property
    def subject(self) -> str:
        """What the finding is about, as a person reads it: ``"RayJob ml/tune-7b, Workload
        rayjob-tune-7b-3c1f"``, ``"Notebook ml-research/llm-explore"``."""
        who = f"{self.consumer_kind} {self.namespace + '/' if self.namespace else ''}{self.name}"
        return f"{who}, Workload {self.workload}" if self.workload else who
    devices: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    cluster: str = ""

    @property
    def reserved(self) -> bool:
        """Whether the GPUs are reserved or committed capacity (paid for, idle or not)."""
        return self.price.capacity_type is CapacityType.RESERVED

    @property
    def usd_per_day(self) -> float:
        return self.usd_per_hour * 24

    @property
    def usd_so_far(self) -> float:
        """Cost of the idle time so far, USD."""
        return self.usd_per_hour * self.idle_seconds / 3600


# --- JSON round-trip -------------------------------------------------------------------------------


# A dataclass's field names by its type: dataclasses.fields() is most of a finding's conversion.
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def to_jsonable(obj: Any) -> Any:
    """Turn model objects into JSON-compatible values (datetimes as RFC 3339, enums as values)."""
    # Most values are plain: answer them before the dataclass and ABC checks, which cost a sweep
    # of 800 findings about a second. Enum members that are str or int are caught below first.
    kind = type(obj)
    if obj is None or kind in (str, int, float, bool):
        return obj
    if kind is dict:
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    names = _FIELD_NAMES.get(kind)
    if names is None and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(obj))
    if names is not None:
        out = {name: to_jsonable(getattr(obj, name)) for name in names}
        if isinstance(obj, Finding):
            out["usd_per_day"] = obj.usd_per_day
            out["usd_so_far"] = obj.usd_so_far
        return out
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, datetime):
        return format_time(obj)
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj


def utc_now() -> datetime:
    """The current time, aware UTC. Only the edges call it (a CLI command, a scheduled run, a
    button press) and pass the result down as ``now``; decisions never read the clock."""
    return datetime.now(timezone.utc)


def format_time(t: datetime) -> str:
    """RFC 3339 in UTC with a ``Z`` suffix."""
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    """Parse RFC 3339 (``Z`` or an offset) into an aware UTC datetime.

    Raises ValueError when ``text`` is not RFC 3339 with a time zone.
    """
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if t.tzinfo is None:
        raise ValueError(f"time {text!r} has no time zone; write it like 2026-11-23T09:00:00Z")
    return t.astimezone(timezone.utc)


def telemetry_from_jsonable(data: Mapping[str, Any]) -> TelemetrySnapshot:
    """Inverse of ``to_jsonable`` for a TelemetrySnapshot. Raises KeyError/ValueError on bad input."""
    gpus = []
    for g in data.get("gpus", []):
        g = dict(g)
        for k in ("last_active", "first_sample"):
            g[k] = parse_time(g[k]) if g.get(k) else None
        gpus.append(GpuTelemetry(**g))
    return TelemetrySnapshot(
        at=parse_time(data["at"]), window_seconds=float(data["window_seconds"]), gpus=tuple(gpus)
    )


def action_from_jsonable(a: Mapping[str, Any]) -> ProposedAction:
    """Inverse of ``to_jsonable`` for a ProposedAction. Raises KeyError/ValueError on bad input."""
    resize = a.get("resize")
    return ProposedAction(
        ActionVerb(a["verb"]),
        ObjectRef(**a["target"]),
        a["summary"],
        GpuResize(
            before=tuple((str(k), int(v)) for k, v in resize["before"]),
            after=tuple((str(k), int(v)) for k, v in resize["after"]),
            container=resize.get("container"),
            node_selector=tuple((str(k), str(v)) for k, v in resize.get("node_selector") or ()),
        ) if resize else None,
    )


def finding_from_jsonable(data: Mapping[str, Any]) -> Finding:
    """Inverse of ``to_jsonable`` for a Finding (derived keys such as ``usd_per_day`` are ignored).

    Raises KeyError or ValueError on malformed input.
    """
    d = {k: v for k, v in data.items() if k not in ("usd_per_day", "usd_so_far")}
    price = dict(d["price"])
    price["capacity_type"] = CapacityType(price["capacity_type"])
    d["price"] = PriceQuote(**price)
    d["evidence"] = tuple(GpuEvidence(**e) for e in d["evidence"])
    d["pods"] = tuple(d["pods"])
    d["notes"] = tuple(d.get("notes", ()))
    d["detected_at"] = parse_time(d["detected_at"])
    if d.get("action"):
        a = d["action"]
        d["action"] = action_from_jsonable(a)
    if d.get("job"):
        d["job"] = ObjectRef(**d["job"])
    # Findings stored before policies per team carry no handling: they were made under "ask".
    d["handling"] = Handling(**d["handling"]) if d.get("handling") else Handling()
    return Finding(**d)
