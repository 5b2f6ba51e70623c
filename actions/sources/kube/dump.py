"""A ``kubectl get ... -A -o json`` dump, read as a cluster: the offline twin of
:mod:`actions.sources.kube.reader`, decoded by the same :mod:`actions.sources.kube.objects`
structs, so a sweep over a dump sees exactly what a sweep over the API server would.

Pure: bytes in, a :class:`~actions.model.snapshot.ClusterSnapshot` out.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from actions.model.kube import (
    KARPENTER_GROUP,
    KUBEFLOW_GROUP,
    KUEUE_GROUP,
    GpuPod,
    Node,
    NodePool,
    Notebook,
    ScalableOwner,
    Tenant,
)
from actions.model.kueue import Workload
from actions.model.snapshot import ClusterSnapshot
from actions.sources.kube import jobobjects
from actions.sources.kube.objects import (
    gpu_pod,
    node,
    nodepool,
    notebook,
    scalable_owner,
    tenant,
    with_tenants,
    workload,
)
from actions.sources.kube.structs import (
    K8sNamespace,
    K8sNode,
    K8sNodeClaim,
    K8sNodePool,
    K8sNotebook,
    K8sWorkload,
    ObjectList,
    Pod,
    Scalable,
    TypeMeta,
    decode,
)

_DUMP = msgspec.json.Decoder(ObjectList)
_TYPE_META = msgspec.json.Decoder(TypeMeta)
_POD = msgspec.json.Decoder(Pod)
_NODE = msgspec.json.Decoder(K8sNode)
_SCALABLE = msgspec.json.Decoder(Scalable)
_NOTEBOOK = msgspec.json.Decoder(K8sNotebook)
_WORKLOAD = msgspec.json.Decoder(K8sWorkload)
_NAMESPACE = msgspec.json.Decoder(K8sNamespace)
_NODECLAIM = msgspec.json.Decoder(K8sNodeClaim)
_NODEPOOL = msgspec.json.Decoder(K8sNodePool)


def snapshot_from_kubectl_dump(data: bytes, taken_at: datetime) -> ClusterSnapshot:
    """Decode the output of ``kubectl get pods,nodes,statefulsets,deployments,
    workloads.kueue.x-k8s.io,notebooks.kubeflow.org -A -o json`` (a ``List`` of mixed kinds;
    Namespaces are read too when present) into a ``ClusterSnapshot`` taken at ``taken_at``.

    Items are dispatched on ``kind`` and ``apiVersion``; kinds the bot does not read are skipped.
    ``workload_api_version`` is the apiVersion of the Workloads in the dump (``None`` if there
    are none). Raises ValueError naming the problem (not JSON, no ``items``, an item without
    ``kind``, a malformed field).
    """
    page = decode(_DUMP, data, "kubectl dump (expected a JSON object with an 'items' list)")
    pods: list[GpuPod] = []
    tenants: list[Tenant] = []
    nodeclaims: dict[str, str] = {}
    nodepools: dict[str, NodePool] = {}
    nodes: dict[str, Node] = {}
    notebooks: list[Notebook] = []
    statefulsets: list[ScalableOwner] = []
    deployments: list[ScalableOwner] = []
    workloads: list[Workload] = []
    workload_api_version: str | None = None
    namespace_labels: dict[str, dict[str, str]] = {}
    namespace_annotations: dict[str, dict[str, str]] = {}
    objects: list = []
    queues: dict[str, list] = {"LocalQueue": [], "ClusterQueue": [], "ResourceFlavor": []}
    queue_decoders = {
        "LocalQueue": (jobobjects.LOCAL_QUEUE, jobobjects.local_queue),
        "ClusterQueue": (jobobjects.CLUSTER_QUEUE, jobobjects.cluster_queue),
        "ResourceFlavor": (jobobjects.RESOURCE_FLAVOR, jobobjects.resource_flavor),
    }
    for index, raw in enumerate(page.items):
        head = decode(_TYPE_META, raw, f"item {index} of the kubectl dump")
        if not head.kind or not head.api_version:
            raise ValueError(f"item {index} of the kubectl dump has no kind/apiVersion")
        group = head.api_version.split("/", 1)[0] if "/" in head.api_version else ""
        what = f"{head.kind} (item {index}) of the kubectl dump"
        if head.kind == "Pod" and group == "":
            pod = decode(_POD, raw, what)
            p = gpu_pod(pod)
            if p is not None:
                pods.append(p)
            else:
                objects.append(jobobjects.kube_object(decode(jobobjects.OWNER, raw, what), head.api_version, head.kind))
            t = tenant(pod)
            if t is not None:
                tenants.append(t)
        elif head.kind == "Node" and group == "":
            n = node(decode(_NODE, raw, what))
            nodes[n.name] = n
        elif head.kind == "Namespace" and group == "":
            ns = decode(_NAMESPACE, raw, what)
            namespace_labels[ns.metadata.name] = dict(ns.metadata.labels)
            namespace_annotations[ns.metadata.name] = dict(ns.metadata.annotations)
        elif head.kind == "StatefulSet" and group == "apps":
            statefulsets.append(scalable_owner(decode(_SCALABLE, raw, what), "StatefulSet"))
        elif head.kind == "Deployment" and group == "apps":
            deployments.append(scalable_owner(decode(_SCALABLE, raw, what), "Deployment"))
        elif head.kind == "Notebook" and group == KUBEFLOW_GROUP:
            notebooks.append(notebook(decode(_NOTEBOOK, raw, what)))
        elif head.kind == "NodeClaim" and group == KARPENTER_GROUP:
            claim = decode(_NODECLAIM, raw, what)
            if claim.status.node_name:
                nodeclaims[claim.status.node_name] = claim.metadata.name
        elif head.kind == "NodePool" and group == KARPENTER_GROUP:
            pool = nodepool(decode(_NODEPOOL, raw, what))
            nodepools[pool.name] = pool
        elif head.kind == "Workload" and group == KUEUE_GROUP:
            workloads.append(workload(decode(_WORKLOAD, raw, what), head.api_version))
            workload_api_version = workload_api_version or head.api_version
        elif head.kind in queue_decoders and group == KUEUE_GROUP:
            decoder, convert = queue_decoders[head.kind]
            queues[head.kind].append(convert(decode(decoder, raw, what)))
        elif (group, head.kind) in jobobjects.OWNER_KINDS or (group, head.kind) in jobobjects.LISTED_KINDS:
            # A non-GPU Pod (an LWS leader without GPUs) is an owner too.
            objects.append(jobobjects.kube_object(decode(jobobjects.OWNER, raw, what), head.api_version, head.kind))
    return ClusterSnapshot(
        taken_at=taken_at,
        pods=tuple(pods),
        nodes=with_tenants(nodes.values(), tenants, nodeclaims),
        notebooks=tuple(notebooks),
        statefulsets=tuple(statefulsets),
        deployments=tuple(deployments),
        workloads=tuple(workloads),
        workload_api_version=workload_api_version,
        namespace_labels=namespace_labels,
        namespace_annotations=namespace_annotations,
        objects=tuple(jobobjects.owners_of_gpu_pods(pods, objects, {
            **{(o.namespace, o.kind, o.name): o.owners for o in (*statefulsets, *deployments)},
            **{(n.namespace, "Notebook", n.name): () for n in notebooks},
            **{(p.namespace, "Pod", p.name): p.owners for p in pods},
        })),
        local_queues=tuple(queues["LocalQueue"]),
        cluster_queues=tuple(queues["ClusterQueue"]),
        resource_flavors=tuple(queues["ResourceFlavor"]),
        nodepools=nodepools,
    )


class KubectlDumpError(ValueError):
    """A kubectl dump that cannot be used; the message names the file, the problem and how to
    make a good one."""


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

DUMP_COMMAND = (
    "kubectl get pods,nodes,namespaces,statefulsets,deployments,jobs,workloads.kueue.x-k8s.io,"
    "localqueues.kueue.x-k8s.io,clusterqueues.kueue.x-k8s.io,resourceflavors.kueue.x-k8s.io,"
    "notebooks.kubeflow.org -A -o json > cluster.json"
)


def kubectl_dump_items(data: bytes) -> list[dict[str, Any]]:
    """The objects of a kubectl dump (a ``List`` JSON document, UTF-8), as plain JSON. Raises
    KubectlDumpError when ``data`` is not UTF-8, not JSON or not a List."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise KubectlDumpError(f"the kubectl dump is not UTF-8 text (byte {data[e.start]:#04x} at offset {e.start})") from e
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise KubectlDumpError(f"the kubectl dump is not JSON: {e}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise KubectlDumpError("the kubectl dump is not a List (expected a JSON object with an 'items' list)")
    return doc["items"]


def read_kubectl_dump(path: str | Path) -> bytes:
    """The bytes of the kubectl dump at ``path``, checked to decode as a cluster (every object
    the bot reads is well-formed). Raises KubectlDumpError naming the file and the problem:
    missing, a directory, unreadable, not UTF-8, not JSON, not a List, or a malformed object."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise KubectlDumpError(f"{p}: no such file; make one with `{DUMP_COMMAND}`") from None
    except IsADirectoryError:
        raise KubectlDumpError(f"{p} is a directory, not a kubectl dump; make one with `{DUMP_COMMAND}`") from None
    except OSError as e:
        raise KubectlDumpError(f"{p} cannot be read: {e.strerror or e}") from None
    try:
        kubectl_dump_items(data)
        # Decoded once now so a malformed object fails here, naming the file, not mid-sweep.
        snapshot_from_kubectl_dump(data, _EPOCH)
    except ValueError as e:
        raise KubectlDumpError(f"{p}: {e}; make a dump with `{DUMP_COMMAND}`") from None
    return data
