"""Reading the GPU pods' owners from the API server, one object at a time, as the owner walk
meets them.

GPU pods are few beside the Jobs and ReplicaSets of a cluster, and their chains are short (Pod ->
Job -> JobSet -> TrainJob at most), so each sweep reads the owners it needs with one GET each
rather than listing every Job in the cluster. Objects already in the snapshot (StatefulSets,
Deployments, Notebooks, the listed RayClusters, LeaderWorkerSets and InferenceServices, GPU pods)
are not read again, and each owner is read once per sweep however many pods share it.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable

import kubernetes.client
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from actions.model import GpuPod, KubeObject, OwnerRef
from actions.sources.jobobjects import OWNER_KINDS, decode_owner

log = logging.getLogger(__name__)

Key = tuple[str, str, str]  # (namespace, kind, name)


class OwnerReader:
    """Walks the controller owners of GPU pods up through :data:`OWNER_KINDS`, reading each with
    GET. ``known`` holds the objects the snapshot has already (by namespace, kind, name) with
    their owner references, so the walk goes on through them without reading them again.
    Needs RBAC ``get`` on each kind in :data:`OWNER_KINDS` that the cluster serves."""

    def __init__(
        self, api_client: kubernetes.client.ApiClient, error: Callable[[str, int, str], Exception],
        timeout_seconds: float = 10,
    ):
        self._timeout = timeout_seconds
        self._core = kubernetes.client.CoreV1Api(api_client)
        self._custom = kubernetes.client.CustomObjectsApi(api_client)
        self._error = error

    def read(self, ref: OwnerRef, namespace: str) -> KubeObject | None:
        """The owner ``ref`` points to, or ``None`` when the server has no such object (404:
        deleted, or its kind is not installed) or refuses to show it (403: the RBAC lacks a rule;
        logged). Raises what ``error`` makes for any other failure."""
        group = ref.group
        served = OWNER_KINDS[(group, ref.kind)]
        version = ref.api_version.split("/", 1)[1] if "/" in ref.api_version else ref.api_version
        resource = f"{served.plural}.{group or 'core'}/{ref.name} in {namespace}"
        try:
            if group == "":
                response = self._core.read_namespaced_pod(
                    ref.name, namespace, _preload_content=False, _request_timeout=self._timeout
                )
            else:
                response = self._custom.get_namespaced_custom_object(
                    group, version, namespace, served.plural, ref.name, _preload_content=False,
                    _request_timeout=self._timeout,
                )
            try:
                body = response.data
            finally:
                response.release_conn()
        except ApiException as e:
            if e.status == 404:
                return None
            if e.status == 403:
                log.warning("cannot read %s (403 Forbidden): its pods are reported, not acted on", resource)
                return None
            raise self._error(resource, e.status or 0, str(e.reason)) from e
        except (OSError, urllib3.exceptions.HTTPError) as e:
            raise self._error(resource, 0, str(e)) from e
        return decode_owner(body, ref.api_version, ref.kind)

    def walk(self, pods: Iterable[GpuPod], known: dict[Key, tuple[OwnerRef, ...]]) -> list[KubeObject]:
        """Every owner of ``pods`` the snapshot lacks, read once each."""
        found: dict[Key, KubeObject | None] = {}
        for pod in pods:
            owners: tuple[OwnerRef, ...] = pod.owners
            for _ in range(8):  # Kubernetes chains are a few levels deep; a loop is a broken cluster
                ref = next((o for o in owners if o.controller), None)
                if ref is None:
                    break
                key = (pod.namespace, ref.kind, ref.name)
                if key in known:
                    owners = known[key]
                    continue
                if (ref.group, ref.kind) not in OWNER_KINDS:
                    break
                if key not in found:
                    found[key] = self.read(ref, pod.namespace)
                obj = found[key]
                if obj is None:
                    break
                owners = obj.owners
        return [o for o in found.values() if o is not None]
