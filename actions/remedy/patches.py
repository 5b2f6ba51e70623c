"""What applying an action means, and its exact inverse: pure decisions over an object's JSON.

Each verb is a JSON merge patch (RFC 7386):

- ``STOP_NOTEBOOK``: Notebook (kubeflow.org/v1) ``metadata.annotations.kubeflow-resource-stopped``
  set to the time of the stop (the Notebook controller then scales its StatefulSet to 0); undo
  removes the annotation.
- ``SCALE_TO_ZERO``: StatefulSet/Deployment ``spec.replicas`` -> 0 through the object's ``scale``
  subresource (an ``autoscaling/v1`` Scale: ``spec.replicas``, ``status.replicas``, the object's
  ``metadata.resourceVersion``), so the bot needs no right to change anything else of it; the
  previous count is kept in the undo record, which the caller stores before the write
  (``ClusterWriter.dry_run`` returns it); undo sets the count back. The plan reads the same
  paths of the object itself, so the object's JSON plans as its Scale does.
- ``DEACTIVATE_WORKLOAD``: Kueue Workload ``spec.active`` -> false (Kueue evicts it and does not
  requeue it), using the served version in the target's ``api_version``; undo sets it true.
- ``SCALE_TO_ZERO`` on a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1): ``spec.replicas`` (the
  number of groups; minimum 0) through its ``scale`` subresource (LWS v0.10.0
  leaderworkerset_types.go ``+kubebuilder:subresource:scale``), as for a StatefulSet.
- ``SUSPEND_RAYCLUSTER``: RayCluster (ray.io/v1) ``spec.suspend`` -> true (KubeRay deletes its
  head and worker pods, raycluster_types.go); undo puts back the value it had (unset or false).
- ``STOP_INFERENCE_SERVICE``: InferenceService (serving.kserve.io/v1beta1) annotation
  ``serving.kserve.io/stop`` -> ``"true"`` (KServe deletes the predictor's Deployment or Knative
  Service; kserve v0.20.0 pkg/constants StopAnnotationKey). ``minReplicas: 0`` is not used: with
  the HPA autoscaler KServe clamps it to 1. Undo puts back the annotation's earlier value, or
  removes it.
- ``RESIZE_GPUS``: Notebook (kubeflow.org/v1) or StatefulSet/Deployment (apps/v1): one pod
  template container's GPU resources swapped for the advised ones (:mod:`actions.remedy.resize`, which
  refuses when they are no longer what the advice saw); undo puts back the values that were there.
- ``STOP_JUPYTER_SERVER``: no Kubernetes object; ``current`` is the Hub's server model
  (``{"running": bool, "user_options": {...}}``) and the "patch" is the Hub request to send:
  ``{"stop": true}`` (DELETE) or ``{"start": {"user_options": ...}}`` (POST), so Restore starts
  the same named server with the options it ran with.

:func:`plan_apply` and :func:`plan_restore` decide from the object as read; the writers
(:mod:`actions.executors`, :mod:`actions.executors.in_memory`) only read, patch and report. Applying
twice leaves the same state and returns the same undo record; restoring twice is a no-op the
second time.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any, Mapping

from actions.model.findings import ActionVerb, ProposedAction
from actions.model.kube import (
    JUPYTER_SERVER_API_VERSION,
    JUPYTER_SERVER_KIND,
    KARPENTER_GROUP,
    KSERVE_API_VERSION,
    KUBEFLOW_GROUP,
    KUEUE_GROUP,
    LWS_API_VERSION,
    RAY_API_VERSION,
    ObjectRef,
)
from actions.model.times import format_time
from actions.remedy.resize import StaleAdvice, plan_resize_apply, plan_resize_restore

STOPPED_ANNOTATION = "kubeflow-resource-stopped"
KSERVE_STOP_ANNOTATION = "serving.kserve.io/stop"


class ExecutorError(Exception):
    """An action could not be applied or restored. ``target`` is the object; ``status`` the HTTP
    status when the API server refused (0 otherwise). ``uncertain``: the patch was sent and no
    answer came (a timeout, a dropped connection, a server error), so it may still land; the
    target must be read back before the outcome is known. ``stale``: the target no longer is what
    the action was proposed from (right-sizing advice whose GPU request changed): nothing was sent."""

    def __init__(
        self, message: str, target: ObjectRef | None = None, status: int = 0, *, uncertain: bool = False,
        stale: bool = False,
    ):
        super().__init__(message)
        self.target = target
        self.status = status
        self.uncertain = uncertain
        self.stale = stale


class ActionRefused(ExecutorError):
    """The API server refused the request an action sends (HTTP 400, 403 or 422: its validation,
    an admission webhook, or RBAC), so nothing changed. ``message`` is the server's own words,
    verbatim: the ``message`` of the ``Status`` it answered (k8s.io/apiserver v0.36
    ``pkg/admission/plugin/webhook/errors/statuserror.go``, ``ToStatusErr``:
    ``admission webhook "vstatefulset.kb.io" denied the request: spec.template.spec...: field is
    immutable``); ``reason`` the Status ``reason`` (``Forbidden``, ``Invalid``, ``BadRequest``;
    ``""`` when none); ``status`` the HTTP code. Raised by ``ClusterWriter.dry_run``."""

    def __init__(self, target: ObjectRef, status: int, message: str, reason: str = "", *, doing: str = "dry run"):
        super().__init__(f"{doing} of {target} refused: HTTP {status}: {message}", target, status)
        self.message = message
        self.reason = reason

    def detail(self) -> dict[str, object]:
        """The refusal as an audit event's detail: ``status``, ``reason``, ``message``."""
        return {"status": self.status, "reason": self.reason, "message": self.message}


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
        ActionVerb.SCALE_TO_ZERO: (t.kind in ("StatefulSet", "Deployment") and t.api_version == "apps/v1")
        or (t.kind == "LeaderWorkerSet" and t.api_version == LWS_API_VERSION),
        ActionVerb.DEACTIVATE_WORKLOAD: t.kind == "Workload"
        and group == KUEUE_GROUP
        and "/" in t.api_version,
        ActionVerb.SUSPEND_RAYCLUSTER: t.kind == "RayCluster" and t.api_version == RAY_API_VERSION,
        ActionVerb.STOP_INFERENCE_SERVICE: t.kind == "InferenceService" and t.api_version == KSERVE_API_VERSION,
        ActionVerb.STOP_JUPYTER_SERVER: t.kind == JUPYTER_SERVER_KIND
        and t.api_version == JUPYTER_SERVER_API_VERSION
        and "/" in t.name,
        ActionVerb.DELETE_NODECLAIM: t.kind == "NodeClaim" and group == KARPENTER_GROUP and not t.namespace,
        ActionVerb.HOLD_LOCALQUEUE: t.kind == "LocalQueue" and group == KUEUE_GROUP and "/" in t.api_version,
        ActionVerb.DRAIN_LOCALQUEUE: t.kind == "LocalQueue" and group == KUEUE_GROUP and "/" in t.api_version,
        ActionVerb.RESIZE_GPUS: action.resize is not None
        and ((t.kind in ("StatefulSet", "Deployment") and t.api_version == "apps/v1")
             or (t.kind == "Notebook" and t.api_version == f"{KUBEFLOW_GROUP}/v1")),
    }[action.verb]
    cluster_scoped = action.verb is ActionVerb.DELETE_NODECLAIM
    if not ok or not t.name or not (t.namespace or cluster_scoped):
        raise ExecutorError(f"cannot {action.verb.value} {t} ({t.api_version})", t)


