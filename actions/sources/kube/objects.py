"""Kubernetes JSON, decoded straight into the bot's model types: list pages of pods, nodes,
NodeClaims, NodePools, StatefulSets, Deployments, Notebooks, Workloads and namespaces, through
the Structs of :mod:`actions.sources.kube.structs`, and each object into its model type (a GPU
pod with its GPUs counted, a node with its capacity type, a Workload with its admission).

Everything here is pure: bytes in, ``actions.model`` objects out. Malformed input raises
``ValueError`` naming what was being decoded and where msgspec found the problem.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Iterable, Mapping

from actions.hardware.gpus import GPU_RESOURCE, is_gpu_resource
from actions.model.disruption import DO_NOT_DISRUPT, DisruptionBudget, protected_until
from actions.model.kube import (
    CapacityType,
    GpuPod,
    Node,
    NodePool,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Notebook,
    OwnerRef,
    ScalableOwner,
    Taint,
    Tenant,
    Toleration,
)
from actions.model.kueue import Workload
from actions.sources.kube.shared_strings import shared, shared_map
from actions.sources.kube.structs import (
    FINISHED_PHASES,
    NAMESPACE_PAGE,
    NODE_PAGE,
    NODECLAIM_PAGE,
    NODEPOOL_PAGE,
    NOTEBOOK_PAGE,
    POD_PAGE,
    SCALABLE_PAGE,
    WORKLOAD_PAGE,
    Condition,
    Container,
    K8sNode,
    K8sNodePool,
    K8sNotebook,
    K8sWorkload,
    ObjectMeta,
    Pod,
    PodSpec,
    Quantity,
    Scalable,
    decode,
)

# Node labels naming the node's pool, in the order the bot trusts them.
_NODEPOOL_LABELS = (
    "karpenter.sh/nodepool",
    "eks.amazonaws.com/nodegroup",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
)
_INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")


# --- pages of one kind -> model types ----------------------------------------------------------------


def decode_pod_page(data: bytes) -> tuple[list[GpuPod], str]:
    """Decode one page of a PodList (JSON bytes).

    Returns ``(gpu_pods, continue_token)``: only pods that request a GPU resource (whole, shared
    or MIG) and are not Succeeded/Failed; the token is ``""`` on the last page. Raises
    ValueError on malformed JSON or a non-integer GPU quantity.
    """
    pods, _, token = decode_pods(data)
    return pods, token


def decode_pods(data: bytes) -> tuple[list[GpuPod], list[Tenant], str]:
    """Decode one page of a PodList into ``(gpu_pods, tenants, continue_token)``: the GPU pods
    as :func:`decode_pod_page` gives them, and every live pod bound to a node as a
    :class:`Tenant` (what keeps a node busy, or Karpenter from disrupting it). Raises
    ValueError."""
    page = decode(POD_PAGE, data, "PodList")
    pods, tenants = [], []
    for item in page.items or ():
        p = gpu_pod(item)
        if p is not None:
            pods.append(p)
        t = tenant(item)
        if t is not None:
            tenants.append(t)
    return pods, tenants, page.metadata.continue_


def decode_nodeclaim_page(data: bytes) -> tuple[list[tuple[str, str]], str]:
    """Decode one page of a karpenter.sh NodeClaimList into ``([(nodeclaim, node name)],
    continue_token)`` (claims not yet bound to a node are left out); raises ValueError."""
    page = decode(NODECLAIM_PAGE, data, "NodeClaimList")
    return [(c.metadata.name, c.status.node_name) for c in page.items or () if c.status.node_name], page.metadata.continue_


def decode_nodepool_page(data: bytes) -> tuple[list[NodePool], str]:
    """Decode one page of a karpenter.sh NodePoolList; raises ValueError."""
    page = decode(NODEPOOL_PAGE, data, "NodePoolList")
    return [nodepool(item) for item in page.items or ()], page.metadata.continue_


def decode_node_page(data: bytes) -> tuple[list[Node], str]:
    """Decode one page of a NodeList. Returns ``(nodes, continue_token)``; raises ValueError."""
    page = decode(NODE_PAGE, data, "NodeList")
    return [node(item) for item in page.items or ()], page.metadata.continue_


def decode_scalable_page(data: bytes, kind: str) -> tuple[list[ScalableOwner], str]:
    """Decode one page of a StatefulSetList or DeploymentList (``kind`` is ``"StatefulSet"`` or
    ``"Deployment"``). Returns ``(owners, continue_token)``; raises ValueError."""
    page = decode(SCALABLE_PAGE, data, f"{kind}List")
    return [scalable_owner(item, kind) for item in page.items or ()], page.metadata.continue_


def decode_notebook_page(data: bytes) -> tuple[list[Notebook], str]:
    """Decode one page of a kubeflow.org/v1 NotebookList. Returns ``(notebooks, continue_token)``;
    raises ValueError."""
    page = decode(NOTEBOOK_PAGE, data, "NotebookList")
    return [notebook(item) for item in page.items or ()], page.metadata.continue_


def decode_workload_page(data: bytes, api_version: str) -> tuple[list[Workload], str]:
    """Decode one page of a Kueue WorkloadList read as ``api_version``
    (``"kueue.x-k8s.io/v1beta2"`` or ``"kueue.x-k8s.io/v1beta1"``).

    Returns ``(workloads, continue_token)``; raises ValueError.
    """
    page = decode(WORKLOAD_PAGE, data, "WorkloadList")
    return [workload(item, api_version) for item in page.items or ()], page.metadata.continue_


def decode_namespace_page(data: bytes) -> tuple[list[tuple[str, dict[str, str], dict[str, str]]], str]:
    """Decode one page of a NamespaceList into ``([(namespace, labels, annotations)],
    continue_token)``; raises ValueError."""
    page = decode(NAMESPACE_PAGE, data, "NamespaceList")
    return [
        (ns.metadata.name, dict(ns.metadata.labels), dict(ns.metadata.annotations)) for ns in page.items or ()
    ], page.metadata.continue_


# --- one object -> model type ------------------------------------------------------------------------


def _count(value: Quantity, resource: str, where: str) -> int:
    """An extended resource's quantity as an integer; GPUs cannot be fractional."""
    if isinstance(value, bool):
        raise ValueError(f"{where}: {resource} quantity {value!r} is not a number")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"{where}: {resource} quantity {value!r} is not a whole number") from None


