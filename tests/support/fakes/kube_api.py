"""A Kubernetes API server faked at the wire: real HTTP on 127.0.0.1, real JSON, real paths.

The real ``kubernetes`` client is pointed at it (``FakeKubeApi.api_client()``), so everything the
bot's code does on the way (URL building, query parameters, content types, paging, error
decoding) is exercised as in production. It holds objects in memory and serves:

- discovery: ``GET /apis/GROUP`` (an ``APIGroup`` with the served versions, preferred first);
- lists, cluster-wide or in one namespace, with ``limit``/``continue`` paging and a
  ``status.phase`` field selector (pods), as ``XxxList`` JSON with ``metadata.resourceVersion``;
- ``GET``/``PATCH``/``PUT``/``DELETE`` of one object and ``POST`` to a collection; PATCH takes
  ``application/merge-patch+json`` (RFC 7386) and, for the flat fields tests use,
  ``application/strategic-merge-patch+json`` as the same; a ``metadata.resourceVersion`` in a
  patch or PUT is a precondition (409 Conflict when stale);
- ``Status`` JSON errors (404 NotFound, 409 Conflict/AlreadyExists, 415, 400, injected ones);
- server-side dry runs: PATCH and DELETE with ``dryRun=All`` are checked as usual (404, the
  resourceVersion precondition, MicroTimes, denials) and answered with the object as it would
  be, and nothing is stored, bumped or watched; any other ``dryRun`` value is a 422 on the
  ``PatchOptions``/``DeleteOptions`` (k8s.io/apimachinery v0.36.2 pkg/apis/meta/v1/types.go
  ``DryRun``, validation/validation.go ``ValidateDryRun``; k8s.io/apiserver v0.36.2
  pkg/endpoints/handlers/patch.go and delete.go answer ``errors.NewInvalid`` of them);
- validating admission webhooks that deny (:meth:`FakeKubeApi.deny`), dry runs and real
  requests alike, answered with the Status the API server makes of a denial;
- watches (``?watch=1&resourceVersion=RV``): every change since RV as ``WatchEvent`` JSON lines
  over a chunked response (ADDED/MODIFIED/DELETED; an object leaving a field selector is DELETED,
  one entering it ADDED), ``BOOKMARK`` events every ``bookmark_seconds`` and at the end when
  ``allowWatchBookmarks=true``, closed after ``timeoutSeconds``; a watch from an RV older than
  the last :meth:`FakeKubeApi.compact`, and every watch open at the time, gets an ``ERROR`` event
  with a 410 ``Expired`` Status, as the API
  server's watch cache answers (Kubernetes API concepts, "Efficient detection of changes" and
  "Watch bookmarks"; apimachinery pkg/apis/meta/v1 watch.go ``WatchEvent``);
  :meth:`FakeKubeApi.drop_watches` cuts the open ones mid-stream.

Every request is recorded (method, path, query, parsed body, content type) for assertions.
Resource types live in one table (``RESOURCE_TYPES``); serving a new type is one more entry there.
coordination.k8s.io Leases are served for leader election: a PUT carrying a stale
``metadata.resourceVersion`` is refused with 409, and MicroTime fields (``spec.acquireTime``,
``spec.renewTime``) without exactly six fractional digits with 400, as the real API server does.

The JSON merge patch here is written independently of the bot's own, on purpose: the fake is the
oracle the bot's patches are checked against.
"""

from __future__ import annotations

import base64
import bisect
import copy
import json
import re
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Iterator, Mapping
from urllib.parse import parse_qs, urlsplit

import kubernetes.client


@dataclass(frozen=True)
class ResourceType:
    """One served resource: ``group`` is ``""`` for the core API; ``versions`` preferred first."""

    group: str
    plural: str
    kind: str
    namespaced: bool
    versions: tuple[str, ...]
    # Built-in types' list items carry no kind/apiVersion on the wire; custom resources' do.
    custom: bool = False
    # Dotted paths of MicroTime fields: the API server refuses values without exactly six
    # fractional digits (layout 2006-01-02T15:04:05.000000Z07:00), so the fake does too.
    micro_time_fields: tuple[str, ...] = ()
    # The ``scale`` subresource, where served: the dotted path of its status replicas and of its
    # label selector (a string field, or ``spec.selector`` made a string as built-ins do).
    scale: tuple[str, str] | None = None


