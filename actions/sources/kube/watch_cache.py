"""The watch cache of one cluster: which kinds ``run`` keeps by list+watch and in what form.

:class:`ClusterCache` holds a :class:`~actions.sources.kube.reflector.Reflector` per kind (pods and
nodes from the start; StatefulSets, Deployments, Notebooks, Workloads and the owner kinds the walk
lists once a sweep asks for them) and hands
:class:`~actions.sources.kube.reader.KubernetesSource` the model values a list would give, in
the same order, or ``None`` while a kind is not synced (the source then lists it).
"""

from __future__ import annotations

import functools
import threading

import kubernetes.client

from actions.model.kube import KUEUE_GROUP, GpuPod, KubeObject, Node, Tenant, api_group
from actions.model.kueue import Workload
from actions.sources.kube import jobobjects, objects, structs
from actions.sources.kube.reflector import Reflector, WatchedKind


@functools.lru_cache(maxsize=65536)
def _plain_tenant(node: str) -> Tenant:
    return Tenant(node=node, pod="", daemonset=False, do_not_disrupt=False)


def _pod_value(pod: structs.Pod) -> tuple[GpuPod | None, Tenant | None] | None:
    """A pod's GPU pod and tenant. An ordinary tenant (no DaemonSet, no do-not-disrupt) only
    counts for its node (all :func:`~actions.sources.kube.objects.with_tenants` reads of it), so
    one shared Tenant per node, its pod left blank, stands for all of them: some 300 bytes less
    per pod kept (15 MB at 50,000 pods)."""
    gpu, tenant = objects.gpu_pod(pod), objects.tenant(pod)
    if tenant is not None and not (tenant.daemonset or tenant.do_not_disrupt):
        tenant = _plain_tenant(tenant.node)
    return None if gpu is None and tenant is None else (gpu, tenant)


# Pods the source lists (live ones): a pod that finishes leaves the selector, a DELETED event.
PODS: WatchedKind = WatchedKind("pods", "/api/v1/pods", structs.Pod, _pod_value, structs.LIVE_PODS)
NODES: WatchedKind = WatchedKind("nodes", "/api/v1/nodes", structs.K8sNode, objects.node)
# Read whole every sweep besides: 5,000 notebooks' StatefulSets and Notebooks in a large fleet.
STATEFULSETS: WatchedKind = WatchedKind(
    "statefulsets", "/apis/apps/v1/statefulsets", structs.Scalable,
    lambda o: objects.scalable_owner(o, "StatefulSet"),
)
DEPLOYMENTS: WatchedKind = WatchedKind(
    "deployments", "/apis/apps/v1/deployments", structs.Scalable,
    lambda o: objects.scalable_owner(o, "Deployment"),
)
NOTEBOOKS: WatchedKind = WatchedKind(
    "notebooks.kubeflow.org/v1", "/apis/kubeflow.org/v1/notebooks", structs.K8sNotebook, objects.notebook,
)


