"""Where each pending Workload stands in its ClusterQueue, from Kueue's visibility API through the
cluster reader that offers it (a kubectl dump does not)."""

from __future__ import annotations

import logging

from actions.model.snapshot import ClusterSnapshot
from actions.ports import ClusterReader

log = logging.getLogger(__name__)


def queue_positions(snapshot: ClusterSnapshot, reader: ClusterReader) -> dict:
    """The positions ``reader.queue_positions`` gives for the ClusterQueues ``snapshot``'s pending
    Workloads wait in; empty, logged, when it cannot be read (the queues are still worth showing
    without positions) or ``reader`` has no visibility API."""
    read = getattr(reader, "queue_positions", None)
    if read is None:
        return {}
    by_lq = {(q.namespace, q.name): q.cluster_queue for q in snapshot.local_queues}
    cqs = sorted({
        by_lq[(w.namespace, w.queue_name)] for w in snapshot.workloads
        if not w.admitted and w.active and not w.finished and (w.namespace, w.queue_name) in by_lq
    })
    try:
        return read(cqs)
    except Exception:  # noqa: BLE001 - positions are context; the queue report stands without them
        log.exception("Kueue's visibility API unreadable at %s; positions unknown", snapshot.taken_at.isoformat())
        return {}
