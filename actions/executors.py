"""Applying an approved ``ProposedAction`` to the cluster, and undoing it.

Each verb is a JSON merge patch (RFC 7386) with an exact inverse:

- ``STOP_NOTEBOOK``: Notebook (kubeflow.org/v1) ``metadata.annotations.kubeflow-resource-stopped``
  set to the time of the stop (the Notebook controller then scales its StatefulSet to 0); undo
  removes the annotation.
- ``SCALE_TO_ZERO``: StatefulSet/Deployment ``spec.replicas`` -> 0, with the previous count kept
  both in the undo record and in the annotation ``gpu-cost-bot/replicas-before-stop`` on the object,
  so Restore works even if the bot's database is lost; undo sets the count back and removes the
  annotation.
- ``DEACTIVATE_WORKLOAD``: Kueue Workload ``spec.active`` -> false (Kueue evicts it and does not
  requeue it), using the served version in the target's ``api_version``; undo sets it true.

What to patch is decided by pure functions (``plan_apply`` / ``plan_restore``) from the object as
read; the writers only read, patch and report. Both are idempotent: applying twice leaves the same
state and returns the same undo record, restoring twice is a no-op the second time.

``KubernetesWriter`` patches a live API server; ``InMemoryCluster`` patches objects loaded from a
kubectl dump and plays the controllers' part just enough for a fresh snapshot to show the effect
(used by the demo and ``--cluster-state`` dry runs).
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping, Protocol

import kubernetes.client
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from actions.model import ActionVerb, ClusterSnapshot, ObjectRef, ProposedAction, format_time
from actions.sources.kubeobjects import KUBEFLOW_GROUP, KUEUE_GROUP, snapshot_from_kubectl_dump

STOPPED_ANNOTATION = "kubeflow-resource-stopped"
REPLICAS_ANNOTATION = "gpu-cost-bot/replicas-before-stop"
MERGE_PATCH = "application/merge-patch+json"

# A scale patch carries the resourceVersion it was computed from; on a conflict it is recomputed.
_CONFLICT_ATTEMPTS = 3


class ExecutorError(Exception):
    """An action could not be applied or restored. ``target`` is the object; ``status`` the HTTP
    status when the API server refused (0 otherwise)."""

    def __init__(self, message: str, target: ObjectRef | None = None, status: int = 0):
        super().__init__(message)
        self.target = target
        self.status = status


class ClusterWriter(Protocol):
    """Something that can apply an action to a cluster and undo it."""

    def apply(self, action: ProposedAction, now: datetime) -> dict:
        """Apply ``action`` at ``now``; returns the JSON-serialisable undo record to pass to
        ``restore``. Idempotent. Raises ExecutorError (e.g. "... no longer exists")."""
        ...

    def restore(self, action: ProposedAction, undo: dict, now: datetime) -> None:
        """Undo ``action`` using the record ``apply`` returned. Idempotent. Raises ExecutorError."""
        ...


# --- the decisions: what to patch ------------------------------------------------------------------


def _ref_json(target: ObjectRef) -> dict:
    return {
        "apiVersion": target.api_version,
        "kind": target.kind,
        "namespace": target.namespace,
        "name": target.name,
    }


def check_target(action: ProposedAction) -> None:
    """Raise ExecutorError unless the action's verb can act on its target's kind and version."""
    t = action.target
    group = t.api_version.split("/", 1)[0] if "/" in t.api_version else ""
    ok = {
        ActionVerb.STOP_NOTEBOOK: t.kind == "Notebook" and t.api_version == f"{KUBEFLOW_GROUP}/v1",
        ActionVerb.SCALE_TO_ZERO: t.kind in ("StatefulSet", "Deployment") and t.api_version == "apps/v1",
        ActionVerb.DEACTIVATE_WORKLOAD: t.kind == "Workload"
        and group == KUEUE_GROUP
        and "/" in t.api_version,
    }[action.verb]
    if not ok or not t.namespace or not t.name:
        raise ExecutorError(f"cannot {action.verb.value} {t} ({t.api_version})", t)


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _replicas(obj: Mapping[str, Any]) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def plan_apply(action: ProposedAction, current: Mapping[str, Any], now: datetime) -> tuple[dict | None, dict]:
    """What applying ``action`` to the object ``current`` (its JSON as read) at ``now`` means.

    Returns ``(merge_patch, undo)``: the patch is ``None`` when the object is already in the
    applied state; ``undo`` is the record ``plan_restore`` takes (verb, target, and
    ``stopped_at`` / ``replicas_before`` / ``api_version`` by verb), read back from the object
    when it is already applied, so applying twice gives the same record. Raises ExecutorError
    for a target the verb cannot act on or an unreadable recorded replica count.
    """
    check_target(action)
    undo: dict[str, Any] = {"verb": action.verb.value, "target": _ref_json(action.target)}
    meta = current.get("metadata") or {}
    if action.verb is ActionVerb.STOP_NOTEBOOK:
        stopped = _annotations(current).get(STOPPED_ANNOTATION)
        if stopped is not None:
            undo["stopped_at"] = stopped
            return None, undo
        undo["stopped_at"] = format_time(now.replace(microsecond=0))
        return {"metadata": {"annotations": {STOPPED_ANNOTATION: undo["stopped_at"]}}}, undo
    if action.verb is ActionVerb.SCALE_TO_ZERO:
        replicas = _replicas(current)
        recorded = _annotations(current).get(REPLICAS_ANNOTATION)
        if replicas == 0:
            undo["replicas_before"] = _recorded_count(recorded, action.target) if recorded is not None else 0
            return None, undo
        undo["replicas_before"] = replicas
        patch = {
            "metadata": {
                "annotations": {REPLICAS_ANNOTATION: str(replicas)},
                "resourceVersion": meta.get("resourceVersion"),
            },
            "spec": {"replicas": 0},
        }
        if not meta.get("resourceVersion"):
            del patch["metadata"]["resourceVersion"]
        return patch, undo
    # DEACTIVATE_WORKLOAD
    undo["api_version"] = action.target.api_version
    if (current.get("spec") or {}).get("active") is False:
        return None, undo
    return {"spec": {"active": False}}, undo


def _recorded_count(value: Any, target: ObjectRef) -> int:
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise ExecutorError(
            f"{target}: {REPLICAS_ANNOTATION}={value!r} is not a replica count", target
        ) from None
    if count < 0:
        raise ExecutorError(f"{target}: {REPLICAS_ANNOTATION}={value!r} is negative", target)
    return count


def plan_restore(action: ProposedAction, undo: Mapping[str, Any], current: Mapping[str, Any]) -> dict | None:
    """The merge patch that undoes ``action`` on ``current``, or ``None`` when nothing is left
    to undo.

    ``undo`` is what ``plan_apply`` returned; for SCALE_TO_ZERO an empty ``undo`` falls back to
    the count recorded in the object's ``gpu-cost-bot/replicas-before-stop`` annotation. If the
    object was scaled up by someone else since the stop, their count is kept and only the
    annotation is removed. Raises ExecutorError when ``undo`` belongs to another action or no
    replica count is known.
    """
    check_target(action)
    if undo.get("verb", action.verb.value) != action.verb.value or (
        "target" in undo and undo["target"] != _ref_json(action.target)
    ):
        raise ExecutorError(
            f"the undo record {undo!r} is not for {action.verb.value} {action.target}", action.target
        )
    annotations = _annotations(current)
    if action.verb is ActionVerb.STOP_NOTEBOOK:
        if STOPPED_ANNOTATION not in annotations:
            return None
        return {"metadata": {"annotations": {STOPPED_ANNOTATION: None}}}
    if action.verb is ActionVerb.SCALE_TO_ZERO:
        recorded = annotations.get(REPLICAS_ANNOTATION)
        resource_version = (current.get("metadata") or {}).get("resourceVersion")
        if _replicas(current) != 0:
            if recorded is None:
                return None
            patch: dict[str, Any] = {"metadata": {"annotations": {REPLICAS_ANNOTATION: None}}}
        else:
            before = undo.get("replicas_before")
            if before is None:
                if recorded is None:
                    raise ExecutorError(
                        f"{action.target}: no replica count to restore "
                        f"(no undo record and no {REPLICAS_ANNOTATION} annotation)",
                        action.target,
                    )
                before = recorded
            count = _recorded_count(before, action.target)
            if count == 0 and recorded is None:
                return None
            patch = {"metadata": {"annotations": {REPLICAS_ANNOTATION: None}}, "spec": {"replicas": count}}
        if resource_version:
            patch["metadata"]["resourceVersion"] = resource_version
        return patch
    # DEACTIVATE_WORKLOAD
    if (current.get("spec") or {}).get("active") is not False:
        return None
    return {"spec": {"active": True}}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: ``patch`` applied to ``target``; neither is modified."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = copy.deepcopy(dict(target)) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --- a live API server -----------------------------------------------------------------------------


def _api_message(e: ApiException) -> str:
    body = e.body.decode("utf-8", "replace") if isinstance(e.body, bytes) else e.body
    try:
        return str(json.loads(body)["message"])
    except (TypeError, ValueError, KeyError):
        return str(e.reason or body or e)


class KubernetesWriter:
    """Applies actions with real PATCH requests (``application/merge-patch+json``) through the
    ``kubernetes`` client. Needs RBAC ``get`` and ``patch`` on notebooks.kubeflow.org,
    statefulsets, deployments and workloads.kueue.x-k8s.io.

    ``timeout_seconds`` bounds each request (connect and read), so an API server that hangs
    cannot hold an action, or a shutdown waiting for it, past its grace period.
    """

    def __init__(self, api_client: kubernetes.client.ApiClient, timeout_seconds: float = 10):
        self._apps = kubernetes.client.AppsV1Api(api_client)
        self._custom = kubernetes.client.CustomObjectsApi(api_client)
        self._timeout = timeout_seconds

    def apply(self, action: ProposedAction, now: datetime) -> dict:
        """See ``ClusterWriter.apply``. Raises ExecutorError("<target> no longer exists") on 404
        and ExecutorError with the API's message on any other refusal."""
        check_target(action)
        for attempt in range(_CONFLICT_ATTEMPTS):
            current = self._get(action.target, "apply")
            patch, undo = plan_apply(action, current, now)
            if patch is None or self._patch(
                action.target, patch, "apply", last=attempt == _CONFLICT_ATTEMPTS - 1
            ):
                return undo
        raise AssertionError("unreachable: the last attempt raises")

    def restore(self, action: ProposedAction, undo: dict, now: datetime) -> None:
        """See ``ClusterWriter.restore``. Raises ExecutorError when the object is gone or the
        API refuses."""
        check_target(action)
        for attempt in range(_CONFLICT_ATTEMPTS):
            current = self._get(action.target, "restore")
            patch = plan_restore(action, undo, current)
            if patch is None or self._patch(
                action.target, patch, "restore", last=attempt == _CONFLICT_ATTEMPTS - 1
            ):
                return

    def _endpoints(self, t: ObjectRef) -> tuple[Callable[[], Any], Callable[[dict], Any]]:
        raw = {"_preload_content": False, "_request_timeout": self._timeout}
        patching = {**raw, "_content_type": MERGE_PATCH}
        if t.kind == "StatefulSet":
            return (
                lambda: self._apps.read_namespaced_stateful_set(t.name, t.namespace, **raw),
                lambda body: self._apps.patch_namespaced_stateful_set(t.name, t.namespace, body, **patching),
            )
        if t.kind == "Deployment":
            return (
                lambda: self._apps.read_namespaced_deployment(t.name, t.namespace, **raw),
                lambda body: self._apps.patch_namespaced_deployment(t.name, t.namespace, body, **patching),
            )
        group, version = t.api_version.split("/", 1)
        plural = {"Notebook": "notebooks", "Workload": "workloads"}[t.kind]
        return (
            lambda: self._custom.get_namespaced_custom_object(group, version, t.namespace, plural, t.name, **raw),
            lambda body: self._custom.patch_namespaced_custom_object(
                group, version, t.namespace, plural, t.name, body, **patching
            ),
        )

    def _get(self, target: ObjectRef, doing: str) -> dict:
        get, _ = self._endpoints(target)
        try:
            response = get()
            try:
                return json.loads(response.data)
            finally:
                response.release_conn()
        except ApiException as e:
            raise self._error(target, doing, e) from e
        except ValueError as e:
            raise ExecutorError(f"{doing} {target}: the API server sent malformed JSON: {e}", target) from e
        except (OSError, urllib3.exceptions.HTTPError) as e:
            raise ExecutorError(f"{doing} {target}: cannot reach the Kubernetes API: {e}", target) from e

    def _patch(self, target: ObjectRef, body: dict, doing: str, *, last: bool) -> bool:
        """True when patched; False on a resourceVersion conflict worth retrying."""
        _, patch = self._endpoints(target)
        try:
            patch(body).release_conn()
            return True
        except ApiException as e:
            if e.status == 409 and not last:
                return False
            raise self._error(target, doing, e) from e
        except (OSError, urllib3.exceptions.HTTPError) as e:
            raise ExecutorError(f"{doing} {target}: cannot reach the Kubernetes API: {e}", target) from e

    @staticmethod
    def _error(target: ObjectRef, doing: str, e: ApiException) -> ExecutorError:
        if e.status == 404:
            suffix = "" if doing == "apply" else "; nothing to restore"
            return ExecutorError(f"{target} no longer exists{suffix}", target, 404)
        return ExecutorError(
            f"{doing} {target} failed: HTTP {e.status}: {_api_message(e)}", target, e.status or 0
        )


