"""A cluster held in memory, loaded from a kubectl dump, that the demo, ``--cluster-state`` runs
and tests read and patch as if it were live.

:class:`InMemoryCluster` is both a reader (``snapshot(now)``) and a writer (``apply``/``restore``
with the same :mod:`actions.remedy.patches` as :class:`~actions.executors.kubernetes.KubernetesWriter`), and it
plays the controllers' part just enough for the next snapshot to show what a patch did.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from datetime import datetime
from typing import Any, Iterable, Mapping

from actions.model.findings import ProposedAction
from actions.model.kube import KUEUE_GROUP, ObjectRef
from actions.model.snapshot import ClusterSnapshot
from actions.model.times import format_time
from actions.remedy.patches import (
    STOPPED_ANNOTATION,
    ExecutorError,
    annotations_of,
    check_target,
    deletion_record,
    merge_patch,
    plan_apply,
    plan_restore,
    replicas_of,
)
from actions.sources.kube.dump import kubectl_dump_items, snapshot_from_kubectl_dump


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


# Kinds whose controller deletes the pods (found by a label naming the object) while stopped:
# KubeRay (spec.suspend), KServe (the stop annotation), LWS (spec.replicas 0).
_STOPS_PODS = {
    "RayCluster": ("ray.io/cluster", lambda o: (o.get("spec") or {}).get("suspend") is True),
    "InferenceService": (
        "serving.kserve.io/inferenceservice",
        lambda o: str(annotations_of(o).get("serving.kserve.io/stop", "")).lower() == "true",
    ),
    "LeaderWorkerSet": ("leaderworkerset.sigs.k8s.io/name", lambda o: replicas_of(o) == 0),
}


def _owned_by(obj: Mapping[str, Any], kind: str, name: str) -> bool:
    return any(
        o.get("kind") == kind and o.get("name") == name
        for o in (obj.get("metadata") or {}).get("ownerReferences") or ()
    )


class InMemoryCluster:
    """A writable cluster held in memory, built from a kubectl dump (a ``List`` JSON document).

    ``apply``/``restore`` use the same patches as ``KubernetesWriter``. It then plays the
    controllers' part, simply, so that ``snapshot(now)`` shows the effect:

    - a Notebook's StatefulSet goes to 0 replicas when ``kubeflow-resource-stopped`` is added and
      back to 1 when it is removed (the Kubeflow Notebook controller);
    - a StatefulSet keeps pods ``<name>-0 .. <name>-<replicas-1>``; a Deployment keeps
      ``replicas`` of the pods of its ReplicaSets (pod names are kept, unlike a real ReplicaSet);
    - a suspended RayCluster, a stopped InferenceService and a LeaderWorkerSet at 0 replicas lose
      their pods (found by ``ray.io/cluster``, ``serving.kserve.io/inferenceservice`` and
      ``leaderworkerset.sigs.k8s.io/name``), which come back when undone;
    - a Workload with ``spec.active=false`` loses its admission (conditions Admitted/QuotaReserved
      false, Evicted reason Deactivated) and its pods; set active again it is re-admitted at once,
      as if its ClusterQueue had room.

    Removed pods are remembered and brought back with a new uid and start time = ``now``; a pod
    that was never seen cannot be created. Thread-safe.
    """

    def __init__(self, objects: Iterable[Mapping[str, Any]]):
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str, str], dict] = {}
        self._parked_pods: dict[tuple[str, str], tuple[str, dict]] = {}  # (ns, pod) -> (why, pod)
        self._parked_admissions: dict[tuple[str, str], dict] = {}
        self._resource_version = 0
        for obj in objects:
            if not isinstance(obj, Mapping) or "kind" not in obj or "name" not in (obj.get("metadata") or {}):
                raise ValueError(f"not a Kubernetes object (needs kind and metadata.name): {str(obj)[:200]}")
            self._objects[
                self._key(obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            ] = copy.deepcopy(dict(obj))

    @classmethod
    def from_kubectl_dump(cls, data: bytes) -> "InMemoryCluster":
        """Load the output of ``kubectl get ... -A -o json``. Raises ValueError if malformed."""
        return cls(kubectl_dump_items(data))

    @staticmethod
    def _key(kind: str, namespace: str, name: str) -> tuple[str, str, str]:
        return (kind, namespace, name)

    def dump(self) -> bytes:
        """The cluster as a kubectl-style ``List`` JSON document."""
        with self._lock:
            return self._dump()

    def _dump(self) -> bytes:
        doc = {
            "apiVersion": "v1",
            "kind": "List",
            "metadata": {"resourceVersion": ""},
            "items": list(self._objects.values()),
        }
        return json.dumps(doc).encode()

    def snapshot(self, now: datetime) -> ClusterSnapshot:
        """The cluster as a ``ClusterSnapshot`` taken at ``now`` (decoded exactly as a dump is)."""
        with self._lock:
            data = self._dump()
        return snapshot_from_kubectl_dump(data, now)

    def get(self, kind: str, namespace: str, name: str) -> dict | None:
        """A copy of one object, or ``None``."""
        with self._lock:
            obj = self._objects.get(self._key(kind, namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def current(self, action: ProposedAction) -> dict | None:
        """See ``ClusterWriter.current``: a copy of the action's target (a set's own JSON plans
        as its Scale does), None when it is not held."""
        target = action.target
        obj = self.get(target.kind, target.namespace, target.name)
        if obj is None or _group(obj.get("apiVersion", "")) != _group(target.api_version):
            return None
        return obj

    def apply(self, action: ProposedAction, now: datetime) -> dict:
        """See ``ClusterWriter.apply``; raises ExecutorError("<target> no longer exists").
        Deleting a NodeClaim removes it, its node and the pods on that node, as Karpenter's drain
        and termination would."""
        if not action.verb.restorable:
            record = deletion_record(action)
            with self._lock:
                self._delete_nodeclaim(action.target.name, now)
            return record
        with self._lock:
            obj = self._find(action, "apply")
            patch, undo = plan_apply(action, obj, now)
            if patch is not None:
                self._patch(action.target, obj, patch, now)
            return undo

    def dry_run(self, action: ProposedAction, now: datetime) -> dict:
        """See ``ClusterWriter.dry_run``: there is no admission here, so it checks what the
        cluster in memory can: that the target is held (a NodeClaim too) and that ``apply``'s
        patch plans on it (:func:`actions.remedy.patches.plan_apply`). Changes nothing. Raises
        ExecutorError("<target> no longer exists", status 404), or plan_apply's ExecutorError
        (a verb that does not fit, advice gone stale); never ActionRefused. Returns the undo
        record planned."""
        with self._lock:
            obj = self._find(action, "dry run")
            if not action.verb.restorable:
                return deletion_record(action)
            return plan_apply(action, obj, now)[1]

    def restore(self, action: ProposedAction, undo: dict, now: datetime) -> None:
        """See ``ClusterWriter.restore``; raises ExecutorError when the object is gone."""
        with self._lock:
            obj = self._find(action, "restore")
            patch = plan_restore(action, undo, obj)
            if patch is not None:
                self._patch(action.target, obj, patch, now)

    def _find(self, action: ProposedAction, doing: str) -> dict:
        check_target(action)
        t = action.target
        obj = self._objects.get(self._key(t.kind, t.namespace, t.name))
        if obj is None or _group(obj.get("apiVersion", "")) != _group(t.api_version):
            suffix = "; nothing to restore" if doing == "restore" else ""
            raise ExecutorError(f"{t} no longer exists{suffix}", t, 404)
        return obj

    def _bump(self, obj: dict) -> None:
        self._resource_version += 1
        obj.setdefault("metadata", {})["resourceVersion"] = f"mem-{self._resource_version}"

    def _patch(self, target: ObjectRef, obj: dict, patch: dict, now: datetime) -> None:
        expected = (patch.get("metadata") or {}).get("resourceVersion")
        if expected and expected != obj["metadata"].get("resourceVersion"):
            raise ExecutorError(f"{target} changed while being patched", target, 409)
        was_stopped = STOPPED_ANNOTATION in annotations_of(obj)
        new = merge_patch(obj, patch)
        self._bump(new)
        self._objects[self._key(target.kind, target.namespace, target.name)] = new
        if target.kind == "Notebook" and was_stopped != (STOPPED_ANNOTATION in annotations_of(new)):
            self._notebook_controller(new)
        self._reconcile(now)

    def _delete_nodeclaim(self, name: str, now: datetime) -> None:
        claim = self._objects.pop(self._key("NodeClaim", "", name), None)
        node = (claim or {}).get("status", {}).get("nodeName")
        for (kind, ns, obj_name), obj in list(self._objects.items()):
            owned = any(o.get("kind") == "NodeClaim" and o.get("name") == name for o in obj["metadata"].get("ownerReferences") or ())
            if kind == "Node" and (obj_name == node or owned):
                node = obj_name
                del self._objects[(kind, ns, obj_name)]
        for (kind, ns, obj_name), obj in list(self._objects.items()):
            if kind == "Pod" and node and (obj.get("spec") or {}).get("nodeName") == node:
                del self._objects[(kind, ns, obj_name)]
        self._reconcile(now)

    # The controllers, played just enough -----------------------------------------------------------

    def _notebook_controller(self, notebook: dict) -> None:
        meta = notebook["metadata"]
        replicas = 0 if STOPPED_ANNOTATION in annotations_of(notebook) else 1
        for (kind, ns, _), sts in list(self._objects.items()):
            if (
                kind == "StatefulSet"
                and ns == meta.get("namespace", "")
                and _owned_by(sts, "Notebook", meta["name"])
            ):
                sts.setdefault("spec", {})["replicas"] = replicas
                self._bump(sts)

    def _pods(self, namespace: str) -> list[dict]:
        return [o for (k, ns, _), o in self._objects.items() if k == "Pod" and ns == namespace]

    def _park(self, pod: dict, why: str) -> None:
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        self._parked_pods[key] = (why, pod)
        del self._objects[self._key("Pod", *key)]

    def _unpark(self, namespace: str, name: str, why: str, now: datetime) -> None:
        parked = self._parked_pods.get((namespace, name))
        if parked is None or parked[0] != why or self._key("Pod", namespace, name) in self._objects:
            return
        del self._parked_pods[(namespace, name)]
        pod = copy.deepcopy(parked[1])
        started = format_time(now.replace(microsecond=0))
        pod["metadata"]["uid"] = str(uuid.uuid4())
        pod["metadata"]["creationTimestamp"] = started
        status = pod.setdefault("status", {})
        status["phase"] = "Running"
        status["startTime"] = started
        for cs in status.get("containerStatuses") or ():
            cs["restartCount"] = 0
            cs["state"] = {"running": {"startedAt": started}}
        self._bump(pod)
        self._objects[self._key("Pod", namespace, name)] = pod

    def _reconcile(self, now: datetime) -> None:
        for (kind, ns, name), obj in list(self._objects.items()):
            if kind == "StatefulSet":
                self._reconcile_statefulset(ns, name, replicas_of(obj), now)
            elif kind == "Deployment":
                self._reconcile_deployment(ns, name, replicas_of(obj), now)
            elif kind == "Workload" and _group(obj.get("apiVersion", "")) == KUEUE_GROUP:
                self._reconcile_workload(obj, now)
            elif kind in _STOPS_PODS:
                label, stopped = _STOPS_PODS[kind]
                self._reconcile_pods_by_label(ns, f"{kind}/{name}", label, name, stopped(obj), now)

    def _reconcile_pods_by_label(self, ns: str, why: str, label: str, value: str, stopped: bool, now: datetime) -> None:
        if stopped:
            for pod in self._pods(ns):
                if (pod["metadata"].get("labels") or {}).get(label) == value:
                    self._park(pod, why)
            return
        for (pns, pname), (pwhy, _) in list(self._parked_pods.items()):
            if pns == ns and pwhy == why:
                self._unpark(pns, pname, why, now)

    def _reconcile_statefulset(self, ns: str, name: str, replicas: int, now: datetime) -> None:
        why = f"StatefulSet/{name}"
        for pod in self._pods(ns):
            suffix = pod["metadata"]["name"][len(name) + 1 :]
            if _owned_by(pod, "StatefulSet", name) and suffix.isdigit() and int(suffix) >= replicas:
                self._park(pod, why)
        for ordinal in range(replicas):
            self._unpark(ns, f"{name}-{ordinal}", why, now)

    def _reconcile_deployment(self, ns: str, name: str, replicas: int, now: datetime) -> None:
        why = f"Deployment/{name}"

        def ours(pod: dict) -> bool:
            owners = pod["metadata"].get("ownerReferences") or ()
            return any(
                o.get("kind") == "ReplicaSet" and o.get("name", "").rsplit("-", 1)[0] == name for o in owners
            )

        running = sorted((p for p in self._pods(ns) if ours(p)), key=lambda p: p["metadata"]["name"])
        for pod in running[replicas:]:
            self._park(pod, why)
        missing = replicas - len(running)
        for (pns, pname), (pwhy, _) in sorted(self._parked_pods.items()):
            if missing <= 0:
                break
            if pns == ns and pwhy == why:
                self._unpark(pns, pname, why, now)
                missing -= 1

    def _reconcile_workload(self, wl: dict, now: datetime) -> None:
        meta = wl["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        why = f"Workload/{name}"
        owners = meta.get("ownerReferences") or ()
        status = wl.setdefault("status", {})
        if (wl.get("spec") or {}).get("active") is False:
            for pod in self._pods(ns):
                pod_is_owner = any(
                    o.get("kind") == "Pod" and o.get("name") == pod["metadata"]["name"] for o in owners
                )
                shares_owner = any(
                    o.get("kind") != "Pod" and _owned_by(pod, o.get("kind", ""), o.get("name", ""))
                    for o in owners
                )
                if pod_is_owner or shares_owner:
                    self._park(pod, why)
            if "admission" in status:
                self._parked_admissions[(ns, name)] = {
                    "admission": status.pop("admission"),
                    "conditions": status.get("conditions", []),
                }
                stamp = format_time(now.replace(microsecond=0))
                status["conditions"] = [
                    c
                    for c in status.get("conditions", [])
                    if c.get("type") not in ("QuotaReserved", "Admitted", "Evicted", "PodsReady")
                ] + [
                    {
                        "type": "QuotaReserved",
                        "status": "False",
                        "reason": "Pending",
                        "message": "The workload is deactivated",
                        "lastTransitionTime": stamp,
                    },
                    {
                        "type": "Admitted",
                        "status": "False",
                        "reason": "NoReservation",
                        "message": "The workload has no reservation",
                        "lastTransitionTime": stamp,
                    },
                    {
                        "type": "Evicted",
                        "status": "True",
                        "reason": "Deactivated",
                        "message": "The workload is deactivated",
                        "lastTransitionTime": stamp,
                    },
                ]
                self._bump(wl)
            return
        parked = self._parked_admissions.pop((ns, name), None)
        if parked is not None:
            status["admission"] = parked["admission"]
            status["conditions"] = parked["conditions"]
            self._bump(wl)
        for (pns, pname), (pwhy, _) in list(self._parked_pods.items()):
            if pns == ns and pwhy == why:
                self._unpark(pns, pname, why, now)
