"""What a cost report says: per team the GPU-hours and USD by GPU model and capacity type (price
lines), idle GPU-hours, efficiency, spot ratio, top consumers and daily cost; the GPUs no pod
requested; the totals that reconcile with what the GPU nodes cost; and the report's JSON.

Money USD; GPU-hours in physical-GPU equivalents; efficiency and spot ratio ratios 0-1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Iterable, Mapping

from actions.cost.periods import day_buckets
from actions.model.codec import to_jsonable as _model_jsonable
from actions.model.energy import EnergyUse
from actions.model.kube import CapacityType

UNALLOCATED = "unallocated"
NO_PRICE = "no price found"
RESERVED_ON_PREM = "reserved/on-prem"
# Chart and table order of capacity types, cheapest commitment last.
CAPACITY_ORDER = (
    CapacityType.ON_DEMAND.value,
    CapacityType.SPOT.value,
    RESERVED_ON_PREM,
    CapacityType.UNKNOWN.value,
)
EFFICIENCY_TARGET = 0.80  # ratio 0-1; the FinOps showback layout's "target > 80%"


# --- outputs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PriceLine:
    """A price line: GPU-hours and USD of one (GPU model, capacity type, price) in a team's report.

    ``gpu_model`` is the GPU family as priced (``H100``), followed by the sharing when the GPUs
    were shared (``A100 MIG 1g.5gb``, ``H100 shared 1/4``); ``capacity_type`` is ``on-demand``, ``spot``, ``reserved/on-prem`` or ``unknown``;
    ``usd_per_gpu_hour`` USD per GPU-hour; ``price_source`` and ``price_as_of`` say where the
    price came from (empty ``price_as_of`` when the source has no date); ``energy_cost_usd`` the
    part of ``cost_usd`` that is the facility's energy (USD, on-prem GPUs only).
    """

    gpu_model: str
    capacity_type: str
    gpu_hours: float
    usd_per_gpu_hour: float
    cost_usd: float
    idle_gpu_hours: float
    idle_cost_usd: float
    price_source: str
    price_as_of: str = ""
    instance_type: str | None = None
    energy_cost_usd: float = 0.0


@dataclass(frozen=True)
class ConsumerLine:
    """One of a team's top consumers and what it used (GPU-hours, USD): ``kind`` is
    ``Notebook``, ``Workload`` (Kueue), ``Job``, ``Deployment``, ``StatefulSet``, ... or ``Pod``;
    ``idle_share`` ratio 0-1 of its GPU-hours that were idle; ``queue`` the Kueue LocalQueue when
    the pods carried one; ``gpu_energy_kwh`` the kWh its GPUs drew (measured, at the GPU)."""

    kind: str
    namespace: str
    name: str
    gpu_hours: float
    cost_usd: float
    idle_gpu_hours: float
    idle_share: float
    queue: str | None = None
    gpu_energy_kwh: float = 0.0


@dataclass(frozen=True)
class DailyCost:
    """One UTC day of a team's cost: USD by capacity type and the idle part of it (USD)."""

    day: date
    cost_usd_by_capacity_type: Mapping[str, float]
    idle_cost_usd: float

    @property
    def cost_usd(self) -> float:
        return sum(self.cost_usd_by_capacity_type.values())


@dataclass(frozen=True)
class TeamReport:
    """A team's showback over ``[period_start, period_end]``.

    GPU-hours, USD; ``efficiency`` and ``spot_ratio`` are ratios 0-1 (``None`` when the team used
    no GPU-hours). ``price_lines`` is sorted by cost, highest first; ``top_consumers`` likewise and
    cut to the report's top N; ``daily`` covers every UTC day the period touches; ``energy`` the
    kWh and kg CO2e of its GPUs (:class:`~actions.model.energy.EnergyUse`).
    """

    team: str
    period_start: datetime
    period_end: datetime
    gpu_hours: float
    cost_usd: float
    idle_gpu_hours: float
    idle_cost_usd: float
    efficiency: float | None
    spot_ratio: float | None
    price_lines: tuple[PriceLine, ...] = ()
    top_consumers: tuple[ConsumerLine, ...] = ()
    daily: tuple[DailyCost, ...] = ()
    notes: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    energy: EnergyUse = EnergyUse()

    @property
    def idle_share(self) -> float | None:
        """Idle GPU-hours / GPU-hours, ratio 0-1 (``None`` without GPU-hours)."""
        return self.idle_gpu_hours / self.gpu_hours if self.gpu_hours else None

    @property
    def unpriced_gpu_hours(self) -> float:
        """GPU-hours on GPUs no price source covers: in ``gpu_hours``, left out of ``cost_usd``."""
        return sum(f.gpu_hours for f in self.price_lines if f.price_source == NO_PRICE)


@dataclass(frozen=True)
class UnrequestedLine:
    """GPU-hours of nodes that no pod requested, and what they cost: ``by_node`` node -> (GPU-hours,
    USD), highest cost first; ``energy`` what those GPUs drew."""

    gpu_hours: float
    cost_usd: float
    by_node: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    energy: EnergyUse = EnergyUse()


