"""Kueue's objects as the bot reads them: Workloads, LocalQueues, ClusterQueues, ResourceFlavors
and a pending Workload's position in its ClusterQueue (Kueue's visibility API). Plain immutable
data, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Mapping

from actions.model.kube import OwnerRef


@dataclass(frozen=True)
class LocalQueue:
    """A Kueue LocalQueue, the ClusterQueue its ``spec.clusterQueue`` names, its
    ``spec.stopPolicy`` (``None``, ``Hold`` or ``HoldAndDrain``; the API server defaults it to
    ``None``) and its annotations (an opt-out is read there)."""

    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str = "None"
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def held(self) -> bool:
        """Whether the LocalQueue admits no new Workload (its stopPolicy is not ``None``)."""
        return self.stop_policy not in ("", "None")


@dataclass(frozen=True)
class ClusterQueue:
    """A Kueue ClusterQueue: its cohort (``spec.cohortName`` in v1beta2, ``spec.cohort`` in
    v1beta1), the ResourceFlavors its ``spec.resourceGroups`` offer for GPU resources, in the
    order Kueue tries them, and the ``nominalQuota`` of its GPU resources over them (GPUs; None
    when it sets none)."""

    name: str
    cohort: str | None = None
    gpu_flavors: tuple[str, ...] = ()
    gpu_quota: float | None = None  # nominalQuota of its GPU resources over those flavors, GPUs


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
