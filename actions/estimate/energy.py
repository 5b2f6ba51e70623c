"""The energy of an estimate: GPU-hours x the GPU model's maximum board power, an upper bound
(:mod:`actions.hardware.power`: a GPU draws its maximum only while busy), with where the figure
comes from, what one measured GPU of the model drew, and, given the cluster's
:class:`~actions.energy.settings.EnergyFactors`, the facility's kWh (x PUE) and kg CO2e. Pure.

A MIG slice counts its share of the GPU's board power (:func:`actions.hardware.gpus.mig_fraction`:
a ``3g.40gb`` of an H100 is 3/7 of 700 W), the share the bot charges it.
"""

from __future__ import annotations

from dataclasses import dataclass

from actions.energy.settings import EnergyFactors
from actions.hardware.gpus import gpu_family, mig_fraction
from actions.hardware.power import board_power, measured_note
from actions.text import co2e, kwh


@dataclass(frozen=True)
class EnergyEstimate:
    """At most ``kwh`` (kWh at the GPUs) for ``gpu_hours`` of ``gpu_name`` at ``watts`` (its board
    power x ``share``, the MIG slice's share of the GPU or 1), from ``source`` (the datasheet, read
    on ``as_of``); ``measured`` what one measured GPU of the model drew (``""``: none measured).
    ``facility_kwh`` and ``co2e_kg`` with ``factors`` (the cluster's PUE and carbon intensity,
    :meth:`~actions.energy.settings.EnergyFactors.describe`), ``None`` without them (``co2e_kg``
    also when the grid's intensity is unknown). ``unknown`` says why there is no figure
    (then ``kwh`` is ``None``)."""

    gpu_name: str
    gpu_hours: float
    kwh: float | None
    watts: float | None = None
    share: float = 1.0
    source: str = ""
    as_of: str = ""
    measured: str = ""
    facility_kwh: float | None = None
    co2e_kg: float | None = None
    factors: str | None = None
    unknown: str | None = None

    def describe(self) -> str:
        """``"up to 1,882 kWh at the H100 SXM's 700 W board power (NVIDIA H100 Tensor Core GPU
        datasheet, read 2026-11-27); measured on one H100 ...: training 616-701 W, ..."``, with
        the facility's kWh and the CO2e when known; or why the energy is unknown."""
        if self.kwh is None:
            return f"unknown, {self.unknown}"
        slice_ = f" x {self.share:.3g} for the MIG slice" if self.share < 1 else ""
        text = (f"up to {kwh(self.kwh)} at the GPUs, at the {self.gpu_name}'s {self.watts:g} W board power{slice_} "
                f"({self.source}, read {self.as_of})")
        if self.facility_kwh is not None:
            # The facility's kWh only where a PUE above 1 makes it another figure.
            parts = [f"{kwh(self.facility_kwh)} with the facility"] if self.facility_kwh > self.kwh + 1e-9 else []
            parts += [co2e(self.co2e_kg)] if self.co2e_kg is not None else []
            if parts:
                text += f"; {', '.join(parts)} ({self.factors})"
        return text + (f"; {self.measured}" if self.measured else "")


def estimate_energy(model: str | None, memory: str | None, gpu_hours: float,
                    energy: EnergyFactors | None = None, mig_profile: str | None = None) -> EnergyEstimate:
    """The energy of ``gpu_hours`` GPU-hours of ``model`` (a family key or a GPU's name, with
    ``memory`` such as ``"80GB HBM3"`` or a catalog entry's ``"80GB HBM2e (PCIe)"``), or of a MIG
    slice of it (``mig_profile``: ``"1g.10gb"``, each GPU-hour one slice's), at its board power
    (kWh = GPU-hours x W x share / 1000), with the facility's kWh and CO2e from ``energy``.
    Unknown, saying why, for no model or one no datasheet here covers. Pure."""
    if not model:
        return EnergyEstimate("", gpu_hours, None, unknown="no GPU model named, so no board power to bound it with")
    power = board_power(model, memory)
    if power is None:
        return EnergyEstimate(model, gpu_hours, None, unknown=(
            f"no NVIDIA datasheet board power is known here for {model}" + (
                " (AWS's own part: NVIDIA publishes no datasheet for it)" if gpu_family(model) == "A10G" else "")))
    share = mig_fraction(mig_profile, power.family) if mig_profile else 1.0
    watts = power.watts * share
    gpu_kwh = round(gpu_hours * watts / 1000, 2)
    facility = co2 = factors = None
    if energy is not None:
        facility, co2, factors = round(energy.facility_kwh(gpu_kwh), 2), energy.co2e_kg(gpu_kwh), energy.describe()
    return EnergyEstimate(
        gpu_name=power.name, gpu_hours=gpu_hours, kwh=gpu_kwh, watts=power.watts, share=share, source=power.source,
        as_of=power.as_of, measured=measured_note(power.family), facility_kwh=facility, co2e_kg=co2, factors=factors,
    )


def energy_jsonable(e: EnergyEstimate | None) -> dict | None:
    """An estimate's energy as JSON-ready data (``--json``): kWh at the GPUs (an upper bound), the
    board power and its source, the facility's kWh and kg CO2e (``null`` without the factors)."""
    if e is None:
        return None
    return {
        "energy_kwh": e.kwh, "upper_bound": e.kwh is not None, "gpu": e.gpu_name or None,
        "board_power_w": e.watts, "share_of_gpu": e.share, "source": e.source or None, "as_of": e.as_of or None,
        "measured": e.measured or None, "facility_kwh": e.facility_kwh,
        "co2e_kg": None if e.co2e_kg is None else round(e.co2e_kg, 2), "factors": e.factors,
        "unknown": e.unknown,
    }
