"""GPU usage over a period as a usage source hands it to the cost engine: per pod and node
(GPU-steps requested and idle), per day, the nodes' pricing facts and the pods' owners
(:class:`UsageData`). Aggregated server-side (:mod:`actions.sources.prometheus.usage`) or summed
from the ledger (:mod:`actions.ledger.rows`). Plain data, no I/O.

Units: GPU-hours in physical-GPU equivalents, steps in seconds, times aware UTC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Mapping

from actions.model.kube import CapacityType

DEFAULT_STEP_SECONDS = 300

# Where a node's instance type and capacity type came from.
NODE_FROM_METRICS = "kube_node_labels"
NODE_FROM_API = "kubernetes-api"


# --- inputs: usage already aggregated in PromQL ----------------------------------------------------


@dataclass(frozen=True)
class PodUsage:
    """One pod's GPU use on one node over the period.

    ``gpu_hours`` are requested GPU-hours (physical-GPU equivalents); ``idle_gpu_hours`` the idle
    part of them (see the module docstring); ``gpu_model`` the DCGM ``modelName`` when telemetry
    named one; ``sharing`` how the GPU was shared when it was (``"MIG 1g.5gb"``, ``"shared 1/4"``).
    """

    namespace: str
    pod: str
    node: str
    gpu_hours: float
    idle_gpu_hours: float = 0.0
    gpu_model: str | None = None
    sharing: str | None = None
    energy_kwh: float = 0.0
    idle_energy_kwh: float = 0.0
    energy_gpu_hours: float = 0.0


@dataclass(frozen=True)
class DailyUsage:
    """GPU-hours of one namespace on one node during one UTC day (``day``), and the kWh its GPUs
    drew (``energy_kwh``, at the GPU, measured; ``idle_energy_kwh`` in idle steps)."""

    day: date
    namespace: str
    node: str
    gpu_hours: float
    idle_gpu_hours: float = 0.0
    energy_kwh: float = 0.0
    idle_energy_kwh: float = 0.0


@dataclass(frozen=True)
class NodeInfo:
    """What pricing needs of a node. ``source`` is ``NODE_FROM_METRICS`` or ``NODE_FROM_API``;
    ``capacity_type`` is ``None`` when the source did not say."""

    name: str
    instance_type: str | None = None
    capacity_type: CapacityType | None = None
    gpu_model: str | None = None
    source: str = NODE_FROM_METRICS
    replicas: int = 1  # GFD nvidia.com/gpu.replicas: each GPU advertised as this many
    node_pool: str | None = None  # karpenter.sh/nodepool, when kube_node_labels carries it


@dataclass(frozen=True)
class PodOwner:
    """The controller of a pod as kube-state-metrics' ``kube_pod_owner`` reports it, plus the pod
    labels that refine it (``notebook-name``, ``kueue.x-k8s.io/queue-name``)."""

    namespace: str
    pod: str
    owner_kind: str | None = None
    owner_name: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class UsageData:
    """Everything the engine needs from the metrics for one period ``[start, end]`` (aware UTC).

    ``namespace_labels`` maps namespace -> labels (original keys, e.g. ``team``);
    ``idle_threshold_pct`` the engine activity (percent 0-100) at or under which a step counted
    as idle, when known; ``notes`` are caveats the source wants shown in the report;
    ``warnings`` say why the figures cannot be trusted as they stand (series missing, a period
    older than the data); ``covered_from`` is the first moment the source holds data for, when
    that is after ``start``.
    """

    start: datetime
    end: datetime
    step_seconds: float
    pods: tuple[PodUsage, ...] = ()
    daily: tuple[DailyUsage, ...] = ()
    nodes: Mapping[str, NodeInfo] = field(default_factory=dict)
    owners: Mapping[tuple[str, str], PodOwner] = field(default_factory=dict)
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    idle_threshold_pct: float | None = None
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    covered_from: datetime | None = None
    node_gpu_hours: Mapping[str, float] = field(default_factory=dict)  # node -> GPU-hours it had
    node_energy_kwh: Mapping[str, float] = field(default_factory=dict)  # node -> kWh all its GPUs drew

    def nodes_missing_capacity_type(self) -> list[str]:
        """Names of nodes pods ran on whose capacity type the metrics did not give, sorted."""
        used = {p.node for p in self.pods} | {d.node for d in self.daily} | set(self.node_gpu_hours)
        return sorted(n for n in used if (info := self.nodes.get(n)) is None or info.capacity_type is None)
