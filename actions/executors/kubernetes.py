"""Applying an approved ``ProposedAction`` to a live Kubernetes cluster, undoing it, and trying it
first as a server-side dry run.

What to patch is decided by :mod:`actions.remedy.patches` (pure); :class:`KubernetesWriter` reads the
target, sends the merge patch and reports. Each verb's patch and its inverse are described there.
"""

from __future__ import annotations

import functools
import json
import time
from datetime import datetime
from typing import Any, Callable

import kubernetes.client
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from actions.model.findings import ActionVerb, ProposedAction
from actions.model.kube import ObjectRef
from actions.remedy.patches import (
    ActionRefused,
    ExecutorError,
    check_target,
    deletion_record,
    plan_apply,
    plan_restore,
    pods_left_from_zero,
)

MERGE_PATCH = "application/merge-patch+json"
# kind -> plural of the custom resources the executors patch (group and version come from the
# target's api_version).
CUSTOM_PLURALS = {
    "Notebook": "notebooks",
    "Workload": "workloads",
    "LeaderWorkerSet": "leaderworkersets",
    "RayCluster": "rayclusters",
    "InferenceService": "inferenceservices",
    "LocalQueue": "localqueues",
}

# A scale patch carries the resourceVersion it was computed from; on a conflict it is recomputed.
_CONFLICT_ATTEMPTS = 3
_MAY_HAVE_LANDED = frozenset({500, 504})
# The request never left: no connection could be made.
_NOT_SENT = (urllib3.exceptions.ConnectTimeoutError, urllib3.exceptions.NewConnectionError)
# The API server refusing the request itself: its validation (422 Invalid, 400 BadRequest), an
# admission webhook (k8s.io/apiserver v0.36 webhook/errors/statuserror.go ToStatusErr keeps the
# webhook's code, at least 400; controller-runtime v0.24 admission.Denied answers 403 Forbidden)
# or RBAC (403).
_REFUSED = frozenset({400, 403, 422})
_FORBIDDEN = 403
# The value of the dryRun query parameter (k8s.io/apimachinery v0.36 meta/v1 types.go DryRunAll,
# the only one ValidateDryRun accepts).
DRY_RUN_ALL = "All"
_DRY_RUN = "dry run"


def _api_status(e: ApiException) -> dict:
    body = e.body.decode("utf-8", "replace") if isinstance(e.body, bytes) else e.body
    try:
        status = json.loads(body)
    except (TypeError, ValueError):
        return {}
    return status if isinstance(status, dict) else {}


