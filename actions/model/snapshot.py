"""One read of a cluster: its GPU pods, their owners, nodes, namespaces and Kueue's objects, as of
one time (:class:`ClusterSnapshot`). What every detector and report takes; immutable, so a sweep
can be replayed from a JSON dump.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Mapping

from actions.model.kube import GpuPod, KubeObject, Node, NodePool, Notebook, ScalableOwner
from actions.model.kueue import ClusterQueue, LocalQueue, ResourceFlavor, Workload


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
