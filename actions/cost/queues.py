"""Showback by Kueue queue: the team report's figures (GPU-hours, USD, idle, efficiency, spot
ratio, GPU energy, top consumers) per LocalQueue or per ClusterQueue, from the same usage and
priced by the same engine, so the lines add up to the team report's total to the cent.

- By LocalQueue, a line is ``namespace/name`` of the LocalQueue the pods carried
  (``kueue.x-k8s.io/local-queue-name`` or ``kueue.x-k8s.io/queue-name``; the ledger keeps it per
  consumer); GPU-hours of pods outside Kueue are the line :data:`NO_LOCAL_QUEUE`.
- By ClusterQueue, a line is the ClusterQueue the LocalQueue's ``spec.clusterQueue`` names, read
  from the cluster's LocalQueue objects; a LocalQueue whose object is gone is counted under
  :data:`UNKNOWN_CLUSTER_QUEUE` and named in the report's notes.

The per-queue report is a :class:`~actions.cost.report.CostReport` whose ``teams`` are the
lines (keyed by the line's name); it has no daily split (the usage's daily rows name no queue).
Pure: the usage comes through the setup's usage source, the LocalQueues from the caller.
"""

from __future__ import annotations

import dataclasses
import difflib
from datetime import datetime
from typing import Callable, Iterable, Mapping

from actions.cost.report import CostReport
from actions.cost.reporting import CostSetup, build_report
from actions.model.kube import Node
from actions.model.kueue import LocalQueue
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory
from actions.pricing.book import PriceBook

BY_TEAM, BY_LOCAL_QUEUE, BY_CLUSTER_QUEUE = "team", "localqueue", "clusterqueue"
GROUPINGS = (BY_TEAM, BY_LOCAL_QUEUE, BY_CLUSTER_QUEUE)
NO_LOCAL_QUEUE = "(no LocalQueue)"
UNKNOWN_CLUSTER_QUEUE = "(unknown ClusterQueue)"

# The words people type for each grouping (lower case, after ``by`` or ``per``).
_WORDS = {
    BY_TEAM: ("team", "teams"),
    BY_LOCAL_QUEUE: ("localqueue", "localqueues", "local-queue", "local-queues", "local_queue", "lq", "lqs",
                     "queue", "queues"),
    BY_CLUSTER_QUEUE: ("clusterqueue", "clusterqueues", "cluster-queue", "cluster-queues", "cluster_queue", "cq",
                       "cqs"),
}
ALIASES: Mapping[str, str] = {w: by for by, words in _WORDS.items() for w in words}


def grouping_of(word: str) -> str | None:
    """The grouping (:data:`GROUPINGS`) a word names (``lq``, ``per-localqueue``'s ``localqueue``,
    ``ClusterQueues``, ...), None when it names none."""
    return ALIASES.get(word.strip().lower())


def closest_grouping(word: str) -> str | None:
    """The grouping a misspelt word most likely meant (``clustrqueue`` -> ``clusterqueue``), None
    when no word of :data:`ALIASES` is close."""
    near = difflib.get_close_matches(word.strip().lower(), list(ALIASES), n=1, cutoff=0.75)
    return ALIASES[near[0]] if near else None


def local_queue_line(namespace: str, queue: str | None) -> str:
    """The line a LocalQueue's GPU-hours are on: ``namespace/queue``, or :data:`NO_LOCAL_QUEUE`."""
    return f"{namespace}/{queue}" if queue else NO_LOCAL_QUEUE


class QueueLines:
    """``(namespace, LocalQueue or None) -> line``, the key the engine groups by
    (:func:`~actions.cost.engine.compute_cost_report`'s ``group_of``), for ``by`` LocalQueue or
    ClusterQueue; remembers the LocalQueues whose object is gone (``gone``)."""

    def __init__(self, by: str, local_queues: Iterable[LocalQueue] = ()):
        if by not in (BY_LOCAL_QUEUE, BY_CLUSTER_QUEUE):
            raise ValueError(f"{by!r} is not a queue grouping; use {BY_LOCAL_QUEUE} or {BY_CLUSTER_QUEUE}")
        self.by = by
        self.cluster_queue = {(q.namespace, q.name): q.cluster_queue for q in local_queues}
        self.gone: set[str] = set()

    def __call__(self, namespace: str, queue: str | None) -> str:
        if not queue or self.by == BY_LOCAL_QUEUE:
            return local_queue_line(namespace, queue)
        found = self.cluster_queue.get((namespace, queue))
        if found:
            return found
        self.gone.add(local_queue_line(namespace, queue))
        return UNKNOWN_CLUSTER_QUEUE

    def finish(self, report: CostReport) -> CostReport:
        """The engine's report as lines: highest cost first, then :data:`UNKNOWN_CLUSTER_QUEUE`
        and :data:`NO_LOCAL_QUEUE` last; no empty daily split; the gone LocalQueues in the notes."""
        last = {UNKNOWN_CLUSTER_QUEUE: 1, NO_LOCAL_QUEUE: 2}
        lines = sorted(report.teams.values(), key=lambda r: (last.get(r.team, 0), -r.cost_usd, r.team))
        notes = report.notes
        if self.gone:
            notes += (
                f"LocalQueue(s) {', '.join(sorted(self.gone))} no longer in the cluster: their GPU-hours are under "
                f"{UNKNOWN_CLUSTER_QUEUE}",
            )
        return dataclasses.replace(
            report, teams={r.team: dataclasses.replace(r, daily=()) for r in lines}, notes=notes,
            gpu_free_teams=frozenset(),
        )


def queue_report(
    setup: CostSetup,
    prices: PriceBook,
    policy: Policy,
    start: datetime,
    end: datetime,
    by: str,
    local_queues: Iterable[LocalQueue] = (),
    api_nodes: Callable[[], Mapping[str, Node]] | None = None,
) -> CostReport:
    """GPU-hours and USD over ``[start, end]`` per LocalQueue or ClusterQueue (``by``), with
    ``local_queues`` the cluster's LocalQueue objects (needed by ClusterQueue). The same report
    as :func:`~actions.cost.reporting.build_report`'s, its lines the queues instead of the teams:
    the same total, the same unrequested GPUs. Raises what ``build_report`` raises, ValueError for
    a ``by`` that is not a queue grouping."""
    lines = QueueLines(by, local_queues)
    # No team in the lines: a ClusterQueue named like a team must not gain the team's namespaces.
    report = build_report(
        dataclasses.replace(setup, team_label=None), prices, TeamDirectory([]), policy, start, end, api_nodes,
        group_of=lines,
    )
    return lines.finish(report)
