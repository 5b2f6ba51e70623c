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
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Mapping

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"

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


@dataclass(frozen=True)
class Node:
    """A node, reduced to what pricing needs.

    ``capacity_type`` is read from ``karpenter.sh/capacity-type``, ``eks.amazonaws.com/capacityType``,
    ``cloud.google.com/gke-spot`` / ``gke-preemptible`` or ``kubernetes.azure.com/scalesetpriority``;
    ``instance_type`` from ``node.kubernetes.io/instance-type``; ``gpu_product`` from GPU Feature
    Discovery's ``nvidia.com/gpu.product``.
    """

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    instance_type: str | None = None
    capacity_type: CapacityType = CapacityType.UNKNOWN
    nodepool: str | None = None
    gpu_product: str | None = None
    gpu_capacity: int = 0


@dataclass(frozen=True)
class GpuPod:
    """A pod that requests GPUs.

    ``gpus`` counts whole GPUs (``nvidia.com/gpu``) plus MIG slices (``nvidia.com/mig-*``), summed
    over containers (init containers excluded); ``gpu_resource`` is the resource name that was
    requested (the first one found if several).
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


@dataclass(frozen=True)
class ClusterSnapshot:
    """The cluster at one instant: GPU pods and the objects that own or schedule them.

    ``workload_api_version`` is the Kueue version the Workloads were read with (``None`` when Kueue
    is not installed). ``namespace_labels`` maps namespace -> labels where they were read.
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
    its series is missing.
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


class ActionVerb(str, Enum):
    """What an executor can do, each with an exact inverse."""

    STOP_NOTEBOOK = "stop-notebook"  # Notebook: add kubeflow-resource-stopped; undo removes it
    SCALE_TO_ZERO = "scale-to-zero"  # StatefulSet/Deployment: replicas 0; undo restores the count
    DEACTIVATE_WORKLOAD = "deactivate-workload"  # Workload: spec.active false; undo sets true


@dataclass(frozen=True)
class ProposedAction:
    """An action on one object, proposed but not applied."""

    verb: ActionVerb
    target: ObjectRef
    summary: str


@dataclass(frozen=True)
class Finding:
    """Something wasteful the bot found.

    ``key`` is stable across sweeps for the same consumer (used to update instead of re-posting).
    ``idle_seconds`` is how long the GPUs have been idle as far as the telemetry can tell;
    ``usd_per_hour`` is what the consumer's GPUs cost (``gpus x price.usd_per_gpu_hour``).
    ``action`` is ``None`` when no executor can act on this consumer (the finding is then
    reported only).
    """

    kind: str  # "idle-notebook" | "idle-workload"
    key: str
    namespace: str
    name: str
    team: str
    consumer_kind: str  # "Notebook", "JupyterHub", "StatefulSet", "Deployment", "Workload", "Pod"
    pods: tuple[str, ...]
    node: str | None
    gpus: int
    gpu_model: str
    idle_seconds: float
    usd_per_hour: float
    price: PriceQuote
    evidence: tuple[GpuEvidence, ...]
    detected_at: datetime
    window_seconds: float
    action: ProposedAction | None = None

    @property
    def usd_per_day(self) -> float:
        return self.usd_per_hour * 24

    @property
    def usd_so_far(self) -> float:
        """Cost of the idle time so far, USD."""
        return self.usd_per_hour * self.idle_seconds / 3600


# --- JSON round-trip -------------------------------------------------------------------------------


def to_jsonable(obj: Any) -> Any:
    """Turn model objects into JSON-compatible values (datetimes as RFC 3339, enums as values)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
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
    d["detected_at"] = parse_time(d["detected_at"])
    if d.get("action"):
        a = d["action"]
        d["action"] = ProposedAction(ActionVerb(a["verb"]), ObjectRef(**a["target"]), a["summary"])
    return Finding(**d)
