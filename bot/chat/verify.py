"""Outcomes verified: after an action the bot watches what it meant to happen, and says so.

Every housekeeping round (:func:`bot.wiring.process.housekeeping`) reads, for each request
``done`` (no dry run) whose audit holds no ``verified`` or ``verify-failed`` event yet, its
cluster once, and judges it (:func:`actions.remedy.verify.verdict`) within the policy's
``verify_seconds`` from the action's ``applied`` (or ``recovered``) event:

- the cluster shows the effect (pods gone, node gone, the resized pods Running and Ready): the
  request is audited ``verified`` and its message notes what was seen, early or late;
- the window is over and it does not: audited ``verify-failed`` (actor ``system``) with what was
  seen; a stop stays ``done`` and its message says "Not verified: ..." (Restore still offered);
  a resize is restored at once through Restore's own path (:meth:`bot.chat.approvals.Approvals.undo`,
  the exact undo record), audited ``restored`` - unless judged more than twice ``verify_seconds``
  after it was applied (the bot was down): then it is reported like a stop.

No schema change: the audit trail is the verifier's memory. A cluster that cannot be read leaves
its requests for the next round.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta

from actions.detect.gate import pods_of
from actions.model.findings import ActionVerb
from actions.model.snapshot import ClusterSnapshot
from actions.remedy.verify import FAILED, VERIFIED, verdict
from actions.store import bulk as store_bulk
from actions.store.states import RequestState
from bot.chat.approvals import Approvals
from bot.chat.proposals import SYSTEM, finding_of
from bot.runtime.runtime import Runtime

log = logging.getLogger(__name__)


class Verifier:
    """Judges the done requests of ``rt`` (:meth:`run`)."""

    def __init__(self, rt: Runtime, approvals: Approvals | None = None):
        self.rt = rt
        self.approvals = approvals or Approvals(rt)

    def run(self, now: datetime) -> dict[str, int]:
        """One round at ``now``: counts of ``verified``, ``verify-failed``, ``restored`` (resizes
        undone), ``waiting`` (inside their window) and ``unchecked`` (cluster unreadable)."""
        counts: Counter[str] = Counter()
        snapshots: dict[str, ClusterSnapshot | None] = {}
        for req, applied_at in store_bulk.done_without_events(self.rt.store, (VERIFIED, FAILED)):
            finding = finding_of(req)
            action = finding.action
            applied_at = applied_at or req.decided_at or req.updated_at
            if action is None:
                continue
            cluster = req.cluster
            if cluster not in snapshots:
                try:
                    snapshots[cluster] = self.rt.snapshot_of(cluster, now)
                except Exception as e:  # noqa: BLE001 - an unreadable cluster is judged next round
                    log.warning("verify: cannot read cluster %s: %s", cluster, e)
                    snapshots[cluster] = None
            snapshot = snapshots[cluster]
            if snapshot is None:
                counts["unchecked"] += 1
                continue
            seconds = self.rt.policy.verify_seconds
            pods = pods_of(action.target, () if action.resize else finding.pods, snapshot)
            nodes = [n.name for n in snapshot.nodes.values()
                     if n.nodeclaim == action.target.name or n.name == finding.node
                     ] if action.verb is ActionVerb.DELETE_NODECLAIM else []
            queue = next((q for q in snapshot.local_queues
                          if (q.namespace, q.name) == (action.target.namespace, action.target.name)), None)
            seen = verdict(action, pods, nodes, applied_at, now, seconds, queue)
            # Judged long after its window (the bot was down, or the request predates verifying):
            # what the cluster shows now may be someone's later change, so nothing is undone.
            late = now > applied_at + timedelta(seconds=2 * seconds)
            detail = {"saw": seen.saw, "applied_at": applied_at, "verify_seconds": seconds}
            if seen.state == VERIFIED:
                done = self.rt.store.update_fields(
                    req.id, now=now, actor=SYSTEM, event=VERIFIED, detail=detail, in_states=[RequestState.DONE],
                    note=f"{req.note or 'Done.'} Verified: {seen.saw}.",
                )
            elif seen.state == FAILED and action.verb is ActionVerb.RESIZE_GPUS and not late:
                counts[FAILED] += 1
                self._restore(req.id, seen.saw, detail, now, counts)
                continue
            elif seen.state == FAILED:
                done = self.rt.store.update_fields(
                    req.id, now=now, actor=SYSTEM, event=FAILED, detail=detail, in_states=[RequestState.DONE],
                    note=f"Not verified: {seen.saw} {_within(seconds)} after {action.summary}.",
                )
            else:
                counts["waiting"] += 1
                continue
            if done is not None:
                counts[seen.state] += 1
                self.approvals.proposals.refresh_message(done, now)
        return dict(counts)

    def _restore(self, request_id: int, saw: str, detail: dict, now: datetime, counts: Counter[str]) -> None:
        """A resize the cluster did not take: restored through Restore's own path, as ``system``."""
        if not self.rt.inflight.start(request_id):
            return  # shutting down: the next life judges it again
        try:
            deadline = now + timedelta(seconds=self.rt.timeouts.acting(recheck=False))
            why = f"Not verified: {saw} {_within(self.rt.policy.verify_seconds)} after the resize. "
            req = self.rt.store.transition(
                request_id, from_states=[RequestState.DONE], to_state=RequestState.RESTORING, now=now,
                actor=SYSTEM, event=FAILED, detail=detail, note=why + "Restoring.", deadline_at=deadline,
            )
            if req is None:
                return  # someone pressed Restore meanwhile
            self.approvals.proposals.refresh_message(req, now)
            if self.approvals.undo(req, now, why).ok:
                counts["restored"] += 1
        finally:
            self.rt.inflight.finish(request_id)
            self.approvals.proposals.refresh_metrics()


def _within(seconds: float) -> str:
    return f"within {seconds:g} s"
