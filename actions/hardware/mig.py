"""MIG profiles per GPU variant, and the smallest one a measured peak fits. Pure.

Profiles come from NVIDIA's Multi-Instance GPU user guide, "Supported MIG Profiles" and
"Supported GPUs" (docs.nvidia.com/datacenter/tesla/mig-user-guide). The ``+me`` (media
extension) variants are left out: they cost the same slices and the bot never needs a decoder.
A profile ``Ng.Mgb`` has N compute slices of the GPU's 7 (4 on A30) and M GB of framebuffer.

A GB in a profile name is a decimal gigabyte, rounded by NVIDIA; the instance really holds about
that (1g.10gb on an 80 GB H100 is 9.75 GiB). :func:`profile_memory_mib` takes the name's figure
as decimal GB, about 4.6% under the GiB it reads like, so a fit is never judged on memory the
instance does not have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from actions.hardware.gpus import MIG_SLICES, gpu_family

# (family, memory GB of the whole GPU) -> profiles, smallest first (NVIDIA MIG user guide).
MIG_PROFILES: dict[tuple[str, int], tuple[str, ...]] = {
    ("A30", 24): ("1g.6gb", "2g.12gb", "4g.24gb"),
    ("A100", 40): ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    ("A100", 80): ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    ("H100", 80): ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    ("H100", 94): ("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
    ("H100", 96): ("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
    ("H200", 141): ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
    ("B200", 180): ("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
}

# The memory a family's GPU has when its name does not say (the variant sold most).
DEFAULT_MEMORY_GB: dict[str, int] = {"A30": 24, "A100": 40, "H100": 80, "H200": 141, "B200": 180}

MIB_PER_GB = 1e9 / 2**20  # decimal GB -> MiB: 953.67
_MEMORY = re.compile(r"(\d+)\s*GB", re.IGNORECASE)
_PROFILE = re.compile(r"^(\d+)g\.(\d+)gb$")


@dataclass(frozen=True)
class MigFit:
    """The smallest MIG profile a consumer's peak fits: ``profile`` (``"1g.10gb"``), its compute
    ``slices`` of the GPU's ``gpu_slices``, ``memory_mib`` (MiB, the name's GB taken as decimal),
    ``share`` (ratio 0-1 of a whole GPU it costs: slices / gpu_slices) and ``needed_mib``
    (peak FB x (1 + headroom), MiB) and ``needed_pct`` (peak engine activity, percent 0-100)."""

    profile: str
    slices: int
    gpu_slices: int
    memory_mib: float
    needed_mib: float
    needed_pct: float

    @property
    def share(self) -> float:
        return self.slices / self.gpu_slices

    @property
    def resource(self) -> str:
        """The extended resource a pod requests for it under the ``mixed`` MIG strategy."""
        return f"nvidia.com/mig-{self.profile}"


def gpu_variant(model_name: str) -> tuple[str, int] | None:
    """``(family, memory GB)`` of a GPU name as DCGM's ``modelName`` or GFD's product give it:
    ``"NVIDIA H100 80GB HBM3"`` -> ``("H100", 80)``, ``"NVIDIA A100-SXM4-40GB"`` -> ``("A100",
    40)``; the family's usual memory when the name has none; ``None`` for a GPU that is not
    MIG-capable or whose family is unknown."""
    family = gpu_family(model_name)
    if family is None or family not in MIG_SLICES:
        return None
    found = _MEMORY.search(model_name)
    memory = int(found.group(1)) if found else DEFAULT_MEMORY_GB.get(family)
    return None if memory is None else (family, memory)


def profile_memory_mib(profile: str) -> float:
    """MiB of framebuffer a MIG ``profile`` (``"3g.40gb"``) holds, its GB read as decimal.
    Raises ValueError for a name that is not ``Ng.Mgb``."""
    match = _PROFILE.match(profile)
    if match is None:
        raise ValueError(f"{profile!r} is not a MIG profile such as 1g.10gb")
    return int(match.group(2)) * MIB_PER_GB


def smallest_profile(
    model_name: str, peak_fb_mib: float, peak_engine_pct: float, headroom: float = 0.10
) -> MigFit | None:
    """The smallest MIG profile of ``model_name``'s GPU with memory >= ``peak_fb_mib`` x (1 +
    ``headroom``) (MiB; headroom a ratio 0-1) and compute share >= ``peak_engine_pct`` (percent
    0-100 of the whole GPU); the fewest slices first, then the least memory. ``None`` when the
    GPU has no MIG profiles the bot knows or only the whole GPU fits. Pure."""
    variant = gpu_variant(model_name)
    if variant is None or variant not in MIG_PROFILES:
        return None
    family, _ = variant
    gpu_slices = MIG_SLICES[family]
    needed_mib = peak_fb_mib * (1 + headroom)
    for profile in MIG_PROFILES[variant]:
        slices = int(profile.split("g.", 1)[0])
        if slices >= gpu_slices:
            return None  # the whole GPU: nothing to save
        if profile_memory_mib(profile) >= needed_mib and 100 * slices / gpu_slices >= peak_engine_pct:
            return MigFit(profile, slices, gpu_slices, profile_memory_mib(profile), needed_mib, peak_engine_pct)
    return None
