"""MIG profile names in every form the bot reads them, and the one parser every reader uses. Pure.

One profile, ``1g.10gb+me``, as each writer spells it:

- NVML, nvidia-smi, NVIDIA mig-parted and DCGM's ``GPU_I_PROFILE``: ``1g.10gb+me``. go-nvlib
  (pkg/nvlib/device/mig_profile.go, ``MigProfileInfo.String``) writes ``<G>g.<GB>gb``, then
  ``+<attr>[,<attr>]`` for added attributes or ``-<attr>`` for removed ones; the attributes are
  ``me`` (media extensions), ``me.all`` and ``gfx`` (``1g.24gb+gfx``, ``1g.24gb-me``,
  ``1g.24gb+me.all`` on the RTX PRO 6000). A compute-instance profile ``<C>c.<G>g.<GB>gb`` is
  one of its GPU instance's ``G`` slices.
- The NVIDIA device plugin's extended resource: ``nvidia.com/mig-1g.10gb.me``
  (k8s-device-plugin internal/rm/rm.go: ``strings.ReplaceAll("mig-"+p.String(), "+", ".")``,
  only for profiles whose C == G); a ``-`` stays (``nvidia.com/mig-1g.24gb-me``).
- GPU Feature Discovery's product label: ``NVIDIA-A100-SXM4-80GB-MIG-1g.10gb.me`` (the device
  name, ``+`` as ``.``, after the parent's name and ``MIG``: internal/lm/resource.go
  ``baseLabeler(count, model, "MIG", migProfile)``, internal/resource/nvml-mig-device.go
  ``GetName``), under ``nvidia.com/gpu.product`` (single strategy) or
  ``nvidia.com/mig-<name>.product`` (mixed).
- kube-state-metrics' ``resource`` label: ``nvidia_com_mig_1g_10gb_me`` (internal/store/utils.go
  ``SanitizeLabelName``: every character outside ``[a-zA-Z0-9_]`` becomes ``_``). This form is
  lossy: ``_me`` is ``+me`` or ``-me`` alike. Both are the same slices, so a share of a GPU
  read from it is exact; its ``+``/``-`` is not, and it is read as ``+``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
KSM_MIG_PREFIX = "nvidia_com_mig_"
ATTRIBUTES = ("me", "me.all", "gfx")  # go-nvlib v0.12.0 AttributeMediaExtensions(All), AttributeGraphics
MIB_PER_GB = 1e9 / 2**20  # decimal GB -> MiB: 953.67

# <C>c.<G>g.<GB>gb then "+" (NVML) or "." (device plugin) and attributes, or "-" and attributes.
_NAME = re.compile(r"^(?:(\d+)c\.)?(\d+)g\.(\d+)gb(?:([+.\-])([A-Za-z][A-Za-z0-9.,]*))?$", re.IGNORECASE)
_KSM = re.compile(r"^(?:(\d+)c_)?(\d+)g_(\d+)gb(?:_([A-Za-z][A-Za-z0-9_]*))?$", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"^[A-Za-z][A-Za-z0-9.]*(?<!\.)$")


@dataclass(frozen=True, order=True)
class MigName:
    """One MIG profile: ``slices`` (the G of ``<G>g``: GPU instance slices of the GPU's 7, or 4
    on A30 and RTX PRO 6000), ``memory_gb`` (the GB of ``<GB>gb``, NVML's rounding of its
    framebuffer, decimal GB), ``added`` (``+`` attributes, ``("me",)``) and ``removed`` (``-``
    attributes, ``("me",)`` for ``-me``)."""

    slices: int
    memory_gb: int
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    @property
    def base(self) -> str:
        """``"1g.10gb"``: slices and memory without attributes (what prices and fits read)."""
        return f"{self.slices}g.{self.memory_gb}gb"

    @property
    def profile(self) -> str:
        """NVML's name: ``"1g.10gb+me"``, ``"1g.24gb-me"``, ``"1g.24gb+me.all"``."""
        if self.removed:
            return f"{self.base}-{','.join(self.removed)}"
        return f"{self.base}+{','.join(self.added)}" if self.added else self.base

    @property
    def device_name(self) -> str:
        """The device plugin's and GFD's name: ``+`` as ``.`` (``"1g.10gb.me"``)."""
        return self.profile.replace("+", ".")

    @property
    def resource(self) -> str:
        """The extended resource the device plugin advertises under the ``mixed`` strategy:
        ``"nvidia.com/mig-1g.10gb.me"``."""
        return MIG_RESOURCE_PREFIX + self.device_name

    @property
    def ksm_resource(self) -> str:
        """kube-state-metrics' ``resource`` label of :attr:`resource`: ``"nvidia_com_mig_1g_10gb_me"``."""
        return re.sub(r"[^a-zA-Z0-9_]", "_", self.resource)

    @property
    def memory_mib(self) -> float:
        """MiB of framebuffer, the name's GB read as decimal (under what the instance holds)."""
        return self.memory_gb * MIB_PER_GB

    @property
    def plain(self) -> bool:
        """Whether it has no attributes (``1g.10gb``, not ``1g.10gb+me``)."""
        return not self.added and not self.removed


