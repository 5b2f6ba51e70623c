"""The ActionRequest state machine: proposals in, button presses through, actions out.

A button carries only the request id. Every press loads the request, checks who pressed it and
whether the request is still open, moves it with one atomic conditional UPDATE (so a double click
acts once), and only then acts. Every press, allowed or not, is an AuditEvent.

States (see ``actions.store``)::

    proposed --approve--> approved --re-check busy--> superseded
                                   --dry run / applied--> done --restore--> restoring --> restored
                                   --executor error--> failed
    proposed --snooze/exempt/deny--> snoozed/exempt/denied --(until passes, still idle)--> proposed
    proposed --(ttl passes)--> expired;  proposed --(no longer idle)--> superseded
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from actions.executors import ExecutorError
from actions.model import Finding, finding_from_jsonable, to_jsonable
from actions.store import ActionRequest
from bot import blocks
from bot.chat import ChatError, Message, MessageRef
from bot.runtime import Runtime

log = logging.getLogger(__name__)

SYSTEM = "system"


@dataclass(frozen=True)
class Outcome:
    """The answer to a press: ``ok`` when the request changed; ``message`` is shown to the
    presser only (ephemeral)."""

    ok: bool
    message: str


def finding_of(req: ActionRequest) -> Finding:
    return finding_from_jsonable(json.loads(req.finding_json))


def render(req: ActionRequest) -> Message:
    """The channel message for the request in its current state."""
    status = blocks.RequestStatus(
        id=req.id,
        state=req.state,
        dry_run=req.dry_run,
        expires_at=req.expires_at,
        until=req.until,
        decided_by=req.decided_by,
        decided_at=req.decided_at,
        note=req.note,
    )
    return blocks.proposal_message(finding_of(req), status)


class Approvals:
    """Proposes findings, handles presses, and keeps every message in step with its request."""

    def __init__(self, rt: Runtime):
        self.rt = rt

    # --- who may press ---------------------------------------------------------------------

    def approvers_of(self, team_name: str) -> set[str]:
        """Slack user ids allowed to approve for ``team_name`` (user groups expanded)."""
        team = self.rt.teams.team_for_name(team_name)
        users: set[str] = set()
        for a in team.approvers if team else []:
            if a.startswith("S"):
                users |= self.rt.group_members(a)
            else:
                users.add(a)
        return users

    def _refuse_unless_approver(self, req: ActionRequest, user: str, verb: str, now: datetime) -> Outcome | None:
        if user in self.approvers_of(req.team):
            return None
        self.rt.store.audit(
            req.id, actor=user, event=f"{verb}-rejected", now=now, detail={"reason": "not an approver"}
        )
        team = self.rt.teams.team_for_name(req.team)
        who = ", ".join(
            f"<!subteam^{a}>" if a.startswith("S") else f"<@{a}>" for a in (team.approvers if team else [])
        )
        if not who:
            return Outcome(
                False,
                f"Team {req.team} has no approvers configured, so nobody can {verb} request #{req.id}. "
                f"Add them under teams[].approvers in the bot's config.",
            )
        return Outcome(False, f"Only approvers of team {req.team} ({who}) can {verb} request #{req.id}.")

    # --- posting ----------------------------------------------------------------------------

    def refresh_message(self, req: ActionRequest, now: datetime) -> ActionRequest:
        """Post the request's message if it has none yet (an earlier post failed or no channel
        was known), else update it. Chat failures are logged and retried on the next sweep."""
        message = render(req)
        try:
            if req.message_ts and req.channel:
                self.rt.chat.update(MessageRef(req.channel, req.message_ts), message)
                return req
            channel = req.channel or self.rt.teams.channel_for(self.rt.teams.team_for_name(req.team))
            if not channel:
                log.warning("request %s: team %s has no channel; not posted", req.id, req.team)
                return req
            ref = self.rt.chat.post(channel, message)
        except ChatError as e:
            log.warning("request %s: chat failed, will retry: %s", req.id, e)
            return req
        return self.rt.store.update_fields(
            req.id, now=now, actor=SYSTEM, event="posted", channel=ref.channel, message_ts=ref.ts,
            detail={"channel": ref.channel, "ts": ref.ts},
        )

    # --- sweeps -----------------------------------------------------------------------------

    def reconcile(self, findings: list[Finding], now: datetime) -> dict[str, int]:
        """Bring the store and the channels in line with one sweep's findings.

        New findings become proposals; open ones are refreshed (one message per consumer, updated
        in place); proposals whose consumer is no longer idle are closed as superseded; overdue
        proposals expire; snoozes, exemptions and denials that ran out are re-proposed when the
        consumer is still idle. Returns counts by what happened.
        """
        store, policy = self.rt.store, self.rt.policy
        counts = {"proposed": 0, "updated": 0, "superseded": 0, "expired": 0, "reproposed": 0}
        by_key = {f.key: f for f in findings}
        ttl = timedelta(seconds=policy.request_ttl_seconds)

        for req in store.due_for_expiry(now):
            done = store.transition(
                req.id, from_states=["proposed"], to_state="expired", now=now, actor=SYSTEM,
                event="expired", note=f"No decision within {blocks.duration(policy.request_ttl_seconds)}.",
            )
            if done:
                counts["expired"] += 1
                self.refresh_message(done, now)

        for req in store.due_to_wake(now):
            f = by_key.get(req.key)
            if f is None:
                done = store.transition(
                    req.id, from_states=[req.state], to_state="superseded", now=now, actor=SYSTEM,
                    event="superseded", note="No longer idle.",
                )
            else:
                done = store.transition(
                    req.id, from_states=[req.state], to_state="proposed", now=now, actor=SYSTEM,
                    event="reproposed", finding_json=json.dumps(to_jsonable(f)),
                    usd_per_hour=f.usd_per_hour, expires_at=now + ttl, until=None,
                    note=f"{req.state.capitalize()} period over and still idle.",
                )
                counts["reproposed"] += bool(done)
            if done:
                self.refresh_message(done, now)

        for req in store.list_requests(states=["proposed"]):
            if req.key not in by_key:
                done = store.transition(
                    req.id, from_states=["proposed"], to_state="superseded", now=now, actor=SYSTEM,
                    event="superseded", note=f"No longer idle at {blocks.short_time(now)}.",
                )
                if done:
                    counts["superseded"] += 1
                    self.refresh_message(done, now)

        for f in findings:
            req = store.open_for_key(f.key)
            if req is None:
                req = store.create_request(
                    key=f.key, team=f.team, kind=f.kind, namespace=f.namespace, name=f.name,
                    verb=f.action.verb.value if f.action else "",
                    target=f.action.target if f.action else None,
                    finding_json=json.dumps(to_jsonable(f)), usd_per_hour=f.usd_per_hour,
                    gpus=f.gpus, dry_run=self.rt.dry_run, now=now,
                    ttl_seconds=policy.request_ttl_seconds,
                )
                counts["proposed"] += 1
                self.refresh_message(req, now)
            elif req.state in ("proposed", "done", "snoozed", "exempt", "denied"):
                # Refresh the evidence and the dollars; the message shows how long it has been idle.
                req = store.update_fields(
                    req.id, now=now, actor=SYSTEM, event="updated",
                    finding_json=json.dumps(to_jsonable(f)), usd_per_hour=f.usd_per_hour,
                )
                counts["updated"] += 1
                self.refresh_message(req, now)
        return counts

    # --- presses ----------------------------------------------------------------------------

    def _load_open(self, request_id: int, user: str, verb: str, now: datetime, states=("proposed",)):
        req = self.rt.store.get(request_id)
        if req is None:
            return None, Outcome(False, f"There is no request #{request_id}.")
        if req.state not in states:
            self.rt.store.audit(
                req.id, actor=user, event=f"{verb}-ignored", now=now, detail={"state": req.state}
            )
            by = f" by <@{req.decided_by}>" if req.decided_by else ""
            return None, Outcome(
                False, f"Request #{req.id} is already {req.state}{by}; nothing was changed."
            )
        if req.state == "proposed" and req.expires_at <= now:
            done = self.rt.store.transition(
                req.id, from_states=["proposed"], to_state="expired", now=now, actor=SYSTEM,
                event="expired", note="Expired before a decision.",
            )
            if done:
                self.refresh_message(done, now)
            return None, Outcome(False, f"Request #{req.id} expired; the next sweep proposes it again if it is still idle.")
        return req, None

    def _decide(
        self, request_id: int, user: str, verb: str, *, from_state: str, to_state: str,
        anyone: bool = False, **fields,
    ) -> tuple[ActionRequest | None, Outcome | None, datetime]:
        """Load the request, check it is in ``from_state`` and that ``user`` may press (an
        approver unless ``anyone``), then move it to ``to_state`` atomically, recording who and
        when. Returns (request, None, now) on success, (None, refusal, now) otherwise."""
        now = self.rt.clock()
        req, refusal = self._load_open(request_id, user, verb, now, states=(from_state,))
        if refusal is None and not anyone:
            refusal = self._refuse_unless_approver(req, user, verb, now)
        if refusal:
            return None, refusal, now
        event = fields.pop("event", to_state)
        req = self.rt.store.transition(
            req.id, from_states=[from_state], to_state=to_state, now=now, actor=user,
            event=event, decided_by=user, decided_at=now, **fields,
        )
        if req is None:
            return None, Outcome(False, f"Request #{request_id} was decided a moment ago by someone else."), now
        self.refresh_message(req, now)
        return req, None, now

    def approve(self, request_id: int, user: str) -> Outcome:
        """Approve, re-check the evidence, then act (or record a dry run)."""
        req, refusal, now = self._decide(
            request_id, user, "approve", from_state="proposed", to_state="approved",
            note="Re-checking before acting.",
        )
        return refusal or self._act(req, user, now)

    def _act(self, req: ActionRequest, user: str, now: datetime) -> Outcome:
        store = self.rt.store
        finding = finding_of(req)
        try:
            fresh = {f.key: f for f in self.rt.find_idle(now)}.get(req.key)
        except Exception as e:  # noqa: BLE001 - any source failure must leave the request decided, not stuck
            req = store.transition(
                req.id, from_states=["approved"], to_state="failed", now=now, actor=SYSTEM,
                event="apply-failed", detail={"error": str(e)},
                note=f"Could not re-check the evidence, so nothing was changed: {e}",
            )
            self.refresh_message(req, now)
            return Outcome(False, f"Request #{req.id}: re-check failed, nothing was changed: {e}")
        if fresh is None:
            req = store.transition(
                req.id, from_states=["approved"], to_state="superseded", now=now, actor=SYSTEM,
                event="superseded", detail={"reason": "busy at re-check"},
                note=f"Re-checked at {blocks.short_time(now)}: no longer idle, so it was left alone.",
            )
            self.refresh_message(req, now)
            return Outcome(False, f"Request #{req.id}: {finding.namespace}/{finding.name} is busy again; left alone.")
        action = fresh.action
        if req.dry_run:
            req = store.transition(
                req.id, from_states=["approved"], to_state="done", now=now, actor=SYSTEM,
                event="applied", detail={"dry_run": True, "action": to_jsonable(action)},
                undo_json=json.dumps({}), note=f"Dry run: would {action.summary}. The cluster was not changed.",
            )
            self.refresh_message(req, now)
            return Outcome(True, f"Request #{req.id} approved (dry run: nothing was changed).")
        try:
            undo = self.rt.writer.apply(action, now)
        except Exception as e:  # noqa: BLE001 - whatever broke, the request must end decided, not stuck
            if not isinstance(e, ExecutorError):
                log.exception("request %s: executor raised", req.id)
            req = store.transition(
                req.id, from_states=["approved"], to_state="failed", now=now, actor=SYSTEM,
                event="apply-failed", detail={"error": str(e)}, note=f"Failed: {e}",
            )
            self.refresh_message(req, now)
            return Outcome(False, f"Request #{req.id} failed: {e}")
        req = store.transition(
            req.id, from_states=["approved"], to_state="done", now=now, actor=SYSTEM,
            event="applied", detail={"action": to_jsonable(action), "undo": undo},
            undo_json=json.dumps(undo), note=f"Done: {action.summary}.",
        )
        self.refresh_message(req, now)
        return Outcome(True, f"Request #{req.id}: {action.summary}.")

    def _hold(self, request_id: int, user: str, verb: str, state: str, seconds: float) -> Outcome:
        until = self.rt.clock() + timedelta(seconds=seconds)
        # Snoozing only delays a question, so anyone may; exempting and denying decide it.
        req, refusal, _ = self._decide(
            request_id, user, verb, from_state="proposed", to_state=state, anyone=verb == "snooze",
            until=until, note=None,
        )
        return refusal or Outcome(True, f"Request #{request_id} {state} until {blocks.short_time(until)}.")

    def snooze(self, request_id: int, user: str) -> Outcome:
        """Ask again after ``policy.snooze_seconds`` (default 4 h) if still idle."""
        return self._hold(request_id, user, "snooze", "snoozed", self.rt.policy.snooze_seconds)

    def exempt(self, request_id: int, user: str) -> Outcome:
        """Leave this consumer alone for ``policy.exempt_seconds`` (default 7 d)."""
        return self._hold(request_id, user, "exempt", "exempt", self.rt.policy.exempt_seconds)

    def deny(self, request_id: int, user: str) -> Outcome:
        """Refuse; not proposed again for ``policy.deny_cooldown_seconds``."""
        return self._hold(request_id, user, "deny", "denied", self.rt.policy.deny_cooldown_seconds)

    def restore(self, request_id: int, user: str) -> Outcome:
        """Undo a done action exactly (annotation removed, replicas restored, Workload active)."""
        req, refusal, now = self._decide(
            request_id, user, "restore", from_state="done", to_state="restoring",
            event="restore-requested", note="Restoring.",
        )
        if refusal:
            return refusal
        finding = finding_of(req)
        undo = json.loads(req.undo_json or "{}")
        if not req.dry_run:
            try:
                self.rt.writer.restore(finding.action, undo, now)
            except ExecutorError as e:
                # Back to done, so Restore can be pressed again once the cause is fixed.
                req = self.rt.store.transition(
                    req.id, from_states=["restoring"], to_state="done", now=now, actor=SYSTEM,
                    event="restore-failed", detail={"error": str(e)}, note=f"Restore failed: {e}",
                )
                self.refresh_message(req, now)
                return Outcome(False, f"Restore of request #{request_id} failed: {e}")
        note = "Dry run: nothing to restore." if req.dry_run else f"Restored: undid {finding.action.summary}."
        req = self.rt.store.transition(
            req.id, from_states=["restoring"], to_state="restored", now=now, actor=SYSTEM,
            event="restored", detail={"undo": undo}, note=note,
        )
        self.refresh_message(req, now)
        return Outcome(True, f"Request #{request_id} restored.")

    def press(self, action_id: str, request_id: int, user: str) -> Outcome:
        """Dispatch a button by its ``action_id`` (one of ``blocks.BUTTON_ACTIONS``)."""
        handler = {
            blocks.APPROVE: self.approve,
            blocks.SNOOZE: self.snooze,
            blocks.EXEMPT: self.exempt,
            blocks.DENY: self.deny,
            blocks.RESTORE: self.restore,
        }[action_id]
        return handler(request_id, user)
