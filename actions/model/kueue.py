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
