"""One round of advice: from a cluster snapshot and a history source to the recommendations,
as ``gpu-cost-bot advise``, ``/gpu advise``, the digest and ``report --json`` ask for it.

The decisions are pure (:mod:`actions.advice.usage`, :mod:`actions.advice`); this module only
asks the history source for what they need, once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Sequence

from actions.advice.model import ConsumerUsage, Recommendation, TeamBaseline
from actions.advice.recheck import no_longer_holds, recheck_seconds
from actions.advice.recommend import advise, could_save
from actions.advice.request import consumer_key_of
from actions.advice.usage import (
    consumer_pods,
    consumer_usages,
    multi_container_pods,
    multi_pod_consumers,
    reserved_nodes,
    reserved_uses,
    team_baselines,
    team_namespaces,
)
from actions.detect.gate import pods_of, refusals, team_of
from actions.detect.owners import OwnerIndex
from actions.model.findings import GpuResize
from actions.model.history import PodHistory
from actions.model.kube import GpuPod
from actions.model.snapshot import ClusterSnapshot
from actions.policy.advice import AdvicePolicy
from actions.policy.namespaces import PolicyBook
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory
from actions.ports import HistorySource
from actions.pricing.book import PriceBook


@dataclass(frozen=True)
class AdviceSetup:
    """Where advice's history comes from and how it is judged."""

    history: HistorySource
    policy: AdvicePolicy


@dataclass(frozen=True)
class AdviceResult:
    """The recommendations at ``at`` (highest USD per month saved first), what they were made
    from, and ``could_save_usd_per_month`` (USD per month, overlaps counted once:
    :func:`actions.advice.recommend.could_save`)."""

    at: datetime
    recommendations: tuple[Recommendation, ...]
    usages: tuple[ConsumerUsage, ...]
    baselines: tuple[TeamBaseline, ...]
    could_save_usd_per_month: float
    # What the history source said it could not read (AdviceHistory.warnings).
    history_warnings: tuple[str, ...] = ()

    def for_team(self, team: str) -> AdviceResult:
        """The part of this advice that is ``team``'s (reserved capacity is the cluster's, not a
        team's, so it is left out), its total recomputed."""
        recs = tuple(r for r in self.recommendations if r.team == team and r.kind != "reserved-idle")
        return AdviceResult(
            self.at, recs, tuple(u for u in self.usages if u.team == team),
            tuple(b for b in self.baselines if b.team == team), could_save(recs), self.history_warnings,
        )

    def top(self, n: int) -> tuple[Recommendation, ...]:
        """The ``n`` recommendations saving the most."""
        return self.recommendations[:n]

    def warnings(self) -> tuple[str, ...]:
        """What the history lacked: hours its source could not read, consumers without DCGM
        series in the window."""
        blind = [u.subject for u in self.usages if u.gpu_hours is None]
        if not blind:
            return self.history_warnings
        shown = ", ".join(blind[:5]) + (f" and {len(blind) - 5} more" if len(blind) > 5 else "")
        return (*self.history_warnings, f"{len(blind)} of {len(self.usages)} GPU consumers have no DCGM history "
                f"in the window ({shown}): no advice for them")


def gather_advice(
    snapshot: ClusterSnapshot,
    history: HistorySource,
    prices: PriceBook,
    policy: Policy,
    advice_policy: AdvicePolicy,
    teams: TeamDirectory,
    at: datetime,
    *,
    team: str | None = None,
) -> AdviceResult:
    """Advice for every consumer in ``snapshot`` and every team (only ``team``'s when given),
    from ``history`` ending at ``at``. Raises what the history source raises (TelemetryError)."""
    groups = consumer_pods(snapshot, policy, teams)
    namespaces = team_namespaces(snapshot, teams)
    if team is not None:
        groups = {k: v for k, v in groups.items() if teams.team_for(v[0].namespace).name == team}
        namespaces = {team: teams.team_for_name(team).namespaces} if team in namespaces or team in teams.teams else {}
    reserved = reserved_nodes(snapshot, policy) if team is None else []
    fetched = history.fetch(at, advice_policy, multi_pod_consumers(groups), namespaces, reserved,
                            container_pods=multi_container_pods(groups))
    usages = consumer_usages(snapshot, groups, fetched.pods, fetched.consumer_busy, policy, teams,
                             advice_policy.window_seconds, fetched.container_busy)
    baselines = team_baselines(snapshot, fetched.teams, policy, teams, advice_policy.commitment_window_seconds)
    uses = reserved_uses(snapshot, fetched.reserved, policy, advice_policy.commitment_window_seconds)
    recs = gate_changes(advise(usages, baselines, prices, advice_policy, team=team, reserved=uses),
                        usages, snapshot, PolicyBook(policy, teams, snapshot.namespace_annotations), at)
    return AdviceResult(at, tuple(recs), tuple(usages), tuple(baselines), could_save(recs), fetched.warnings)