def containers_devices(containers: Iterable[Container], where: str) -> dict[str, int]:
    """The GPU resources (whole, shared, MIG) ``containers`` request, resource name -> count,
    in the order first seen. A container's request defaults to its limit, as the API server does
    for extended resources. Raises ValueError for a non-integer quantity."""
    devices: dict[str, int] = {}
    for c in containers:
        names = dict.fromkeys(r for r in (*c.resources.requests, *c.resources.limits) if is_gpu_resource(r))
        for resource in names:
            raw = c.resources.requests.get(resource, c.resources.limits.get(resource))
            n = _count(raw, resource, where)
            if n > 0:
                devices[shared(resource)] = devices.get(resource, 0) + n
    return devices


def containers_gpus(containers: Iterable[Container], where: str) -> tuple[int, str | None]:
    """GPU devices (whole GPUs, replicas and MIG slices, each counted once) requested by
    ``containers`` and the first GPU resource name seen. Raises ValueError as
    :func:`containers_devices`."""
    devices = containers_devices(containers, where)
    return sum(devices.values()), next(iter(devices), None)


def owner_refs(meta: ObjectMeta) -> tuple[OwnerRef, ...]:
    return tuple(
        OwnerRef(api_version=shared(o.api_version), kind=shared(o.kind), name=o.name, controller=bool(o.controller),
                 uid=o.uid)
        for o in meta.owner_references
    )


def _created(meta: ObjectMeta, what: str) -> datetime:
    if meta.creation_timestamp is None:
        raise ValueError(f"{what} {meta.namespace}/{meta.name} has no metadata.creationTimestamp")
    return meta.creation_timestamp


def _terms(spec: PodSpec) -> tuple[NodeSelectorTerm, ...] | None:
    """The required node affinity's terms; None when the pod requires none."""
    required = spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution if (
        spec.affinity is not None and spec.affinity.node_affinity is not None) else None
    if required is None:
        return None
    return tuple(
        NodeSelectorTerm(
            tuple(NodeSelectorRequirement(r.key, r.operator, tuple(r.values)) for r in t.match_expressions),
            tuple(NodeSelectorRequirement(r.key, r.operator, tuple(r.values)) for r in t.match_fields),
        )
        for t in required.node_selector_terms
    )