def deletion_record(action: ProposedAction) -> dict:
    """What applying a deleting action (``DELETE_NODECLAIM``) leaves to remember: the verb and
    the target, and that nothing can be restored. Raises ExecutorError for any other verb."""
    check_target(action)
    if action.verb.restorable:
        raise ExecutorError(f"{action.verb.value} is a patch, not a deletion", action.target)
    return {"verb": action.verb.value, "target": _ref_json(action.target), "deleted": True}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.annotations`` of an object's JSON (empty when absent)."""
    return (obj.get("metadata") or {}).get("annotations") or {}


def pods_left_from_zero(obj: Mapping[str, Any]) -> int | None:
    """For a StatefulSet (or its Scale) scaled to zero (``spec.replicas`` 0), how many pods its
    controller still counts (``status.replicas``, which for a StatefulSet includes pods of the
    scale-down still terminating); None when it is not scaled to zero. Kueue's
    StatefulSet webhook refuses a scale-up from zero while that count is above 0 ("scaling down
    is still in progress"; kueue pkg/controller/jobs/statefulset/statefulset_webhook.go
    ValidateUpdate), but it is registered for ``statefulsets`` only, so a write to the ``scale``
    subresource skips it: the writer waits for that count itself."""
    if replicas_of(obj) != 0:
        return None
    return int(((obj.get("status") or {}).get("replicas")) or 0)


