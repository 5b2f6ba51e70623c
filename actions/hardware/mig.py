"""MIG profiles per GPU variant, and the smallest one a measured peak fits. Pure.

Profiles come from NVIDIA mig-parted (github.com/NVIDIA/mig-parted, commit bd7160f4 of
2026-08-21): deployments/systemd/config-default.yaml, whose comments name the GPUs each
``all-<profile>`` config is for and whose ``all-balanced`` config names each GPU by PCI device
ID, and pkg/mig/builder/builder_test.go's table of each GPU's profiles (after NVIDIA's MIG user
guide, "Supported MIG Profiles"). Attribute variants (``+me``, ``+gfx``, ``-me``, ``+me.all``:
:mod:`actions.hardware.mig_names`) are left out of the table: they cost the same slices. A
profile ``Ng.Mgb`` has N compute slices of the GPU's 7 (4 on A30 and RTX PRO 6000) and M GB of
framebuffer.

A GB in a profile name is a decimal gigabyte, rounded by NVIDIA; the instance really holds about
that (1g.10gb on an 80 GB H100 is 9.75 GiB). :func:`profile_memory_mib` takes the name's figure
as decimal GB, about 4.6% under the GiB it reads like, so a fit is never judged on memory the
instance does not have.

A GPU's variant is its family and memory: the memory its name gives when it is one the table
knows for the family (``"NVIDIA H100 80GB HBM3"``: 80; ``"NVIDIA GH200 144G HBM3e"``: 144), else
its datasheet memory for the form factor it names (``"NVIDIA H100 NVL"``: 94,
:mod:`actions.hardware.specs`), else the family's usual one. A name whose figure is no variant of
the family (``"NVIDIA GH200 480GB"``) has none: no profile is guessed for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from actions.hardware.gpus import DEFAULT_MEMORY_GB, MIG_SLICES, gpu_family
from actions.hardware.mig_names import MIB_PER_GB, MigName, parent_product, parse_mig
from actions.hardware.specs import gpu_spec

__all__ = ["DEFAULT_MEMORY_GB", "MIB_PER_GB", "MIG_PROFILES", "MigFit", "gpu_variant", "profile_memory_mib",
           "smallest_profile"]

# (family, memory GB of the whole GPU) -> profiles, smallest first (mig-parted, see above).
MIG_PROFILES: dict[tuple[str, int], tuple[str, ...]] = {
    ("A30", 24): ("1g.6gb", "2g.12gb", "4g.24gb"),
    ("A100", 40): ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    ("A100", 80): ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    ("H100", 80): ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    # H100 NVL (device 0x2321): "# H100 NVL, H800 NVL, GH200" and "# H100 NVL, H800 NVL" configs.
    ("H100", 94): ("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
    ("H100", 96): ("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
    ("H200", 141): ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
    ("B200", 180): ("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
    # GB200 HGX (0x2941): "# GB200, B200" 1g.23gb, "# GB200 HGX" 1g.47gb ... 7g.186gb.
    ("GB200", 186): ("1g.23gb", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"),
    # GH200 (0x2342): "# H100 NVL, H800 NVL, GH200" and "# H100-96GB, PG506-96GB, GH200" configs.
    ("GH200", 96): ("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
    # GH200 144G HBM3e (0x2348): commits 8cdf60f9 and 5af180da ("# GH200 144G HBM3e").
    ("GH200", 144): ("1g.18gb", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb"),
    # H20 (0x2329): named only in all-balanced, beside the 96 GB H100 and GH200.
    ("H20", 96): ("1g.12gb", "2g.24gb", "3g.48gb"),
    # RTX PRO 6000 Blackwell (0x2BB5), 4 slices: "# RTX PRO 6000 Blackwell" configs.
    ("RTXPRO6000", 96): ("1g.24gb", "2g.48gb", "4g.96gb"),
}

_MEMORY = re.compile(r"(\d+)\s*GB?\b", re.IGNORECASE)


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
    variant: str = ""  # the offered profile when it has attributes, NVML form ("1g.24gb+gfx")

    @property
    def share(self) -> float:
        return self.slices / self.gpu_slices

    @property
    def resource(self) -> str:
        """The extended resource a pod requests for it under the ``mixed`` MIG strategy, as the
        device plugin names it (``nvidia.com/mig-1g.10gb``, ``nvidia.com/mig-1g.24gb.gfx``)."""
        name = parse_mig(self.variant or self.profile)
        return name.resource if name else f"nvidia.com/mig-{self.profile}"


def gpu_variant(model_name: str) -> tuple[str, int] | None:
    """``(family, memory GB)`` of a GPU name as DCGM's ``modelName`` or GFD's product give it
    (a single-strategy product's ``-MIG-<profile>`` dropped): ``"NVIDIA H100 80GB HBM3"`` ->
    ``("H100", 80)``, ``"NVIDIA H100 NVL"`` -> ``("H100", 94)``, ``"NVIDIA-GB200"`` ->
    ``("GB200", 186)`` (see the module docstring); ``None`` for a GPU that is not MIG-capable,
    whose family is unknown or whose memory figure is no variant of its family."""
    name = parent_product(model_name)
    family = gpu_family(name)
    if family is None or family not in MIG_SLICES:
        return None
    known = {memory for f, memory in MIG_PROFILES if f == family}
    found = _MEMORY.search(name)
    if found:
        memory = int(found.group(1))
        return (family, memory) if memory in known else None
    spec = gpu_spec(name)
    if spec is not None and spec.memory_gb in known:
        return family, spec.memory_gb
    memory = DEFAULT_MEMORY_GB.get(family)
    return None if memory is None else (family, memory)


def profile_memory_mib(profile: str) -> float:
    """MiB of framebuffer a MIG ``profile`` (``"3g.40gb"``, or any form
    :func:`~actions.hardware.mig_names.parse_mig` reads) holds, its GB read as decimal. Raises
    ValueError for a name that is not a MIG profile."""
    name = parse_mig(profile)
    if name is None:
        raise ValueError(f"{profile!r} is not a MIG profile such as 1g.10gb")
    return name.memory_mib


def _candidates(variant: tuple[str, int] | None, offered: Iterable[str] | None) -> list[MigName]:
    """The profiles to try, fewest slices then least memory first: ``offered`` (any name form;
    of several variants of one profile the plain one, else the one with fewest attributes) or
    the table's for ``variant``."""
    if offered is None:
        names = [parse_mig(p) for p in MIG_PROFILES.get(variant, ()) if variant is not None]
    else:
        names = [parse_mig(p) for p in offered]
    best: dict[tuple[int, int], MigName] = {}
    for n in names:
        if n is None:
            continue
        held = best.get((n.slices, n.memory_gb))
        if held is None or (len(n.added) + 2 * len(n.removed), n.profile) < (len(held.added) + 2 * len(held.removed), held.profile):
            best[(n.slices, n.memory_gb)] = n
    return [best[k] for k in sorted(best)]


def smallest_profile(
    model_name: str, peak_fb_mib: float, peak_engine_pct: float, headroom: float = 0.10,
    offered: Iterable[str] | None = None,
) -> MigFit | None:
    """The smallest MIG profile of ``model_name``'s GPU with memory >= ``peak_fb_mib`` x (1 +
    ``headroom``) (MiB; headroom a ratio 0-1) and compute share >= ``peak_engine_pct`` (percent
    0-100 of the whole GPU); the fewest slices first, then the least memory. The profiles tried
    are ``offered`` (names in any form, what nodes advertise for this GPU) when given, else the
    table's for the GPU's variant. ``None`` when none fits short of the whole GPU, or the GPU is
    not MIG-capable (or, without ``offered``, its variant unknown). Pure."""
    family = gpu_family(parent_product(model_name))
    if family not in MIG_SLICES:
        return None
    variant = gpu_variant(model_name)
    if offered is None and variant not in MIG_PROFILES:
        return None
    gpu_slices = MIG_SLICES[family]
    needed_mib = peak_fb_mib * (1 + headroom)
    for name in _candidates(variant, offered):
        if name.slices >= gpu_slices:
            continue  # the whole GPU: nothing to save
        if name.memory_mib >= needed_mib and 100 * name.slices / gpu_slices >= peak_engine_pct:
            return MigFit(name.base, name.slices, gpu_slices, name.memory_mib, needed_mib, peak_engine_pct,
                          "" if name.plain else name.profile)
    return None