def gpu_pod(pod: Pod) -> GpuPod | None:
    """The pod as a ``GpuPod``, or ``None`` when it requests no GPU or has finished.
    Raises ValueError when it lacks a creation time or has a non-integer GPU quantity."""
    if pod.status.phase in FINISHED_PHASES:
        return None
    meta = pod.metadata
    where = f"Pod {meta.namespace}/{meta.name}"
    devices = containers_devices(pod.spec.containers, where)
    if not devices:
        return None
    each = ((shared(c.name), tuple(containers_devices([c], where).items())) for c in pod.spec.containers)
    return GpuPod(
        namespace=shared(meta.namespace),
        name=meta.name,
        uid=meta.uid,
        node=None if pod.spec.node_name is None else shared(pod.spec.node_name),
        phase=shared(pod.status.phase),
        created=_created(meta, "Pod"),
        started=pod.status.start_time,
        gpus=sum(devices.values()),
        gpu_resource=next(iter(devices)),
        labels=shared_map(meta.labels),
        annotations=shared_map(meta.annotations),
        owners=owner_refs(meta),
        devices=devices,
        containers=tuple((name, held) for name, held in each if held),
        node_selector=shared_map(pod.spec.node_selector),
        node_affinity=_terms(pod.spec),
        tolerations=tuple(Toleration(shared(t.key), shared(t.operator), shared(t.value), shared(t.effect))
                          for t in pod.spec.tolerations),
        ready=any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions),
        unschedulable=next(
            (c.message or c.reason for c in pod.status.conditions if c.type == "PodScheduled" and c.status == "False"),
            None,
        ),
    )




def tenant(pod: Pod) -> Tenant | None:
    """What a live pod bound to a node means for that node: a workload that keeps it, unless it
    is a DaemonSet's, and whether it asks Karpenter not to disrupt the node. None for a pod on no
    node or one that has finished."""
    if pod.status.phase in FINISHED_PHASES or not pod.spec.node_name:
        return None
    meta = pod.metadata
    until = protected_until(meta.annotations.get(DO_NOT_DISRUPT), pod.status.start_time)
    return Tenant(
        node=shared(pod.spec.node_name),
        pod=f"{meta.namespace}/{meta.name}",
        daemonset=any(o.kind == "DaemonSet" and o.controller for o in meta.owner_references),
        do_not_disrupt=until is not None,
        do_not_disrupt_until=until,
    )


def with_tenants(nodes: Iterable[Node], tenants: Iterable[Tenant], nodeclaims: Mapping[str, str] | None = None) -> dict[str, Node]:
    """``nodes`` by name, each with the count of its non-DaemonSet pods, its DaemonSet pods, the
    pods that forbid disruption and (from ``nodeclaims``, node name -> NodeClaim) its NodeClaim."""
    counts: dict[str, int] = {}
    daemons: dict[str, list[str]] = {}
    blocking: dict[str, list[str]] = {}
    until: dict[str, dict[str, datetime]] = {}
    for t in tenants:
        if t.daemonset:
            daemons.setdefault(t.node, []).append(t.pod)
        else:
            counts[t.node] = counts.get(t.node, 0) + 1
        if t.do_not_disrupt:
            blocking.setdefault(t.node, []).append(t.pod)
            if t.do_not_disrupt_until is not None:
                until.setdefault(t.node, {})[t.pod] = t.do_not_disrupt_until
    claims = nodeclaims or {}
    return {
        n.name: dataclasses.replace(
            n,
            workload_pods=counts.get(n.name, 0),
            do_not_disrupt=tuple(sorted(blocking.get(n.name, ()))),
            do_not_disrupt_until=until.get(n.name, {}),
            daemonset_pods=tuple(sorted(daemons.get(n.name, ()))),
            nodeclaim=n.nodeclaim or claims.get(n.name),
        )
        for n in nodes
    }


def nodepool(obj: K8sNodePool) -> NodePool:
    """A Karpenter NodePool's disruption settings as a model ``NodePool``."""
    d = obj.spec.disruption
    return NodePool(
        name=obj.metadata.name,
        consolidation_policy=d.consolidation_policy,
        consolidate_after=d.consolidate_after,
        budgets=tuple(
            DisruptionBudget(b.nodes, tuple(b.reasons or ()), b.schedule, b.duration) for b in d.budgets
        ),
    )


def capacity_type(labels: Mapping[str, str]) -> CapacityType:
    """How a node is bought, from Karpenter, EKS managed node group, GKE or AKS labels;
    ``UNKNOWN`` when none of them says."""
    karpenter = labels.get("karpenter.sh/capacity-type")
    if karpenter is not None:
        try:
            return CapacityType(karpenter.lower())
        except ValueError:
            return CapacityType.UNKNOWN
    eks = labels.get("eks.amazonaws.com/capacityType")
    if eks is not None:
        # EKS CreateNodegroup capacityType: ON_DEMAND | SPOT | CAPACITY_BLOCK (EC2 Capacity Blocks
        # for ML, paid up front: reserved).
        return {
            "ON_DEMAND": CapacityType.ON_DEMAND, "SPOT": CapacityType.SPOT, "CAPACITY_BLOCK": CapacityType.RESERVED,
        }.get(eks.upper(), CapacityType.UNKNOWN)
    if (
        labels.get("cloud.google.com/gke-spot") == "true"
        or labels.get("cloud.google.com/gke-preemptible") == "true"
    ):
        return CapacityType.SPOT
    azure = labels.get("kubernetes.azure.com/scalesetpriority")
    if azure is not None:
        return CapacityType.SPOT if azure.lower() == "spot" else CapacityType.UNKNOWN
    return CapacityType.UNKNOWN


