"""Reading the cluster from a live Kubernetes API server into a ``ClusterSnapshot``.

The ``kubernetes`` client does authentication, configuration and URL building; the bodies are
asked for as raw bytes (``_preload_content=False``) and decoded page by page by
``actions.sources.kube.objects``, because the client's own models cost a minute and gigabytes per
sweep on a large cluster (shared/DESIGN.md, "Measured facts").

Kueue and Kubeflow are optional: a cluster without them yields no Workloads / Notebooks.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime
from typing import Callable, TypeVar

import kubernetes.client
import kubernetes.config
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from actions.model.kube import KARPENTER_GROUP, KUBEFLOW_GROUP, KUEUE_GROUP, GpuPod, KubeObject, Node, NodePool, Tenant
from actions.model.kueue import PendingPosition
from actions.model.snapshot import ClusterSnapshot
from actions.sources.bounded import BoundedPoolManager
from actions.sources.kube import jobobjects, objects, structs, watch_cache
from actions.sources.kube import visibility as kueue_visibility
from actions.sources.kube.owners import LIST_ABOVE, OwnerReader
from actions.sources.kube.watch_cache import ClusterCache

log = logging.getLogger(__name__)

# Kueue versions this bot can read, most preferred first.
SUPPORTED_KUEUE_VERSIONS = ("v1beta2", "v1beta1")

T = TypeVar("T")


class ClusterReadError(Exception):
    """Reading ``resource`` from the API server failed with HTTP ``status`` (0 when no HTTP
    response arrived or the body could not be decoded)."""

    def __init__(self, resource: str, status: int, message: str):
        super().__init__(f"reading {resource} from the Kubernetes API failed{f' (HTTP {status})' if status else ''}: {message}")
        self.resource = resource
        self.status = status


class ClusterConfigError(Exception):
    """No usable way to reach the Kubernetes API: not in a pod, and no kubeconfig (or not the
    context asked for). The message says what was looked for and what to set."""


# A page of 500 pods or nodes is a few MB; the bot's pod has 1 GiB.
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024


def load_kube_config(
    kubeconfig: str | None = None, context: str | None = None, *, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> kubernetes.client.ApiClient:
    """An ApiClient for the cluster: the pod's service account when running in a pod and no
    ``kubeconfig`` is given, else ``kubeconfig`` (default ``$KUBECONFIG`` or ``~/.kube/config``)
    with ``context`` (default: its current context).

    A read that times out is not retried (a hung API server must not hold a press for several
    timeouts); a refused connection is, three times. Every answer but a watch's is read against
    ``max_response_bytes`` and with the request's timeout as a deadline for the whole of it
    (:class:`actions.sources.bounded.BoundedPoolManager`). Raises ClusterConfigError when no usable
    configuration is found.
    """
    cfg = kubernetes.client.Configuration()
    try:
        if kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            kubernetes.config.load_incluster_config(client_configuration=cfg)
        else:
            # KUBECONFIG read now, not as the client read it at import (it may have changed since).
            config_file = kubeconfig or os.environ.get("KUBECONFIG") or None
            kubernetes.config.load_kube_config(config_file=config_file, context=context, client_configuration=cfg)
        # A read that timed out is not sent again by urllib3: a hung API server would otherwise
        # hold every list for four times the timeout. Refused connections are still retried.
        cfg.retries = urllib3.util.Retry(total=3, connect=3, read=0, redirect=3, status=0, other=0)
    except (kubernetes.config.ConfigException, OSError, ValueError, TypeError) as e:
        where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        ctx = f", context {context!r}" if context else ""
        raise ClusterConfigError(
            f"no usable Kubernetes configuration: not running in a pod, and {where}{ctx} gave none "
            f"({str(e).splitlines()[0] if str(e) else type(e).__name__}); set kubernetes.kubeconfig "
            "or KUBECONFIG, or read a dump with --cluster-state FILE"
        ) from e
    return bounded_answers(kubernetes.client.ApiClient(configuration=cfg), max_response_bytes)


def bounded_answers(api: kubernetes.client.ApiClient, max_response_bytes: int) -> kubernetes.client.ApiClient:
    """``api`` with its answers read as :func:`load_kube_config` says."""
    rest = api.rest_client
    rest.pool_manager = BoundedPoolManager(rest.pool_manager, max_response_bytes)
    return api


def _transport_message(e: Exception) -> str:
    """What a request that got no answer says: the last try's own error (a refused connection, a
    TLS failure, a timeout) rather than urllib3's "Max retries exceeded with url: <the query>"."""
    if isinstance(e, urllib3.exceptions.MaxRetryError) and e.reason is not None:
        return str(e.reason)
    return str(e)


