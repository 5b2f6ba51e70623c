"""The energy advice saves: kWh at the GPUs per 730-h month (at the window's run rate, as the
dollars are), and what the advice would save together. Pure.

Which advice saves energy, decided from what is measured:

- **fewer GPUs** gives GPUs back: each of them stops drawing the consumer's measured mean power
  per GPU (``ConsumerUsage.mean_power_w``, ``DCGM_FI_DEV_POWER_USAGE``: the highest mean of its
  GPUs, so a GPU given back that sat idler drew less and this is the most it saves) for the hours
  a month it was held (its GPU-hours a month / its GPUs: 730 h for a consumer that ran the whole
  window). 2 GPUs given back at 300 W over 730 h: 2 x 300 W x 730 h / 1000 = 438 kWh a month. A GPU
  given back that stays powered on still draws its idle power (about 75 W empty on an H100); the
  saving counts it as switched off or used by work that would run anyway.
- **a MIG profile**: ``None``. The slice leaves the rest of its GPU to other tenants, so the GPU
  still draws; what the slice's own work draws is not measured (DCGM reports power per GPU, not
  per MIG instance), so no share of the GPU's power can be called saved.
- **a smaller GPU**: ``None``. The work moves to a GPU never measured running it; its datasheet
  maximum would give a bound, not a measured saving, and would be shown as one.
- **spot, commitments, idle reservations**: ``None``: the same hardware, bought another way.

The totals count each consumer once (as :func:`actions.advice.recommend.could_save` does the
dollars): its largest energy saving. CO2e needs the cluster's
:class:`~actions.energy.settings.EnergyFactors` (facility kWh x grid intensity), per cluster for
the advice of several.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from actions.advice.model import ConsumerUsage, Recommendation
from actions.energy.settings import EnergyFactors


def gpus_freed_kwh(u: ConsumerUsage, freed: int) -> float | None:
    """kWh a month (at the GPUs) that ``freed`` of ``u``'s whole GPUs drew: ``freed`` x its
    measured mean power per GPU (W) x its hours a month per GPU / 1000, to 0.1 kWh; ``None``
    without a power reading or when nothing is freed."""
    if freed <= 0 or u.mean_power_w is None or u.whole_gpus < 1:
        return None
    hours = u.gpu_hours_per_month / u.whole_gpus
    return round(freed * u.mean_power_w * hours / 1000, 1)


def _consumer(r: Recommendation) -> str:
    return r.key if r.kind in ("commitment", "reserved-idle") else r.key.split("/", 1)[1]


def _best(recs: Sequence[Recommendation]) -> dict[str, Recommendation]:
    """Per consumer, its recommendation saving the most energy (those with a figure only)."""
    best: dict[str, Recommendation] = {}
    for r in recs:
        if r.energy_saved_kwh_per_month is None:
            continue
        held = best.get(_consumer(r))
        if held is None or r.energy_saved_kwh_per_month > (held.energy_saved_kwh_per_month or 0):
            best[_consumer(r)] = r
    return best


def could_save_kwh(recs: Sequence[Recommendation]) -> float | None:
    """kWh a month at the GPUs the advice would save together, each consumer's largest saving
    once; ``None`` when no recommendation saves a measured amount."""
    best = _best(recs)
    return round(sum(r.energy_saved_kwh_per_month or 0 for r in best.values()), 1) if best else None


def could_save_co2e_kg(recs: Sequence[Recommendation],
                       energy: EnergyFactors | Mapping[str, EnergyFactors | None] | None) -> float | None:
    """kg CO2e a month of :func:`could_save_kwh` (facility kWh x the grid's intensity), with
    ``energy`` the factors of the cluster (one bot) or of each cluster by name (``Recommendation.cluster``);
    ``None`` when there is no energy saving or any part of it has no known intensity."""
    best = _best(recs)
    if not best or energy is None:
        return None
    total = 0.0
    for r in best.values():
        factors = energy if isinstance(energy, EnergyFactors) else energy.get(r.cluster)
        kg = factors.co2e_kg(r.energy_saved_kwh_per_month or 0) if factors is not None else None
        if kg is None:
            return None
        total += kg
    return round(total, 1)
