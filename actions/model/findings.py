"""What the decisions return: a :class:`Finding` (what is wasteful, its evidence and dollars)
and the :class:`ProposedAction` that would fix it, with its verb, target and how a team's policy
handles it. Plain immutable data, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Mapping

from actions.model.kube import CapacityType, ObjectRef
from actions.model.quote import PriceQuote


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
    # Kueue LocalQueue: spec.stopPolicy Hold (running Workloads finish, none is admitted) or
    # HoldAndDrain (admitted ones are evicted too); undo puts back the policy that was there
    HOLD_LOCALQUEUE = "hold-localqueue"
    DRAIN_LOCALQUEUE = "drain-localqueue"

    @property
    def stop_policy(self) -> str | None:
        """The LocalQueue ``spec.stopPolicy`` a hold sets (``Hold``, ``HoldAndDrain``); None for
        the other verbs."""
        return {"hold-localqueue": "Hold", "drain-localqueue": "HoldAndDrain"}.get(self.value)

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
class AdviceLimits:
    """What must stay true of a pod's GPUs for right-sizing advice to hold: over the re-check
    window, ``fb_mib`` the most framebuffer any of its GPUs may hold (MiB: the advised MIG
    profile's memory less the headroom), ``engine_pct`` the most engine activity (percent 0-100
    of a whole GPU: the profile's compute share), ``busy_gpus`` the most GPUs busy at once (the
    advice's ``busy_quantile``, a count: the GPUs advised). ``None``: not judged."""

    fb_mib: float | None = None
    engine_pct: float | None = None
    busy_gpus: float | None = None


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
    ``limits`` says what the advice relied on, re-checked right before acting (``None``: made
    before the bot recorded them; only the GPU request is re-checked then).
    """

    before: tuple[tuple[str, int], ...]
    after: tuple[tuple[str, int], ...]
    container: str | None = None
    node_selector: tuple[tuple[str, str], ...] = ()
    limits: AdviceLimits | None = None


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
    found in when the bot watches several (``clusters:``); empty for a bot of one cluster, whose
    requests store its ``cluster_name`` (an empty name never stands for "the first cluster").
    ``pue`` and ``gco2e_per_kwh`` (g CO2e per kWh, ``None``: unknown) are the cluster's energy
    factors when the finding was made, for :attr:`co2e_kg_per_day`.
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
    pue: float = 1.0
    gco2e_per_kwh: float | None = None

    @property
    def reserved(self) -> bool:
        """Whether the GPUs are reserved or committed capacity (paid for, idle or not)."""
        return self.price.capacity_type is CapacityType.RESERVED

    @property
    def usd_per_day(self) -> float:
        return self.usd_per_hour * 24

    @property
    def kwh_per_day(self) -> float | None:
        """kWh a day the GPUs draw at the GPU at the evidence's mean power (a MIG instance or a
        replica its share of its GPU's: the mean over the evidence x ``gpus``); None without a
        power reading."""
        watts = [e.mean_power_w for e in self.evidence if e.mean_power_w is not None]
        return sum(watts) / len(watts) * self.gpus * 24 / 1000 if watts else None

    @property
    def co2e_kg_per_day(self) -> float | None:
        """kg CO2e a day of :attr:`kwh_per_day` at the facility (x ``pue``) and ``gco2e_per_kwh``."""
        kwh = self.kwh_per_day
        return None if kwh is None or self.gco2e_per_kwh is None else kwh * self.pue * self.gco2e_per_kwh / 1000

    @property
    def usd_so_far(self) -> float:
        """Cost of the idle time so far, USD."""
        return self.usd_per_hour * self.idle_seconds / 3600
