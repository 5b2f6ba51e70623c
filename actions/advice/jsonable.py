"""Advice as JSON (``advise --json``, ``report --json``): one recommendation as JSON-ready data, and
what the advice would save together. Pure."""

from __future__ import annotations

from typing import Mapping, Sequence

from actions.advice.energy import could_save_co2e_kg, could_save_kwh
from actions.advice.model import Recommendation
from actions.energy.settings import EnergyFactors
from actions.model.codec import to_jsonable


def recommendation_to_jsonable(r: Recommendation) -> Mapping[str, object]:
    """One recommendation as JSON-ready data: money in USD per month, energy in kWh at the GPUs
    per month (``energy_saved_kwh_per_month``, ``null`` where the advice frees no measured power),
    ``evidence`` as ``{name: value}``, ``prices`` with their sources and as-of dates."""
    return {
        "kind": r.kind,
        "key": r.key,
        "team": r.team,
        "namespace": r.namespace,
        "subject": r.subject,
        "summary": r.summary,
        "change": r.change,
        "current_usd_per_month": r.current_usd_per_month,
        "advised_usd_per_month": r.advised_usd_per_month,
        "saving_usd_per_month": r.saving_usd_per_month,
        "energy_saved_kwh_per_month": r.energy_saved_kwh_per_month,
        "evidence": dict(r.evidence),
        "prices": [to_jsonable(p) for p in r.prices],
        "notes": list(r.notes),
        "fingerprint": r.fingerprint,
    }


def energy_totals(recs: Sequence[Recommendation],
                  energy: EnergyFactors | Mapping[str, EnergyFactors | None] | None = None) -> dict[str, float | None]:
    """``could_save_kwh_per_month`` and ``could_save_co2e_kg_per_month`` of ``recs``
    (:mod:`actions.advice.energy`; the CO2e ``null`` without the cluster's energy factors)."""
    return {"could_save_kwh_per_month": could_save_kwh(recs),
            "could_save_co2e_kg_per_month": could_save_co2e_kg(recs, energy)}
