"""The budget job: each budget's spend over its period (:mod:`bot.runtime.budgets`), its alerts at
the thresholds and the forecast (claimed once per budget and period, as every alert), the holds
it asks for once used up (``on_exhausted`` ``ask``: a request per LocalQueue for the approvers;
``auto``: the same, acted on after the grace by mode auto), and the holds it lifts by itself when
a new period begins or the budget is raised or removed, said in the team's channel. Every hold
passes the one gate before it is proposed and again, with the budget re-checked, right before
acting; Restore and a release set ``spec.stopPolicy`` back as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from actions.alerts.alert import Alert
from actions.budgets.holds import BudgetState, hold_findings, release_reason, state_alerts
from actions.budgets.model import EXHAUSTED, WARN
from actions.budgets.spend import queues_of
from actions.cost.engine import local_queue_of
from actions.model.findings import Finding, Handling
from actions.model.snapshot import ClusterSnapshot
from actions.store.states import RequestState
from actions.text import one_line, plain
from bot.chat.approvals import Approvals
from bot.chat.proposals import SYSTEM
from bot.runtime.budgets import budget_of_key, budget_state, budgets_in_force, team_of_budget
from bot.runtime.chat import ChatError, Message
from bot.runtime.runtime import Runtime

log = logging.getLogger(__name__)

JOB_ID = "budgets"


@dataclass
class BudgetsJob:
    """``rt`` the Runtime; ``post_alerts(alerts, now)`` claims and posts alerts (the alerts job's
    :meth:`~bot.jobs.alerts.AlertsJob.post`); ``thresholds_percent`` (``alerts.budget_thresholds_percent``)."""

    rt: Runtime
    post_alerts: Callable[[list[Alert], datetime], dict[str, int]]
    thresholds_percent: Sequence[float] = (50.0, 80.0, 100.0)

    def _snapshot(self, cluster: str, now: datetime, seen: dict[str, ClusterSnapshot]) -> ClusterSnapshot:
        if cluster not in seen:
            seen[cluster] = self.rt.snapshot_of(cluster or self.rt.cluster_name, now)
        return seen[cluster]

    def run(self, now: datetime) -> dict[str, int]:
        """One round at ``now``. Returns counts: alerts ``posted``, holds ``proposed``,
        ``released``, ``refused`` (by the gate) and ``errors`` (a budget whose spend could not be
        read is logged and left for the next round)."""
        rt = self.rt
        counts = {"posted": 0, "proposed": 0, "released": 0, "refused": 0, "errors": 0}
        seen: dict[str, ClusterSnapshot] = {}
        usages: dict = {}  # (cluster, period start) -> usage: budgets sharing both read it once
        states: dict[tuple[str, str], BudgetState] = {}
        alerts: list[Alert] = []
        holds: list[Finding] = []
        for budget in budgets_in_force(rt):
            try:
                snapshot = self._snapshot(budget.cluster, now, seen)
                state = budget_state(rt, budget, now, snapshot, usages)
            except Exception as e:  # noqa: BLE001 - one budget's source must not stop the others
                log.warning("budget %s not evaluated at %s: %s", budget.key, now.isoformat(), one_line(e))
                counts["errors"] += 1
                continue
            states[(budget.cluster, budget.key)] = state
            team = team_of_budget(rt, budget)
            alerts += state_alerts(state, team, self.thresholds_percent)
            if budget.on_exhausted == WARN or not state.exhausted:
                continue
            queues = queues_of(budget, snapshot.local_queues, rt.teams, snapshot.namespace_labels,
                               rt.costs.team_label if rt.costs else None)
            pods = {(q.namespace, q.name): tuple(p.name for p in snapshot.pods if p.namespace == q.namespace
                                                  and local_queue_of(p.labels) == q.name)
                    for q in queues}
            for f in hold_findings(state, queues, team, api_version=snapshot.workload_api_version,
                                   handling=Handling(source="budget"), pods=pods):
                refused = rt.gate(f, budget.cluster or rt.cluster_name, now, snapshot)
                if refused:
                    counts["refused"] += 1
                    rt.store.audit(None, actor=SYSTEM, event="hold-refused", now=now,
                                   detail={"key": f.key, "reasons": list(refused)})
                    continue
                holds.append(f)
        counts["posted"] = self.post_alerts(alerts, now).get("posted", 0)
        approvals = Approvals(rt)
        if holds:
            counts["proposed"] = len(approvals.proposals.propose_findings(holds, now))
        counts["released"] = self._release(states, approvals, now)
        return counts

    def _release(self, states: dict[tuple[str, str], BudgetState], approvals: Approvals, now: datetime) -> int:
        """Lift the holds whose budget no longer asks for them (:func:`release_reason`), each
        through Restore's own path as ``system``, and say so in the team's channel."""
        rt, released = self.rt, 0
        for req in rt.store.list_requests(states=[RequestState.DONE]):
            if req.kind != EXHAUSTED:
                continue
            budget = budget_of_key(rt, req.key, req.cluster)
            state = states.get((budget.cluster, budget.key)) if budget is not None else None
            if budget is not None and state is None:
                continue  # its spend could not be read this round: the hold stands until it is
            why = release_reason(req.key, state)
            if why is None or not rt.inflight.start(req.id):
                continue
            try:
                deadline = now + timedelta(seconds=rt.timeouts.acting(recheck=False))
                moving = rt.store.transition(
                    req.id, from_states=[RequestState.DONE], to_state=RequestState.RESTORING, now=now, actor=SYSTEM,
                    event="hold-released", detail={"why": why}, note=f"Released: {why}. Restoring.", deadline_at=deadline,
                )
                if moving is None:
                    continue  # someone pressed Restore meanwhile
                approvals.proposals.refresh_message(moving, now)
                if approvals.undo(moving, now, f"Released: {why}. ").ok:
                    released += 1
                    self._say(req.team, f"LocalQueue {req.namespace}/{req.name} admits Workloads again: {why}.")
            finally:
                rt.inflight.finish(req.id)
        return released

    def _say(self, team: str, text: str) -> None:
        channel = self.rt.teams.channel_for(self.rt.teams.team_for_name(team))
        if not channel:
            return
        try:
            self.rt.chat.post(channel, Message(text=plain(text)))
        except ChatError as e:
            log.warning("budget note to %s not posted: %s", channel, e)

    def scheduled(self, scheduled_at: datetime) -> None:
        """The scheduler's run for ``scheduled_at``; raises RuntimeError when a budget could not
        be evaluated, after doing the others, so the run is recorded as ``error``."""
        counts = self.run(scheduled_at)
        log.info("budgets at %s: %s", scheduled_at.isoformat(), counts)
        if counts["errors"]:
            raise RuntimeError(f"budgets at {scheduled_at.isoformat()}: {counts['errors']} budget(s) not evaluated")