def _api_message(e: ApiException) -> str:
    message = _api_status(e).get("message")
    if message is not None:
        return str(message)
    body = e.body.decode("utf-8", "replace") if isinstance(e.body, bytes) else e.body
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
    ``kubernetes`` client, and the one deleting action with a DELETE. What each verb needs of
    RBAC: ``get`` and ``patch`` on the ``scale`` subresource of statefulsets, deployments and
    leaderworkersets.leaderworkerset.x-k8s.io (scale to zero); on notebooks.kubeflow.org,
    workloads.kueue.x-k8s.io, rayclusters.ray.io and inferenceservices.serving.kserve.io
    themselves; on statefulsets and deployments themselves only to right-size a pod template
    (deploy/components/resize); ``delete`` on nodeclaims.karpenter.sh. A dry run
    (:meth:`dry_run`) is the same ``patch`` or ``delete`` to RBAC, so it needs nothing more.

    ``timeout_seconds`` bounds each request (connect and read), so an API server that hangs
    cannot hold an action, or a shutdown waiting for it, past its grace period.

    A Restore that scales a StatefulSet up from zero while its controller still counts pods of
    the scale-down (:func:`~actions.remedy.patches.pods_left_from_zero`) waits for them, reading
    again every ``poll_seconds`` for up to ``from_zero_wait_seconds``, then gives up having
    changed nothing: Kueue's StatefulSet webhook refuses such a scale-up, and a write to the
    ``scale`` subresource does not pass it. ``sleep`` and ``monotonic`` are the clock it waits by.
    """

    def __init__(
        self, api_client: kubernetes.client.ApiClient, timeout_seconds: float = 10, *,
        from_zero_wait_seconds: float = 30.0, poll_seconds: float = 2.0,
        sleep: Callable[[float], None] = time.sleep, monotonic: Callable[[], float] = time.monotonic,
    ):
        self._client = api_client
        self._timeout = timeout_seconds
        self._from_zero_wait = from_zero_wait_seconds
        self._poll = poll_seconds
        self._sleep, self._monotonic = sleep, monotonic

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
            current = self._get(action, "apply")
            patch, undo = plan_apply(action, current, now)
            if patch is None or self._patch(action, patch, "apply", last=attempt == _CONFLICT_ATTEMPTS - 1):
                return undo
        raise AssertionError("unreachable: the last attempt raises")

    def dry_run(self, action: ProposedAction, now: datetime) -> dict:
        """See ``ClusterWriter.dry_run``: one GET, then the PATCH ``apply`` would send, planned
        from what was read (or the NodeClaim's DELETE), with the query parameter
        ``dryRun=All`` (the kubernetes client's ``dry_run="All"``): the API server runs its
        validation and admission webhooks (those declaring ``sideEffects: None``, as Kueue's
        do) and persists nothing. A resourceVersion conflict is read and planned again, as in
        ``apply``; a target already in the applied state gets no PATCH. Returns the undo record
        planned. Raises ActionRefused (``message`` the Status message verbatim, ``status``
        400/403/422) when the server refuses, RBAC refusing the read included,
        ExecutorError("<target> no longer exists", status 404) when the target is gone (a
        NodeClaim too), ExecutorError for other answers and transport failures, never
        ``uncertain``."""
        check_target(action)
        if not action.verb.restorable:
            self._delete(action.target, dry_run=True)
            return deletion_record(action)
        for attempt in range(_CONFLICT_ATTEMPTS):
            current = self._get(action, _DRY_RUN)
            patch, undo = plan_apply(action, current, now)
            if patch is None or self._patch(
                action, patch, _DRY_RUN, last=attempt == _CONFLICT_ATTEMPTS - 1, dry_run=True
            ):
                return undo
        raise AssertionError("unreachable: the last attempt raises")

    def restore(self, action: ProposedAction, undo: dict, now: datetime) -> None:
        """See ``ClusterWriter.restore``. A StatefulSet's scale-up from zero waits for the
        scale-down's pods (the class docstring). Raises ExecutorError when the object is gone,
        the API refuses, or pods of the scale-down are still there after
        ``from_zero_wait_seconds`` (saying how many; nothing was changed)."""
        check_target(action)
        give_up = self._monotonic() + self._from_zero_wait
        conflicts = 0
        while True:
            current = self._get(action, "restore")
            patch = plan_restore(action, undo, current)
            if patch is None:
                return
            left = pods_left_from_zero(current) if action.target.kind == "StatefulSet" else None
            if left:
                if self._monotonic() >= give_up:
                    raise ExecutorError(
                        f"restore {action.target}: {left} pod(s) of the scale-down were still terminating after "
                        f"{self._from_zero_wait:g} s, and Kueue refuses a scale-up from zero until they are gone; "
                        "nothing was changed. Press Restore again once they are gone", action.target,
                    )
                self._sleep(self._poll)
                continue
            if self._patch(action, patch, "restore", last=conflicts == _CONFLICT_ATTEMPTS - 1):
                return
            conflicts += 1

    def current(self, action: ProposedAction) -> dict | None:
        """See ``ClusterWriter.current``: one GET of what ``action`` writes (for a scale to zero,
        the ``scale`` subresource), bounded by ``timeout_seconds``."""
        try:
            return self._get(action, "read")
        except ExecutorError as e:
            if e.status == 404:
                return None
            raise

    def _endpoints(self, action: ProposedAction) -> tuple[Callable[[], Any], Callable[..., Any]]:
        """``(get, patch)`` of what ``action`` writes: ``patch(body, **options)`` passes
        ``options`` (``dry_run``) on. A scale to zero reads and writes the ``scale``
        subresource, every other verb the object itself."""
        t = action.target
        raw = {"_preload_content": False, "_request_timeout": self._timeout}
        patching = {**raw, "_content_type": MERGE_PATCH}
        scale = action.verb is ActionVerb.SCALE_TO_ZERO
        if t.kind in ("StatefulSet", "Deployment"):
            kind = "stateful_set" if t.kind == "StatefulSet" else "deployment"
            suffix = "_scale" if scale else ""
            read = getattr(self._apps, f"read_namespaced_{kind}{suffix}")
            write = getattr(self._apps, f"patch_namespaced_{kind}{suffix}")
            return (
                lambda: read(t.name, t.namespace, **raw),
                lambda body, **o: write(t.name, t.namespace, body, **patching, **o),
            )
        group, version = t.api_version.split("/", 1)
        if t.kind == "NodeClaim":  # cluster-scoped, never patched: only read back after a delete
            return (
                lambda: self._custom.get_cluster_custom_object(group, version, "nodeclaims", t.name, **raw),
                lambda body, **o: None,
            )
        plural = CUSTOM_PLURALS[t.kind]
        if scale:
            return (
                lambda: self._custom.get_namespaced_custom_object_scale(group, version, t.namespace, plural, t.name, **raw),
                lambda body, **o: self._custom.patch_namespaced_custom_object_scale(
                    group, version, t.namespace, plural, t.name, body, **patching, **o
                ),
            )
        return (
            lambda: self._custom.get_namespaced_custom_object(group, version, t.namespace, plural, t.name, **raw),
            lambda body, **o: self._custom.patch_namespaced_custom_object(
                group, version, t.namespace, plural, t.name, body, **patching, **o
            ),
        )

    def _delete(self, target: ObjectRef, *, dry_run: bool = False) -> None:
        """DELETE the NodeClaim (``dryRun=All`` when ``dry_run``); already gone is done, except
        in a dry run, which says it no longer exists. Raises ExecutorError (ActionRefused in a
        dry run refused)."""
        group, version = target.api_version.split("/", 1)
        doing = _DRY_RUN if dry_run else "apply"
        options = {"dry_run": DRY_RUN_ALL} if dry_run else {}
        try:
            self._send(target, doing, lambda: self._custom.delete_cluster_custom_object(
                group, version, "nodeclaims", target.name, _preload_content=False,
                _request_timeout=self._timeout, **options,
            ), dry_run=dry_run)
        except ApiException as e:
            if e.status == 404 and not dry_run:
                return  # already gone: what the deletion wanted
            raise self._refusal(target, doing, e, dry_run=dry_run) from e

    def _get(self, action: ProposedAction, doing: str) -> dict:
        """What ``action`` writes, as read now. In a dry run, RBAC refusing the read is the
        action refused (ActionRefused): the bot may not touch the target at all."""
        get, _ = self._endpoints(action)
        target = action.target
        try:
            response = get()
            try:
                return json.loads(response.data)
            finally:
                response.release_conn()
        except ApiException as e:
            if doing == _DRY_RUN and e.status == _FORBIDDEN:
                raise ActionRefused(target, e.status, _api_message(e), str(_api_status(e).get("reason") or "")) from e
            raise self._error(target, doing, e) from e
        except ValueError as e:
            raise ExecutorError(f"{doing} {target}: the API server sent malformed JSON: {e}", target) from e
        except (OSError, urllib3.exceptions.HTTPError) as e:
            raise ExecutorError(f"{doing} {target}: cannot reach the Kubernetes API: {e}", target) from e

    def _patch(self, action: ProposedAction, body: dict, doing: str, *, last: bool, dry_run: bool = False) -> bool:
        """True when patched (in a dry run: accepted); False on a resourceVersion conflict worth
        retrying. Raises ExecutorError, ``uncertain`` when the patch may have reached the API
        server unanswered (never in a dry run), and ActionRefused when a dry run is refused."""
        _, patch = self._endpoints(action)
        target = action.target
        options = {"dry_run": DRY_RUN_ALL} if dry_run else {}
        try:
            self._send(target, doing, lambda: patch(body, **options), dry_run=dry_run)
            return True
        except ApiException as e:
            if e.status == 409 and not last:
                return False
            raise self._refusal(target, doing, e, dry_run=dry_run) from e

    def _send(self, target: ObjectRef, doing: str, send: Callable[[], Any], *, dry_run: bool) -> None:
        """Send one write and :func:`_finish` its answer. An ApiException (the server's answer) goes to the caller; a transport failure
        raises ExecutorError, ``uncertain`` when the request may have reached the API server
        unanswered and was not a dry run."""
        try:
            _finish(send())
        except _NOT_SENT as e:
            raise ExecutorError(f"{doing} {target}: cannot reach the Kubernetes API: {e}", target) from e
        except urllib3.exceptions.MaxRetryError as e:
            sent = not isinstance(e.reason, _NOT_SENT)
            raise ExecutorError(
                f"{doing} {target}: no answer from the Kubernetes API: {e.reason}", target,
                uncertain=sent and not dry_run,
            ) from e
        except (OSError, urllib3.exceptions.HTTPError) as e:
            # A read timeout or a dropped connection after the request went out.
            raise ExecutorError(
                f"{doing} {target}: no answer from the Kubernetes API within {self._timeout:g} s: {e}",
                target, uncertain=not dry_run,
            ) from e

    def _refusal(self, target: ObjectRef, doing: str, e: ApiException, *, dry_run: bool) -> ExecutorError:
        """The error for the API server's answer ``e`` to a write: ActionRefused for a dry run it
        refused, else ExecutorError, ``uncertain`` on 500 and 504 (the API server's own failures
        and timeouts: a write may have been committed before it gave up answering)."""
        if dry_run and e.status in _REFUSED:
            status = _api_status(e)
            return ActionRefused(target, e.status, _api_message(e), str(status.get("reason") or ""))
        error = self._error(target, doing, e)
        error.uncertain = not dry_run and e.status in _MAY_HAVE_LANDED
        return error

    @staticmethod
    def _error(target: ObjectRef, doing: str, e: ApiException) -> ExecutorError:
        if e.status == 404:
            suffix = "; nothing to restore" if doing in ("restore", "read") else ""
            return ExecutorError(f"{target} no longer exists{suffix}", target, 404)
        return ExecutorError(
            f"{doing} {target} failed: HTTP {e.status}: {_api_message(e)}", target, e.status or 0
        )