# --- an in-memory cluster ---------------------------------------------------------------------------


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


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
        try:
            doc = json.loads(data)
        except ValueError as e:
            raise ValueError(f"the kubectl dump is not JSON: {e}") from e
        if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
            raise ValueError("the kubectl dump is not a List (expected a JSON object with an 'items' list)")
        return cls(doc["items"])

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

    def apply(self, action: ProposedAction, now: datetime) -> dict:
        """See ``ClusterWriter.apply``; raises ExecutorError("<target> no longer exists")."""
        with self._lock:
            obj = self._find(action, "apply")
            patch, undo = plan_apply(action, obj, now)
            if patch is not None:
                self._patch(action.target, obj, patch, now)
            return undo

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
            suffix = "" if doing == "apply" else "; nothing to restore"
            raise ExecutorError(f"{t} no longer exists{suffix}", t, 404)
        return obj

    def _bump(self, obj: dict) -> None:
        self._resource_version += 1
        obj.setdefault("metadata", {})["resourceVersion"] = f"mem-{self._resource_version}"

    def _patch(self, target: ObjectRef, obj: dict, patch: dict, now: datetime) -> None:
        expected = (patch.get("metadata") or {}).get("resourceVersion")
        if expected and expected != obj["metadata"].get("resourceVersion"):
            raise ExecutorError(f"{target} changed while being patched", target, 409)
        was_stopped = STOPPED_ANNOTATION in _annotations(obj)
        new = merge_patch(obj, patch)
        self._bump(new)
        self._objects[self._key(target.kind, target.namespace, target.name)] = new
        if target.kind == "Notebook" and was_stopped != (STOPPED_ANNOTATION in _annotations(new)):
            self._notebook_controller(new)
        self._reconcile(now)

    # The controllers, played just enough -----------------------------------------------------------

    def _notebook_controller(self, notebook: dict) -> None:
        meta = notebook["metadata"]
        replicas = 0 if STOPPED_ANNOTATION in _annotations(notebook) else 1
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
                self._reconcile_statefulset(ns, name, _replicas(obj), now)
            elif kind == "Deployment":
                self._reconcile_deployment(ns, name, _replicas(obj), now)
            elif kind == "Workload" and _group(obj.get("apiVersion", "")) == KUEUE_GROUP:
                self._reconcile_workload(obj, now)

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
