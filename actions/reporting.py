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
from typing import Callable, Mapping, Protocol

from actions.cost import CostReport, UsageData, compute_cost_report
from actions.model import Node
from actions.policy import Policy, TeamDirectory
from actions.prices import PriceBook

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
