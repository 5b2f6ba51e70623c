"""The clusters of a bot of several, read side by side: each cluster's parts
(:class:`ClusterParts`), the idle detector over each with the policy in force per namespace, and
advice from each cluster's own API server and history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from actions.advice.round import AdviceResult, AdviceSetup, fleet_advice, gather_advice
from actions.cost.reporting import CostSetup
from actions.detect.clusters import FleetDetection, in_cluster, join_detections
from actions.detect.detection import Detection, detect, with_energy
from actions.energy.settings import EnergyFactors
from actions.model.snapshot import ClusterSnapshot
from actions.policy.namespaces import PolicyBook
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory
from actions.ports import ClusterReader, ClusterWriter, TelemetrySource
from actions.pricing.book import PriceBook
from actions.side_by_side import side_by_side
from actions.text import one_line

log = logging.getLogger(__name__)

# Clusters read at once by a sweep: each waits on its API server and Prometheus, not on the CPU.
MAX_PARALLEL_CLUSTERS = 8


def detect_with(
    snapshot: ClusterSnapshot, telemetry: TelemetrySource, prices: PriceBook, policy: Policy,
    teams: TeamDirectory, now: datetime,
) -> Detection:
    """The idle detector over ``snapshot``, with the policy in force in each namespace (the
    team's overrides, then the namespace's annotations) and one telemetry query per distinct
    window those policies need. Raises what the telemetry source raises."""
    book = PolicyBook(policy, teams, snapshot.namespace_annotations)
    namespaces = {p.namespace for p in snapshot.pods}
    fetched = {key: telemetry.fetch(now, p) for key, p in book.telemetry_policies(namespaces).items()}
    return detect(snapshot, fetched, prices, book, teams, now)


class NoClusterAnswered(RuntimeError):
    """Not one of the clusters could be swept; the message says why for each."""


@dataclass(frozen=True)
class ClusterParts:
    """One cluster of several (``clusters:``): its ``name``, the reader of its API server, its
    telemetry, the writer that acts on it, its cost reports and its advice history (None: no
    usage source) and its PUE and carbon intensity (``energy``)."""

    name: str
    cluster: ClusterReader
    telemetry: TelemetrySource
    writer: ClusterWriter
    costs: CostSetup | None = None
    advice: AdviceSetup | None = None
    energy: EnergyFactors | None = None


def advice_of_clusters(
    clusters: Sequence[ClusterParts], prices: PriceBook, policy: Policy, teams: TeamDirectory, at: datetime,
    team: str | None = None,
) -> AdviceResult:
    """The advice of each of ``clusters`` that has an advice setup, from its own API server and
    history, at ``at`` (only ``team``'s when given), as one result
    (:func:`~actions.advice.round.fleet_advice`). Raises what a cluster's sources raise."""
    return fleet_advice([
        (c.name, gather_advice(c.cluster.snapshot(at), c.advice.history, prices, policy, c.advice.policy, teams, at, team=team))
        for c in clusters if c.advice is not None
    ], at)


def detect_clusters(
    clusters: Sequence[ClusterParts], home: str, prices: PriceBook, policy: Policy, teams: TeamDirectory,
    now: datetime, on_failure: Callable[[str, Exception], None] = lambda name, e: None,
) -> FleetDetection:
    """The idle detector over each of ``clusters`` (:func:`detect_with`), read side by side so a
    slow cluster costs the sweep its own time, not the sum; their findings keyed apart (the
    ``home`` cluster's as a bot of one keys them: :meth:`bot.runtime.runtime.Runtime.home`) and
    joined. A cluster whose API server or
    telemetry cannot be read is logged, passed to ``on_failure(name, error)`` (which may raise to
    stop) and named in the answer's ``unreachable``. Raises NoClusterAnswered when none could be
    read."""

    def one(parts: ClusterParts) -> Detection:
        found = detect_with(parts.cluster.snapshot(now), parts.telemetry, prices, policy, teams, now)
        return with_energy(found, parts.energy)

    results = side_by_side(one, clusters, MAX_PARALLEL_CLUSTERS, "cluster")
    answered: dict[str, Detection] = {}
    unreachable: dict[str, str] = {}
    for parts, found in zip(clusters, results):
        if isinstance(found, Exception):
            on_failure(parts.name, found)
            log.warning("idle sweep at %s: cluster %s not swept: %s", now.isoformat(), parts.name, found)
            unreachable[parts.name] = one_line(found)
            continue
        answered[parts.name] = in_cluster(found, parts.name, first=parts.name == home)
    if not answered:
        raise NoClusterAnswered("no cluster could be swept: " + "; ".join(f"{c}: {why}" for c, why in unreachable.items()))
    return join_detections(answered, unreachable)