class ClusterCache:
    """The pods, nodes, Kueue Workloads and the owner kinds the walk lists (5,000 Kueue Jobs) of
    one cluster, kept by list+watch (:class:`Reflector`), for
    :class:`~actions.sources.kube.reader.KubernetesSource` to read instead of listing them. Pods
    and nodes are watched from :meth:`start`; StatefulSets, Deployments, Notebooks, Workloads
    and owner kinds from the first time the source asks for them (in the version it discovered:
    Kueue or Kubeflow may not be installed, and a small fleet's walk lists nothing). Needs RBAC
    ``watch`` besides ``list`` on each. ``options`` are the :class:`Reflector`'s."""

    def __init__(self, api_client: kubernetes.client.ApiClient, **options: object):
        self._api = api_client
        self._options = options
        self._lock = threading.Lock()
        self._started = False
        self.pods: Reflector = Reflector(api_client, PODS, **options)  # type: ignore[arg-type]
        self.nodes: Reflector = Reflector(api_client, NODES, **options)  # type: ignore[arg-type]
        # Watched once asked for: "workloads", or "owners GROUP/KIND" -> its Reflector.
        self.on_demand: dict[str, Reflector] = {}

    def _all(self) -> list[Reflector]:
        return [self.pods, self.nodes, *self.on_demand.values()]

    def start(self) -> "ClusterCache":
        """Start watching pods, nodes and what was asked for already, each listing first on its
        own thread."""
        with self._lock:
            self._started = True
            for r in self._all():
                r.start()
        return self

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop every watch; False when one did not end within ``timeout`` seconds."""
        with self._lock:
            self._started = False
            reflectors = self._all()
        stopped = [r.stop(timeout) for r in reflectors]
        return all(stopped)

    @property
    def synced(self) -> bool:
        """Every kind watched is synced (but those given up on after a 403 or 404)."""
        with self._lock:
            reflectors = self._all()
        return all(r.synced for r in reflectors if not r.gave_up)

    def gpu_pods_and_tenants(self) -> tuple[list[GpuPod], list[Tenant]] | None:
        """The live GPU pods (sorted by namespace and name, as a list returns them) and the
        tenants of every node; ``None`` when the pods are not synced. Raises ValueError for a
        malformed pod."""
        values = self.pods.items()
        if values is None:
            return None
        pods = sorted((p for p, _ in values if p is not None), key=lambda p: (p.namespace, p.name))
        return pods, [t for _, t in values if t is not None]

    def nodes_list(self) -> list[Node] | None:
        """Every node, sorted by name; ``None`` when the nodes are not synced. Raises ValueError
        for a malformed node."""
        values = self.nodes.items()
        return None if values is None else sorted(values, key=lambda n: n.name)

    def workloads_list(self, api_version: str) -> list[Workload] | None:
        """The Kueue Workloads read as ``api_version`` (``"kueue.x-k8s.io/v1beta2"``), sorted by
        namespace and name; ``None`` until they are synced. Raises ValueError for a malformed
        Workload."""
        version = api_version.split("/", 1)[1]
        values = self._asked("workloads", WatchedKind(
            f"workloads.{KUEUE_GROUP}/{version}", f"/apis/{KUEUE_GROUP}/{version}/workloads",
            structs.K8sWorkload, lambda w: objects.workload(w, api_version),
        )).items()
        return None if values is None else sorted(values, key=lambda w: (w.namespace, w.name))

    def listed(self, kind: WatchedKind) -> list | None:
        """Every object of ``kind`` (one of :data:`STATEFULSETS`, :data:`DEPLOYMENTS`,
        :data:`NOTEBOOKS`) as its ``keep`` makes it, sorted by namespace and name; ``None``
        until synced. Raises ValueError for a malformed one."""
        values = self._asked(kind.path, kind).items()
        return None if values is None else sorted(values, key=lambda o: (o.namespace, o.name))

    def owners(self, api_version: str, kind: str, plural: str) -> dict[tuple[str, str, str], KubeObject] | None:
        """Every ``kind`` object (a custom resource or a built-in kind of a named group, served
        as ``plural`` in ``api_version``) by (namespace, kind, name), as the owner walk lists
        them; ``None`` until they are synced. Raises ValueError for a malformed one."""
        values = self._asked(f"owners {api_group(api_version)}/{kind}", WatchedKind(
            f"{plural}.{api_version}", f"/apis/{api_version}/{plural}",
            jobobjects.Owner, lambda o: jobobjects.kube_object(o, api_version, kind),
        )).items()
        return None if values is None else {(o.namespace, o.kind, o.name): o for o in values}

    def _asked(self, slot: str, kind: WatchedKind) -> Reflector:
        """The Reflector of ``slot`` watching ``kind``: made (and started, unless stopped) the
        first time, and again when the kind's path changed (another version), the old one stopped."""
        with self._lock:
            current = self.on_demand.get(slot)
            if current is None or current.kind.path != kind.path:
                if current is not None:
                    current.stop(0)
                self.on_demand[slot] = current = Reflector(self._api, kind, **self._options)  # type: ignore[arg-type]
                if self._started:
                    current.start()
            return current
