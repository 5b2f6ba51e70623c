"""Board power per GPU model: each datasheet figure found by the names DCGM, GFD, the catalog and
people use, GPUs without a sheet left unknown, and the measured H100 figures the estimate cites
checked against the real capture they come from."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from actions.hardware.power import BOARD_POWERS, MEASURED_H100, board_power, measured_note

TRACE = Path(__file__).parents[2] / "support" / "data" / "h100_nvml_trace.csv"


@pytest.mark.parametrize(("name", "memory", "watts", "shown"), [
    ("NVIDIA H100 80GB HBM3", None, 700, "H100 SXM"),
    ("H100", None, 700, "H100 SXM"),  # no form said: the cloud instances' SXM
    ("NVIDIA H100 PCIe", None, 350, "H100 PCIe"),
    ("NVIDIA H100 NVL", None, 400, "H100 NVL"),
    ("NVIDIA H200", None, 700, "H200 SXM"),
    ("NVIDIA A100-SXM4-40GB", None, 400, "A100 SXM"),
    ("A100", "80GB HBM2e (PCIe)", 300, "A100 PCIe 80GB"),
    ("NVIDIA A100-PCIE-40GB", None, 250, "A100 PCIe 40GB"),
    ("NVIDIA L40S", None, 350, "L40S"),
    ("NVIDIA L40", None, 300, "L40"),
    ("NVIDIA L4", None, 72, "L4"),
    ("NVIDIA A10", None, 150, "A10"),
])
def test_board_power_by_the_names_gpus_go_by(name, memory, watts, shown):
    p = board_power(name, memory)
    assert p is not None and (p.watts, p.name) == (watts, shown)
    assert p.source.startswith("NVIDIA ") and p.as_of


@pytest.mark.parametrize("name", ["NVIDIA A10G", "Tesla T4", "Tesla V100-SXM2-16GB", "NVIDIA H200 NVL", "NVIDIA B200",
                                  "AMD Instinct MI300X", ""])
def test_gpus_without_a_datasheet_figure_here_are_unknown(name):
    assert board_power(name) is None


def test_every_figure_names_its_sheet():
    assert all(p.source and p.as_of and p.watts > 0 for p in BOARD_POWERS)


def test_the_measured_h100_figures_are_the_captures():
    seen: dict[str, list[float]] = {}
    with TRACE.open() as f:
        for row in csv.DictReader(f):
            seen.setdefault(row["phase"], []).append(float(row["power_w"]))
    phases = {"training": "training", "idle with a model loaded": "notebook_idle_model_loaded", "empty": "empty_idle"}
    for what, low, high in MEASURED_H100:
        drawn = seen[phases[what]]
        assert (round(min(drawn)), round(max(drawn))) == (low, high), what
    assert "training 616-701 W" in measured_note("H100") and measured_note("A100") == ""
