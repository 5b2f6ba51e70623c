"""Whether an applied action did what it meant to, judged from one read of the cluster.

After every action the bot watches for its effect (issue 21, item 5): a stop (stop notebook,
scale to zero, deactivate a Workload, suspend a RayCluster, stop an InferenceService or a
JupyterHub server) means the target's pods are gone; a NodeClaim deletion means its node is gone;
a LocalQueue hold means the LocalQueue reads back with the stopPolicy set (its running Workloads
go on: Hold stops admissions only); a resize (``resize-gpus``) means the target's pods run with the new GPU request, every one
``Running`` and ``Ready``. The cluster has ``verify_seconds`` (the policy's, default 600 s) from
when the action was applied to show it; a check that sees it sooner says so at once. Pure: the
I/O is :mod:`bot.chat.verify`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Sequence

from actions.model.findings import ActionVerb, ProposedAction
from actions.model.kube import GpuPod
from actions.model.kueue import LocalQueue

VERIFIED = "verified"
FAILED = "verify-failed"
WAITING = "waiting"


@dataclass(frozen=True)
class Verdict:
    """``state``: :data:`VERIFIED` (the cluster shows what the action meant), :data:`FAILED` (it
    does not, and the window is over) or :data:`WAITING` (not yet, inside the window). ``saw`` is
    what the cluster showed, one sentence (``"0/1 pods ready: 0/8 nodes are available: 8
    Insufficient nvidia.com/mig-1g.10gb."``)."""

    state: str
    saw: str


def _pods(pods: Sequence[GpuPod]) -> str:
    shown = ", ".join(f"{p.name} ({p.phase})" for p in pods[:3])
    more = f" and {len(pods) - 3} more" if len(pods) > 3 else ""
    return f"{shown}{more}"


def _resized(pod: GpuPod, action: ProposedAction) -> bool:
    """Whether ``pod`` requests the resize's ``after`` resources (in its container, when named)."""
    after = dict(action.resize.after) if action.resize else {}
    if action.resize and action.resize.container:
        held = dict(dict(pod.containers).get(action.resize.container, ()))
    else:
        held = dict(pod.requested)
    return all(held.get(resource) == count for resource, count in after.items())


def observe(action: ProposedAction, pods: Sequence[GpuPod], nodes: Sequence[str],
            queue: LocalQueue | None = None) -> tuple[bool, str]:
    """``(done, saw)``: whether the cluster shows ``action``'s effect, and what it shows, from one
    read of it: ``pods`` are the target's pods as read (those the action was for, by name, or for
    a resize every pod whose owner chain holds the target:
    :func:`actions.detect.gate.pods_of`), ``nodes`` the names of the nodes a NodeClaim deletion
    meant to remove that are still there, ``queue`` the held LocalQueue as read (None: gone)."""
    target = action.target
    if action.verb.stop_policy is not None:
        if queue is None:
            return False, f"LocalQueue {target.namespace}/{target.name} not found"
        return queue.stop_policy == action.verb.stop_policy, f"stopPolicy {queue.stop_policy}"
    if action.verb is ActionVerb.DELETE_NODECLAIM:
        left = sorted(nodes)
        return (not left, "node gone" if not left else f"node {', '.join(left)} still there")
    if action.verb is ActionVerb.RESIZE_GPUS:
        if not pods:
            return False, f"no pod of {target} yet"
        good = [p for p in pods if _resized(p, action) and p.phase == "Running" and p.ready]
        saw = f"{len(good)}/{len(pods)} pods ready"
        if len(good) == len(pods):
            return True, f"{saw} with {', '.join(f'{n} {r}' for r, n in action.resize.after)}"
        why = next((p.unschedulable for p in pods if p.unschedulable), None)
        old = [p for p in pods if not _resized(p, action)]
        if why:
            return False, f"{saw}: {why}"
        if old:
            return False, f"{saw}; still on the old GPU request: {_pods(old)}"
        return False, f"{saw}: {_pods([p for p in pods if p not in good])}"
    if not pods:
        return True, "pods gone"
    return False, f"{len(pods)} pod{'s' if len(pods) != 1 else ''} still there: {_pods(pods)}"


def verdict(action: ProposedAction, pods: Sequence[GpuPod], nodes: Sequence[str],
            applied_at: datetime, now: datetime, verify_seconds: float, queue: LocalQueue | None = None) -> Verdict:
    """What ``pods`` and ``nodes`` (read at ``now``, see :func:`observe`) say of ``action``
    applied at ``applied_at``:
    :data:`VERIFIED` as soon as it shows the effect (:func:`observe`), :data:`WAITING` while it
    does not and ``now`` is before ``applied_at + verify_seconds``, :data:`FAILED` after."""
    done, saw = observe(action, pods, nodes, queue)
    if done:
        return Verdict(VERIFIED, saw)
    if now < applied_at + timedelta(seconds=verify_seconds):
        return Verdict(WAITING, saw)
    return Verdict(FAILED, saw)