def replicas_of(obj: Mapping[str, Any]) -> int:
    """``spec.replicas`` of a StatefulSet's, Deployment's or Scale's JSON; 1 when unset, as the
    API server defaults it."""
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def plan_apply(action: ProposedAction, current: Mapping[str, Any], now: datetime) -> tuple[dict | None, dict]:
    """What applying ``action`` to the object ``current`` (its JSON as read) at ``now`` means.

    Returns ``(merge_patch, undo)``: the patch is ``None`` when the object is already in the
    applied state; ``undo`` is the record ``plan_restore`` takes (verb, target, and
    ``stopped_at`` / ``replicas_before`` / ``api_version`` by verb), read back from the object
    when it is already applied (a set already at zero records 0: the count it had before is
    only in the undo record stored before the write). Raises ExecutorError for a target the verb
    cannot act on or a deleting verb (see :func:`deletion_record`).
    """
    check_target(action)
    if not action.verb.restorable:
        raise ExecutorError(f"{action.verb.value} deletes {action.target}; there is no patch to plan", action.target)
    undo: dict[str, Any] = {"verb": action.verb.value, "target": _ref_json(action.target)}
    meta = current.get("metadata") or {}
    if action.verb is ActionVerb.STOP_NOTEBOOK:
        stopped = annotations_of(current).get(STOPPED_ANNOTATION)
        if stopped is not None:
            undo["stopped_at"] = stopped
            return None, undo
        undo["stopped_at"] = format_time(now.replace(microsecond=0))
        return {"metadata": {"annotations": {STOPPED_ANNOTATION: undo["stopped_at"]}}}, undo
    if action.verb is ActionVerb.SCALE_TO_ZERO:
        replicas = replicas_of(current)
        undo["replicas_before"] = replicas
        if replicas == 0:
            return None, undo
        patch: dict[str, Any] = {"spec": {"replicas": 0}}
        if meta.get("resourceVersion"):
            patch["metadata"] = {"resourceVersion": meta["resourceVersion"]}
        return patch, undo
    if action.verb is ActionVerb.SUSPEND_RAYCLUSTER:
        suspend = (current.get("spec") or {}).get("suspend")
        if suspend is True:
            undo["suspend_before"] = None
            return None, undo
        undo["suspend_before"] = suspend
        return {"spec": {"suspend": True}}, undo
    if action.verb is ActionVerb.STOP_INFERENCE_SERVICE:
        value = annotations_of(current).get(KSERVE_STOP_ANNOTATION)
        if value is not None and value.lower() == "true":  # KServe compares with strings.EqualFold
            undo["stop_before"] = None
            return None, undo
        undo["stop_before"] = value
        return {"metadata": {"annotations": {KSERVE_STOP_ANNOTATION: "true"}}}, undo
    if action.verb is ActionVerb.RESIZE_GPUS:
        try:
            return plan_resize_apply(action, current, undo), undo
        except StaleAdvice as e:
            raise ExecutorError(str(e), action.target, stale=True) from e
        except ValueError as e:
            raise ExecutorError(str(e), action.target) from e
    if action.verb is ActionVerb.STOP_JUPYTER_SERVER:
        undo["user_options"] = current.get("user_options") or {}
        if not current.get("running"):
            return None, undo
        return {"stop": True}, undo
    if action.verb.stop_policy is not None:
        policy = (current.get("spec") or {}).get("stopPolicy") or "None"
        if policy == action.verb.stop_policy:
            # Already held: whatever held it stays the owner of the policy it had before.
            undo["stop_policy_before"] = None
            return None, undo
        undo["stop_policy_before"] = policy
        return {"spec": {"stopPolicy": action.verb.stop_policy}}, undo
    # DEACTIVATE_WORKLOAD
    undo["api_version"] = action.target.api_version
    if (current.get("spec") or {}).get("active") is False:
        return None, undo
    return {"spec": {"active": False}}, undo


