"""What a GPU model can do, from NVIDIA's datasheets: its memory, its dense FP16/BF16 tensor
throughput and its memory bandwidth. Pure data and a lookup; what advice needs to say a smaller
GPU would hold a consumer's work.

Throughput is the datasheet's BF16 (= FP16) Tensor Core figure *without* sparsity: the
datasheets print the 2:4-sparse figure with an asterisk, "specifications 1/2 lower without
sparsity", so that figure is halved here. Only GPUs with BF16 tensor cores are listed: V100 and
T4 have FP16 tensor cores only, and a model trained or served in BF16 does not run at speed on
them. GPUs no NVIDIA datasheet covers (AWS's A10G) are left out rather than guessed.

A memory size is the datasheet's GB, read as decimal GB as :mod:`actions.hardware.mig` reads a MIG
profile's (a 24 GB L4 shows 23,034 MiB usable with ECC on; 24 decimal GB is 22,888 MiB), so a
fit is never judged on memory the GPU does not have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from actions.hardware.gpus import DEFAULT_MEMORY_GB, gpu_family
from actions.hardware.mig_names import MIB_PER_GB

CHECKED = "2026-11-26"  # when the figures below were read from the datasheets
H100_SHEET = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)"
H200_SHEET = "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200)"
A100_SHEET = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100)"
L40S_SHEET = "NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s)"
L40_SHEET = "NVIDIA L40 datasheet (nvidia.com/en-us/data-center/l40)"
L4_SHEET = "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4)"
A10_SHEET = "NVIDIA A10 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/products/a10-gpu)"


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model: ``family`` (a family key), ``form`` (``"SXM"``, ``"PCIe"``, ``"NVL"``),
    ``memory_gb`` (decimal GB), ``tflops`` (dense FP16/BF16 tensor TFLOPS), ``bandwidth_gbs``
    (memory bandwidth, GB/s) and the datasheet they come from (``source``, read on ``as_of``)."""

    family: str
    form: str
    memory_gb: int
    tflops: float
    bandwidth_gbs: float
    source: str
    as_of: str = CHECKED

    @property
    def name(self) -> str:
        """``"H100 SXM 80GB"``, ``"L4 24GB"``."""
        return " ".join(p for p in (self.family, self.form, f"{self.memory_gb}GB") if p)

    @property
    def memory_mib(self) -> float:
        """The memory in MiB, its GB read as decimal."""
        return self.memory_gb * MIB_PER_GB


# The sparse figures as printed, halved: H100 SXM 1,979 TFLOPS*, PCIe 1,513*, NVL 1,671*;
# A100 312 (624*); L40S 362.05 (733*); L40 181.05 (362.1*); L4 242*; A10 125 (250*).
SPECS: tuple[GpuSpec, ...] = (
    GpuSpec("H100", "SXM", 80, 1979 / 2, 3350, H100_SHEET),
    GpuSpec("H100", "PCIe", 80, 1513 / 2, 2000, H100_SHEET),
    GpuSpec("H100", "NVL", 94, 1671 / 2, 3900, H100_SHEET),
    GpuSpec("H200", "SXM", 141, 1979 / 2, 4800, H200_SHEET),
    GpuSpec("H200", "NVL", 141, 1671 / 2, 4800, H200_SHEET),
    GpuSpec("A100", "SXM", 40, 312, 1555, A100_SHEET),
    GpuSpec("A100", "SXM", 80, 312, 2039, A100_SHEET),
    GpuSpec("A100", "PCIe", 40, 312, 1555, A100_SHEET),
    GpuSpec("A100", "PCIe", 80, 312, 1935, A100_SHEET),
    GpuSpec("L40S", "", 48, 362.05, 864, L40S_SHEET),
    GpuSpec("L40", "", 48, 181.05, 864, L40_SHEET),
    GpuSpec("L4", "", 24, 242 / 2, 300, L4_SHEET),
    GpuSpec("A10", "", 24, 125, 600, A10_SHEET),
)

_MEMORY = re.compile(r"(\d+)\s*GB", re.IGNORECASE)


def _form(text: str) -> str | None:
    upper = text.upper()
    if "NVL" in upper:
        return "NVL"
    if "PCIE" in upper:
        return "PCIe"
    if "SXM" in upper or "HBM3" in upper:
        return "SXM"
    return None


def gpu_spec(model_name: str, memory: str | None = None) -> GpuSpec | None:
    """The spec of a GPU named as DCGM's ``modelName`` or GFD's product gives it (``"NVIDIA H100
    80GB HBM3"``, ``"NVIDIA A100-SXM4-40GB"``, ``"NVIDIA L4"``), or a catalog entry's family with
    its ``memory`` (``"80GB HBM2e (PCIe)"``, ``"94GB (H100 NVL)"``). A name without a memory
    size takes the family's usual one; without a form factor, SXM where the family has one
    (the cloud instances' form). ``None`` for a GPU no datasheet figure here covers."""
    family = gpu_family(model_name)
    if family is None:
        return None
    text = f"{model_name} {memory or ''}"
    found = _MEMORY.search(text)
    form = _form(text)
    fits = [s for s in SPECS if s.family == family and (found is None or s.memory_gb == int(found.group(1)))]
    # A named form must match; an unnamed one is the cloud instances' SXM where the family has one.
    fits = [s for s in fits if s.form == form] if form else sorted(fits, key=lambda s: s.form != "SXM")
    if found is None:
        fits.sort(key=lambda s: s.memory_gb != DEFAULT_MEMORY_GB.get(family, s.memory_gb))
    return fits[0] if fits else None