def _attributes(text: str) -> tuple[str, ...] | None:
    parts = tuple(text.split(","))
    return parts if all(_ATTRIBUTE.match(p) for p in parts) and len(set(parts)) == len(parts) else None


def _from(slices: str, memory: str, sign: str | None, attrs: str | None) -> MigName | None:
    if not attrs:
        return MigName(int(slices), int(memory))
    parsed = _attributes(attrs)
    if parsed is None:
        return None
    return MigName(int(slices), int(memory), removed=parsed) if sign == "-" else MigName(int(slices), int(memory), parsed)


def parse_mig(text: str) -> MigName | None:
    """The MIG profile ``text`` names, in any form of the module docstring: ``"1g.10gb+me"``,
    ``"MIG 1g.10gb"``, ``"nvidia.com/mig-1g.24gb.me.all"``, ``"nvidia.com/mig-1g.24gb-me"``,
    ``"NVIDIA-A100-SXM4-40GB-MIG-3g.20gb"``, ``"nvidia_com_mig_1g_24gb_gfx"``; ``None`` for
    anything else (``"nvidia.com/gpu"``, ``"NVIDIA-H100-80GB-HBM3-MIG-INVALID"``). Pure."""
    name = text.strip()
    if name.startswith(KSM_MIG_PREFIX):
        match = _KSM.match(name[len(KSM_MIG_PREFIX):])
        if match is None:
            return None
        attrs = match.group(4).replace("_", ".") if match.group(4) else None
        return _from(match.group(2), match.group(3), "+", attrs)
    if name.startswith(MIG_RESOURCE_PREFIX):
        name = name[len(MIG_RESOURCE_PREFIX):]
    elif "-MIG-" in name:
        name = name.rsplit("-MIG-", 1)[1]
    elif name.upper().startswith("MIG "):
        name = name[4:].strip()
    match = _NAME.match(name)
    return None if match is None else _from(match.group(2), match.group(3), match.group(4), match.group(5))


def parent_product(product: str) -> str:
    """The parent GPU's name in a GFD product under the single strategy:
    ``"NVIDIA-H100-NVL-MIG-1g.12gb"`` -> ``"NVIDIA-H100-NVL"``; a product without ``-MIG-`` as it is."""
    return product.rsplit("-MIG-", 1)[0] if "-MIG-" in product else product


def gfd_name(model: str) -> str:
    """A GPU's NVML name as GPU Feature Discovery writes it into a label value: characters outside
    ``[A-Za-z0-9-_. ]`` dropped, runs of spaces as one ``-`` (k8s-device-plugin
    internal/lm/resource.go ``sanitise``): ``"NVIDIA H100 80GB HBM3"`` -> ``"NVIDIA-H100-80GB-HBM3"``."""
    return "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", model).split())
