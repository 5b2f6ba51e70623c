"""Mode ``auto``: the policy acts on a proposal nobody answered within its grace.

A team (or a namespace) whose policy says ``mode: auto`` gets the same proposal as in ``ask``,
with a countdown: unless someone presses Snooze, Exempt or Deny within ``grace_seconds``
(default 4 h), the sweep after the grace approves it on the policy's behalf and acts exactly as
an approver's Approve would, re-checking the evidence first. An approver may still press Approve
earlier. The approval is audited with the actor ``policy``, the grace and the message the
countdown ran in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection
from datetime import datetime, timedelta

from actions.text import duration
from bot.chat.approvals import Approvals
from bot.chat.proposals import POLICY, SYSTEM, finding_of
from bot.runtime.runtime import Runtime

log = logging.getLogger(__name__)


class AutoActions:
    """Acts on the requests whose grace is over (:meth:`act_due`), through the same path as an
    approver's Approve (:meth:`bot.chat.approvals.Approvals.act`)."""

    def __init__(self, rt: Runtime):
        self.rt = rt
        self.approvals = Approvals(rt)

    def act_due(self, now: datetime, unreachable: Collection[str] = ()) -> dict[str, int]:
        """Approve on the policy's behalf, and act on, every request still ``proposed`` whose
        ``act_at`` is at or before ``now``. A request whose finding is no longer in mode auto
        (the team changed its policy) loses its countdown instead. Stops early, leaving the rest
        for the next sweep, once the process is shutting down. Returns counts: ``acted``,
        ``left`` (busy again, failed, or decided by someone a moment before). Requests of the
        ``unreachable`` clusters wait: their evidence cannot be re-checked now."""
        counts = {"acted": 0, "left": 0}
        for req in self.rt.store.due_to_act(now):
            if req.cluster in unreachable:
                continue
            finding = finding_of(req)
            handling = finding.handling
            if handling.mode != "auto" or finding.action is None:
                self.rt.store.update_fields(
                    req.id, now=now, actor=SYSTEM, event="countdown-stopped", in_states=["proposed"], act_at=None,
                    detail={"mode": handling.mode},
                )
                continue
            if not self.rt.inflight.start(req.id):
                break
            try:
                started = time.monotonic()
                approved = self.rt.store.transition(
                    req.id, from_states=["proposed"], to_state="approved", now=now, actor=POLICY, event="approved",
                    decided_by=POLICY, decided_at=now, deadline_at=now + timedelta(seconds=self.rt.timeouts.acting()),
                    note=f"No Snooze, Exempt or Deny within {duration(handling.grace_seconds)}: the policy acts. "
                    "Re-checking before acting.",
                    detail={
                        "mode": "auto", "grace_seconds": handling.grace_seconds, "policy": handling.source,
                        "proposed_at": req.created_at, "act_at": req.act_at,
                        "message": {"channel": req.channel, "ts": req.message_ts},
                    },
                )
                if approved is None:  # pressed by someone at the same moment
                    counts["left"] += 1
                    continue
                self.approvals.proposals.refresh_message(approved, now)
                outcome = self.approvals.act(approved, now, started)
                counts["acted" if outcome.ok else "left"] += 1
                log.info("request %s acted on by the policy: %s", req.id, outcome.message)
            finally:
                self.rt.inflight.finish(req.id)
        if counts["acted"] or counts["left"]:
            self.approvals.proposals.refresh_metrics()
        return counts
