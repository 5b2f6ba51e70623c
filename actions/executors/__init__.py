"""Applying an approved ``ProposedAction``, and undoing it: one module per kind of executor.

:mod:`.kubernetes` patches objects through the API server (Notebooks, StatefulSets, Deployments,
LeaderWorkerSets, Workloads, RayClusters, InferenceServices); :mod:`.jupyterhub` stops and starts
single-user servers through a Hub's REST API. :class:`RoutingWriter` sends each action to the
one that handles its verb. What each verb changes, and its exact inverse, is decided purely by
:mod:`actions.patches`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from actions.executors.kubernetes import MERGE_PATCH, KubernetesWriter
from actions.model import JUPYTER_SERVER_KIND, ObjectRef, ProposedAction
from actions.patches import REPLICAS_ANNOTATION, STOPPED_ANNOTATION, ExecutorError

__all__ = [
    "MERGE_PATCH", "REPLICAS_ANNOTATION", "STOPPED_ANNOTATION", "ClusterWriter", "ExecutorError", "KubernetesWriter",
    "RoutingWriter",
]


class ClusterWriter(Protocol):
    """Something that can apply an action to a cluster and undo it."""

    def apply(self, action: ProposedAction, now: datetime) -> dict:
        """Apply ``action`` at ``now``; returns the JSON-serialisable undo record to pass to
        ``restore``. Idempotent. Raises ExecutorError (e.g. "... no longer exists")."""
        ...

    def restore(self, action: ProposedAction, undo: dict, now: datetime) -> None:
        """Undo ``action`` using the record ``apply`` returned. Idempotent. Raises ExecutorError."""
        ...

    def current(self, target: ObjectRef) -> dict | None:
        """``target``'s JSON as the cluster holds it now (for a JupyterHub server, the Hub's
        model of it), None when it does not exist. Raises ExecutorError when it cannot be read."""
        ...


class RoutingWriter:
    """A ClusterWriter that hands JupyterHub servers to ``hub`` and everything else to
    ``cluster``. Without a ``hub``, a JupyterHub action raises ExecutorError saying what to
    configure."""

    def __init__(self, cluster: ClusterWriter, hub: ClusterWriter | None = None):
        self.cluster = cluster
        self.hub = hub

    def _for(self, target: ObjectRef) -> ClusterWriter:
        if target.kind == JUPYTER_SERVER_KIND:
            if self.hub is None:
                raise ExecutorError(
                    f"{target}: no JupyterHub is configured for namespace {target.namespace} "
                    "(set jupyterhub.hubs in the config)", target,
                )
            return self.hub
        return self.cluster

    def apply(self, action: ProposedAction, now: datetime) -> dict:
        """See ``ClusterWriter.apply``."""
        return self._for(action.target).apply(action, now)

    def restore(self, action: ProposedAction, undo: dict, now: datetime) -> None:
        """See ``ClusterWriter.restore``."""
        self._for(action.target).restore(action, undo, now)

    def current(self, target: ObjectRef) -> dict | None:
        """See ``ClusterWriter.current``."""
        return self._for(target).current(target)
