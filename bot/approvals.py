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

An action interrupted between ``approved`` and ``done`` (or a restore between ``restoring`` and
``restored``), because the process was killed or its shutdown grace ran out, is settled by
:meth:`Approvals.recover` from what the cluster shows: done or failed (restored or done again),
with a ``recovered`` audit event. Both executors' patches are single merge patches, so the target
is either changed or not, never half.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from actions.executors import ExecutorError, plan_apply, plan_restore
from actions.model import ClusterSnapshot, Finding, ObjectRef, finding_from_jsonable, to_jsonable
from actions.store import ActionRequest, RequestState
from bot import blocks
from bot.chat import ChatError, Message, MessageRef
from bot.runtime import Runtime

log = logging.getLogger(__name__)

SYSTEM = "system"

# An action in flight is one re-check (a cluster list and a Prometheus query, each bounded by its
# client's timeout) plus one or two API calls: far less than this. A request older than this in
# ``approved``/``restoring`` belongs to a process that died, whichever replica it was.
ABANDONED_AFTER_SECONDS = 900.0

SHUTTING_DOWN = "The bot is restarting, so nothing was changed. Press {verb} again in a minute."


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


def target_state(snapshot: ClusterSnapshot, target: ObjectRef) -> dict | None:
    """The object ``target`` as ``snapshot`` shows it, reduced to the JSON fields
    ``actions.executors.plan_apply``/``plan_restore`` read (``metadata.annotations``,
    ``spec.replicas``, ``spec.active``); None when the snapshot does not hold it (deleted)."""
    def same(obj) -> bool:
        return obj.namespace == target.namespace and obj.name == target.name

    if target.kind == "Notebook":
        found = next((n for n in snapshot.notebooks if same(n)), None)
        return None if found is None else {"metadata": {"annotations": dict(found.annotations)}}
    if target.kind in ("StatefulSet", "Deployment"):
        owners = snapshot.statefulsets if target.kind == "StatefulSet" else snapshot.deployments
        found = next((o for o in owners if same(o)), None)
        if found is None:
            return None
        return {"metadata": {"annotations": dict(found.annotations)}, "spec": {"replicas": found.replicas}}
    if target.kind == "Workload":
        found = next((w for w in snapshot.workloads if same(w)), None)
        return None if found is None else {"spec": {"active": found.active}}
    return None


