"""What a budget has spent in a period, from the period's usage (the ledger's hours and the hour in
progress, or Prometheus's history: a :class:`~actions.model.usage.UsageData`), priced by the cost
engine as every report is. Pure.

A LocalQueue's spend is its pods' (the pod label ``kueue.x-k8s.io/local-queue-name``, set by
Kueue on the pods it admits, or ``kueue.x-k8s.io/queue-name``: :func:`actions.cost.engine.consumer_of`);
a ClusterQueue's, the spend of every LocalQueue whose ``spec.clusterQueue`` names it; a team's,
its namespaces' (the team report's).
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping

from actions.budgets.model import CLUSTERQUEUE, LOCALQUEUE, TEAM, USD, Budget
from actions.cost.engine import compute_cost_report, consumer_of, team_of
from actions.model.kueue import LocalQueue
from actions.model.usage import UsageData
from actions.policy.teams import TeamDirectory
from actions.pricing.book import PriceBook


def queues_of(budget: Budget, local_queues: Iterable[LocalQueue], teams: TeamDirectory,
              namespace_labels: Mapping[str, Mapping[str, str]], team_label: str | None) -> list[LocalQueue]:
    """The LocalQueues a hold of ``budget`` stops: the one it names, the ClusterQueue's, or every
    LocalQueue in the team's namespaces; sorted by namespace and name."""
    out = []
    for q in local_queues:
        if budget.scope == LOCALQUEUE:
            hit = f"{q.namespace}/{q.name}" == budget.name
        elif budget.scope == CLUSTERQUEUE:
            hit = q.cluster_queue == budget.name
        else:
            hit = team_of(q.namespace, teams, namespace_labels, team_label) == budget.name
        if hit:
            out.append(q)
    return sorted(out, key=lambda q: (q.namespace, q.name))


def _pods_of(budget: Budget, usage: UsageData, cluster_queue_of: Mapping[tuple[str, str], str],
             teams: TeamDirectory, team_label: str | None) -> UsageData:
    """``usage`` narrowed to the pods ``budget`` pays for (no daily rows, no node capacity: what a
    budget counts is what its pods requested)."""
    def mine(ns: str, pod: str) -> bool:
        if budget.scope == TEAM:
            return team_of(ns, teams, usage.namespace_labels, team_label) == budget.name
        _, _, queue = consumer_of(usage.owners.get((ns, pod)), ns, pod)
        if queue is None:
            return False
        if budget.scope == LOCALQUEUE:
            return f"{ns}/{queue}" == budget.name
        return cluster_queue_of.get((ns, queue)) == budget.name

    pods = tuple(p for p in usage.pods if mine(p.namespace, p.pod))
    return dataclasses.replace(usage, pods=pods, daily=(), node_gpu_hours={}, node_energy_kwh={})


def spent(budget: Budget, usage: UsageData, prices: PriceBook, local_queues: Iterable[LocalQueue],
          teams: TeamDirectory, team_label: str | None) -> float:
    """What ``budget``'s scope spent over ``usage``'s period, in the budget's unit: USD as the cost
    engine prices it, or requested GPU-hours (physical-GPU equivalents)."""
    mapping = {(q.namespace, q.name): q.cluster_queue for q in local_queues}
    mine = _pods_of(budget, usage, mapping, teams, team_label)
    if budget.unit != USD:
        return sum(p.gpu_hours for p in mine.pods)
    report = compute_cost_report(mine, prices, teams, team_label=team_label)
    return report.cost_usd
