"""How much power a GPU model's board may draw, from NVIDIA's datasheets: the "Max thermal design
power (TDP)" (H100, H200, L4, A10), "Max TDP power" (A100) or "Max power consumption" (L40S,
L40) row, in watts per GPU. Pure data and a lookup; what ``/gpu estimate`` bounds a request's
energy with.

A board's maximum is what it may draw, not what it does: a GPU draws it only while its work keeps
it busy. One H100 SXM measured in this repository (NVML, one reading a second,
``tests/support/data/h100_nvml_trace.csv``) drew :data:`MEASURED_H100` watts: near the 700 W
maximum while training, far under it idle. So an energy from these figures is an upper bound.

Each figure names the sheet it comes from and when it was read. The sheets were read through
reproductions of their specification tables (the public search index holds copies of NVIDIA's
product briefs and of the datasheet tables, not nvidia.com itself); every figure below was seen
in at least one such copy and agrees with NVIDIA's product pages as commonly quoted. A form factor
whose maximum is configurable ("Up to 700W (configurable)", "350-400W (configurable)") is listed
at the top of its range. GPUs without such a sheet here are left out rather than guessed: AWS's
A10G (no NVIDIA datasheet: AWS's own part), H200 NVL, B200 and the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from actions.hardware.specs import gpu_spec

CHECKED = "2026-11-27"  # when the figures below were read
H100_SHEET = "NVIDIA H100 Tensor Core GPU datasheet"
H100_PCIE_BRIEF = "NVIDIA H100 PCIe GPU product brief PB-11133-001_v02 (Nov 2022)"
H200_SHEET = "NVIDIA H200 Tensor Core GPU datasheet"
A100_SHEET = "NVIDIA A100 Tensor Core GPU datasheet"
A100_40GB_PCIE = "NVIDIA A100 40GB PCIe launch specifications (June 2020)"
L40S_SHEET = "NVIDIA L40S datasheet"
L40_SHEET = "NVIDIA L40 datasheet"
L4_SHEET = "NVIDIA L4 Tensor Core GPU datasheet"
A10_SHEET = "NVIDIA A10 Tensor Core GPU datasheet"


@dataclass(frozen=True)
class BoardPower:
    """One GPU model's maximum board power: ``family`` (a family key), ``form`` (``"SXM"``,
    ``"PCIe"``, ``"NVL"``, ``""`` for a family of one form), ``memory_gb`` (decimal GB, ``None``:
    every memory size of that form), ``watts`` (W per GPU) and the sheet it comes from
    (``source``, read on ``as_of``)."""

    family: str
    form: str
    watts: float
    source: str
    memory_gb: int | None = None
    as_of: str = CHECKED

    @property
    def name(self) -> str:
        """``"H100 SXM"``, ``"A100 PCIe 40GB"``, ``"L4"``."""
        memory = f"{self.memory_gb}GB" if self.memory_gb else ""
        return " ".join(p for p in (self.family, self.form, memory) if p)


BOARD_POWERS: tuple[BoardPower, ...] = (
    BoardPower("H100", "SXM", 700, H100_SHEET),  # "Up to 700W (configurable)"
    BoardPower("H100", "PCIe", 350, H100_PCIE_BRIEF),  # "up to its maximum thermal design power (TDP) level of 350 W"
    BoardPower("H100", "NVL", 400, H100_SHEET),  # "350-400W (configurable)", per GPU
    BoardPower("H200", "SXM", 700, H200_SHEET),  # "Up to 700W (configurable)"
    BoardPower("A100", "SXM", 400, A100_SHEET),  # "400W"
    BoardPower("A100", "PCIe", 300, A100_SHEET, memory_gb=80),  # "300W"
    BoardPower("A100", "PCIe", 250, A100_40GB_PCIE, memory_gb=40),
    BoardPower("L40S", "", 350, L40S_SHEET),  # "Max power consumption 350W"
    BoardPower("L40", "", 300, L40_SHEET),  # "Max power consumption 300W"
    BoardPower("L4", "", 72, L4_SHEET),  # "72W"
    BoardPower("A10", "", 150, A10_SHEET),  # "150W"
)

# One H100 SXM 80GB, measured with NVML once a second (tests/support/data/h100_nvml_trace.csv):
# (what it did, lowest W, highest W). tests/actions/hardware/test_power.py checks these against it.
MEASURED_H100: tuple[tuple[str, float, float], ...] = (
    ("training", 616, 701),
    ("idle with a model loaded", 120, 243),
    ("empty", 74, 130),
)
MEASURED_H100_SOURCE = "measured on one H100 (NVML, one reading a second)"


def board_power(model_name: str, memory: str | None = None) -> BoardPower | None:
    """The maximum board power of a GPU named as DCGM, GFD, a catalog entry or a request names it
    (``"NVIDIA H100 80GB HBM3"``, ``"H100"``, ``"A100"`` with ``memory`` ``"80GB HBM2e (PCIe)"``),
    read as :func:`~actions.hardware.specs.gpu_spec` reads the model (no form factor: SXM where
    the family has one). ``None`` for a GPU no sheet here covers (A10G, V100, T4, B200...)."""
    spec = gpu_spec(model_name, memory)
    if spec is None:
        return None
    for p in BOARD_POWERS:
        if p.family == spec.family and p.form == spec.form and p.memory_gb in (None, spec.memory_gb):
            return p
    return None


def measured_note(family: str | None) -> str:
    """What one measured GPU of ``family`` drew, for beside a datasheet maximum: ``"measured on
    one H100 (NVML, ...): training 616-701 W, idle with a model loaded 120-243 W, empty 74-130
    W"``; ``""`` for a family none was measured of."""
    if family != "H100":
        return ""
    shown = ", ".join(f"{what} {low:g}-{high:g} W" for what, low, high in MEASURED_H100)
    return f"{MEASURED_H100_SOURCE}: {shown}"