def settle_interrupted(req: ActionRequest, current: dict | None, now: datetime, why: str) -> tuple[str, str, dict]:
    """Where a request left in ``approved`` or ``restoring`` by an interrupted action stands,
    judged from its target as the cluster shows it now (``current``, from :func:`target_state`;
    None when gone). Returns ``(state, note, detail)``:

    - approved, and the cluster shows the action applied: ``done`` (Restore offered), with the
      undo record read back from the object in ``detail["undo"]``;
    - approved, otherwise (not applied, target gone, dry run): ``failed``, nothing was changed;
    - restoring, and nothing left to undo (or a dry run): ``restored``;
    - restoring, otherwise: back to ``done``, so Restore can be pressed again (it is idempotent).

    ``why`` starts the note (e.g. "The bot restarted"). Raises ValueError for any other state and
    ExecutorError for an undo record that does not fit the action.
    """
    finding = finding_of(req)
    action = finding.action
    detail: dict = {"from": req.state, "why": why, "target_exists": current is not None}
    if req.state == RequestState.APPROVED:
        if req.dry_run or action is None:
            return "failed", f"{why} before acting; nothing was changed.", detail
        if current is None:
            return "failed", f"{why} before acting; {action.target} no longer exists, nothing was changed.", detail
        patch, undo = plan_apply(action, current, now)
        if patch is None:
            detail["undo"] = undo
            return "done", f"{why} while acting; the cluster shows it done: {action.summary}.", detail
        return "failed", f"{why} before acting; nothing was changed. Approve it again when re-proposed.", detail
    if req.state == RequestState.RESTORING:
        if req.dry_run or action is None:
            return "restored", "Dry run: nothing to restore.", detail
        if current is None:
            return "done", f"{why} while restoring, and {action.target} no longer exists; nothing to restore.", detail
        if plan_restore(action, json.loads(req.undo_json or "{}"), current) is None:
            return "restored", f"{why} while restoring; the cluster shows it undone: {action.summary}.", detail
        return "done", f"{why} before the restore finished; nothing was undone. Press Restore again.", detail
    raise ValueError(f"request {req.id} is {req.state}, not approved or restoring")


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

    def _refresh_metrics(self) -> None:
        if self.rt.metrics:
            self.rt.metrics.refresh_from_store(self.rt.store)

    def reconcile(self, findings: list[Finding], now: datetime) -> dict[str, int]:
        """Bring the store and the channels in line with one sweep's findings.

        New findings become proposals; open ones are refreshed (one message per consumer, updated
        in place); proposals whose consumer is no longer idle are closed as superseded; overdue
        proposals expire; snoozes, exemptions and denials that ran out are re-proposed when the
        consumer is still idle. Returns counts by what happened.

        This ends a sweep: with ``rt.metrics`` set it records the sweep (``ok``, or ``error`` when
        this raises), the ``reconcile`` phase's seconds, the findings by kind and the requests by
        state.
        """
        metrics = self.rt.metrics
        started = time.perf_counter()
        try:
            counts = self._reconcile(findings, now)
        except Exception:
            if metrics:
                metrics.sweep_finished("error")
            raise
        if metrics:
            metrics.sweep_phase("reconcile", time.perf_counter() - started)
            metrics.sweep_finished("ok")
            metrics.set_findings(findings)
            metrics.refresh_from_store(self.rt.store)
        return counts

    def _reconcile(self, findings: list[Finding], now: datetime) -> dict[str, int]:
        store, policy = self.rt.store, self.rt.policy
        # A replica that died mid-action left its request behind; settle it before proposing.
        self.recover(now)
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

    # --- interrupted actions ---------------------------------------------------------------

    def recover(
        self,
        now: datetime,
        *,
        older_than_seconds: float = ABANDONED_AFTER_SECONDS,
        request_ids: set[int] | None = None,
        why: str = "The bot restarted",
        force: bool = False,
    ) -> dict[str, int]:
        """Settle requests left in ``approved`` or ``restoring`` by an action that never finished
        (the process was killed, or its shutdown grace ran out): each is judged against the
        cluster as read now (:func:`settle_interrupted`), moved out with a ``recovered`` audit
        event and its message updated. Only requests last changed at least ``older_than_seconds``
        before ``now`` are touched (0 at the start of a lone replica: nothing else can be acting;
        else :data:`ABANDONED_AFTER_SECONDS`, so another replica's action in flight is left
        alone), and only ``request_ids`` when given.

        When the cluster cannot be read the requests stay as they are for the next try, unless
        ``force``: then an approved one becomes ``failed`` and a restoring one ``done``, with a
        note to check the target by hand. Returns counts by the state each request moved to
        (plus ``unchecked`` for those left for later).
        """
        cutoff = now - timedelta(seconds=older_than_seconds)
        stuck = [
            r for r in self.rt.store.list_requests(states=[RequestState.APPROVED, RequestState.RESTORING])
            if r.updated_at <= cutoff and (request_ids is None or r.id in request_ids)
        ]
        if not stuck:
            return {}
        try:
            snapshot: ClusterSnapshot | None = self.rt.cluster.snapshot(now)
            unread = ""
        except Exception as e:  # noqa: BLE001 - whatever the source raised, the cluster is unknown
            if self.rt.metrics:
                self.rt.metrics.kubernetes_error("read")
            if not force:
                log.warning("%d interrupted request(s) left for later: cannot read the cluster: %s", len(stuck), e)
                return {"unchecked": len(stuck)}
            snapshot, unread = None, str(e)
        counts: dict[str, int] = {}
        for req in stuck:
            action = finding_of(req).action
            if snapshot is None:
                to_state = "failed" if req.state == RequestState.APPROVED else "done"
                what = action.target if action else f"{req.namespace}/{req.name}"
                note = f"{why}, and the cluster could not be read ({unread}): check {what} by hand."
                detail: dict = {"from": req.state, "why": why, "error": unread}
            else:
                current = target_state(snapshot, action.target) if action else None
                to_state, note, detail = settle_interrupted(req, current, now, why)
            fields = {"undo_json": json.dumps(detail["undo"])} if "undo" in detail else {}
            done = self.rt.store.transition(
                req.id, from_states=[req.state], to_state=to_state, now=now, actor=SYSTEM,
                event="recovered", detail={**detail, "to": to_state}, note=note, **fields,
            )
            if done is not None:
                log.warning("request %s was interrupted while %s; now %s: %s", req.id, req.state, to_state, note)
                counts[to_state] = counts.get(to_state, 0) + 1
                self.refresh_message(done, now)
        self._refresh_metrics()
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
        """Approve, re-check the evidence, then act (or record a dry run). Refused, with nothing
        changed, once the process is shutting down (``rt.inflight`` closed)."""
        if not self.rt.inflight.start(request_id):
            return Outcome(False, SHUTTING_DOWN.format(verb="Approve"))
        try:
            req, refusal, now = self._decide(
                request_id, user, "approve", from_state="proposed", to_state="approved",
                note="Re-checking before acting.",
            )
            return refusal or self._act(req, now)
        finally:
            self.rt.inflight.finish(request_id)
            self._refresh_metrics()

    def _count_failure(self, verb: str, operation: str, error: Exception) -> None:
        metrics = self.rt.metrics
        if not metrics:
            return
        metrics.action_failed(verb, operation)
        # ExecutorErrors carry an HTTP status when the API server refused, and are raised from
        # the transport's exception when it could not be reached; the rest are the bot's own
        # refusals (an unsupported target, an unusable undo record) and no API error.
        if isinstance(error, ExecutorError) and (error.status or error.__cause__ is not None):
            metrics.kubernetes_error("restore" if operation == "restore" else "apply")

    def _settle(self, request_id: int, from_state: str, to_state: str, now: datetime, **fields) -> ActionRequest | None:
        """Move a request being acted on out of ``from_state`` and update its message. None when
        it had already left that state: a shutdown whose grace period ran out recorded it."""
        req = self.rt.store.transition(
            request_id, from_states=[from_state], to_state=to_state, now=now, actor=SYSTEM, **fields
        )
        if req is None:
            log.warning(
                "request %s was settled by the shutdown while being acted on; %s not recorded",
                request_id, to_state,
            )
            return None
        self.refresh_message(req, now)
        return req

    def _act(self, req: ActionRequest, now: datetime) -> Outcome:
        request_id, finding = req.id, finding_of(req)
        try:
            fresh = {f.key: f for f in self.rt.detect(now)}.get(req.key)
        except Exception as e:  # noqa: BLE001 - any source failure must leave the request decided, not stuck
            self._count_failure(req.verb, "recheck", e)
            self._settle(
                request_id, "approved", "failed", now, event="apply-failed", detail={"error": str(e)},
                note=f"Could not re-check the evidence, so nothing was changed: {e}",
            )
            return Outcome(False, f"Request #{request_id}: re-check failed, nothing was changed: {e}")
        if fresh is None:
            self._settle(
                request_id, "approved", "superseded", now, event="superseded",
                detail={"reason": "busy at re-check"},
                note=f"Re-checked at {blocks.short_time(now)}: no longer idle, so it was left alone.",
            )
            return Outcome(False, f"Request #{request_id}: {finding.namespace}/{finding.name} is busy again; left alone.")
        action = fresh.action
        if req.dry_run:
            self._settle(
                request_id, "approved", "done", now, event="applied",
                detail={"dry_run": True, "action": to_jsonable(action)}, undo_json=json.dumps({}),
                note=f"Dry run: would {action.summary}. The cluster was not changed.",
            )
            return Outcome(True, f"Request #{request_id} approved (dry run: nothing was changed).")
        try:
            undo = self.rt.writer.apply(action, now)
        except Exception as e:  # noqa: BLE001 - whatever broke, the request must end decided, not stuck
            if not isinstance(e, ExecutorError):
                log.exception("request %s: executor raised", request_id)
            self._count_failure(req.verb, "apply", e)
            self._settle(
                request_id, "approved", "failed", now, event="apply-failed", detail={"error": str(e)},
                note=f"Failed: {e}",
            )
            return Outcome(False, f"Request #{request_id} failed: {e}")
        if self.rt.metrics:
            self.rt.metrics.action_applied(action.verb.value)
        self._settle(
            request_id, "approved", "done", now, event="applied",
            detail={"action": to_jsonable(action), "undo": undo}, undo_json=json.dumps(undo),
            note=f"Done: {action.summary}.",
        )
        return Outcome(True, f"Request #{request_id}: {action.summary}.")

    def _hold(self, request_id: int, user: str, verb: str, state: str, seconds: float) -> Outcome:
        until = self.rt.clock() + timedelta(seconds=seconds)
        # Snoozing only delays a question, so anyone may; exempting and denying decide it.
        req, refusal, _ = self._decide(
            request_id, user, verb, from_state="proposed", to_state=state, anyone=verb == "snooze",
            until=until, note=None,
        )
        if req is not None:
            self._refresh_metrics()
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
        """Undo a done action exactly (annotation removed, replicas restored, Workload active).
        Refused, with nothing changed, once the process is shutting down."""
        if not self.rt.inflight.start(request_id):
            return Outcome(False, SHUTTING_DOWN.format(verb="Restore"))
        try:
            req, refusal, now = self._decide(
                request_id, user, "restore", from_state="done", to_state="restoring",
                event="restore-requested", note="Restoring.",
            )
            return refusal or self._restore(req, now)
        finally:
            self.rt.inflight.finish(request_id)
            self._refresh_metrics()

    def _restore(self, req: ActionRequest, now: datetime) -> Outcome:
        request_id = req.id
        finding = finding_of(req)
        undo = json.loads(req.undo_json or "{}")
        if not req.dry_run:
            try:
                self.rt.writer.restore(finding.action, undo, now)
            except ExecutorError as e:
                self._count_failure(req.verb, "restore", e)
                # Back to done, so Restore can be pressed again once the cause is fixed.
                self._settle(
                    request_id, "restoring", "done", now, event="restore-failed",
                    detail={"error": str(e)}, note=f"Restore failed: {e}",
                )
                return Outcome(False, f"Restore of request #{request_id} failed: {e}")
            if self.rt.metrics:
                self.rt.metrics.action_restored(req.verb)
        note = "Dry run: nothing to restore." if req.dry_run else f"Restored: undid {finding.action.summary}."
        self._settle(request_id, "restoring", "restored", now, event="restored", detail={"undo": undo}, note=note)
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
