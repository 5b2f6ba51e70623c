"""GPU energy as reports carry it: kWh at the GPU (measured by DCGM), the part drawn while idle by the
bot's rule, the facility's kWh (x PUE, for the host's CPU, memory and cooling, which are not
measured) and the kg CO2e of those at the grid's carbon intensity. Plain immutable data.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EnergyUse:
    """Energy of some GPU use over a period. ``gpu_energy_kwh``/``idle_gpu_energy_kwh`` kWh at the
    GPU; ``facility_energy_kwh`` kWh with the PUE applied; ``co2e_kg`` kg CO2e, ``None`` when no
    carbon intensity is known, ``idle_co2e_kg`` that of the idle kWh; ``measured_gpu_hours`` the
    GPU-hours whose energy was measured (the rest is unknown, not zero)."""

    gpu_energy_kwh: float = 0.0
    idle_gpu_energy_kwh: float = 0.0
    facility_energy_kwh: float = 0.0
    co2e_kg: float | None = None
    measured_gpu_hours: float = 0.0
    idle_co2e_kg: float | None = None

    def __add__(self, other: "EnergyUse") -> "EnergyUse":
        return EnergyUse(
            self.gpu_energy_kwh + other.gpu_energy_kwh,
            self.idle_gpu_energy_kwh + other.idle_gpu_energy_kwh,
            self.facility_energy_kwh + other.facility_energy_kwh,
            _add(self.co2e_kg, other.co2e_kg),
            self.measured_gpu_hours + other.measured_gpu_hours,
            _add(self.idle_co2e_kg, other.idle_co2e_kg),
        )

    def measured_share(self, gpu_hours: float) -> float | None:
        """The share of ``gpu_hours`` whose energy was measured, ratio 0-1 (None without GPU-hours)."""
        return min(1.0, self.measured_gpu_hours / gpu_hours) if gpu_hours else None


def _add(a: float | None, b: float | None) -> float | None:
    # Unknown carbon stays unknown only when neither side knows it.
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)