def gate_changes(recs: Sequence[Recommendation], usages: Sequence[ConsumerUsage], snapshot: ClusterSnapshot,
                 book: PolicyBook, at: datetime) -> list[Recommendation]:
    """``recs`` with every change passed through the one gate (:func:`actions.detect.gate.refusals`,
    mode ``report`` included): a change the gate refuses loses its ``resize``, so its action
    (advice only: no request, no Approve), and says why in its notes. Pure."""
    index = OwnerIndex(snapshot)
    kinds = {u.key: u.consumer_kind for u in usages}
    out = []
    for r in recs:
        if r.action is None:
            out.append(r)
            continue
        target = r.action.target
        pods = pods_of(target, (), snapshot, index)
        why = refusals(r.action, kinds.get(consumer_key_of(r.key), target.kind), pods, snapshot,
                       book.for_namespace(target.namespace), at, index=index, team=team_of(r.action, book.teams))
        out.append(replace(r, resize=None, notes=(*r.notes, f"Not offered as a change: {'; '.join(why)}")) if why else r)
    return out


def recheck_change(history: HistorySource, policy: AdvicePolicy, resize: GpuResize, pods: Sequence[GpuPod],
                   advised_at: datetime, now: datetime) -> str | None:
    """Why a right-sizing change (``resize``, advised at ``advised_at``) may no longer be applied
    at ``now``: its target's ``pods`` (as the cluster holds them now) read from ``history`` over
    the re-check window (:func:`actions.advice.recheck.recheck_seconds`) and judged by
    :func:`actions.advice.recheck.no_longer_holds`; None when the advice still holds (or
    recorded no limits). Raises what the history source raises (TelemetryError)."""
    if resize.limits is None:
        return None
    seconds = recheck_seconds(advised_at, now, policy)
    names = sorted({(p.namespace, p.name) for p in pods})
    # Only the per-pod figures, over the short window: no consumers of several pods, no teams.
    fetched = history.fetch(now, policy.model_copy(update={"window_seconds": seconds}), {}, {},
                            container_pods=names if resize.container else ())
    read = {(h.namespace, h.pod): h for h in fetched.pods}
    seen = [read.get(n) or PodHistory(*n) for n in names]
    return no_longer_holds(resize, seen, fetched.container_busy, seconds)


def fleet_advice(results: Sequence[tuple[str, AdviceResult]], at: datetime) -> AdviceResult:
    """The advice of several clusters as one: ``results`` are ``(cluster name, its advice)``.
    Each recommendation's ``subject`` names its cluster and its ``key`` carries it (so two
    clusters' ``ml/trainer`` are two consumers, and :func:`~actions.advice.recommend.could_save` counts
    overlaps within a cluster only) and its ``cluster`` is that cluster's name (the first one's
    too, so an Apply acts where the advice was made, whatever the config's order is then); sorted
    as :func:`~actions.advice.recommend.advise` sorts, highest USD per month saved first. Pure."""
    recs: list[Recommendation] = []
    for cluster, result in results:
        for r in result.recommendations:
            kind, _, rest = r.key.partition("/")
            # An Apply acts on the recommendation's own cluster, named as its request stores it.
            recs.append(replace(r, key=f"{kind}/{cluster}::{rest}", subject=f"{r.subject} in {cluster}", cluster=cluster))
    recs.sort(key=lambda r: (r.saving_usd_per_month is None, -(r.saving_usd_per_month or 0), r.key))
    return AdviceResult(
        at, tuple(recs),
        tuple(u for _, result in results for u in result.usages),
        tuple(b for _, result in results for b in result.baselines),
        could_save(recs), tuple(f"{cluster}: {w}" for cluster, result in results for w in result.history_warnings),
    )