@dataclass(frozen=True)
class CostReport:
    """Every team's report for one period; ``teams`` includes ``"unallocated"`` when pods in no
    team used GPUs. ``notes`` apply to the whole report (e.g. the Kubernetes API fallback);
    ``warnings`` say why its figures are incomplete (the report is then not to be trusted as
    it stands); ``covered_from`` is when the data starts, when that is after ``period_start``."""

    period_start: datetime
    period_end: datetime
    teams: Mapping[str, TeamReport]
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    covered_from: datetime | None = None
    unrequested: UnrequestedLine | None = None
    node_gpu_hours: float = 0.0
    node_cost_usd: float = 0.0
    # Teams of namespaces that ran no GPU pod in the period: asked for by name they get a $0
    # report (:meth:`team`), yet they stay out of ``teams`` and so out of the all-teams table.
    gpu_free_teams: frozenset[str] = frozenset()
    node_energy_kwh: float = 0.0  # kWh every GPU node's GPUs drew, measured
    energy_basis: str = ""  # the PUE and carbon intensity used, with their sources

    def team(self, name: str) -> TeamReport | None:
        """``name``'s report; a $0 one for a team that exists but used no GPU in the period (a
        namespace that ran only CPU pods); None when there is no such team."""
        found = self.teams.get(name)
        if found is not None or name not in self.gpu_free_teams:
            return found
        days = tuple(DailyCost(day, {}, 0.0) for day, _, _ in day_buckets(self.period_start, self.period_end))
        return TeamReport(name, self.period_start, self.period_end, 0.0, 0.0, 0.0, 0.0, None, None, daily=days)

    @property
    def reconciles(self) -> bool:
        """Whether teams + unallocated + unrequested come to what the GPU nodes cost, to the cent
        (only meaningful when the node capacity was read: ``node_gpu_hours`` > 0)."""
        accounted = self.cost_usd + (self.unrequested.cost_usd if self.unrequested else 0.0)
        return abs(accounted - self.node_cost_usd) < 0.005

    @property
    def coverage(self) -> float:
        """The share of the period the data covers, ratio 0-1."""
        if self.covered_from is None:
            return 1.0
        whole = (self.period_end - self.period_start).total_seconds()
        held = (self.period_end - max(self.covered_from, self.period_start)).total_seconds()
        return max(0.0, min(1.0, held / whole)) if whole > 0 else 1.0

    @property
    def cost_usd(self) -> float:
        return sum(t.cost_usd for t in self.teams.values())

    @property
    def gpu_hours(self) -> float:
        return sum(t.gpu_hours for t in self.teams.values())


# Fields whose JSON key is the published name from before they were renamed (``report --json``).
_JSON_KEYS = {"price_lines": "by_flavor"}


def to_jsonable(obj: Any) -> Any:
    """A report (CostReport, TeamReport or any part) as JSON values: datetimes RFC 3339, dates
    ISO, USD and GPU-hours as floats; a TeamReport gains ``idle_share`` (ratio 0-1) and its energy
    figures at its top level (:func:`energy_json`)."""
    if isinstance(obj, TeamReport):
        out = {_JSON_KEYS.get(k, k): to_jsonable(getattr(obj, k)) for k in obj.__dataclass_fields__ if k != "energy"}
        out["idle_share"] = obj.idle_share
        out["unpriced_gpu_hours"] = obj.unpriced_gpu_hours
        out.update(energy_json(obj.energy, obj.gpu_hours))
        return out
    if isinstance(obj, DailyCost):
        return {
            "day": obj.day.isoformat(),
            "cost_usd": obj.cost_usd,
            "cost_usd_by_capacity_type": dict(obj.cost_usd_by_capacity_type),
            "idle_cost_usd": obj.idle_cost_usd,
        }
    if isinstance(obj, CostReport):
        return {
            "period_start": _model_jsonable(obj.period_start),
            "period_end": _model_jsonable(obj.period_end),
            "teams": {k: to_jsonable(v) for k, v in obj.teams.items()},
            "notes": list(obj.notes),
            "unrequested": (
                {"gpu_hours": obj.unrequested.gpu_hours, "cost_usd": obj.unrequested.cost_usd,
                 "by_node": {n: {"gpu_hours": h, "cost_usd": c} for n, (h, c) in obj.unrequested.by_node.items()},
                 **energy_json(obj.unrequested.energy, None)}
                if obj.unrequested else None
            ),
            "node_gpu_hours": obj.node_gpu_hours,
            "node_cost_usd": obj.node_cost_usd,
            "node_gpu_energy_kwh": obj.node_energy_kwh,
            "energy_basis": obj.energy_basis,
            "reconciles": obj.reconciles if obj.node_gpu_hours else None,
            "warnings": list(obj.warnings),
            "coverage": obj.coverage,
            "covered_from": _model_jsonable(obj.covered_from) if obj.covered_from else None,
        }
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, date) and not isinstance(obj, datetime):
        return obj.isoformat()
    return _model_jsonable(obj)


def energy_json(energy: EnergyUse, gpu_hours: float | None) -> dict[str, float | None]:
    """The published energy keys of a team (``gpu_hours`` given: with the measured share, ratio
    0-1) or of the unrequested GPUs: kWh at the GPU, idle kWh, facility kWh, kg CO2e."""
    out: dict[str, float | None] = {
        "gpu_energy_kwh": energy.gpu_energy_kwh,
        "idle_gpu_energy_kwh": energy.idle_gpu_energy_kwh,
        "facility_energy_kwh": energy.facility_energy_kwh,
        "co2e_kg": energy.co2e_kg,
        "idle_co2e_kg": energy.idle_co2e_kg,
    }
    if gpu_hours is not None:
        out["energy_measured_share"] = energy.measured_share(gpu_hours)
    return out


def table_order(reports: Iterable[TeamReport]) -> list[TeamReport]:
    """Reports sorted by cost, highest first, ``unallocated`` last (the all-teams table order)."""
    return sorted(reports, key=lambda r: (r.team == UNALLOCATED, -r.cost_usd, r.team))