RESOURCE_TYPES: tuple[ResourceType, ...] = (
    ResourceType("", "pods", "Pod", True, ("v1",)),
    ResourceType("", "nodes", "Node", False, ("v1",)),
    ResourceType("", "namespaces", "Namespace", False, ("v1",)),
    ResourceType("apps", "statefulsets", "StatefulSet", True, ("v1",), scale=("status.replicas", "spec.selector")),
    ResourceType("apps", "deployments", "Deployment", True, ("v1",), scale=("status.replicas", "spec.selector")),
    ResourceType("kubeflow.org", "notebooks", "Notebook", True, ("v1",), custom=True),
    ResourceType("kueue.x-k8s.io", "workloads", "Workload", True, ("v1beta2", "v1beta1"), custom=True),
    ResourceType("kueue.x-k8s.io", "localqueues", "LocalQueue", True, ("v1beta2", "v1beta1"), custom=True),
    ResourceType("kueue.x-k8s.io", "clusterqueues", "ClusterQueue", False, ("v1beta2", "v1beta1"), custom=True),
    ResourceType("kueue.x-k8s.io", "resourceflavors", "ResourceFlavor", False, ("v1beta2", "v1beta1"), custom=True),
    # The owners of GPU pods, in the versions their upstream serves (kueue v0.19.2 integrations, JobSet v0.12.0, Trainer v2.3.0, KubeRay v1.7.0, LWS v0.10.0,
    # training-operator v1.9.0, mpi-operator v0.8.0, AppWrapper v1.2.1, KServe v0.20.0).
    ResourceType("apps", "replicasets", "ReplicaSet", True, ("v1",)),
    ResourceType("batch", "jobs", "Job", True, ("v1",)),
    ResourceType("jobset.x-k8s.io", "jobsets", "JobSet", True, ("v1alpha2",), custom=True),
    ResourceType("trainer.kubeflow.org", "trainjobs", "TrainJob", True, ("v1alpha1",), custom=True),
    ResourceType("ray.io", "rayjobs", "RayJob", True, ("v1",), custom=True),
    ResourceType("ray.io", "rayclusters", "RayCluster", True, ("v1",), custom=True),
    ResourceType("ray.io", "rayservices", "RayService", True, ("v1",), custom=True),
    ResourceType("kubeflow.org", "pytorchjobs", "PyTorchJob", True, ("v1",), custom=True),
    ResourceType("kubeflow.org", "tfjobs", "TFJob", True, ("v1",), custom=True),
    ResourceType("kubeflow.org", "paddlejobs", "PaddleJob", True, ("v1",), custom=True),
    ResourceType("kubeflow.org", "xgboostjobs", "XGBoostJob", True, ("v1",), custom=True),
    ResourceType("kubeflow.org", "jaxjobs", "JAXJob", True, ("v1",), custom=True),
    ResourceType("kubeflow.org", "mpijobs", "MPIJob", True, ("v2beta1",), custom=True),
    ResourceType("workload.codeflare.dev", "appwrappers", "AppWrapper", True, ("v1beta2",), custom=True),
    # LWS v0.10.0 leaderworkerset_types.go: +kubebuilder:subresource:scale:specpath=.spec.replicas,
    # statuspath=.status.replicas,selectorpath=.status.hpaPodSelector
    ResourceType("leaderworkerset.x-k8s.io", "leaderworkersets", "LeaderWorkerSet", True, ("v1",), custom=True,
                 scale=("status.replicas", "status.hpaPodSelector")),
    ResourceType("serving.kserve.io", "inferenceservices", "InferenceService", True, ("v1beta1",), custom=True),
    # Karpenter v1 (kubernetes-sigs/karpenter pkg/apis/v1): NodeClaims and NodePools are cluster-scoped.
    ResourceType("karpenter.sh", "nodeclaims", "NodeClaim", False, ("v1",), custom=True),
    ResourceType("karpenter.sh", "nodepools", "NodePool", False, ("v1",), custom=True),
    ResourceType(
        "coordination.k8s.io", "leases", "Lease", True, ("v1",),
        micro_time_fields=("spec.acquireTime", "spec.renewTime"),
    ),
)

_MICRO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})")

VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_VERSIONS = ("v1beta2", "v1beta1")

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


@dataclass(frozen=True)
class RecordedRequest:
    """What the fake received: ``query`` maps each parameter to its (last) value; ``body`` is the
    parsed JSON body or ``None``; ``authorization`` the Authorization header, if any."""

    method: str
    path: str
    query: Mapping[str, str]
    body: Any
    content_type: str | None
    authorization: str | None = None


@dataclass
class _Injected:
    method: str
    path: str
    status: int
    reason: str
    message: str
    times: int
    dry_run: bool = False


@dataclass
class _Denial:
    kind: str
    namespace: str
    name: str
    group: str | None
    webhook: str
    message: str
    when: Callable[[Any], bool] | None
    code: int
    reason: str


class ApiError(Exception):
    """An error the fake answers with, as a ``Status`` object."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details or {}

    def status(self) -> dict:
        """The ``Status`` JSON (meta/v1 types.go: ``details`` is omitempty, so absent when empty)."""
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": self.details,
            "code": self.code,
        }
        if not self.details:
            del status["details"]
        return status


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch of ``patch`` onto ``target`` (neither is modified)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass
class _Route:
    rtype: ResourceType
    version: str
    namespace: str | None
    name: str | None
    subresource: str = ""


@dataclass(frozen=True)
class _Change:
    """One change for watchers: the object before (None when created) and after (None when deleted)."""

    resource_version: int
    key: tuple[str, str, str, str]
    old: dict | None
    new: dict | None


@dataclass
class _Store:
    objects: dict[tuple[str, str, str, str], dict] = field(default_factory=dict)
    resource_version: int = 1000
    # Every change, oldest first; a watch from before ``oldest`` is told its version expired.
    changes: list[_Change] = field(default_factory=list)
    oldest: int = 0


class _Dropped(Exception):
    """The fake cuts a watch's connection without ending the response."""


