"""One writer for a cluster and its JupyterHubs: each action goes to the executor that handles its
target (:class:`RoutingWriter`).
"""

from __future__ import annotations

from datetime import datetime

from actions.model.findings import ProposedAction
from actions.model.kube import JUPYTER_SERVER_KIND, ObjectRef
from actions.ports import ClusterWriter
from actions.remedy.patches import ExecutorError


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

    def dry_run(self, action: ProposedAction, now: datetime) -> dict:
        """See ``ClusterWriter.dry_run``: the dry run of the writer that would apply it."""
        return self._for(action.target).dry_run(action, now)

    def restore(self, action: ProposedAction, undo: dict, now: datetime) -> None:
        """See ``ClusterWriter.restore``."""
        self._for(action.target).restore(action, undo, now)

    def current(self, action: ProposedAction) -> dict | None:
        """See ``ClusterWriter.current``."""
        return self._for(action.target).current(action)