def _first_label(labels: Mapping[str, str], keys: Iterable[str]) -> str | None:
    return next((labels[k] for k in keys if labels.get(k)), None)


def node(obj: K8sNode) -> Node:
    """The node as a model ``Node``. Raises ValueError for a non-integer GPU capacity."""
    labels = obj.metadata.labels
    where = f"Node {obj.metadata.name} status.capacity"
    devices = {r: _count(q, r, where) for r, q in obj.status.capacity.items() if is_gpu_resource(r)}
    allocatable = {r: _count(q, r, f"Node {obj.metadata.name} status.allocatable")
                   for r, q in obj.status.allocatable.items() if is_gpu_resource(r)}
    claim = next((o.name for o in obj.metadata.owner_references if o.kind == "NodeClaim"), None)
    return Node(
        name=obj.metadata.name,
        labels=shared_map(labels),
        instance_type=_first_label(labels, _INSTANCE_TYPE_LABELS),
        capacity_type=capacity_type(labels),
        nodepool=_first_label(labels, _NODEPOOL_LABELS),
        gpu_product=labels.get("nvidia.com/gpu.product"),
        gpu_capacity=devices.get(GPU_RESOURCE, 0),
        gpu_devices={r: n for r, n in devices.items() if n > 0},
        annotations=shared_map(obj.metadata.annotations),
        nodeclaim=claim,
        gpu_allocatable={r: n for r, n in allocatable.items() if n > 0},
        taints=tuple(Taint(t.key, t.value, t.effect) for t in obj.spec.taints),
    )


def scalable_owner(obj: Scalable, kind: str) -> ScalableOwner:
    """A StatefulSet or Deployment (``kind``) as a ``ScalableOwner``."""
    meta = obj.metadata
    return ScalableOwner(
        kind=kind,
        namespace=shared(meta.namespace),
        name=meta.name,
        replicas=1 if obj.spec.replicas is None else obj.spec.replicas,
        labels=shared_map(meta.labels),
        annotations=shared_map(meta.annotations),
        owners=owner_refs(meta),
        selector=shared_map(obj.spec.selector.match_labels),
    )


def notebook(obj: K8sNotebook) -> Notebook:
    """A Kubeflow Notebook as a model ``Notebook``."""
    meta = obj.metadata
    return Notebook(
        namespace=shared(meta.namespace), name=meta.name, annotations=shared_map(meta.annotations),
        labels=shared_map(meta.labels),
    )


def _condition_true(conditions: Iterable[Condition], type_: str) -> bool:
    return any(c.type == type_ and c.status == "True" for c in conditions)


def workload(obj: K8sWorkload, api_version: str) -> Workload:
    """A Kueue Workload read as ``api_version`` as a model ``Workload``.

    ``gpus`` sums count x GPU devices per pod over ``spec.podSets``, the count being the admitted
    one (``status.admission.podSetAssignments[].count``, fewer under partial admission) once
    admitted; ``flavors`` are the distinct ResourceFlavors assigned to GPU resources there.
    Raises ValueError when it lacks a creation time or has a non-integer GPU quantity.
    """
    meta = obj.metadata
    where = f"Workload {meta.namespace}/{meta.name}"
    admission = obj.status.admission
    admitted_counts = {a.name: a.count for a in admission.pod_set_assignments} if admission is not None else {}
    gpus = 0
    for ps in obj.spec.pod_sets:
        per_pod, _ = containers_gpus(ps.template.spec.containers, f"{where} podSet {ps.name}")
        count = admitted_counts.get(ps.name)
        gpus += per_pod * (ps.count if count is None else count)
    flavors: dict[str, None] = {}
    if admission is not None:
        for psa in admission.pod_set_assignments:
            for resource, flavor in psa.flavors.items():
                if is_gpu_resource(resource):
                    flavors[flavor] = None
    conditions = obj.status.conditions
    return Workload(
        namespace=shared(meta.namespace),
        name=meta.name,
        uid=meta.uid,
        api_version=api_version,
        queue_name=shared(obj.spec.queue_name),
        active=obj.spec.active is not False,
        created=_created(meta, "Workload"),
        admitted=_condition_true(conditions, "Admitted"),
        cluster_queue=(shared(admission.cluster_queue) or None) if admission is not None else None,
        finished=_condition_true(conditions, "Finished"),
        gpus=gpus,
        flavors=tuple(shared(f) for f in flavors),
        owners=owner_refs(meta),
        labels=shared_map(meta.labels),
        annotations=shared_map(meta.annotations),
        priority=obj.spec.priority or 0,
    )
