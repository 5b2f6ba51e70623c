"""The GPU models the bot knows, by family: how a family is named in DCGM's ``modelName``, GPU
Feature Discovery's ``nvidia.com/gpu.product``, cloud catalogs and what people type; how a MIG
slice or a shared replica counts against a whole GPU.

A family key (``"H100"``, ``"A100"``, ``"MI300X"``) is what prices, idle power ceilings and
Kueue ResourceFlavors are matched on; memory sizes and form factors (SXM, PCIe, NVL) are variants of a
family, not families of their own.

Fractions of a GPU (every consumer requests a number of physical-GPU equivalents):

- a MIG instance of profile ``Ng.*`` is N of the GPU's compute slices: N/7 on A100, H100, H200,
  B200 and the other 7-slice GPUs, N/4 on A30 (NVIDIA's MIG user guide, "Supported MIG
  Profiles": A30 has 4 GPCs' worth of slices, the others 7);
- a time-sliced or MPS-shared replica is 1/R of a GPU advertised as R replicas (the NVIDIA
  device plugin's ``sharing.timeSlicing.resources[].replicas``; GPU Feature Discovery labels the
  node ``nvidia.com/gpu.replicas``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from actions.hardware.mig_names import MIG_RESOURCE_PREFIX, parse_mig

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"  # the device plugin's renameByDefault name
AMD_GPU_RESOURCE = "amd.com/gpu"

# Family key -> vendor.
FAMILIES: dict[str, str] = {
    "P100": "NVIDIA",
    "V100": "NVIDIA",
    "T4": "NVIDIA",
    "A10": "NVIDIA",
    "A10G": "NVIDIA",
    "A16": "NVIDIA",
    "A30": "NVIDIA",
    "A40": "NVIDIA",
    "A100": "NVIDIA",
    "A800": "NVIDIA",
    "L4": "NVIDIA",
    "L40": "NVIDIA",
    "L40S": "NVIDIA",
    "RTX6000ADA": "NVIDIA",
    "RTXPRO6000": "NVIDIA",
    "H20": "NVIDIA",
    "H100": "NVIDIA",
    "H800": "NVIDIA",
    "H200": "NVIDIA",
    "GH200": "NVIDIA",
    "B100": "NVIDIA",
    "B200": "NVIDIA",
    "GB200": "NVIDIA",
    "B300": "NVIDIA",
    "GB300": "NVIDIA",
    "MI210": "AMD",
    "MI250": "AMD",
    "MI250X": "AMD",
    "MI300X": "AMD",
    "MI325X": "AMD",
}

# MIG-capable families and their compute slices (NVIDIA MIG user guide); the rest cannot be
# partitioned with MIG.
MIG_SLICES: dict[str, int] = {
    "A30": 4,
    "A100": 7,
    "A800": 7,
    "H100": 7,
    "H800": 7,
    "H200": 7,
    "H20": 7,
    "GH200": 7,
    "B200": 7,
    "GB200": 7,
    "B300": 7,
    "GB300": 7,
    "RTXPRO6000": 4,
}

# The memory (decimal GB) a family's GPU has when its name does not say: the variant sold most, or
# the only one NVIDIA mig-parted's deployments/systemd/config-default.yaml knows (its whole-GPU
# profile: GB200 7g.186gb, RTX PRO 6000 Blackwell 4g.96gb; H20, device 0x2329, is grouped there
# with the 96 GB H100 and GH200: 1g.12gb, 2g.24gb, 3g.48gb). GH200 has none: it comes with 96 or
# 144 GB, so a name without the figure is not guessed.
DEFAULT_MEMORY_GB: dict[str, int] = {
    "A30": 24, "A100": 40, "H100": 80, "H200": 141, "B200": 180, "GB200": 186, "H20": 96, "RTXPRO6000": 96,
}

# Words joined before matching, so "NVIDIA RTX 6000 Ada Generation" finds RTX6000ADA.
_JOINED = (("RTX", "6000", "ADA"), ("RTX", "PRO", "6000"))


# A fleet has a handful of model names and a sweep asks for each once a GPU.
@functools.lru_cache(maxsize=1024)
def gpu_family(model_name: str) -> str | None:
    """The family key of a GPU's name: DCGM ``modelName``, GFD ``nvidia.com/gpu.product``, a
    catalog entry or what someone typed.

    ``"NVIDIA H100 80GB HBM3"`` -> ``"H100"``, ``"NVIDIA-A100-SXM4-40GB"`` -> ``"A100"``,
    ``"Tesla T4"`` -> ``"T4"``, ``"AMD Instinct MI300X"`` -> ``"MI300X"``, ``"h200nvl"`` ->
    ``"H200"``, ``"h100s"`` -> ``"H100"``. Returns ``None`` when no known family matches.
    """
    tokens = [t for t in re.split(r"[\s\-_]+", model_name.upper()) if t]
    for joined in _JOINED:
        n = len(joined)
        for i in range(len(tokens) - n + 1):
            if tuple(tokens[i : i + n]) == joined:
                return "".join(joined)
    for token in tokens:
        if token in FAMILIES:
            return token
    for token in tokens:
        # A form factor glued to the name (H100NVL, A100SXM4) or a plural (h100s).
        glued = re.fullmatch(r"([A-Z]+\d+[A-Z]?)(?:NVL|SXM\d?|PCIE|S)", token)
        if glued and glued.group(1) in FAMILIES:
            return glued.group(1)
    return None


def mig_profile(name: str) -> str | None:
    """The MIG profile, without attributes, in a resource name, GFD product, kube-state-metrics
    label or DCGM ``GPU_I_PROFILE`` (:func:`actions.hardware.mig_names.parse_mig`):
    ``"nvidia.com/mig-1g.5gb"`` -> ``"1g.5gb"``, ``"NVIDIA-A100-SXM4-40GB-MIG-3g.20gb"`` ->
    ``"3g.20gb"``, ``"nvidia.com/mig-1g.24gb.gfx"`` -> ``"1g.24gb"``; None when there is none."""
    parsed = parse_mig(name)
    return parsed.base if parsed else None


def mig_fraction(profile: str, family: str | None) -> float:
    """The share of a whole GPU a MIG instance of ``profile`` (any form
    :func:`~actions.hardware.mig_names.parse_mig` reads: ``"1g.5gb"``,
    ``"nvidia.com/mig-1g.24gb-me"``) is on a GPU of ``family``: its compute slices over the GPU's
    (ratio 0-1). An unknown family counts as 7 slices, the common case. Raises ValueError for a
    name that is not a MIG profile."""
    parsed = parse_mig(profile)
    if parsed is None:
        raise ValueError(f"{profile!r} is not a MIG profile such as 1g.5gb")
    slices = MIG_SLICES.get(family or "", 7)
    return min(1.0, parsed.slices / slices)


def is_gpu_resource(name: str) -> bool:
    """Whether an extended resource name is a GPU or a share of one (whole, shared, MIG, AMD)."""
    return name in (GPU_RESOURCE, SHARED_GPU_RESOURCE, AMD_GPU_RESOURCE) or name.startswith(MIG_RESOURCE_PREFIX)


def gpu_equivalents(
    devices: Mapping[str, float], family: str | None, replicas: int = 1, product: str | None = None
) -> float:
    """Physical-GPU equivalents of ``devices`` (resource name -> count, as a pod requests them)
    on a node whose GPUs are of ``family``, advertised as ``replicas`` replicas each when shared,
    with GFD ``product`` (which names the MIG profile under the ``single`` MIG strategy, where
    every ``nvidia.com/gpu`` is one slice). Pure."""
    total = 0.0
    single_mig = mig_profile(product) if product and "-MIG-" in product.upper() else None
    share = 1.0 / max(1, replicas)
    for resource, count in devices.items():
        if resource.startswith(MIG_RESOURCE_PREFIX):
            total += count * mig_fraction(resource, family)
        elif resource == GPU_RESOURCE and single_mig:
            total += count * mig_fraction(single_mig, family)
        elif resource in (GPU_RESOURCE, SHARED_GPU_RESOURCE):
            # A replica of a time-sliced GPU keeps the plain name unless the plugin renames it.
            total += count * (share if replicas > 1 or resource == SHARED_GPU_RESOURCE else 1.0)
        else:
            total += count
    return total


# kube-state-metrics sanitizes a resource name into its ``resource`` label (every character
# outside [a-zA-Z0-9_] becomes "_": ``nvidia.com/mig-1g.5gb`` -> ``nvidia_com_mig_1g_5gb``).
KSM_GPU_RESOURCES = "nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.+|amd_com_gpu"
_KSM_PLAIN = {"nvidia_com_gpu": GPU_RESOURCE, "nvidia_com_gpu_shared": SHARED_GPU_RESOURCE, "amd_com_gpu": AMD_GPU_RESOURCE}


def resource_from_ksm(label: str) -> str | None:
    """The resource name behind a kube-state-metrics ``resource`` label value, as the device
    plugin advertises it: ``"nvidia_com_mig_1g_10gb_me"`` -> ``"nvidia.com/mig-1g.10gb.me"``,
    ``"nvidia_com_mig_1g_24gb_me_all"`` -> ``"nvidia.com/mig-1g.24gb.me.all"``,
    ``"nvidia_com_gpu"`` -> ``"nvidia.com/gpu"``; None for one that is not a GPU resource. A
    ``_me`` that was ``-me`` comes back as ``.me``: the same slices, so the same share."""
    if label in _KSM_PLAIN:
        return _KSM_PLAIN[label]
    parsed = parse_mig(label) if label.startswith("nvidia_com_mig_") else None
    return parsed.resource if parsed else None


def sharing_of(devices: Mapping[str, float], replicas: int = 1, product: str | None = None) -> str | None:
    """The sharing of ``devices`` (resource -> count): how they share a GPU, as a price line shows
    it (``"MIG 1g.5gb"``, ``"shared 1/4"``); None for whole GPUs."""
    shown = []
    single_mig = mig_profile(product) if product and "-MIG-" in product.upper() else None
    for resource in sorted(devices):
        if resource.startswith(MIG_RESOURCE_PREFIX):
            shown.append(f"MIG {mig_profile(resource)}")
        elif resource == GPU_RESOURCE and single_mig:
            shown.append(f"MIG {single_mig}")
        elif resource == SHARED_GPU_RESOURCE or (resource == GPU_RESOURCE and replicas > 1):
            shown.append(f"shared 1/{replicas}" if replicas > 1 else "shared")
    return ", ".join(dict.fromkeys(shown)) or None
