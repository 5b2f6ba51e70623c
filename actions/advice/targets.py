"""Targets that can schedule: the nodes a consumer's pods can land on, what those nodes offer (MIG
profiles, whole GPUs), and whether right-sizing advice names a size some node can give. Pure.

A pod can land on a node (the Kubernetes scheduler's NodeAffinity and TaintToleration filters:
kubernetes/component-helpers scheduling/corev1/nodeaffinity/nodeaffinity.go
``RequiredNodeAffinity.Match``; kubernetes/api core/v1/toleration.go ``ToleratesTaint``) when
every ``nodeSelector`` label is on the node with that value; some term of its required node
affinity holds (every ``matchExpressions`` entry over the node's labels: ``In``, ``NotIn``,
``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``; ``matchFields`` over ``metadata.name``; a term
with neither matches nothing); and each ``NoSchedule`` or ``NoExecute`` taint is tolerated
(``PreferNoSchedule`` only steers). A toleration matches a taint when its effect is empty or
the taint's, its key empty or the taint's, and its operator ``Exists`` or ``Equal`` (empty)
with the taint's value; ``Lt``/``Gt`` tolerations are behind a feature gate and count as not
matching.

A node offers a MIG profile by its ``nvidia.com/mig.strategy`` (GPU Feature Discovery,
k8s-device-plugin internal/lm/mig-strategy.go): under ``mixed`` each ``nvidia.com/mig-<name>``
in ``status.allocatable``, requested as that resource and pinned with the node's label
``nvidia.com/mig-<name>.product``; under ``single`` the one profile its ``nvidia.com/gpu.product``
ends in (``...-MIG-<name>``), requested as ``nvidia.com/gpu`` and pinned with that label; under
``none`` (no label) nothing. A MIG profile counts only on a node whose GPU is the consumer's
(GFD's product, the parent's under ``single``, equal to the consumer's NVML name as GFD writes
it). Whole GPUs are the ``nvidia.com/gpu`` a node offers outside MIG ``single`` and time-slicing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from actions.hardware.gpus import GPU_RESOURCE
from actions.hardware.mig import MigFit, smallest_profile
from actions.hardware.mig_names import MigName, gfd_name, parent_product, parse_mig
from actions.model.kube import GpuPod, Node, NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration

HARD_EFFECTS = ("NoSchedule", "NoExecute")
# Why a consumer Kueue manages is resubmitted, never patched: while Kueue manages a StatefulSet its
# webhook refuses any change to the pod template's "shape" (kubernetes-sigs/kueue
# pkg/controller/jobs/statefulset/statefulset_webhook.go ValidateUpdate ->
# jobframework.ValidateImmutablePodGroupPodSpec over pkg/util/pod SpecShape: containers'
# resources.requests, nodeSelector, affinity, tolerations), and a Deployment's or a job's pods are
# admitted by Kueue for the resources they were submitted with.
KUEUE_RULE = ("Kueue's webhook forbids changing a managed pod template's resource requests and nodeSelector "
              "(kueue statefulset_webhook.go ValidateUpdate): stop it and resubmit")


def resubmit(kueue: str | None, change: str) -> str:
    """``change`` as a resubmission when Kueue manages the consumer (``kueue`` says why), else as it is."""
    return f"resubmit it with {change.removeprefix('request ')} ({kueue}; {KUEUE_RULE})" if kueue else change


@dataclass(frozen=True)
class MigOffer:
    """A node's way to give a pod MIG ``name``: under ``strategy`` ``mixed`` the pod requests
    ``resource`` (``nvidia.com/mig-<name>``), under ``single`` ``nvidia.com/gpu``; ``selector`` is
    the node label ``(key, value)`` a ``nodeSelector`` names to land on such a node."""

    name: MigName
    strategy: str
    resource: str
    selector: tuple[str, str]


@dataclass(frozen=True)
class NodeOffer:
    """What one node offers pods: ``product`` its GPU as GFD names it (the parent's under MIG
    ``single``; ``""`` without GFD), ``strategy`` its MIG strategy, ``mig`` its MIG offers and
    ``whole_gpus`` the whole ``nvidia.com/gpu`` allocatable (0 under MIG ``single`` or when
    time-sliced)."""

    node: str
    product: str
    strategy: str
    mig: tuple[MigOffer, ...] = ()
    whole_gpus: int = 0


def _requirement(r: NodeSelectorRequirement, value: str | None) -> bool:
    if r.operator == "In":
        return value is not None and value in r.values
    if r.operator == "NotIn":
        return value is None or value not in r.values
    if r.operator == "Exists":
        return value is not None
    if r.operator == "DoesNotExist":
        return value is None
    if r.operator in ("Gt", "Lt") and value is not None and len(r.values) == 1:
        try:
            have, bound = int(value), int(r.values[0])
        except ValueError:
            return False
        return have > bound if r.operator == "Gt" else have < bound
    return False


def _term(term: NodeSelectorTerm, node: Node) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False
    return all(_requirement(r, node.labels.get(r.key)) for r in term.match_expressions) and all(
        _requirement(r, node.name if r.key == "metadata.name" else None) for r in term.match_fields)


def _tolerates(t: Toleration, taint: Taint) -> bool:
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    if t.operator == "Exists":
        return True
    return t.operator in ("", "Equal") and t.value == taint.value


def can_land(pod: GpuPod, node: Node) -> bool:
    """Whether the scheduler would let ``pod`` (its nodeSelector, required node affinity and
    tolerations) onto ``node`` (its labels, name and taints), resources aside. Pure."""
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    if pod.node_affinity is not None and not any(_term(t, node) for t in pod.node_affinity):
        return False
    return all(any(_tolerates(t, taint) for t in pod.tolerations)
               for taint in node.taints if taint.effect in HARD_EFFECTS)


def node_offer(node: Node) -> NodeOffer:
    """What ``node`` offers (see the module docstring). Pure."""
    product = parent_product(node.gpu_product or "")
    strategy = node.mig_strategy
    allocatable = node.gpu_allocatable or node.gpu_devices  # a node that reports none: its capacity
    offers: list[MigOffer] = []
    if strategy == "mixed":
        for resource, count in sorted(allocatable.items()):
            name = parse_mig(resource) if count > 0 else None
            label = f"{resource}.product"
            if name is not None and node.labels.get(label):
                offers.append(MigOffer(name, "mixed", resource, (label, node.labels[label])))
    single = parse_mig(node.gpu_product) if strategy == "single" and node.gpu_product else None
    if single is not None and allocatable.get(GPU_RESOURCE, 0) > 0:
        offers.append(MigOffer(single, "single", GPU_RESOURCE, ("nvidia.com/gpu.product", node.gpu_product or "")))
    whole = 0 if single is not None or node.gpu_replicas > 1 or product.endswith("-SHARED") else (
        allocatable.get(GPU_RESOURCE, 0))
    return NodeOffer(node.name, product, strategy, tuple(offers), whole)


def landing(pods: Sequence[GpuPod], nodes: Iterable[Node]) -> tuple[NodeOffer, ...]:
    """What each node every one of ``pods`` can land on offers, by node name. Pure."""
    return tuple(node_offer(n) for n in sorted(nodes, key=lambda n: n.name) if all(can_land(p, n) for p in pods))


def _same_gpu(offer: NodeOffer, model: str) -> bool:
    return bool(offer.product) and offer.product == gfd_name(parent_product(model))


def mig_fit(model: str, peak_fb_mib: float, peak_engine_pct: float, headroom: float,
            nodes: Sequence[NodeOffer]) -> tuple[MigFit, MigOffer] | None:
    """The smallest MIG profile a node in ``nodes`` with the consumer's GPU (``model``, its NVML
    name) offers that holds the peak framebuffer (MiB) x (1 + ``headroom``) and the peak
    engine activity (percent 0-100), and how to request it (``mixed`` before ``single``); None
    when no offered profile fits. Pure."""
    offers = [o for n in nodes if _same_gpu(n, model) for o in n.mig]
    fit = smallest_profile(model, peak_fb_mib, peak_engine_pct, headroom, offered=[o.name.profile for o in offers])
    if fit is None:
        return None
    chosen = parse_mig(fit.variant or fit.profile)
    ways = sorted((o for o in offers if o.name == chosen), key=lambda o: (o.strategy != "mixed", o.selector))
    return fit, ways[0]


def no_mig_reason(model: str, fit: MigFit | None, nodes: Sequence[NodeOffer]) -> str:
    """Why no MIG profile is named for a consumer of GPU ``model`` whose peak fits ``fit`` (the
    MIG table's smallest, None when the table has none for the GPU): no node it can land on
    offers it, and what those nodes with its GPU run instead. Pure."""
    wanted = f"`{fit.resource}`" if fit is not None else f"a MIG profile of {model} that fits"
    same = [n for n in nodes if _same_gpu(n, model)]
    if not nodes:
        return f"no node offers {wanted}: no node it can land on was read"
    if not same:
        return f"no node offers {wanted}: none of the {len(nodes)} nodes it can land on has its GPU ({model})"
    strategies = Counter(n.strategy for n in same)
    shown = ", ".join(f"{k} ({v})" for k, v in sorted(strategies.items()))
    offered = sorted({o.name.profile for n in same for o in n.mig})
    gpu = gfd_name(parent_product(model))
    if not offered:
        return f"no node offers {wanted}: nodes with {gpu} it can land on run MIG strategy {shown}"
    return (f"no node offers {wanted}: nodes with {gpu} it can land on (MIG strategy {shown}) offer "
            f"{', '.join(offered)}, none of which fits")


def whole_gpus_fit(gpus_per_pod: int, model: str, nodes: Sequence[NodeOffer]) -> bool:
    """Whether some node in ``nodes`` offers ``gpus_per_pod`` whole GPUs of the consumer's GPU
    (``model``; a node without GFD's product label is taken as having it). Pure."""
    return any(n.whole_gpus >= gpus_per_pod and (not n.product or _same_gpu(n, model)) for n in nodes)
