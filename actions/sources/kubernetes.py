"""Reading the cluster from a live Kubernetes API server into a ``ClusterSnapshot``.

The ``kubernetes`` client does authentication, configuration and URL building; the bodies are
asked for as raw bytes (``_preload_content=False``) and decoded page by page by
``actions.sources.kubeobjects``, because the client's own models cost a minute and gigabytes per
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

from actions.model import ClusterSnapshot, Node
from actions.sources import kubeobjects
from actions.sources.kubeobjects import KUBEFLOW_GROUP, KUEUE_GROUP

log = logging.getLogger(__name__)

# Kueue versions this bot can read, most preferred first.
SUPPORTED_KUEUE_VERSIONS = ("v1beta2", "v1beta1")
# Pods in these phases hold no GPUs; filtering them server-side saves their bytes on the wire.
_LIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"

T = TypeVar("T")


class ClusterReadError(Exception):
    """Reading ``resource`` from the API server failed with HTTP ``status`` (0 when no HTTP
    response arrived or the body could not be decoded)."""

    def __init__(self, resource: str, status: int, message: str):
        super().__init__(
            f"reading {resource} from the Kubernetes API failed ({status or 'no HTTP status'}): {message}"
        )
        self.resource = resource
        self.status = status


def load_kube_config(
    kubeconfig: str | None = None, context: str | None = None
) -> kubernetes.client.ApiClient:
    """An ApiClient for the cluster: the pod's service account when running in a pod and no
    ``kubeconfig`` is given, else ``kubeconfig`` (default ``$KUBECONFIG`` or ``~/.kube/config``)
    with ``context`` (default: its current context).

    Raises ``kubernetes.config.ConfigException`` when no usable configuration is found.
    """
    cfg = kubernetes.client.Configuration()
    if kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        kubernetes.config.load_incluster_config(client_configuration=cfg)
    else:
        kubernetes.config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
    return kubernetes.client.ApiClient(configuration=cfg)


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
    namespaces, statefulsets, deployments, and (when installed) workloads.kueue.x-k8s.io and
    notebooks.kubeflow.org, plus ``get`` on the discovery path ``/apis/kueue.x-k8s.io``.
    """

    def __init__(self, api_client: kubernetes.client.ApiClient, *, page_size: int = 500):
        if page_size < 1:
            raise ValueError(f"page_size must be >= 1, got {page_size}")
        self._client = api_client
        self._core = kubernetes.client.CoreV1Api(api_client)
        self._apps = kubernetes.client.AppsV1Api(api_client)
        self._custom = kubernetes.client.CustomObjectsApi(api_client)
        self._page_size = page_size

    def snapshot(self, now: datetime) -> ClusterSnapshot:
        """The cluster as of ``now`` (the caller's clock; stored as ``taken_at``).

        Raises ClusterReadError naming the resource and HTTP status on any API error other than
        Kueue or Kubeflow not being installed, and ValueError on a malformed response body.
        """
        pods = self._pages(
            "pods",
            lambda **kw: self._core.list_pod_for_all_namespaces(field_selector=_LIVE_PODS, **kw),
            kubeobjects.decode_pod_page,
        )
        nodes: list[Node] = self._pages("nodes", self._core.list_node, kubeobjects.decode_node_page)
        namespace_labels = dict(
            self._pages("namespaces", self._core.list_namespace, kubeobjects.decode_namespace_page)
        )
        statefulsets = self._pages(
            "statefulsets",
            self._apps.list_stateful_set_for_all_namespaces,
            lambda b: kubeobjects.decode_scalable_page(b, "StatefulSet"),
        )
        deployments = self._pages(
            "deployments",
            self._apps.list_deployment_for_all_namespaces,
            lambda b: kubeobjects.decode_scalable_page(b, "Deployment"),
        )
        notebooks = self._notebooks()
        workload_api_version = self._kueue_api_version()
        workloads = []
        if workload_api_version is not None:
            version = workload_api_version.split("/", 1)[1]
            workloads = self._pages(
                f"workloads.{KUEUE_GROUP}/{version}",
                lambda **kw: self._custom.list_cluster_custom_object(KUEUE_GROUP, version, "workloads", **kw),
                lambda b: kubeobjects.decode_workload_page(b, workload_api_version),
            )
        return ClusterSnapshot(
            taken_at=now,
            pods=tuple(pods),
            nodes={n.name: n for n in nodes},
            notebooks=tuple(notebooks),
            statefulsets=tuple(statefulsets),
            deployments=tuple(deployments),
            workloads=tuple(workloads),
            workload_api_version=workload_api_version,
            namespace_labels=namespace_labels,
        )

    def _pages(
        self, resource: str, call: Callable[..., object], decode: Callable[[bytes], tuple[list[T], str]]
    ) -> list[T]:
        """Every item of a list, following ``metadata.continue`` until it is empty."""
        out: list[T] = []
        token: str | None = None
        while True:
            kwargs: dict = {"limit": self._page_size, "_preload_content": False}
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
            raise ClusterReadError(resource, 0, str(e)) from e

    def _notebooks(self) -> list:
        try:
            return self._pages(
                f"notebooks.{KUBEFLOW_GROUP}/v1",
                lambda **kw: self._custom.list_cluster_custom_object(KUBEFLOW_GROUP, "v1", "notebooks", **kw),
                kubeobjects.decode_notebook_page,
            )
        except ClusterReadError as e:
            if e.status == 404:  # Kubeflow Notebooks not installed
                return []
            raise

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
            response = self._client.call_api(*request)
            body = response.read()
        except ApiException as e:
            raise ClusterReadError(resource, e.status or 0, _status_message(e)) from e
        except (OSError, urllib3.exceptions.HTTPError) as e:
            raise ClusterReadError(resource, 0, str(e)) from e
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