class FakeKubeApi:
    """The fake API server. Use as a context manager (or ``start()``/``stop()``).

    ``objects`` are Kubernetes objects with ``apiVersion`` and ``kind`` (e.g. the items of a
    ``kubectl get -o json`` List). ``kueue_versions`` are the served Kueue versions, preferred
    first (``()`` means Kueue is not installed); ``kubeflow`` says whether Notebooks are served.
    """

    def __init__(
        self,
        objects: Iterable[Mapping[str, Any]] = (),
        *,
        kueue_versions: tuple[str, ...] = ("v1beta2", "v1beta1"),
        kubeflow: bool = True,
    ):
        types = []
        for t in RESOURCE_TYPES:
            if t.group == "kueue.x-k8s.io":
                if not kueue_versions:
                    continue
                t = ResourceType(t.group, t.plural, t.kind, t.namespaced, tuple(kueue_versions), t.custom)
            if t.group == "kubeflow.org" and not kubeflow:
                continue
            types.append(t)
        self.types: dict[tuple[str, str], ResourceType] = {(t.group, t.plural): t for t in types}
        self._by_kind = {(t.group, t.kind): t for t in RESOURCE_TYPES}
        self._store = _Store()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._drops = 0
        self._closing = False
        # How often an idle watch that allows them gets a BOOKMARK (the API server: about a minute).
        self.bookmark_seconds = 1.0
        self._requests: list[RecordedRequest] = []
        self._injected: list[_Injected] = []
        self._denials: list[_Denial] = []
        self._stalls: list[list] = []  # [method, path, seconds, times left, times, dry runs only]
        self._list_cache: tuple[tuple, list, list] = ((), [], [])
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        for obj in objects:
            self.add(obj)

    @classmethod
    def from_list_json(cls, data: bytes, **kwargs: Any) -> "FakeKubeApi":
        """A fake holding the items of a ``List`` JSON document (a kubectl dump)."""
        return cls(json.loads(data)["items"], **kwargs)

    # --- life cycle ---------------------------------------------------------------------------------

    def start(self) -> "FakeKubeApi":
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-kube-api",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            self._closing = True
            self._changed.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeKubeApi":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def api_client(self) -> kubernetes.client.ApiClient:
        """A real ``kubernetes`` ApiClient talking to this fake."""
        cfg = kubernetes.client.Configuration()
        cfg.host = self.url
        return kubernetes.client.ApiClient(configuration=cfg)

    # --- state for tests ----------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def add(self, obj: Mapping[str, Any]) -> None:
        """Store ``obj`` (needs ``apiVersion``, ``kind``, ``metadata.name``), replacing any object
        with the same identity."""
        group = obj["apiVersion"].split("/", 1)[0] if "/" in obj["apiVersion"] else ""
        rtype = self._by_kind.get((group, obj["kind"]))
        if rtype is None:
            raise ValueError(f"the fake serves no {obj['kind']} in group {group!r}")
        stored = copy.deepcopy(dict(obj))
        meta = stored.setdefault("metadata", {})
        with self._lock:
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", _now())
            meta["resourceVersion"] = self._bump()
            key = self._key(rtype, meta.get("namespace", ""), meta["name"])
            self._record(key, self._store.objects.get(key), stored)
            self._store.objects[key] = stored

    def delete(self, kind: str, namespace: str, name: str, group: str = "") -> None:
        """Remove the stored object, as a DELETE would; raises KeyError when there is none."""
        rtype = self._by_kind[(group, kind)]
        with self._lock:
            key = self._key(rtype, namespace, name)
            old = self._store.objects.pop(key)
            self._bump()
            self._record(key, old, None)

    def compact(self) -> None:
        """Forget the history of changes up to now, as etcd's compaction does: a watch from an
        older resourceVersion is answered with a 410 Expired ERROR event, and so are the open ones
        (as the API server's watch cache tells watchers it can no longer serve)."""
        with self._lock:
            self._bump()
            self._store.oldest = self._store.resource_version
            self._changed.notify_all()

    def drop_watches(self) -> None:
        """Cut every open watch's connection mid-stream (no final chunk), as a load balancer or a
        restarting API server does."""
        with self._lock:
            self._drops += 1
            self._changed.notify_all()

    @property
    def resource_version(self) -> str:
        """The store's current resourceVersion."""
        with self._lock:
            return str(self._store.resource_version)

    def get(self, kind: str, namespace: str, name: str, group: str | None = None) -> dict | None:
        """A deep copy of the stored object (as stored: with its original apiVersion), or None."""
        with self._lock:
            for (g, _, ns, n), obj in self._store.objects.items():
                if obj["kind"] == kind and ns == namespace and n == name and (group is None or g == group):
                    return copy.deepcopy(obj)
        return None

    def fail(self, method: str, path: str, status: int, reason: str, message: str, times: int = 1, *,
             dry_run: bool = False) -> None:
        """Answer the next ``times`` requests of ``method`` to exactly ``path`` with this error:
        the real requests, or with ``dry_run`` the ``dryRun=All`` ones."""
        with self._lock:
            self._injected.append(_Injected(method.upper(), path, status, reason, message, times, dry_run))

    def deny(
        self, kind: str, namespace: str, name: str, *, message: str, webhook: str = "vstatefulset.kb.io",
        when: Callable[[Any], bool] | None = None, group: str | None = None, code: int = 403,
        reason: str = "Forbidden",
    ) -> None:
        """Refuse PATCH and DELETE of one object as a validating admission webhook named
        ``webhook`` does when it denies them, dry runs and real requests alike (the API server
        calls webhooks that declare ``sideEffects: None`` on dry runs; k8s.io/apiserver v0.36.2
        pkg/admission/plugin/webhook/validating/dispatcher.go ``callHook``). ``when(body, old)``,
        given the request's parsed JSON body (the merge patch; a DELETE's DeleteOptions, or None)
        and the object as stored before it (a webhook's ``oldObject``), says which requests it
        denies (all when ``when`` is None). The webhook's answer is
        ``code`` and ``reason`` with ``message`` (controller-runtime v0.24.1
        pkg/webhook/admission/response.go ``Denied``, which Kueue's validators answer through:
        403 Forbidden); the API server answers the Status ``ToStatusErr`` makes of it
        (k8s.io/apiserver v0.36.2 pkg/admission/plugin/webhook/errors/statuserror.go): the code
        kept (at least 400), ``status: Failure``, ``reason`` kept, and the message
        ``admission webhook "<webhook>" denied the request: <message>``."""
        with self._lock:
            self._denials.append(_Denial(kind, namespace, name, group, webhook, message, when, code, reason))

    def stall(self, method: str, path: str, seconds: float, times: int = 1, *, dry_run: bool = False) -> None:
        """Hold the next ``times`` requests of ``method`` to exactly ``path`` for ``seconds``
        before answering them, as a hung API server would: the real requests, or with ``dry_run``
        the ``dryRun=All`` ones (a bot sends a dry run before each write)."""
        with self._lock:
            self._stalls.append([method.upper(), path, seconds, times, times, dry_run])

    def changes(self) -> list[RecordedRequest]:
        """The PATCH and DELETE requests that were no dry run (``dryRun=All``): what changed, or
        tried to change, the objects."""
        with self._lock:
            return [r for r in self._requests if r.method in ("PATCH", "DELETE") and r.query.get("dryRun") != "All"]

    def stalling(self, method: str, path: str) -> bool:
        """True once a request :meth:`stall` holds has arrived (it is held, or was)."""
        with self._lock:
            return any(st[:2] == [method.upper(), path] and st[3] < st[4] for st in self._stalls)

    # --- request handling (called from the server threads) ------------------------------------------

    @staticmethod
    def _key(rtype: ResourceType, namespace: str, name: str) -> tuple[str, str, str, str]:
        return (rtype.group, rtype.plural, namespace if rtype.namespaced else "", name)

    def _bump(self) -> str:
        self._store.resource_version += 1
        return str(self._store.resource_version)

    def _record(self, key: tuple[str, str, str, str], old: dict | None, new: dict | None) -> None:
        """Log a change for the watchers (call with the lock held, after :meth:`_bump`)."""
        self._store.changes.append(_Change(self._store.resource_version, key, old, new))
        self._changed.notify_all()

    def handle(
        self,
        method: str,
        raw_path: str,
        body: bytes,
        content_type: str | None,
        authorization: str | None = None,
    ) -> tuple[int, dict]:
        """Answer one request: ``(HTTP status, JSON body)``, the body an iterator of events for a watch."""
        parts = urlsplit(raw_path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        with self._lock:
            dry = query.get("dryRun") == "All"
            stall = next((st for st in self._stalls if st[:2] == [method, parts.path] and st[3] > 0 and st[5] == dry), None)
            if stall:
                stall[3] -= 1
        if stall:
            time.sleep(stall[2])  # outside the lock: other requests are still answered
        parsed: Any = None
        if body:
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = body.decode("utf-8", "replace")
        with self._lock:
            self._requests.append(
                RecordedRequest(method, parts.path, query, parsed, content_type, authorization)
            )
            for inj in self._injected:
                if inj.method == method and inj.path == parts.path and inj.times > 0 and inj.dry_run == dry:
                    inj.times -= 1
                    return inj.status, ApiError(inj.status, inj.reason, inj.message).status()
            try:
                return 200, self._dispatch(method, parts.path, query, parsed, content_type)
            except ApiError as e:
                return e.code, e.status()

    def _dispatch(self, method: str, path: str, query: dict, body: Any, content_type: str | None) -> dict:
        segments = [s for s in path.split("/") if s]
        if segments[:1] == ["apis"] and len(segments) == 2 and method == "GET":
            return self._discovery(segments[1])
        if segments[:2] == ["apis", VISIBILITY_GROUP] and method == "GET":
            return self._pending_workloads(segments[2:], query)
        route = self._route(segments)
        if route.subresource:
            return self._scale(route, method, query, body, content_type)
        if route.name is None:
            if method == "GET" and query.get("watch") in ("1", "true"):
                return self._watch(route, query)  # type: ignore[return-value] - a stream of events
            if method == "GET":
                return self._list(route, query)
            if method == "POST":
                return self._create(route, body)
        else:
            if method == "GET":
                return self._present(route, self._find(route))
            if method == "PATCH":
                return self._patch(route, body, content_type, self._dry_run(query, "PatchOptions"))
            if method == "PUT":
                return self._replace(route, body)
            if method == "DELETE":
                dry_run = self._dry_run(query, "DeleteOptions")
                obj = self._find(route)
                self._admit(route, body, obj)
                if dry_run:
                    return self._present(route, obj)
                key = self._key(route.rtype, route.namespace or "", route.name)
                del self._store.objects[key]
                self._bump()
                self._record(key, obj, None)
                return self._present(route, obj)
        raise ApiError(
            405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
        )

    def _scale(self, route: _Route, method: str, query: dict, body: Any, content_type: str | None) -> dict:
        """The ``scale`` subresource: GET answers the object as an ``autoscaling/v1`` Scale; PATCH
        merges into that Scale and writes its ``spec.replicas`` back to the object (a
        ``metadata.resourceVersion`` in it is a precondition on the object's), dry run or not.
        Admission webhooks registered for the resource itself (:meth:`deny`, as Kueue's are, for
        ``statefulsets`` alone) are not called on it (k8s.io/kubernetes
        pkg/registry/apps/statefulset/storage/storage.go ``scaleFromStatefulSet`` and
        ``scaleUpdatedObjectInfo``; apiextensions-apiserver pkg/registry/customresource/etcd.go
        ``scaleFromCustomResource`` for a custom resource's paths)."""
        obj = self._find(route)
        if method == "GET":
            return self._as_scale(route, obj)
        if method != "PATCH":
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        dry_run = self._dry_run(query, "PatchOptions")
        if content_type not in (MERGE_PATCH, STRATEGIC_MERGE_PATCH) or not isinstance(body, dict):
            raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {content_type}")
        self._check_precondition(route, obj, (body.get("metadata") or {}).get("resourceVersion"))
        scale = merge_patch(self._as_scale(route, obj), body)
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise ApiError(422, "Invalid", f"Scale.autoscaling \"{route.name}\" is invalid: spec.replicas: "
                                           f"Invalid value: {json.dumps(replicas)}: must be greater than or equal to 0")
        patched = merge_patch(obj, {"spec": {"replicas": replicas}})
        updated = self._as_updated(route, obj, patched) if dry_run else self._store_updated(route, obj, patched)
        return self._as_scale(route, updated)

    def _as_scale(self, route: _Route, obj: dict) -> dict:
        status_path, selector_path = route.rtype.scale or ("", "")

        def at(path: str) -> Any:
            value: Any = obj
            for key in path.split("."):
                value = value.get(key) if isinstance(value, dict) else None
            return value

        selector = at(selector_path)
        if isinstance(selector, dict):  # a built-in's LabelSelector, as metav1.FormatLabelSelector writes it
            selector = ",".join(f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items()))
        meta = obj["metadata"]
        replicas = (obj.get("spec") or {}).get("replicas")
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                         if k in meta},
            "spec": {"replicas": 1 if replicas is None and not route.rtype.custom else int(replicas or 0)},
            "status": {"replicas": int(at(status_path) or 0), **({"selector": selector} if selector else {})},
        }

    def _not_found(self) -> ApiError:
        return ApiError(404, "NotFound", "the server could not find the requested resource")

    def _pending_workloads(self, rest: list[str], query: dict) -> dict:
        """Kueue's visibility API (kueue v0.19.2 pkg/visibility/storage): the pending Workloads
        of a ClusterQueue or a LocalQueue, in the order the ClusterQueue admits them (higher
        ``spec.priority`` first, then older first, as BestEffortFIFO and StrictFIFO both do),
        with their 0-based positions, as a ``PendingWorkloadsSummary``."""
        kueue = next((t for t in self.types.values() if t.plural == "workloads"), None)
        if kueue is None or not rest or rest[0] not in VISIBILITY_VERSIONS or rest[-1:] != ["pendingworkloads"]:
            raise self._not_found()
        version, rest = rest[0], rest[1:-1]
        if len(rest) == 2 and rest[0] == "clusterqueues":
            cq, lq = rest[1], None
        elif len(rest) == 4 and rest[0] == "namespaces" and rest[2] == "localqueues":
            lq = (rest[1], rest[3])
            queue = self._store.objects.get(("kueue.x-k8s.io", "localqueues", lq[0], lq[1]))
            if queue is None:
                raise self._not_found()
            cq = queue["spec"]["clusterQueue"]
        else:
            raise self._not_found()
        if ("kueue.x-k8s.io", "clusterqueues", "", cq) not in self._store.objects:
            raise self._not_found()
        queue_of = {
            (ns, name): obj["spec"].get("clusterQueue")
            for (g, plural, ns, name), obj in self._store.objects.items() if (g, plural) == ("kueue.x-k8s.io", "localqueues")
        }
        pending = []
        for (g, plural, ns, name), wl in self._store.objects.items():
            if (g, plural) != ("kueue.x-k8s.io", "workloads"):
                continue
            spec, status = wl.get("spec") or {}, wl.get("status") or {}
            finished = any(c.get("type") == "Finished" and c.get("status") == "True" for c in status.get("conditions") or ())
            if status.get("admission") or spec.get("active") is False or finished:
                continue
            if queue_of.get((ns, spec.get("queueName", ""))) == cq:
                pending.append(wl)
        pending.sort(key=lambda w: (-(w["spec"].get("priority") or 0), w["metadata"]["creationTimestamp"], w["metadata"]["name"]))
        items, per_lq = [], {}
        for position, wl in enumerate(pending):
            meta, lq_name = wl["metadata"], wl["spec"].get("queueName", "")
            lq_key = (meta.get("namespace", ""), lq_name)
            per_lq[lq_key] = per_lq.get(lq_key, -1) + 1
            if lq is not None and lq_key != lq:
                continue
            items.append({
                "metadata": {
                    "name": meta["name"], "namespace": meta.get("namespace", ""),
                    "creationTimestamp": meta["creationTimestamp"],
                    "ownerReferences": [
                        {k: o[k] for k in ("apiVersion", "kind", "name", "uid") if k in o} for o in meta.get("ownerReferences") or ()
                    ],
                },
                "priority": wl["spec"].get("priority") or 0,
                "localQueueName": lq_name,
                "positionInClusterQueue": position,
                "positionInLocalQueue": per_lq[lq_key],
            })
        offset, limit = int(query.get("offset") or 0), int(query.get("limit") or 1000)
        return {
            "kind": "PendingWorkloadsSummary", "apiVersion": f"{VISIBILITY_GROUP}/{version}",
            "metadata": {"creationTimestamp": None}, "items": items[offset:offset + limit],
        }

    def _discovery(self, group: str) -> dict:
        if group == VISIBILITY_GROUP and any(t.plural == "workloads" for t in self.types.values()):
            listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in VISIBILITY_VERSIONS]
            return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": listed, "preferredVersion": listed[0]}
        versions = next((t.versions for t in self.types.values() if t.group == group), None)
        if versions is None:
            raise self._not_found()
        listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": listed,
            "preferredVersion": listed[0],
        }

    def _route(self, s: list[str]) -> _Route:
        if s[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", s[2:]
        elif s[:1] == ["apis"] and len(s) >= 4:
            group, version, rest = s[1], s[2], s[3:]
        else:
            raise self._not_found()
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not 1 <= len(rest) <= 3:
            raise self._not_found()
        rtype = self.types.get((group, rest[0]))
        if rtype is None or version not in rtype.versions or (namespace is not None and not rtype.namespaced):
            raise self._not_found()
        if namespace is None and rtype.namespaced and len(rest) >= 2:
            raise self._not_found()
        subresource = rest[2] if len(rest) == 3 else ""
        if subresource and not (subresource == "scale" and rtype.scale):
            raise self._not_found()
        return _Route(rtype, version, namespace, rest[1] if len(rest) >= 2 else None, subresource)

    def _api_version(self, route: _Route) -> str:
        return f"{route.rtype.group}/{route.version}" if route.rtype.group else route.version

    def _present(self, route: _Route, obj: dict) -> dict:
        out = copy.deepcopy(obj)
        out["apiVersion"] = self._api_version(route)
        out["kind"] = route.rtype.kind
        return out

    def _find(self, route: _Route) -> dict:
        obj = self._store.objects.get(self._key(route.rtype, route.namespace or "", route.name or ""))
        if obj is None:
            group = route.rtype.group
            resource = f"{route.rtype.plural}.{group}" if group else route.rtype.plural
            raise ApiError(
                404,
                "NotFound",
                f'{resource} "{route.name}" not found',
                {"name": route.name, "group": group, "kind": route.rtype.plural},
            )
        return obj

    def _list(self, route: _Route, query: dict) -> dict:
        rtype = route.rtype
        # A paged list of a large fake (50,000 pods) asks for the same selection once a page: keep
        # it while nothing changes, so a page costs its own items only.
        cache_key = (rtype.group, rtype.plural, route.namespace, query.get("fieldSelector", ""),
                     self._store.resource_version, len(self._store.objects))
        if self._list_cache[0] != cache_key:
            selected = sorted(
                (
                    (ns, name, obj)
                    for (g, plural, ns, name), obj in self._store.objects.items()
                    if (g, plural) == (rtype.group, rtype.plural)
                    and (route.namespace is None or ns == route.namespace)
                ),
                key=lambda t: (t[0], t[1]),
            )
            selected = [t for t in selected if _field_selector_matches(query.get("fieldSelector", ""), t[2])]
            self._list_cache = (cache_key, selected, [(t[0], t[1]) for t in selected])
        _, selected, keys = self._list_cache
        if "labelSelector" in query and query["labelSelector"]:
            raise ApiError(400, "BadRequest", "labelSelector is not supported by this fake")
        if query.get("continue"):
            try:
                after = tuple(json.loads(base64.urlsafe_b64decode(query["continue"]))["after"])
            except (ValueError, KeyError, TypeError):
                raise ApiError(400, "BadRequest", "continue key is not valid") from None
            selected = selected[bisect.bisect_right(keys, after):]
        limit = int(query.get("limit") or 0)
        page, more = (selected[:limit], len(selected) > limit) if limit > 0 else (selected, False)
        items = []
        for _, _, obj in page:
            # Serialised at once and never kept: a shallow copy is enough, and a deep one of
            # 500 pods would cost the fake more than the page.
            item = {**obj, "apiVersion": self._api_version(route), "kind": rtype.kind}
            if not rtype.custom:
                item.pop("apiVersion")
                item.pop("kind")
            items.append(item)
        meta: dict[str, Any] = {"resourceVersion": str(self._store.resource_version)}
        if more:
            last = page[-1]
            meta["continue"] = base64.urlsafe_b64encode(
                json.dumps({"after": [last[0], last[1]]}).encode()
            ).decode()
            meta["remainingItemCount"] = len(selected) - len(page)
        return {
            "kind": f"{rtype.kind}List",
            "apiVersion": self._api_version(route),
            "metadata": meta,
            "items": items,
        }

    def _watch(self, route: _Route, query: dict) -> Iterator[dict]:
        """The ``WatchEvent`` objects of a watch, as they happen (a generator: nothing runs, and
        the lock is not held, until the handler iterates it). Raises _Dropped when
        :meth:`drop_watches` cuts it."""
        rtype, selector = route.rtype, query.get("fieldSelector", "")
        _field_selector_matches(selector, {})  # a bad selector fails the request, not the stream
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 1800)
        since = query.get("resourceVersion") or "0"
        changes = self._store.changes
        drops, oldest = self._drops, self._store.oldest

        def wanted(key: tuple[str, str, str, str]) -> bool:
            return key[:2] == (rtype.group, rtype.plural) and route.namespace in (None, key[2])

        def matches(obj: dict | None) -> bool:
            return obj is not None and _field_selector_matches(selector, obj)

        def bookmark(rv: int) -> dict:
            return {"type": "BOOKMARK", "object": {
                "kind": rtype.kind, "apiVersion": self._api_version(route), "metadata": {"resourceVersion": str(rv)}}}

        def expired(rv: int) -> dict:
            # k8s.io/apiserver storage errors: NewResourceExpired, a 410 Status with reason Expired.
            message = f"too old resource version: {rv} ({self._store.oldest})"
            return {"type": "ERROR", "object": ApiError(410, "Expired", message).status()}

        def events() -> Iterator[dict]:
            # Events are worked out under the lock and yielded outside it: a slow client must not
            # hold up the fake.
            with self._lock:
                if since == "0":  # "any": the current state as ADDED events first
                    first = [{"type": "ADDED", "object": self._present(route, o)}
                             for k, o in sorted(self._store.objects.items()) if wanted(k) and matches(o)]
                    position = len(changes)
                elif not since.isdigit():
                    first = [{"type": "ERROR", "object": ApiError(400, "BadRequest", f"invalid resourceVersion {since!r}").status()}]
                elif int(since) < self._store.oldest:
                    first = [expired(int(since))]
                else:
                    first, position = [], bisect.bisect_right([c.resource_version for c in changes], int(since))
            yield from first
            if first and first[-1]["type"] == "ERROR":
                return
            last_bookmark = time.monotonic()
            while True:
                with self._lock:
                    while (position == len(changes) and self._drops == drops and self._store.oldest == oldest
                           and not self._closing):
                        now = time.monotonic()
                        wait = deadline - now
                        if bookmarks:
                            wait = min(wait, last_bookmark + self.bookmark_seconds - now)
                        if wait <= 0:
                            break
                        self._changed.wait(wait)
                    if self._drops != drops:
                        raise _Dropped()
                    gone = expired(int(since) if since != "0" else 0) if self._store.oldest != oldest else None
                    batch, position, rv_now = changes[position:], len(changes), self._store.resource_version
                if gone is not None:
                    yield gone
                    return
                for change in batch:
                    if not wanted(change.key):
                        continue
                    was, now_ = matches(change.old), matches(change.new)
                    if now_:
                        yield {"type": "MODIFIED" if was else "ADDED", "object": self._present(route, change.new)}
                    elif was:
                        # Gone, or out of the selector: the last state it had in the watch's view.
                        yield {"type": "DELETED", "object": self._present(route, change.new or change.old)}
                finished = self._closing or time.monotonic() >= deadline
                if bookmarks and (finished or time.monotonic() >= last_bookmark + self.bookmark_seconds):
                    yield bookmark(rv_now)
                    last_bookmark = time.monotonic()
                if finished:
                    return

        return events()

    def _as_updated(self, route: _Route, old: dict, new: dict) -> dict:
        """``new`` as an update of ``old`` would leave it, not stored (a dry run's answer): the
        identity kept, ``generation`` one up when the spec changed, the resourceVersion as was."""
        meta = new.setdefault("metadata", {})
        for k in ("name", "namespace", "uid", "creationTimestamp", "resourceVersion"):
            if k in old["metadata"]:
                meta[k] = old["metadata"][k]
        if new.get("spec") != old.get("spec") and "generation" in old["metadata"]:
            meta["generation"] = old["metadata"]["generation"] + 1
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        return self._present(route, new)

    def _store_updated(self, route: _Route, old: dict, new: dict) -> dict:
        self._as_updated(route, old, new)
        meta = new["metadata"]
        meta["resourceVersion"] = self._bump()
        key = self._key(route.rtype, route.namespace or "", route.name or "")
        self._record(key, old, new)
        self._store.objects[key] = new
        return self._present(route, new)

    def _check_micro_times(self, route: _Route, obj: dict) -> None:
        for path in route.rtype.micro_time_fields:
            value: Any = obj
            for key in path.split("."):
                value = value.get(key) if isinstance(value, dict) else None
            if value is not None and not (isinstance(value, str) and _MICRO_TIME.fullmatch(value)):
                raise ApiError(
                    400,
                    "BadRequest",
                    f'{route.rtype.kind} in version "{route.version}" cannot be handled as a {route.rtype.kind}: '
                    f'{path}: parsing time {json.dumps(value)} as "2006-01-02T15:04:05.000000Z07:00"',
                )

    def _check_precondition(self, route: _Route, old: dict, wanted: Any) -> None:
        if wanted and wanted != old["metadata"].get("resourceVersion"):
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {route.rtype.plural} "{route.name}": the object has been '
                "modified; please apply your changes to the latest version and try again",
            )

    @staticmethod
    def _dry_run(query: dict, options: str) -> bool:
        """Whether the request is a dry run (``dryRun=All``); any other value is refused as the
        API server's ``ValidateDryRun`` does, a 422 on the request's ``options`` kind."""
        if "dryRun" not in query:
            return False
        value = query["dryRun"]
        if value == "All":
            return True
        body = f'Unsupported value: {json.dumps([value])}: supported values: "All"'
        raise ApiError(
            422, "Invalid", f'{options}.meta.k8s.io "" is invalid: dryRun: {body}',
            {"group": "meta.k8s.io", "kind": options,
             "causes": [{"reason": "FieldValueNotSupported", "message": body, "field": "dryRun"}]},
        )

    def _admit(self, route: _Route, body: Any, old: dict | None) -> None:
        """The validating admission webhooks :meth:`deny` set: raises the first denial that
        applies to this object (``old``, as stored before the request) and request."""
        for d in self._denials:
            if (
                (d.kind, d.namespace, d.name) == (route.rtype.kind, route.namespace or "", route.name)
                and d.group in (None, route.rtype.group)
                and (d.when is None or d.when(copy.deepcopy(body), copy.deepcopy(old)))
            ):
                raise ApiError(
                    max(d.code, 400), d.reason, f'admission webhook "{d.webhook}" denied the request: {d.message}'
                )

    def _patch(self, route: _Route, body: Any, content_type: str | None, dry_run: bool = False) -> dict:
        if content_type not in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - "
                f"accepted media types include: {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH}",
            )
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the patch is not a JSON object")
        old = self._find(route)
        self._check_precondition(route, old, (body.get("metadata") or {}).get("resourceVersion"))
        patched = merge_patch(old, body)
        self._check_micro_times(route, patched)
        self._admit(route, body, old)
        if dry_run:
            return self._as_updated(route, old, patched)
        return self._store_updated(route, old, patched)

    def _replace(self, route: _Route, body: Any) -> dict:
        if not isinstance(body, dict) or (body.get("metadata") or {}).get("name") != route.name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the name in the URL")
        old = self._find(route)
        self._check_precondition(route, old, body["metadata"].get("resourceVersion"))
        self._check_micro_times(route, body)
        return self._store_updated(route, old, copy.deepcopy(body))

    def _create(self, route: _Route, body: Any) -> dict:
        name = ((body or {}).get("metadata") or {}).get("name") if isinstance(body, dict) else None
        if not name:
            raise ApiError(422, "Invalid", "metadata.name: Required value")
        key = self._key(route.rtype, route.namespace or "", name)
        if key in self._store.objects:
            raise ApiError(409, "AlreadyExists", f'{route.rtype.plural} "{name}" already exists')
        self._check_micro_times(route, body)
        obj = copy.deepcopy(body)
        obj["apiVersion"], obj["kind"] = self._api_version(route), route.rtype.kind
        meta = obj["metadata"]
        if route.namespace:
            meta["namespace"] = route.namespace
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), resourceVersion=self._bump())
        self._record(key, None, obj)
        self._store.objects[key] = obj
        return self._present(route, obj)


def _field_selector_matches(selector: str, obj: dict) -> bool:
    """The fake understands ``status.phase=X`` / ``status.phase!=X`` terms (what pods support)."""
    for term in filter(None, selector.split(",")):
        negate = "!=" in term
        key, _, value = term.partition("!=" if negate else "=")
        value = value.lstrip("=")
        if key != "status.phase":
            raise ApiError(400, "BadRequest", f"field label not supported: {key}")
        actual = (obj.get("status") or {}).get("phase", "")
        if (actual == value) == negate:
            return False
    return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients drop idle keep-alive connections whenever they like; that is not a failure.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeKubeApi
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, each response waits for a delayed ACK.
    disable_nagle_algorithm = True

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip() or None
        status, payload = self.fake.handle(
            self.command, self.path, body, content_type, self.headers.get("Authorization")
        )
        if not isinstance(payload, dict):
            self._stream(payload)
            return
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: Iterator[dict]) -> None:
        """A watch: one JSON line a chunk, as the API server flushes each event."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for event in events:
                line = json.dumps(event).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except _Dropped:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        except (BrokenPipeError, ConnectionResetError):  # the client went away
            self.close_connection = True

    do_GET = do_PATCH = do_PUT = do_POST = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass
