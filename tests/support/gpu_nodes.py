"""GPU nodes as GPU Feature Discovery labels them and the NVIDIA device plugin advertises them, as
model :class:`~actions.model.kube.Node` objects and as what they offer a pod
(:func:`actions.advice.targets.node_offer`), for advice tests that build usage by hand.

Shapes (k8s-device-plugin v0.20.0, commit 1b826acc, internal/lm/mig-strategy.go, resource.go,
strategy.go, internal/rm/rm.go): ``nvidia.com/gpu.product`` is the NVML name with spaces as dashes
(under the ``single`` strategy ``<name>-MIG-<profile>``); ``nvidia.com/mig.strategy`` is
``single`` or ``mixed`` (no label under ``none``); under ``mixed`` each profile's resource is
``nvidia.com/mig-<profile, + as .>`` with the node label ``nvidia.com/mig-<profile>.product`` =
``<name>-MIG-<profile>``; under ``single`` every ``nvidia.com/gpu`` is one instance.
"""

from __future__ import annotations

from actions.advice.targets import NodeOffer, node_offer
from actions.hardware.gpus import MIG_SLICES, gpu_family
from actions.hardware.mig import MIG_PROFILES, gpu_variant
from actions.hardware.mig_names import gfd_name, parse_mig
from actions.model.kube import Node, Taint

H100 = "NVIDIA H100 80GB HBM3"


def whole_node(name: str, model: str = H100, gpus: int = 8, labels: dict | None = None,
               taints: tuple[Taint, ...] = ()) -> Node:
    """A node of ``gpus`` whole GPUs of ``model`` (NVML name), MIG strategy none."""
    return Node(name, labels={"nvidia.com/gpu.product": gfd_name(model), **(labels or {})},
                gpu_product=gfd_name(model), gpu_capacity=gpus, gpu_devices={"nvidia.com/gpu": gpus},
                gpu_allocatable={"nvidia.com/gpu": gpus}, taints=taints)


def mixed_node(name: str, model: str = H100, profiles: dict[str, int] | None = None, whole: int = 0,
               labels: dict | None = None, taints: tuple[Taint, ...] = ()) -> Node:
    """A node under the MIG ``mixed`` strategy advertising ``profiles`` (NVML profile -> count;
    default one of each profile of the MIG table for ``model`` short of the whole GPU) beside
    ``whole`` GPUs not partitioned."""
    if profiles is None:
        whole_gpu = MIG_SLICES.get(gpu_family(model) or "", 7)
        table = MIG_PROFILES.get(gpu_variant(model), ())  # type: ignore[arg-type]
        profiles = {p: 1 for p in table if parse_mig(p).slices < whole_gpu}
    product = gfd_name(model)
    devices = {parse_mig(p).resource: n for p, n in profiles.items()}
    if whole:
        devices["nvidia.com/gpu"] = whole
    gfd = {"nvidia.com/gpu.product": product, "nvidia.com/mig.strategy": "mixed"}
    for p in profiles:
        device = parse_mig(p).device_name
        gfd[f"nvidia.com/mig-{device}.product"] = f"{product}-MIG-{device}"
        gfd[f"nvidia.com/mig-{device}.count"] = str(profiles[p])
    return Node(name, labels={**gfd, **(labels or {})}, gpu_product=product, gpu_capacity=whole,
                gpu_devices=devices, gpu_allocatable=devices, taints=taints)


def single_node(name: str, model: str, profile: str, count: int) -> Node:
    """A node under the MIG ``single`` strategy: ``count`` instances of ``profile``, each one
    ``nvidia.com/gpu``."""
    product = f"{gfd_name(model)}-MIG-{parse_mig(profile).device_name}"
    gfd = {"nvidia.com/gpu.product": product, "nvidia.com/mig.strategy": "single", "nvidia.com/gpu.count": str(count)}
    return Node(name, labels=gfd, gpu_product=product, gpu_capacity=count, gpu_devices={"nvidia.com/gpu": count},
                gpu_allocatable={"nvidia.com/gpu": count})


def offers(*nodes: Node) -> tuple[NodeOffer, ...]:
    """What ``nodes`` offer, as a consumer that can land on all of them sees it."""
    return tuple(node_offer(n) for n in sorted(nodes, key=lambda n: n.name))


def h100_cluster(model: str = H100) -> tuple[NodeOffer, ...]:
    """An 8-GPU node of whole GPUs of ``model`` and a ``mixed`` node offering its MIG table's profiles."""
    return offers(whole_node("gpu-whole-1", model), mixed_node("gpu-mig-1", model))