def _status_message(e: ApiException) -> str:
    """The ``message`` of the API's Status body, else the HTTP reason."""
    body = e.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        return str(json.loads(body)["message"])
    except (TypeError, ValueError, KeyError):
        return str(e.reason or body or e)


class KubernetesSource:
    """Reads a ``ClusterSnapshot`` from the API server behind ``api_client``.

    Lists are paged ``page_size`` objects at a time. Needs RBAC ``list`` on pods, nodes,
    namespaces, statefulsets, deployments, and (when installed) notebooks.kubeflow.org,
    rayclusters.ray.io, leaderworkersets.leaderworkerset.x-k8s.io,
    inferenceservices.serving.kserve.io, Kueue's workloads, localqueues, clusterqueues and
    resourceflavors, and Karpenter's nodeclaims and nodepools (karpenter.sh); ``get`` on the
    discovery path ``/apis/kueue.x-k8s.io``; and ``get`` and ``list`` on each owner kind of
    :data:`~actions.sources.kube.jobobjects.OWNER_KINDS` (the owner walk,
    :mod:`actions.sources.kube.owners`, lists a kind where a level needs more than
    ``owner_list_above`` of it; without ``list`` it reads them one GET each).
    Every request gives up after ``timeout_seconds`` (a ClusterReadError), so an API server that
    hangs cannot hold a sweep or the re-check before an action. With a started ``cache`` (what
    ``run`` gives it) pods, nodes, StatefulSets, Deployments, Notebooks, Kueue Workloads and the
    owner kinds the walk lists are read from the cache while it is synced, and listed as without
    one while it is not. Raises ValueError for a ``page_size`` under 1 or a ``timeout_seconds``
    not above 0.
    """

    def __init__(
        self, api_client: kubernetes.client.ApiClient, *, page_size: int = 500, timeout_seconds: float = 10,
        owner_list_above: int = LIST_ABOVE, cache: ClusterCache | None = None,
    ):
        if page_size < 1:
            raise ValueError(f"page_size must be >= 1, got {page_size}")
        if not timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be > 0, got {timeout_seconds}")
        self._timeout = timeout_seconds
        self._client = api_client
        self._core = kubernetes.client.CoreV1Api(api_client)
        self._apps = kubernetes.client.AppsV1Api(api_client)
        self._custom = kubernetes.client.CustomObjectsApi(api_client)
        self._page_size = page_size
        self._owners = OwnerReader(
            api_client, ClusterReadError, timeout_seconds, owner_list_above, cached=cache.owners if cache else None,
        )
        self.cache = cache

    def snapshot(self, now: datetime) -> ClusterSnapshot:
        """The cluster as of ``now`` (the caller's clock; stored as ``taken_at``).

        Raises ClusterReadError naming the resource and HTTP status on any API error other than
        Kueue or Kubeflow not being installed, and ValueError on a malformed response body.
        """
        pods, tenants = self._pods()
        nodeclaims, nodepools = self._karpenter()
        nodes = objects.with_tenants(self._nodes(), tenants, nodeclaims)
        namespaces = self._pages("namespaces", self._core.list_namespace, objects.decode_namespace_page)
        statefulsets = self._cached(watch_cache.STATEFULSETS, lambda: self._pages(
            "statefulsets",
            self._apps.list_stateful_set_for_all_namespaces,
            lambda b: objects.decode_scalable_page(b, "StatefulSet"),
        ))
        deployments = self._cached(watch_cache.DEPLOYMENTS, lambda: self._pages(
            "deployments",
            self._apps.list_deployment_for_all_namespaces,
            lambda b: objects.decode_scalable_page(b, "Deployment"),
        ))
        notebooks = self._cached(watch_cache.NOTEBOOKS, self._notebooks)
        listed: list[KubeObject] = []
        for (group, kind), served in jobobjects.LISTED_KINDS.items():
            listed += self._optional(
                f"{served.plural}.{group}/{served.version}",
                lambda s=served, **kw: self._custom.list_cluster_custom_object(s.group, s.version, s.plural, **kw),
                lambda b, s=served, k=kind: jobobjects.decode_owner_page(b, f"{s.group}/{s.version}", k),
            )
        known = {(o.namespace, o.kind, o.name): o.owners for o in (*statefulsets, *deployments, *listed)}
        known.update({(n.namespace, "Notebook", n.name): () for n in notebooks})
        known.update({(p.namespace, "Pod", p.name): p.owners for p in pods})
        walked = self._owners.walk(pods, known)
        workload_api_version = self._kueue_api_version()
        workloads = []
        queues: dict[str, list] = {"LocalQueue": [], "ClusterQueue": [], "ResourceFlavor": []}
        if workload_api_version is not None:
            version = workload_api_version.split("/", 1)[1]
            workloads = self.cache.workloads_list(workload_api_version) if self.cache is not None else None
            if workloads is None:
                workloads = self._pages(
                    f"workloads.{KUEUE_GROUP}/{version}",
                    lambda **kw: self._custom.list_cluster_custom_object(KUEUE_GROUP, version, "workloads", **kw),
                    lambda b: objects.decode_workload_page(b, workload_api_version),
                )
            for kind, plural in jobobjects.QUEUE_PLURALS.items():
                queues[kind] = self._pages(
                    f"{plural}.{KUEUE_GROUP}/{version}",
                    lambda p=plural, **kw: self._custom.list_cluster_custom_object(KUEUE_GROUP, version, p, **kw),
                    lambda b, k=kind: jobobjects.decode_queue_page(b, k),
                )
        return ClusterSnapshot(
            taken_at=now,
            pods=tuple(pods),
            nodes=nodes,
            notebooks=tuple(notebooks),
            statefulsets=tuple(statefulsets),
            deployments=tuple(deployments),
            workloads=tuple(workloads),
            workload_api_version=workload_api_version,
            namespace_labels={name: labels for name, labels, _ in namespaces},
            namespace_annotations={name: annotations for name, _, annotations in namespaces},
            objects=tuple(jobobjects.sort_objects(listed + walked)),
            local_queues=tuple(queues["LocalQueue"]),
            cluster_queues=tuple(queues["ClusterQueue"]),
            resource_flavors=tuple(queues["ResourceFlavor"]),
            nodepools={p.name: p for p in nodepools},
        )

    def _cached(self, kind: watch_cache.WatchedKind, listing: Callable[[], list[T]]) -> list[T]:
        """``kind`` from the cache when it is synced (watched from the first ask), else listed."""
        cached = self.cache.listed(kind) if self.cache is not None else None
        return listing() if cached is None else cached

    def _pods(self) -> tuple[list[GpuPod], list[Tenant]]:
        """The live GPU pods and every node's tenants: from the cache when it is synced, else listed."""
        cached = self.cache.gpu_pods_and_tenants() if self.cache is not None else None
        if cached is not None:
            return cached
        if self.cache is not None:
            log.info("the watch cache of pods is not synced; listing them (nothing is missed)")
        tenants: list[Tenant] = []

        def pod_page(body: bytes) -> tuple[list[GpuPod], str]:
            gpu_pods, page_tenants, token = objects.decode_pods(body)
            tenants.extend(page_tenants)
            return gpu_pods, token

        pods = self._pages(
            "pods", lambda **kw: self._core.list_pod_for_all_namespaces(field_selector=structs.LIVE_PODS, **kw), pod_page
        )
        return pods, tenants

    def _nodes(self) -> list[Node]:
        """Every node: from the cache when it is synced, else listed."""
        cached = self.cache.nodes_list() if self.cache is not None else None
        if cached is not None:
            return cached
        if self.cache is not None:
            log.info("the watch cache of nodes is not synced; listing them (nothing is missed)")
        return self._pages("nodes", self._core.list_node, objects.decode_node_page)

    def _karpenter(self) -> tuple[dict[str, str], list[NodePool]]:
        """Karpenter's NodeClaims (node name -> NodeClaim) and NodePools; empty when Karpenter
        is not installed (the API answers 404)."""
        try:
            claims = self._pages(
                f"nodeclaims.{KARPENTER_GROUP}/v1",
                lambda **kw: self._custom.list_cluster_custom_object(KARPENTER_GROUP, "v1", "nodeclaims", **kw),
                objects.decode_nodeclaim_page,
            )
            pools = self._pages(
                f"nodepools.{KARPENTER_GROUP}/v1",
                lambda **kw: self._custom.list_cluster_custom_object(KARPENTER_GROUP, "v1", "nodepools", **kw),
                objects.decode_nodepool_page,
            )
        except ClusterReadError as e:
            if e.status == 404:
                return {}, []
            raise
        return {node: claim for claim, node in claims}, pools

    def _pages(
        self, resource: str, call: Callable[..., object], decode: Callable[[bytes], tuple[list[T], str]]
    ) -> list[T]:
        """Every item of a list, following ``metadata.continue`` until it is empty."""
        out: list[T] = []
        token: str | None = None
        while True:
            kwargs: dict = {"limit": self._page_size, "_preload_content": False, "_request_timeout": self._timeout}
            if token:
                kwargs["_continue"] = token
            body = self._read(resource, call, kwargs)
            items, token = decode(body)
            out.extend(items)
            if not token:
                return out

    def _read(self, resource: str, call: Callable[..., object], kwargs: dict) -> bytes:
        try:
            response = call(**kwargs)
            try:
                return response.data  # type: ignore[attr-defined]
            finally:
                response.release_conn()  # type: ignore[attr-defined]
        except ApiException as e:
            raise ClusterReadError(resource, e.status or 0, _status_message(e)) from e
        except (OSError, urllib3.exceptions.HTTPError) as e:  # refused, TLS, timeouts, retries exhausted
            raise ClusterReadError(resource, 0, _transport_message(e)) from e

    def _notebooks(self) -> list:
        return self._optional(
            f"notebooks.{KUBEFLOW_GROUP}/v1",
            lambda **kw: self._custom.list_cluster_custom_object(KUBEFLOW_GROUP, "v1", "notebooks", **kw),
            objects.decode_notebook_page,
        )

    def _optional(self, resource: str, call: Callable[..., object], decode: Callable[[bytes], tuple[list[T], str]]) -> list[T]:
        """:meth:`_pages` of a custom resource that may not be installed (404: none)."""
        try:
            return self._pages(resource, call, decode)
        except ClusterReadError as e:
            if e.status == 404:
                return []
            raise

    def queue_positions(self, cluster_queues: list[str]) -> dict[tuple[str, str], PendingPosition]:
        """(namespace, Workload name) -> where it stands in its ClusterQueue, from Kueue's
        visibility API, for the pending Workloads of ``cluster_queues``. Empty when the API is not
        served; a ClusterQueue it does not know (404) or may not show (403) is left out (logged).
        Needs RBAC ``get`` on ``clusterqueues/pendingworkloads`` in visibility.kueue.x-k8s.io and
        on the discovery path ``/apis/visibility.kueue.x-k8s.io``. Raises ClusterReadError when
        the API server fails otherwise."""
        if not cluster_queues:
            return {}
        group = kueue_visibility.VISIBILITY_GROUP
        status, body = self._raw_get(f"/apis/{group}")
        if status == 404:
            return {}
        try:
            served = [v["version"] for v in json.loads(body).get("versions", [])]
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise ClusterReadError(f"/apis/{group}", status, f"malformed APIGroup: {e}") from e
        version = next((v for v in kueue_visibility.SUPPORTED_VERSIONS if v in served), None)
        if version is None:
            return {}
        out: dict[tuple[str, str], PendingPosition] = {}
        for cq in sorted(set(cluster_queues)):
            path = f"/apis/{group}/{version}/clusterqueues/{cq}/pendingworkloads"
            status, body = self._raw_get(path, {"limit": kueue_visibility.LIMIT})
            if status in (403, 404):
                log.warning("pending workloads of ClusterQueue %s unreadable (HTTP %s); positions unknown", cq, status)
                continue
            for p in kueue_visibility.decode_pending(body, cq):
                out[(p.namespace, p.name)] = p
        return out

    def _raw_get(self, path: str, query: dict | None = None) -> tuple[int, bytes]:
        """GET ``path``: ``(status, body)`` for 2xx, 403 and 404; ClusterReadError otherwise."""
        try:
            request = self._client.param_serialize(
                method="GET", resource_path=path, query_params=list((query or {}).items()),
                header_params={"Accept": "application/json"}, auth_settings=["BearerToken"],
            )
            response = self._client.call_api(*request, _request_timeout=self._timeout)
            body = response.read()
        except ApiException as e:
            if e.status in (403, 404):
                return e.status, b""
            raise ClusterReadError(path, e.status or 0, _status_message(e)) from e
        except (OSError, urllib3.exceptions.HTTPError) as e:
            raise ClusterReadError(path, 0, _transport_message(e)) from e
        if response.status in (403, 404) or 200 <= response.status < 300:
            return response.status, body
        raise ClusterReadError(path, response.status, body.decode("utf-8", "replace")[:500])

    def _kueue_api_version(self) -> str | None:
        """``"kueue.x-k8s.io/<version>"``: the server's preferred version if the bot supports it,
        else the first supported one it serves; ``None`` when Kueue is not installed."""
        resource = f"/apis/{KUEUE_GROUP}"
        try:
            request = self._client.param_serialize(
                method="GET",
                resource_path=resource,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            response = self._client.call_api(*request, _request_timeout=self._timeout)
            body = response.read()
        except ApiException as e:
            raise ClusterReadError(resource, e.status or 0, _status_message(e)) from e
        except (OSError, urllib3.exceptions.HTTPError) as e:
            raise ClusterReadError(resource, 0, _transport_message(e)) from e
        if response.status == 404:
            return None
        if not 200 <= response.status < 300:
            raise ClusterReadError(resource, response.status, body.decode("utf-8", "replace")[:500])
        try:
            group = json.loads(body)
            served = [v["version"] for v in group.get("versions", [])]
            preferred = (group.get("preferredVersion") or {}).get("version")
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise ClusterReadError(resource, response.status, f"malformed APIGroup: {e}") from e
        if preferred in SUPPORTED_KUEUE_VERSIONS:
            return f"{KUEUE_GROUP}/{preferred}"
        for version in SUPPORTED_KUEUE_VERSIONS:
            if version in served:
                return f"{KUEUE_GROUP}/{version}"
        log.warning(
            "Kueue serves %s, none of which this bot reads (%s); Workloads are skipped",
            served,
            SUPPORTED_KUEUE_VERSIONS,
        )
        return None