def _replica_count(value: Any, target: ObjectRef) -> int:
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise ExecutorError(f"{target}: the undo record's replica count {value!r} is not a number", target) from None
    if count < 0:
        raise ExecutorError(f"{target}: the undo record's replica count {value!r} is negative", target)
    return count


def plan_restore(action: ProposedAction, undo: Mapping[str, Any], current: Mapping[str, Any]) -> dict | None:
    """The merge patch that undoes ``action`` on ``current``, or ``None`` when nothing is left
    to undo.

    ``undo`` is what ``plan_apply`` returned. A set scaled up by someone else since the stop
    keeps their count. Raises ExecutorError when ``undo`` belongs to another action, holds no
    readable replica count for a set still at zero, or the action cannot be undone (a deletion).
    """
    check_target(action)
    if not action.verb.restorable:
        raise ExecutorError(
            f"{action.target} was deleted: nothing to restore (Karpenter provisions again for pods that need it)",
            action.target,
        )
    if undo.get("verb", action.verb.value) != action.verb.value or (
        "target" in undo and undo["target"] != _ref_json(action.target)
    ):
        raise ExecutorError(
            f"the undo record {undo!r} is not for {action.verb.value} {action.target}", action.target
        )
    annotations = annotations_of(current)
    if action.verb is ActionVerb.STOP_NOTEBOOK:
        if STOPPED_ANNOTATION not in annotations:
            return None
        return {"metadata": {"annotations": {STOPPED_ANNOTATION: None}}}
    if action.verb is ActionVerb.SCALE_TO_ZERO:
        if replicas_of(current) != 0:
            return None  # scaled up since, by someone else: their count stands
        if undo.get("replicas_before") is None:
            raise ExecutorError(f"{action.target}: the undo record holds no replica count to restore", action.target)
        count = _replica_count(undo["replicas_before"], action.target)
        if count == 0:
            return None
        patch: dict[str, Any] = {"spec": {"replicas": count}}
        resource_version = (current.get("metadata") or {}).get("resourceVersion")
        if resource_version:
            patch["metadata"] = {"resourceVersion": resource_version}
        return patch
    if action.verb is ActionVerb.SUSPEND_RAYCLUSTER:
        if (current.get("spec") or {}).get("suspend") is not True:
            return None
        return {"spec": {"suspend": undo.get("suspend_before")}}
    if action.verb is ActionVerb.STOP_INFERENCE_SERVICE:
        value = annotations.get(KSERVE_STOP_ANNOTATION)
        if value is None or value.lower() != "true":
            return None
        return {"metadata": {"annotations": {KSERVE_STOP_ANNOTATION: undo.get("stop_before")}}}
    if action.verb is ActionVerb.RESIZE_GPUS:
        try:
            return plan_resize_restore(action, undo, current)
        except ValueError as e:
            raise ExecutorError(str(e), action.target) from e
    if action.verb is ActionVerb.STOP_JUPYTER_SERVER:
        if current.get("running") or current.get("pending"):
            return None
        return {"start": {"user_options": undo.get("user_options") or {}}}
    if action.verb.stop_policy is not None:
        # Someone else changed the policy since the hold: theirs stands. A hold the bot did not
        # make (stop_policy_before None) is not the bot's to lift.
        if (current.get("spec") or {}).get("stopPolicy") != action.verb.stop_policy or not undo.get("stop_policy_before"):
            return None
        return {"spec": {"stopPolicy": undo["stop_policy_before"]}}
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
