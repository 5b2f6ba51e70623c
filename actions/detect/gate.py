"""The one gate every action passes, whatever made it (an idle sweep, unrequested GPUs, advice) and
whenever it is asked: when a request is proposed, when mode auto's countdown ends, and right before
acting. Pure.

The guards, each a sentence when it refuses (:func:`refusals`):

- ``mode``: the policy in force for the namespace is ``report`` (never acts);
- ``act_on``: the policy's ``act_on`` names neither the consumer's kind nor the target's;
- ``opt-out``: ``gpu-cost-bot/exclude-until`` (``policy.opt_out_annotation``) holds a time after
  ``now`` on the namespace, a pod of the consumer, an object on a pod's owner chain, the target,
  or (for a NodeClaim) the node;
- ``do-not-disrupt``: Karpenter's ``karpenter.sh/do-not-disrupt`` protects a pod of the consumer
  (``"true"``, or a duration after the pod's start not yet over); for a NodeClaim, the node
  (``"true"``) or a pod bound to it;
- ``disruption budget``: for a NodeClaim, its NodePool allows no node to be disrupted now for the
  reason Karpenter would have (``Empty`` for a node without workload pods, else
  ``Underutilized``), by a budget's ``reasons`` and ``schedule``;
- ``approvers``: the team the action belongs to (its namespace's; for a NodeClaim the cluster
  admins, ``admin_approvers``) names no approver, so nobody could approve it, nor stop mode
  auto's countdown.

Whether the one who presses is among the approvers is checked at the press (user groups expanded
then); the evidence is re-checked right before acting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from actions.detect.idle import opted_out
from actions.detect.owners import OwnerIndex
from actions.model.disruption import DO_NOT_DISRUPT, EMPTY, UNDERUTILIZED, protected_until
from actions.model.findings import Finding, ProposedAction
from actions.model.kube import GpuPod, ObjectRef, OwnerRef
from actions.model.snapshot import ClusterSnapshot
from actions.policy.namespaces import PolicyBook
from actions.policy.rules import Policy
from actions.policy.teams import ADMIN_TEAM, Team, TeamDirectory

NODECLAIM = "NodeClaim"


def refusals(
    action: ProposedAction,
    consumer_kind: str,
    pods: Sequence[GpuPod],
    snapshot: ClusterSnapshot,
    policy: Policy,
    now: datetime,
    *,
    index: OwnerIndex | None = None,
    check_mode: bool = True,
    team: Team | None = None,
) -> tuple[str, ...]:
    """Why ``action`` on a consumer of ``consumer_kind`` (its ``pods``, as ``snapshot`` holds them)
    may not be taken at ``now`` under ``policy`` (the policy in force for the target's namespace):
    one sentence per guard that refuses, in the module docstring's order; empty when it may.
    ``check_mode`` False leaves mode ``report`` to the caller (an idle finding carries its mode
    to the message, which then offers no button). ``team`` is the team the action belongs to
    (:func:`team_of`); None leaves the approvers guard out."""
    target = action.target
    out: list[str] = []
    if check_mode and policy.mode == "report":
        out.append("the policy in force here is mode report: the bot reports and never acts")
    if not policy.acts_on(consumer_kind, target.kind):
        out.append(f"the policy acts on {', '.join(policy.act_on or [])} only, not on {consumer_kind} or {target.kind}")
    index = index or OwnerIndex(snapshot)
    if target.kind == NODECLAIM:
        out += _node_refusals(target.name, snapshot, policy, now)
        return tuple(out + _no_approvers(team))
    ns_annotations = snapshot.namespace_annotations.get(target.namespace, {})
    held = _annotated(target.namespace, pods, index, target)
    if opted_out(dict(ns_annotations), policy, now):
        out.append(_opt_out_sentence(f"namespace {target.namespace}", ns_annotations, policy))
    else:
        for what, annotations in held:
            if opted_out(dict(annotations), policy, now):
                out.append(_opt_out_sentence(what, annotations, policy))
                break
    protecting = [
        p for p in pods
        if (until := protected_until(p.annotations.get(DO_NOT_DISRUPT), p.started)) is not None and until > now
    ]
    if protecting:
        names = ", ".join(f"{p.namespace}/{p.name}" for p in protecting[:5])
        out.append(f"pod {names} is annotated {DO_NOT_DISRUPT}: \"{protecting[0].annotations[DO_NOT_DISRUPT]}\"")
    return tuple(out + _no_approvers(team))


def _no_approvers(team: Team | None) -> list[str]:
    if team is None or team.approvers:
        return []
    where = "slack.admin_approvers" if team.name == ADMIN_TEAM else f"teams[].approvers of team {team.name}"
    return [f"team {team.name} has no approvers, so nobody could approve it (add them under {where})"]


def team_of(action: ProposedAction, teams: TeamDirectory) -> Team:
    """The team whose approvers decide ``action``: its target namespace's team, or the cluster
    admins (:data:`~actions.policy.teams.ADMIN_TEAM`) for a cluster-scoped target (a NodeClaim)."""
    ns = action.target.namespace
    return teams.team_for(ns) if ns else teams.admin


def pods_of(target: ObjectRef, names: Sequence[str], snapshot: ClusterSnapshot,
            index: OwnerIndex | None = None) -> list[GpuPod]:
    """The pods an action on ``target`` touches: those ``names`` in its namespace, else (a
    right-sizing names none) every pod there whose owner chain holds the target; none for a
    NodeClaim."""
    if target.kind == NODECLAIM:
        return []
    ns = target.namespace
    index = index or OwnerIndex(snapshot)
    if names:  # by name through the index: a sweep gates every finding, and a fleet has 50,000 pods
        return [index.pods[(ns, n)] for n in names if (ns, n) in index.pods]
    key = (target.kind, target.name)
    return [p for p in snapshot.pods if p.namespace == ns and any((link.kind, link.name) == key for link in index.chain(p))]


def gated(finding: Finding, snapshot: ClusterSnapshot, book: PolicyBook, now: datetime,
          index: OwnerIndex | None = None) -> Finding:
    """``finding`` as it may be offered at ``now``: unchanged when the gate lets its action
    through (or it has none), else without its action and with ``report_reason`` saying why
    (the guards' sentences joined by "; "). Mode ``report`` stays with the finding's handling
    (its message offers no button)."""
    if finding.action is None:
        return finding
    index = index or OwnerIndex(snapshot)
    policy = policy_for(book, finding)
    pods = pods_of(finding.action.target, finding.pods, snapshot, index)
    why = refusals(finding.action, finding.consumer_kind, pods, snapshot, policy, now, index=index, check_mode=False,
                   team=team_of(finding.action, book.teams))
    return dataclasses.replace(finding, action=None, report_reason="; ".join(why)) if why else finding


def _annotated(namespace: str, pods: Iterable[GpuPod], index: OwnerIndex, target) -> list[tuple[str, Mapping[str, str]]]:
    """(what, its annotations) of each pod, each object on their owner chains and the target."""
    out: list[tuple[str, Mapping[str, str]]] = []
    seen: set[tuple[str, str]] = set()
    for pod in pods:
        out.append((f"pod {pod.namespace}/{pod.name}", pod.annotations))
        for link in index.chain(pod):
            if link.obj is not None and (link.kind, link.name) not in seen:
                seen.add((link.kind, link.name))
                out.append((f"{link.kind} {namespace}/{link.name}", link.obj.annotations))
    if (target.kind, target.name) not in seen:
        obj = index.find(namespace, OwnerRef(target.api_version, target.kind, target.name, True))
        if obj is not None:
            out.append((f"{target.kind} {namespace}/{target.name}", obj.annotations))
        elif target.kind == "LocalQueue":
            queue = index.local_queues.get((namespace, target.name))
            if queue is not None:
                out.append((f"LocalQueue {namespace}/{target.name}", queue.annotations))
    return out


def _opt_out_sentence(what: str, annotations: Mapping[str, str], policy: Policy) -> str:
    return f"{what} is annotated {policy.opt_out_annotation}: \"{annotations[policy.opt_out_annotation]}\""


def _node_refusals(nodeclaim: str, snapshot: ClusterSnapshot, policy: Policy, now: datetime) -> list[str]:
    node = next((n for n in snapshot.nodes.values() if n.nodeclaim == nodeclaim), None)
    if node is None:
        return [f"no node of NodeClaim {nodeclaim} is in the cluster now"]
    out = []
    if opted_out(dict(node.annotations), policy, now):
        out.append(_opt_out_sentence(f"node {node.name}", node.annotations, policy))
    if protected_until(node.annotations.get(DO_NOT_DISRUPT), None, on_pod=False) is not None:
        out.append(f"node {node.name} is annotated {DO_NOT_DISRUPT}: \"{node.annotations[DO_NOT_DISRUPT]}\"")
    protecting = node.protected_by(now)
    if protecting:
        out.append(f"pod {', '.join(protecting[:5])} on node {node.name} is annotated {DO_NOT_DISRUPT}")
    pool = snapshot.nodepools.get(node.nodepool or "")
    if pool is not None:
        reason = EMPTY if node.workload_pods == 0 else UNDERUTILIZED
        budget = pool.forbidding(reason, now)
        if budget is not None:
            out.append(f"NodePool {pool.name}'s disruption budget {budget.describe()} allows no node to be disrupted "
                       f"({reason}) now")
    return out


def policy_for(book: PolicyBook, finding: Finding) -> Policy:
    """The policy in force for ``finding``'s action: its namespace's, or the global one for a
    cluster-scoped target (a NodeClaim belongs to no namespace and no team)."""
    ns = finding.action.target.namespace if finding.action else finding.namespace
    return book.for_namespace(ns) if ns else book.base


def gate_all(findings: Iterable[Finding], snapshot: ClusterSnapshot, book: PolicyBook, now: datetime,
             index: OwnerIndex | None = None) -> list[Finding]:
    """:func:`gated` over ``findings`` with one owner index (``index``, or one built here)."""
    index = index or OwnerIndex(snapshot)
    return [gated(f, snapshot, book, now, index) for f in findings]

