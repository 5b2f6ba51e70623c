"""Cost reports for the running bot: the usage source and the cost engine, put together.

:func:`team_reports` is the one entry point for everything that shows GPU cost (``/gpu cost``,
digests, budget alerts): it reads the period's usage from Prometheus, falls back to the
Kubernetes API for node capacity types the metrics lack, and prices it with the Runtime's
PriceBook for the Runtime's teams.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Callable, Mapping, Protocol

from actions.cost import CostReport, UsageData, compute_cost_report
from actions.model import Node
from actions.policy import Policy, TeamDirectory
from actions.prices import PriceBook

if TYPE_CHECKING:
    from bot.runtime import Runtime

log = logging.getLogger(__name__)


class UsageSource(Protocol):
    def fetch(self, start: datetime, end: datetime, policy: Policy) -> UsageData:
        """GPU usage over ``[start, end]`` (aware UTC), aggregated per pod, node and day."""


@dataclass(frozen=True)
class CostSetup:
    """What cost reports need besides the Runtime's prices and teams: the usage source and the
    ``costs`` settings (``team_label`` namespace label key, ``top_consumers`` per team,
    ``timezone`` for ``mtd``/``last-month``) and ``spot_ratio_target``, ratio 0-1, shown beside
    each team's spot ratio (``alerts.spot_ratio_target``)."""

    usage: UsageSource
    team_label: str | None = "team"
    top_consumers: int = 5
    timezone: str = "UTC"
    spot_ratio_target: float = 0.4


class ReportUnavailable(RuntimeError):
    """The bot was started without a usage source, so it cannot report cost."""


def build_report(
    setup: CostSetup,
    prices: PriceBook,
    teams: TeamDirectory,
    policy: Policy,
    start: datetime,
    end: datetime,
    api_nodes: Callable[[], Mapping[str, Node]] | None = None,
) -> CostReport:
    """Usage over ``[start, end]`` priced per team. ``api_nodes`` reads the nodes from the
    Kubernetes API; it is called only when ``kube_node_labels`` lacks some node's capacity type,
    and when it fails the report says so and prices those nodes as capacity type unknown.

    Raises actions.sources.prometheus.TelemetryError when Prometheus fails.
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
    report = compute_cost_report(
        usage,
        prices,
        teams,
        team_label=setup.team_label,
        top_consumers=setup.top_consumers,
        api_nodes=nodes,
    )
    return dataclasses.replace(report, notes=report.notes + tuple(extra)) if extra else report


def team_reports(rt: "Runtime", start: datetime, end: datetime) -> CostReport:
    """Every team's GPU-hours and USD over ``[start, end]`` (aware UTC datetimes, e.g. from
    :func:`actions.cost.parse_period`), as a :class:`~actions.cost.CostReport` whose ``teams``
    maps team name -> :class:`~actions.cost.TeamReport` (``"unallocated"`` included when pods in
    no team used GPUs; configured teams always present).

    Node capacity types missing from ``kube_node_labels`` are read through ``rt.cluster``.
    Raises ReportUnavailable when ``rt.costs`` is not set and
    actions.sources.prometheus.TelemetryError when Prometheus fails.
    """
    if rt.costs is None:
        raise ReportUnavailable("cost reports need a Prometheus usage source (Runtime.costs is not set)")
    return build_report(
        rt.costs,
        rt.prices,
        rt.teams,
        rt.policy,
        start,
        end,
        api_nodes=lambda: rt.cluster.snapshot(rt.clock()).nodes,
    )


def spend_function(rt: "Runtime") -> Callable[[datetime, datetime], dict[str, float]] | None:
    """``(start, end) -> {team: USD spent in [start, end]}`` from :func:`team_reports`, for
    commands that show spend next to a budget; None when ``rt`` has no usage source."""
    if rt.costs is None:
        return None
    return lambda start, end: {team: r.cost_usd for team, r in team_reports(rt, start, end).teams.items()}
