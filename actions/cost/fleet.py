"""Several clusters' cost reports added up into the fleet's: every team summed over the clusters,
a line per cluster, and the clusters whose report failed named. Pure.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from actions.cost.report import CostReport, DailyCost, PriceLine, TeamReport, UnrequestedLine
from actions.model.energy import EnergyUse

# --- reports ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterTotal:
    """One cluster's line in the fleet table: GPU-hours, USD, idle GPU-hours and idle USD over the
    period (``error`` set instead when its report could not be made)."""

    cluster: str
    gpu_hours: float = 0.0
    cost_usd: float = 0.0
    idle_gpu_hours: float = 0.0
    idle_cost_usd: float = 0.0
    error: str | None = None


@dataclass(frozen=True)
class FleetReport:
    """Each cluster's cost report over one period (``clusters``, in configured order), the
    clusters whose report failed (``failed`` cluster -> why) and ``fleet``, every team's figures
    added up over the clusters that answered (:func:`add_up`)."""

    period_start: datetime
    period_end: datetime
    clusters: Mapping[str, CostReport]
    fleet: CostReport
    failed: Mapping[str, str] = field(default_factory=dict)

    def totals(self) -> list[ClusterTotal]:
        """One line per cluster, answered ones with their figures (USD, GPU-hours), in
        configured order, then the failed ones."""
        out = [
            ClusterTotal(
                name, r.gpu_hours, r.cost_usd,
                sum(t.idle_gpu_hours for t in r.teams.values()), sum(t.idle_cost_usd for t in r.teams.values()),
            )
            for name, r in self.clusters.items()
        ]
        return out + [ClusterTotal(name, error=why) for name, why in self.failed.items()]


def _price_lines(lines: Sequence[PriceLine]) -> tuple[PriceLine, ...]:
    merged: dict[tuple, PriceLine] = {}
    for f in lines:
        k = (f.gpu_model, f.capacity_type, f.usd_per_gpu_hour, f.price_source, f.price_as_of, f.instance_type)
        m = merged.get(k)
        merged[k] = f if m is None else dataclasses.replace(
            m, gpu_hours=m.gpu_hours + f.gpu_hours, cost_usd=m.cost_usd + f.cost_usd,
            idle_gpu_hours=m.idle_gpu_hours + f.idle_gpu_hours, idle_cost_usd=m.idle_cost_usd + f.idle_cost_usd,
            energy_cost_usd=m.energy_cost_usd + f.energy_cost_usd,
        )
    return tuple(sorted(merged.values(), key=lambda f: (-f.cost_usd, -f.gpu_hours, f.gpu_model, f.capacity_type)))


def _daily(days: Sequence[DailyCost]) -> tuple[DailyCost, ...]:
    by_day: dict = defaultdict(lambda: (defaultdict(float), [0.0]))
    for d in days:
        costs, idle = by_day[d.day]
        for capacity, usd in d.cost_usd_by_capacity_type.items():
            costs[capacity] += usd
        idle[0] += d.idle_cost_usd
    return tuple(DailyCost(day, dict(c), idle[0]) for day, (c, idle) in sorted(by_day.items()))


def _team(name: str, parts: Sequence[tuple[str, TeamReport]], top: int, start: datetime, end: datetime) -> TeamReport:
    hours = sum(t.gpu_hours for _, t in parts)
    idle = sum(t.idle_gpu_hours for _, t in parts)
    spot = sum((t.spot_ratio or 0.0) * t.gpu_hours for _, t in parts)
    # The same namespace/name may run in two clusters: the consumer says which.
    consumers = [
        dataclasses.replace(c, namespace=f"{cluster}:{c.namespace}") if len(parts) > 1 else c
        for cluster, t in parts for c in t.top_consumers
    ]
    consumers.sort(key=lambda c: (-c.cost_usd, -c.gpu_hours, c.namespace, c.name))
    return TeamReport(
        team=name, period_start=start, period_end=end, gpu_hours=hours,
        cost_usd=sum(t.cost_usd for _, t in parts), idle_gpu_hours=idle,
        idle_cost_usd=sum(t.idle_cost_usd for _, t in parts),
        efficiency=(hours - idle) / hours if hours else None,
        spot_ratio=spot / hours if hours else None,
        price_lines=_price_lines([f for _, t in parts for f in t.price_lines]),
        top_consumers=tuple(consumers[:top]) if top else tuple(consumers),
        daily=_daily([d for _, t in parts for d in t.daily]),
        notes=tuple(dict.fromkeys(f"{cluster}: {n}" for cluster, t in parts for n in t.notes)),
        namespaces=tuple(sorted({ns for _, t in parts for ns in t.namespaces})),
        # Each cluster's CO2e at its own grid's intensity: summed, never recomputed.
        energy=sum((t.energy for _, t in parts), EnergyUse()),
    )


def _notes(by_cluster: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    # A note every cluster gives (the idle definition) is said once; the others say whose they are.
    common = set.intersection(*(set(n) for n in by_cluster.values())) if len(by_cluster) > 1 else set()
    out = [n for n in next(iter(by_cluster.values()), ()) if n in common]
    return tuple(dict.fromkeys(out + [f"{c}: {n}" for c, notes in by_cluster.items() for n in notes if n not in common]))


def add_up(reports: Mapping[str, CostReport], start: datetime, end: datetime, top_consumers: int = 5) -> CostReport:
    """The fleet's report: every team's GPU-hours, USD and idle figures summed over the clusters'
    ``reports`` (cluster -> CostReport of ``[start, end]``), efficiency and spot ratio weighted
    by GPU-hours (ratios 0-1), flavour lines of the same price merged, top consumers cut to
    ``top_consumers`` (``cluster:namespace`` when a team runs in several clusters), notes and
    warnings prefixed with their cluster, unrequested nodes named ``cluster/node``."""
    by_team: dict[str, list[tuple[str, TeamReport]]] = defaultdict(list)
    for cluster, r in reports.items():
        for name, t in r.teams.items():
            by_team[name].append((cluster, t))
    unrequested = [(c, r.unrequested) for c, r in reports.items() if r.unrequested is not None]
    by_node = {f"{c}/{node}": v for c, u in unrequested for node, v in u.by_node.items()}
    covered = [r.covered_from for r in reports.values() if r.covered_from is not None]
    return CostReport(
        start, end,
        {name: _team(name, parts, top_consumers, start, end) for name, parts in by_team.items()},
        notes=_notes({c: r.notes for c, r in reports.items()}),
        warnings=tuple(f"{c}: {w}" for c, r in reports.items() for w in r.warnings),
        covered_from=max(covered) if covered else None,
        unrequested=UnrequestedLine(
            sum(u.gpu_hours for _, u in unrequested), sum(u.cost_usd for _, u in unrequested),
            dict(sorted(by_node.items(), key=lambda kv: (-kv[1][1], kv[0]))),
            sum((u.energy for _, u in unrequested), EnergyUse()),
        ) if unrequested else None,
        node_gpu_hours=sum(r.node_gpu_hours for r in reports.values()),
        node_cost_usd=sum(r.node_cost_usd for r in reports.values()),
        node_energy_kwh=sum(r.node_energy_kwh for r in reports.values()),
        energy_basis="; ".join(dict.fromkeys(f"{c}: {r.energy_basis}" for c, r in reports.items() if r.energy_basis)),
        gpu_free_teams=frozenset().union(*(r.gpu_free_teams for r in reports.values())) - set(by_team),
    )


def fleet_report(
    reports: Mapping[str, CostReport], failed: Mapping[str, str], start: datetime, end: datetime, top_consumers: int = 5,
) -> FleetReport:
    """The :class:`FleetReport` of the clusters that answered (``reports``) and those that did not
    (``failed`` cluster -> why); the fleet's warnings name each failed cluster, since its
    figures are missing from the totals."""
    fleet = add_up(reports, start, end, top_consumers)
    missing = tuple(f"{c}: no report, its figures are not in the totals ({why})" for c, why in failed.items())
    return FleetReport(start, end, dict(reports), dataclasses.replace(fleet, warnings=fleet.warnings + missing), dict(failed))
