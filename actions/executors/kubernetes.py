"""Applying an approved ``ProposedAction`` to a live Kubernetes cluster, and undoing it.

What to patch is decided by :mod:`actions.remedy.patches` (pure); :class:`KubernetesWriter` reads the
target, sends the merge patch and reports. Each verb's patch and its inverse are described there.
"""

from __future__ import annotations

import functools
import json
from datetime import datetime
from typing import Any, Callable

import kubernetes.client
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from actions.model.findings import ProposedAction
from actions.model.kube import ObjectRef
from actions.remedy.patches import ExecutorError, check_target, deletion_record, plan_apply, plan_restore

MERGE_PATCH = "application/merge-patch+json"
# kind -> plural of the custom resources the executors patch (group and version come from the
# target's api_version).
CUSTOM_PLURALS = {
    "Notebook": "notebooks",
    "Workload": "workloads",
    "LeaderWorkerSet": "leaderworkersets",
    "RayCluster": "rayclusters",
    "InferenceService": "inferenceservices",
}

# A scale patch carries the resourceVersion it was computed from; on a conflict it is recomputed.
_CONFLICT_ATTEMPTS = 3
_MAY_HAVE_LANDED = frozenset({500, 504})
# The request never left: no connection could be made.
_NOT_SENT = (urllib3.exceptions.ConnectTimeoutError, urllib3.exceptions.NewConnectionError)


def _api_message(e: ApiException) -> str:
    body = e.body.decode("utf-8", "replace") if isinstance(e.body, bytes) else e.body
    try:
        return str(json.loads(body)["message"])
    except (TypeError, ValueError, KeyError):
        return str(e.reason or body or e)


def _finish(response: urllib3.BaseHTTPResponse) -> None:
    """Read a write's answer to the end, then give its connection back to the pool: a body left
    unread on a kept-alive connection is read as the next request's status line (urllib3 then
    sends that request again)."""
    try:
        response.drain_conn()
    finally:
        response.release_conn()


class KubernetesWriter:
    """Applies actions with real PATCH requests (``application/merge-patch+json``) through the
    ``kubernetes`` client, and the one deleting action with a DELETE. Needs RBAC ``get`` and
    ``patch`` on notebooks.kubeflow.org, statefulsets, deployments, workloads.kueue.x-k8s.io,
    leaderworkersets.leaderworkerset.x-k8s.io, rayclusters.ray.io and
    inferenceservices.serving.kserve.io, and ``delete`` on nodeclaims.karpenter.sh.

    ``timeout_seconds`` bounds each request (connect and read), so an API server that hangs
    cannot hold an action, or a shutdown waiting for it, past its grace period.
    """

    def __init__(self, api_client: kubernetes.client.ApiClient, timeout_seconds: float = 10):
        self._client = api_client
        self._timeout = timeout_seconds

    # Built on first use: the client's generated API classes cost a second to import, and most
    # processes (a sweep that acts on nothing, `check`) never send a patch.
    @functools.cached_property
    def _apps(self) -> kubernetes.client.AppsV1Api:
        return kubernetes.client.AppsV1Api(self._client)

    @functools.cached_property
    def _custom(self) -> kubernetes.client.CustomObjectsApi:
        return kubernetes.client.CustomObjectsApi(self._client)

    def apply(self, action: ProposedAction, now: datetime) -> dict:
        """See ``ClusterWriter.apply``. Raises ExecutorError("<target> no longer exists") on 404
        and ExecutorError with the API's message on any other refusal. Deleting a NodeClaim that
        is already gone counts as done."""
        check_target(action)
        if not action.verb.restorable:
            self._delete(action.target)
            return deletion_record(action)
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
        if t.kind == "NodeClaim":  # cluster-scoped, never patched: only read back after a delete
            return (
                lambda: self._custom.get_cluster_custom_object(group, version, "nodeclaims", t.name, **raw),
                lambda body: None,
            )
        plural = CUSTOM_PLURALS[t.kind]
        return (
            lambda: self._custom.get_namespaced_custom_object(group, version, t.namespace, plural, t.name, **raw),
            lambda body: self._custom.patch_namespaced_custom_object(
                group, version, t.namespace, plural, t.name, body, **patching
            ),
        )

    def _delete(self, target: ObjectRef) -> None:
        group, version = target.api_version.split("/", 1)
        try:
            _finish(self._custom.delete_cluster_custom_object(
                group, version, "nodeclaims", target.name, _preload_content=False, _request_timeout=self._timeout
            ))
        except ApiException as e:
            if e.status == 404:
                return  # already gone: what the deletion wanted
            error = self._error(target, "apply", e)
            error.uncertain = e.status in _MAY_HAVE_LANDED
            raise error from e
        except _NOT_SENT as e:
            raise ExecutorError(f"apply {target}: cannot reach the Kubernetes API: {e}", target) from e
        except urllib3.exceptions.MaxRetryError as e:
            raise ExecutorError(
                f"apply {target}: no answer from the Kubernetes API: {e.reason}", target,
                uncertain=not isinstance(e.reason, _NOT_SENT),
            ) from e
        except (OSError, urllib3.exceptions.HTTPError) as e:
            raise ExecutorError(
                f"apply {target}: no answer from the Kubernetes API within {self._timeout:g} s: {e}",
                target, uncertain=True,
            ) from e

    def current(self, target: ObjectRef) -> dict | None:
        """See ``ClusterWriter.current``: one GET, bounded by ``timeout_seconds``."""
        try:
            return self._get(target, "read")
        except ExecutorError as e:
            if e.status == 404:
                return None
            raise

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
        """True when patched; False on a resourceVersion conflict worth retrying. Raises
        ExecutorError, ``uncertain`` when the patch may have reached the API server unanswered."""
        _, patch = self._endpoints(target)
        try:
            _finish(patch(body))
            return True
        except ApiException as e:
            if e.status == 409 and not last:
                return False
            error = self._error(target, doing, e)
            # 500 and 504 are the API server's own failures and timeouts: the write may have
            # been committed before it gave up answering.
            error.uncertain = e.status in _MAY_HAVE_LANDED
            raise error from e
        except _NOT_SENT as e:
            raise ExecutorError(f"{doing} {target}: cannot reach the Kubernetes API: {e}", target) from e
        except urllib3.exceptions.MaxRetryError as e:
            sent = not isinstance(e.reason, _NOT_SENT)
            raise ExecutorError(
                f"{doing} {target}: no answer from the Kubernetes API: {e.reason}", target, uncertain=sent
            ) from e
        except (OSError, urllib3.exceptions.HTTPError) as e:
            # A read timeout or a dropped connection after the request went out.
            raise ExecutorError(
                f"{doing} {target}: no answer from the Kubernetes API within {self._timeout:g} s: {e}",
                target, uncertain=True,
            ) from e

    @staticmethod
    def _error(target: ObjectRef, doing: str, e: ApiException) -> ExecutorError:
        if e.status == 404:
            suffix = "" if doing == "apply" else "; nothing to restore"
            return ExecutorError(f"{target} no longer exists{suffix}", target, 404)
        return ExecutorError(
            f"{doing} {target} failed: HTTP {e.status}: {_api_message(e)}", target, e.status or 0
        )
