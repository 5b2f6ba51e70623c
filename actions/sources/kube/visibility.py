"""Kueue's visibility API: the pending Workloads of a ClusterQueue, in the order Kueue will admit
them, with their positions (kueue v0.19.2 ``apis/visibility/v1beta2/types.go``,
``pkg/visibility/storage``; docs tasks/manage/monitor_pending_workloads).

``GET /apis/visibility.kueue.x-k8s.io/<v>/clusterqueues/<cq>/pendingworkloads`` answers a
``PendingWorkloadsSummary`` whose ``items`` carry ``metadata.{name,namespace}``,
``localQueueName``, ``priority``, ``positionInClusterQueue`` and ``positionInLocalQueue``
(0-based). The API is served by Kueue's own API server behind an APIService; where it is not
(an older Kueue, ``VisibilityOnDemand`` off), positions are simply unknown.
"""

from __future__ import annotations

import msgspec

from actions.model.kueue import PendingPosition
from actions.sources.kube.structs import ObjectMeta, decode

VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
SUPPORTED_VERSIONS = ("v1beta2", "v1beta1")
# Kueue's default page; a queue longer than this shows its first 1000 (DefaultPendingWorkloadsLimit).
LIMIT = 1000


class _Pending(msgspec.Struct, rename="camel"):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    priority: int = 0
    local_queue_name: str = ""
    position_in_cluster_queue: int = 0
    position_in_local_queue: int = 0


class _Summary(msgspec.Struct):
    items: list[_Pending] | None = None


_SUMMARY = msgspec.json.Decoder(_Summary)


def decode_pending(data: bytes, cluster_queue: str) -> list[PendingPosition]:
    """A ``PendingWorkloadsSummary`` of ``cluster_queue`` as positions. Raises ValueError."""
    summary = decode(_SUMMARY, data, "PendingWorkloadsSummary")
    return [
        PendingPosition(
            namespace=p.metadata.namespace, name=p.metadata.name, cluster_queue=cluster_queue,
            local_queue=p.local_queue_name, position_in_cluster_queue=p.position_in_cluster_queue,
            position_in_local_queue=p.position_in_local_queue, priority=p.priority,
        )
        for p in summary.items or ()
    ]
