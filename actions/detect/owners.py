"""From a GPU pod to the object that owns it and to the Kueue Workload that admitted it. Pure.

Kueue makes the top-level job the Workload's owner (``FindAncestorJobManagedByKueue`` in
kueue ``pkg/controller/jobframework/reconciler.go``), and that job owns the pods one or two
levels down: Pod -> Job -> JobSet (-> TrainJob), Pod -> RayCluster -> RayJob, worker Pod ->
StatefulSet -> leader Pod -> StatefulSet -> LeaderWorkerSet. :meth:`OwnerIndex.chain` walks the
pod's controller ``ownerReferences`` upward through the objects the snapshot holds;
:meth:`OwnerIndex.workload_of` reads the Workload first through what Kueue writes on the pod
(kueue v0.19.2 ``pkg/controller/jobframework/reconciler.go``, ``pkg/controller/jobs/pod``,
``pkg/util/pod/pod.go``):

1. the annotation ``kueue.x-k8s.io/workload`` (set while TopologyAwareScheduling is on, the
   default since 0.14);
2. ``kueue.x-k8s.io/pod-group-name`` (annotation, else label): plain pod groups, StatefulSet
   and LeaderWorkerSet pods;
3. ``kueue.x-k8s.io/prebuilt-workload-name`` (annotation, else label);
4. else the Workload owned by an object of the chain, top first (by owner kind and name, or
   by the ``kueue.x-k8s.io/job-uid`` label), and last by the pod itself (Kueue's pod
   integration, Deployment pods included: every such pod is its own Workload).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from actions.detect.memo import memoized
from actions.model.kube import (
    NOTEBOOK_API_VERSION,
    GpuPod,
    KubeObject,
    OwnerRef,
    ScalableOwner,
    api_group,
    controller_of,
)
from actions.model.kueue import Workload
from actions.model.snapshot import ClusterSnapshot

WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
POD_GROUP_NAME = "kueue.x-k8s.io/pod-group-name"
PREBUILT_WORKLOAD_NAME = "kueue.x-k8s.io/prebuilt-workload-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
IS_GROUP_WORKLOAD = "kueue.x-k8s.io/is-group-workload"
# KServe writes the InferenceService's name on every predictor pod, in both deployment modes
# (kserve v0.20.0 pkg/constants InferenceServicePodLabelKey).
ISVC_POD_LABEL = "serving.kserve.io/inferenceservice"


@dataclass(frozen=True)
class Link:
    """One step of an owner chain: the reference, and the object when the snapshot holds it."""

    ref: OwnerRef
    obj: KubeObject | ScalableOwner | None

    @property
    def kind(self) -> str:
        return self.ref.kind

    @property
    def name(self) -> str:
        return self.ref.name


class OwnerIndex:
    """Lookups over one snapshot: objects by kind and name, Workloads by name, owner and job
    uid. Built once per sweep, so resolving every pod stays linear in the cluster's size."""

    def __init__(self, snapshot: ClusterSnapshot):
        self.snapshot = snapshot
        self.objects: dict[tuple[str, str, str], KubeObject] = {}
        for o in snapshot.objects:
            self.objects[(o.namespace, o.kind, o.name)] = o
        for nb in snapshot.notebooks:
            # The same object every sweep the Notebook is unchanged: what is derived from it is kept.
            self.objects[(nb.namespace, "Notebook", nb.name)] = memoized(nb, "_as_object", lambda nb=nb: KubeObject(
                NOTEBOOK_API_VERSION, "Notebook", nb.namespace, nb.name, labels=nb.labels, annotations=nb.annotations
            ))
        self.scalables: dict[tuple[str, str, str], ScalableOwner] = {
            (s.namespace, s.kind, s.name): s for s in (*snapshot.statefulsets, *snapshot.deployments)
        }
        self.pods = {(p.namespace, p.name): p for p in snapshot.pods}
        self.workloads = {(w.namespace, w.name): w for w in snapshot.workloads}
        self.local_queues = {(q.namespace, q.name): q for q in snapshot.local_queues}
        self.workload_by_owner: dict[tuple[str, str, str], Workload] = {}
        self.workload_by_job_uid: dict[str, Workload] = {}
        for wl in snapshot.workloads:
            for o in wl.owners:
                self.workload_by_owner.setdefault((wl.namespace, o.kind, o.name), wl)
            uid = wl.labels.get(JOB_UID_LABEL)
            if uid:
                self.workload_by_job_uid.setdefault(uid, wl)

    def find(self, namespace: str, ref: OwnerRef, child_labels: dict | None = None) -> KubeObject | ScalableOwner | None:
        """The object ``ref`` points to in ``namespace``, or ``None`` when the snapshot lacks it.

        A Deployment owns its pods through a ReplicaSet named ``<deployment>-<pod-template-hash>``;
        when the snapshot holds no ReplicaSets, the Deployment is found by that naming rule.
        """
        key = (namespace, ref.kind, ref.name)
        if ref.kind in ("StatefulSet", "Deployment") and api_group(ref.api_version) == "apps":
            return self.scalables.get(key)
        found = self.objects.get(key)
        if found is not None:
            return found
        if ref.kind == "Pod" and api_group(ref.api_version) == "":
            pod = self.pods.get((namespace, ref.name))
            if pod is not None:
                return KubeObject("v1", "Pod", namespace, pod.name, pod.uid, pod.owners, pod.labels, pod.annotations)
        return None

    def chain(self, pod: GpuPod) -> list[Link]:
        """The pod's controller owners, nearest first, up to the first one without a controller
        owner or that the snapshot does not hold (that last one is kept, with ``obj`` None).
        A ReplicaSet the snapshot lacks is replaced by its Deployment (see :meth:`find`)."""
        links: list[Link] = []
        owners: Iterable[OwnerRef] = pod.owners
        labels = dict(pod.labels)
        seen: set[tuple[str, str]] = set()
        while True:
            ref = controller_of(owners)
            if ref is None or (ref.kind, ref.name) in seen:
                return links
            seen.add((ref.kind, ref.name))
            obj = self.find(pod.namespace, ref)
            if obj is None and ref.kind == "ReplicaSet" and api_group(ref.api_version) == "apps":
                suffix = labels.get("pod-template-hash")
                if suffix and ref.name.endswith("-" + suffix):
                    name = ref.name[: -len(suffix) - 1]
                    deployment = self.scalables.get((pod.namespace, "Deployment", name))
                    if deployment is not None:
                        ref = OwnerRef("apps/v1", "Deployment", name, True)
                        obj = deployment
            links.append(Link(ref, obj))
            if obj is None:
                return links
            owners = obj.owners

    def workload_of(self, pod: GpuPod, chain: list[Link] | None = None) -> Workload | None:
        """The Kueue Workload that admitted ``pod`` (module notes give the order), or ``None``."""
        ns = pod.namespace
        for key in (WORKLOAD_ANNOTATION, POD_GROUP_NAME, PREBUILT_WORKLOAD_NAME):
            name = pod.annotations.get(key) or (pod.labels.get(key) if key != WORKLOAD_ANNOTATION else None)
            if name and (ns, name) in self.workloads:
                return self.workloads[(ns, name)]
        links = self.chain(pod) if chain is None else chain
        for link in reversed(links):
            wl = self.workload_by_owner.get((ns, link.kind, link.name))
            if wl is None and link.ref.uid:
                wl = self.workload_by_job_uid.get(link.ref.uid)
            if wl is not None:
                return wl
        return self.workload_by_owner.get((ns, "Pod", pod.name)) or (
            self.workload_by_job_uid.get(pod.uid) if pod.uid else None
        )
