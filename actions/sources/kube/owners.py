"""Reading the GPU pods' owners from the API server, one object at a time, as the owner walk
meets them.

GPU pods are few beside the Jobs and ReplicaSets of a cluster, and their chains are short (Pod ->
Job -> JobSet -> TrainJob at most), so each sweep reads the owners it needs with one GET each
rather than listing every Job in the cluster. Objects already in the snapshot (StatefulSets,
Deployments, Notebooks, the listed RayClusters, LeaderWorkerSets and InferenceServices, GPU pods)
are not read again, and each owner is read once per sweep however many pods share it. A fleet
whose GPU pods need hundreds of owners of one kind (5,000 Kueue Jobs) lists that kind instead
(:data:`LIST_ABOVE`) where the RBAC grants ``list`` on it (deploy/ grants ``get`` and ``list``);
a list the RBAC refuses falls back to the GETs.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable

import kubernetes.client
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from actions.model.kube import GpuPod, KubeObject, OwnerRef, api_group, controller_of
from actions.sources.kube.jobobjects import OWNER_KINDS, decode_owner, decode_owner_page

log = logging.getLogger(__name__)

Key = tuple[str, str, str]  # (namespace, kind, name)
# (api_version, kind, plural) -> every object of the kind by key, or None when not at hand.
Cached = Callable[[str, str, str], "dict[Key, KubeObject] | None"]

# A level of the walk needing more owners of one kind than this lists the kind instead: 5,000
# GETs cost the bot 5 s of CPU a sweep, a paged list of them a fraction of that.
LIST_ABOVE = 100
LIST_PAGE = 500


class OwnerReader:
    """Walks the controller owners of GPU pods up through :data:`OWNER_KINDS`, reading each with
    GET. ``known`` holds the objects the snapshot has already (by namespace, kind, name) with
    their owner references, so the walk goes on through them without reading them again. A level
    needing more than ``list_above`` owners of one kind lists that kind instead, or takes it from
    ``cached(api_version, kind, plural)`` (a watch cache: ``None`` until synced; pods are never
    taken from it). Needs RBAC ``get`` (and, for large fleets, ``list``) on each kind in
    :data:`OWNER_KINDS` that the cluster serves."""

    def __init__(
        self, api_client: kubernetes.client.ApiClient, error: Callable[[str, int, str], Exception],
        timeout_seconds: float = 10, list_above: int = LIST_ABOVE, cached: Cached | None = None,
    ):
        self._timeout = timeout_seconds
        self._list_above = list_above
        self._cached = cached
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
        """Every owner of ``pods`` the snapshot lacks, read once each, one level of the chains
        at a time: where a level needs more than ``list_above`` owners of one kind, that
        kind is listed cluster-wide (paged) instead of read one GET each; a list the RBAC
        refuses (403) falls back to the GETs."""
        found: dict[Key, KubeObject | None] = {}
        # (namespace, owner references) still to follow; many pods share one chain.
        frontier = {(pod.namespace, pod.owners) for pod in pods}
        for _ in range(8):  # Kubernetes chains are a few levels deep; a loop is a broken cluster
            following: set[tuple[str, tuple[OwnerRef, ...]]] = set()
            pending: list[Key] = []
            wanted: dict[Key, OwnerRef] = {}
            for namespace, owners in frontier:
                ref = controller_of(owners)
                if ref is None:
                    continue
                key = (namespace, ref.kind, ref.name)
                if key in known:
                    following.add((namespace, known[key]))
                elif (ref.group, ref.kind) in OWNER_KINDS:
                    pending.append(key)
                    if key not in found:
                        wanted.setdefault(key, ref)
            self._read_all(wanted, found)
            following |= {(key[0], found[key].owners) for key in pending if found[key] is not None}
            if not following:
                break
            frontier = following
        return [o for o in found.values() if o is not None]

    def _read_all(self, wanted: dict[Key, OwnerRef], found: dict[Key, KubeObject | None]) -> None:
        by_kind: dict[tuple[str, str], list[Key]] = {}
        for key, ref in wanted.items():
            by_kind.setdefault((ref.api_version, ref.kind), []).append(key)
        for (api_version, kind), keys in by_kind.items():
            listed = self._list(api_version, kind) if len(keys) > self._list_above else None
            for key in keys:
                if listed is not None:
                    found[key] = listed.get(key)  # absent: deleted, as a GET's 404
                else:
                    found[key] = self.read(wanted[key], key[0])

    def _list(self, api_version: str, kind: str) -> dict[Key, KubeObject] | None:
        """Every ``kind`` object in the cluster by key, or None when the RBAC refuses the list
        (403) or the kind is not served (404): then each is read with GET."""
        group = api_group(api_version)
        served = OWNER_KINDS[(group, kind)]
        if self._cached is not None and group:
            cached = self._cached(api_version, kind, served.plural)
            if cached is not None:
                return cached
        version = api_version.split("/", 1)[1] if "/" in api_version else api_version
        out: dict[Key, KubeObject] = {}
        token = ""
        while True:
            kwargs: dict = {"limit": LIST_PAGE, "_preload_content": False, "_request_timeout": self._timeout}
            if token:
                kwargs["_continue"] = token
            try:
                if group == "":
                    response = self._core.list_pod_for_all_namespaces(**kwargs)
                else:
                    response = self._custom.list_cluster_custom_object(group, version, served.plural, **kwargs)
                try:
                    body = response.data
                finally:
                    response.release_conn()
            except ApiException as e:
                if e.status in (403, 404):
                    log.info("cannot list %s.%s (%s): reading them one by one", served.plural, group, e.status)
                    return None
                raise self._error(f"{served.plural}.{group or 'core'}/{version}", e.status or 0, str(e.reason)) from e
            except (OSError, urllib3.exceptions.HTTPError) as e:
                raise self._error(f"{served.plural}.{group or 'core'}/{version}", 0, str(e)) from e
            objects, token = decode_owner_page(body, api_version, kind)
            out.update(((o.namespace, o.kind, o.name), o) for o in objects)
            if not token:
                return out
