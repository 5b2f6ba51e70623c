"""A cost report, read and priced: a period's usage from a usage source, node capacity types
from the Kubernetes API where the metrics lack them, and the cost engine (:mod:`actions.cost`).

:func:`build_report` is the one way every report is made (``gpu-cost-bot report``, ``/gpu cost``,
digests, budget alerts). Its I/O goes only through the source and the node reader passed in.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Mapping, Sequence

from actions.cost.engine import compute_cost_report
from actions.cost.fleet import FleetReport, fleet_report
from actions.cost.gc_pause import gc_paused
from actions.cost.report import CostReport
from actions.energy.settings import EnergyFactors
from actions.model.kube import Node
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory
from actions.ports import UsageSource
from actions.pricing.book import PriceBook
from actions.side_by_side import side_by_side
from actions.text import one_line

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CostSetup:
    """What cost reports need besides the Runtime's prices and teams: the usage source and the
    ``costs`` settings (``team_label`` namespace label key, ``top_consumers`` per team,
    ``timezone`` for ``mtd``/``last-month``) and ``spot_ratio_target``, ratio 0-1, shown beside
    each team's spot ratio (``alerts.spot_ratio_target``); ``energy`` the cluster's PUE, carbon
    intensity and electricity price (``energy``, merged with the cluster's own)."""

    usage: UsageSource
    team_label: str | None = "team"
    top_consumers: int = 5
    timezone: str = "UTC"
    spot_ratio_target: float = 0.4
    energy: EnergyFactors | None = None


def build_report(
    setup: CostSetup,
    prices: PriceBook,
    teams: TeamDirectory,
    policy: Policy,
    start: datetime,
    end: datetime,
    api_nodes: Callable[[], Mapping[str, Node]] | None = None,
    group_of: Callable[[str, str | None], str] | None = None,
) -> CostReport:
    """Usage over ``[start, end]`` priced per team (or per ``group_of`` key: see
    :func:`~actions.cost.engine.compute_cost_report`). ``api_nodes`` reads the nodes from the
    Kubernetes API; it is called only when ``kube_node_labels`` lacks some node's capacity type,
    and when it fails the report says so and prices those nodes as capacity type unknown.

    Raises actions.sources.prometheus.api.TelemetryError when Prometheus fails.
    """
    usage = setup.usage.fetch(start, end, policy)
    nodes: Mapping[str, Node] | None = None
    extra: list[str] = []
    if api_nodes is not None and usage.nodes_missing_capacity_type():
        try:
            nodes = api_nodes()
        # Best effort: without the fallback the report still prices those nodes, as unknown, and
        # says so; the failure (an API error, or no kubeconfig at all for the CLI) goes in a note.
        except Exception as e:  # noqa: BLE001
            log.warning("cost report: reading nodes from the Kubernetes API failed: %s", e)
            extra.append(f"the Kubernetes API could not be read for node capacity types: {e}")
    with gc_paused():
        report = compute_cost_report(
            usage,
            prices,
            teams,
            team_label=setup.team_label,
            top_consumers=setup.top_consumers,
            api_nodes=nodes,
            energy=setup.energy,
            group_of=group_of,
        )
    return dataclasses.replace(report, notes=report.notes + tuple(extra)) if extra else report


NodeReader = Callable[[], Mapping[str, Node]]

# Cluster reports made at once by a fleet report: each mostly waits on its own Prometheus or
# database (ten clusters' reports read one after another cost the sum of their waits).
MAX_PARALLEL_REPORTS = 8


def build_fleet_report(
    clusters: Sequence[tuple[str, CostSetup, NodeReader | None]],
    prices: PriceBook,
    teams: TeamDirectory,
    policy: Policy,
    start: datetime,
    end: datetime,
) -> FleetReport:
    """Each cluster's report over ``[start, end]`` (:func:`build_report`; ``clusters`` as
    ``(name, setup, node reader)``, the first one first), made side by side (at most
    :data:`MAX_PARALLEL_REPORTS` at once), and the fleet's totals
    (:func:`actions.cost.fleet.fleet_report`), in configured order. A cluster whose report fails is
    logged, left out of the totals and named in the fleet's warnings. Raises the first cluster's
    error when no report could be made, ValueError for no clusters."""
    if not clusters:
        raise ValueError("a fleet report needs at least one cluster")

    def report(cluster: tuple[str, CostSetup, NodeReader | None]) -> CostReport:
        _, setup, api_nodes = cluster
        return build_report(setup, prices, teams, policy, start, end, api_nodes)

    made = side_by_side(report, clusters, MAX_PARALLEL_REPORTS, "report")
    reports: dict[str, CostReport] = {}
    failed: dict[str, Exception] = {}
    for (name, _, _), r in zip(clusters, made):
        if isinstance(r, Exception):
            log.warning("cost report of cluster %s failed: %s", name, r)
            failed[name] = r
        else:
            reports[name] = r
    if not reports:
        raise next(iter(failed.values()))
    top = clusters[0][1].top_consumers
    return fleet_report(reports, {c: one_line(e) for c, e in failed.items()}, start, end, top)
