"""The buttons of an idle-GPU proposal: Approve, Snooze, Exempt, Deny and Restore.

A button carries only the request id. Every press loads the request, checks who pressed it and
whether the request is still open, moves it with one atomic conditional UPDATE (so a double click
acts once), and only then acts: Approve re-checks the evidence and applies the action through the
cluster writer, Restore undoes it exactly. Every press is an AuditEvent: allowed, refused, too
late (``-ignored``), beaten by another press (``-lost-race``) or on an id that names no request
(``-unknown``). A press the database cannot record is answered "not recorded, press again"; one
whose change had gone out to the cluster when the database failed is answered that the change may
have been made, and its request is settled from the cluster once the database answers.

An action is bounded in time (``rt.timeouts``): a re-check slower than its budget leaves the
cluster alone, and the request's ``deadline_at`` says when nothing this replica sent can land any
more. A patch the API server did not answer makes the request ``uncertain``, never ``failed``:
:meth:`bot.chat.proposals.Proposals.settle` reads the target back and records what happened. The
request's states and its message are :mod:`bot.chat.proposals`'s.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timedelta

import sqlalchemy.exc

from actions.model.codec import to_jsonable
from actions.model.findings import ActionVerb
from actions.remedy.patches import ActionRefused, ExecutorError
from actions.store.requests import ActionRequest
from actions.store.states import RequestState
from bot.chat.blocks import plain, short_time
from bot.chat.blocks.proposals import APPROVE, DENY, EXEMPT, RESTORE, SNOOZE
from bot.chat.outcomes import MAY_HAVE_CHANGED, NOT_RECORDED, SHUTTING_DOWN, VERBS, Outcome, database_error_line
from bot.chat.proposals import SYSTEM, Proposals, finding_of
from bot.runtime.runtime import Runtime, UnknownCluster

log = logging.getLogger(__name__)

class Approvals:
    """Handles the presses on proposals (:meth:`press`), on behalf of Slack user ids."""

    def __init__(self, rt: Runtime):
        self.rt = rt
        self.proposals = Proposals(rt)

    # --- who may press ---------------------------------------------------------------------

    def _refuse_unless_approver(self, req: ActionRequest, user: str, verb: str, now: datetime) -> Outcome | None:
        if user in self.rt.approvers_of(req.team):
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
                f"Team {plain(req.team)} has no approvers configured, so nobody can {verb} request #{req.id}. "
                f"Add them under teams[].approvers in the bot's config.",
            )
        return Outcome(False, f"Only approvers of team {plain(req.team)} ({who}) can {verb} request #{req.id}.")

    # --- presses ----------------------------------------------------------------------------

    def _load_open(self, request_id: int, user: str, verb: str, now: datetime, states=("proposed",)):
        req = self.rt.store.get(request_id)
        if req is None:
            detail = {"request_id": str(request_id)}
            self.rt.store.audit(None, actor=user, event=f"{verb}-unknown", now=now, detail=detail)
            return None, Outcome(False, f"There is no request #{request_id}.")
        if req.state not in states:
            self.rt.store.audit(
                req.id, actor=user, event=f"{verb}-ignored", now=now, detail={"state": req.state}
            )
            by = f" by <@{plain(req.decided_by)}>" if req.decided_by else ""
            return None, Outcome(
                False, f"Request #{req.id} is already {req.state}{by}; nothing was changed."
            )
        if req.state == "proposed" and req.expires_at <= now:
            done = self.rt.store.transition(
                req.id, from_states=["proposed"], to_state="expired", now=now, actor=SYSTEM,
                event="expired", note="Expired before a decision.",
            )
            if done:
                self.proposals.refresh_message(done, now)
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
            self.rt.store.audit(request_id, actor=user, event=f"{verb}-lost-race", now=now, detail={"wanted": to_state})
            return None, Outcome(False, f"Request #{request_id} was decided a moment ago by someone else."), now
        self.proposals.refresh_message(req, now)
        return req, None, now

    def approve(self, request_id: int, user: str) -> Outcome:
        """Approve, re-check the evidence, then act (or record a dry run). Refused, with nothing
        changed, once the process is shutting down (``rt.inflight`` closed)."""
        if not self.rt.inflight.start(request_id):
            return Outcome(False, SHUTTING_DOWN.format(verb="Approve"))
        try:
            req = self.rt.store.get(request_id)
            if req is not None and req.state == "proposed" and finding_of(req).handling.mode == "report":
                now = self.rt.clock()
                self.rt.store.audit(req.id, actor=user, event="approve-rejected", now=now, detail={"reason": "mode report"})
                return Outcome(False, f"Request #{req.id} is report only: the policy of team {req.team} never acts.")
            started = time.monotonic()
            deadline = self.rt.clock() + timedelta(seconds=self.rt.timeouts.acting())
            req, refusal, now = self._decide(
                request_id, user, "approve", from_state="proposed", to_state="approved",
                note="Re-checking before acting.", deadline_at=deadline,
            )
            return refusal or self.act(req, now, started)
        finally:
            self.rt.inflight.finish(request_id)
            self.proposals.refresh_metrics()

    def _settle(self, request_id: int, from_state: str, to_state: str, now: datetime, **fields) -> ActionRequest | None:
        """Move a request being acted on out of ``from_state`` (or ``uncertain``, where a shutdown
        whose grace ran out put it: this replica knows better) and update its message. None when
        it had already left both: the request was settled from the cluster meanwhile."""
        if to_state not in (RequestState.UNCERTAIN, RequestState.RESTORING):
            fields.setdefault("deadline_at", None)
        sources = [from_state, RequestState.UNCERTAIN] if from_state == RequestState.APPROVED else [from_state]
        req = self.rt.store.transition(
            request_id, from_states=sources, to_state=to_state, now=now, actor=SYSTEM, **fields
        )
        if req is None:
            log.warning(
                "request %s was settled by the shutdown while being acted on; %s not recorded",
                request_id, to_state,
            )
            return None
        self.proposals.refresh_message(req, now)
        return req

    def act(self, req: ActionRequest, now: datetime, started: float | None = None) -> Outcome:
        """Act on a request just moved to ``approved`` (by an approver, or by the policy in mode
        auto): re-check the evidence, then apply the action (or record a dry run), leaving the
        request ``done``, ``superseded`` (busy again), ``failed`` or ``uncertain`` (no answer).
        ``started`` is ``time.monotonic()`` at the press (default: now), from which the re-check's
        budget counts. The action goes to the cluster the request names, and nowhere else: one
        that is not configured (renamed or removed from ``clusters:``, or no name at all) fails the
        request before anything is read or sent."""
        started = time.monotonic() if started is None else started
        request_id, finding = req.id, finding_of(req)
        try:
            writer = self.rt.writer_for(req.cluster)
        except UnknownCluster as e:
            self.rt.count_failure(req.verb, "apply", e)
            self._settle(
                request_id, "approved", "failed", now, event="apply-failed", detail={"error": str(e), "cluster": req.cluster},
                note=f"Not acted on, nothing was changed: the request's cluster is not configured ({e}).",
            )
            return Outcome(False, f"Request #{request_id}: nothing was changed: its cluster is not configured ({plain(e)}).")
        try:
            fresh = self.rt.recheck(finding, req.key, req.cluster, now)
        except Exception as e:  # noqa: BLE001 - any source failure must leave the request decided, not stuck
            self.rt.count_failure(req.verb, "recheck", e)
            self._settle(
                request_id, "approved", "failed", now, event="apply-failed", detail={"error": str(e)},
                note=f"Could not re-check the evidence, so nothing was changed: {e}",
            )
            return Outcome(False, f"Request #{request_id}: re-check failed, nothing was changed: {plain(e)}")
        took = time.monotonic() - started
        if took > self.rt.timeouts.recheck:
            # Past its budget the request's deadline may be near: acting now could land after
            # another replica settled the request as not applied.
            budget = self.rt.timeouts.recheck
            self._settle(
                request_id, "approved", "failed", now, event="apply-failed",
                detail={"error": "re-check too slow", "seconds": took},
                note=f"The re-check took {took:.0f} s, longer than its {budget:g} s, so nothing was changed.",
            )
            return Outcome(False, f"Request #{request_id}: the re-check took {took:.0f} s; nothing was changed.")
        if fresh is not None and fresh.action is None and fresh.report_reason:
            self._settle(
                request_id, "approved", "superseded", now, event="superseded",
                detail={"reason": "refused at re-check", "why": fresh.report_reason},
                note=f"Re-checked at {short_time(now)}: the bot may not act now: {fresh.report_reason}.",
            )
            return Outcome(False, f"Request #{request_id}: not acted on: {plain(fresh.report_reason)}.")
        if fresh is None or fresh.action is None:
            self._settle(
                request_id, "approved", "superseded", now, event="superseded",
                detail={"reason": "busy at re-check"},
                note=f"Re-checked at {short_time(now)}: no longer idle, so it was left alone.",
            )
            where = plain(f"{finding.namespace}/{finding.name}")
            return Outcome(False, f"Request #{request_id}: {where} is busy again; left alone.")
        action = fresh.action
        if req.dry_run:
            self._settle(
                request_id, "approved", "done", now, event="applied",
                detail={"dry_run": True, "action": to_jsonable(action)}, undo_json=json.dumps({}),
                note=f"Dry run: would {action.summary}. The cluster was not changed.",
            )
            return Outcome(True, f"Request #{request_id} approved (dry run: nothing was changed).")
        try:
            # The exact request, sent first as a server-side dry run: webhooks and validation
            # answer, nothing changes (ClusterWriter.dry_run). What it would undo is stored
            # before the write: a scale to zero leaves nothing on the object to read it back from.
            planned = writer.dry_run(action, now)
            self.rt.store.update_fields(
                request_id, now=now, actor=SYSTEM, event="dry-run-accepted", detail={"undo": planned},
                in_states=["approved"], undo_json=json.dumps(planned),
            )
            undo = writer.apply(action, now)
        except ActionRefused as e:
            self.rt.count_failure(req.verb, "apply", e)
            self._settle(
                request_id, "approved", "failed", now, event="dry-run-refused",
                detail=e.detail(),
                note=f"The API server refuses this change, so nothing was changed: {e.message}",
            )
            return Outcome(False, f"Request #{request_id}: the API server refuses it (HTTP {e.status}), nothing was changed: "
                                  f"{plain(e.message)}")
        except sqlalchemy.exc.SQLAlchemyError:
            raise  # the plan went unrecorded, so nothing was sent: the press says so (_recorded)
        except Exception as e:  # noqa: BLE001 - whatever broke, the request must end decided, not stuck
            if not isinstance(e, ExecutorError):
                log.exception("request %s: executor raised", request_id)
            self.rt.count_failure(req.verb, "apply", e)
            if isinstance(e, ExecutorError) and e.uncertain:
                return self._uncertain(request_id, e)
            if isinstance(e, ExecutorError) and e.stale:
                self._settle(
                    request_id, "approved", "superseded", now, event="superseded",
                    detail={"reason": "stale advice", "error": str(e)}, note=f"Re-checked at {short_time(now)}: {e}",
                )
                return Outcome(False, f"Request #{request_id}: the advice no longer holds; nothing was changed.")
            self._settle(
                request_id, "approved", "failed", now, event="apply-failed", detail={"error": str(e)},
                note=f"Failed: {e}",
            )
            return Outcome(False, f"Request #{request_id} failed: {plain(e)}")
        if self.rt.metrics:
            self.rt.metrics.action_applied(action.verb.value)
        try:
            self._settle(
                request_id, "approved", "done", now, event="applied",
                detail={"action": to_jsonable(action), "undo": undo}, undo_json=json.dumps(undo),
                note=f"Done: {action.summary}.",
            )
        except sqlalchemy.exc.SQLAlchemyError as e:
            return self._unrecorded(request_id, e)
        return Outcome(True, f"Request #{request_id}: {plain(action.summary)}.")

    @staticmethod
    def _unrecorded(request_id: int, error: Exception) -> Outcome:
        """The change went out and its outcome could not be stored: the request stays approved,
        settled from the cluster once its deadline passes (:meth:`Proposals.settle`)."""
        first = database_error_line(error)
        log.warning("request %s: the change went out, its outcome not recorded: %s", request_id, first)
        return Outcome(False, MAY_HAVE_CHANGED.format(id=request_id, error=plain(first)))

    def _uncertain(self, request_id: int, error: ExecutorError) -> Outcome:
        """The patch went out and no answer came: record that the outcome is unknown, for
        :meth:`Proposals.settle` to read back within ``timeouts.settle`` seconds."""
        now = self.rt.clock()
        settle = self.rt.timeouts.settle
        try:
            self._settle(
                request_id, "approved", "uncertain", now, event="apply-uncertain", detail={"error": str(error)},
                deadline_at=now + timedelta(seconds=settle),
                note=f"No answer from the cluster ({error}); reading the target back to see whether it changed.",
            )
        except sqlalchemy.exc.SQLAlchemyError as e:
            return self._unrecorded(request_id, e)
        return Outcome(
            False,
            f"Request #{request_id}: the cluster did not answer in time, so whether it changed is not known yet. "
            f"The bot reads it back and updates the message within {settle:g} s.",
        )

    def _hold(self, request_id: int, user: str, verb: str, state: str, seconds: float) -> Outcome:
        until = self.rt.clock() + timedelta(seconds=seconds)
        # Snoozing only delays a question, so anyone may; exempting and denying decide it.
        req, refusal, _ = self._decide(
            request_id, user, verb, from_state="proposed", to_state=state, anyone=verb == "snooze",
            until=until, note=None,
        )
        if req is not None:
            self.proposals.refresh_metrics()
        return refusal or Outcome(True, f"Request #{request_id} {state} until {short_time(until)}.")

    def _handling(self, request_id: int):
        req = self.rt.store.get(request_id)
        return finding_of(req).handling if req is not None else None

    def snooze(self, request_id: int, user: str) -> Outcome:
        """Ask again after the policy's ``snooze_seconds`` (default 4 h) if still idle; in mode
        auto this also stops the countdown."""
        h = self._handling(request_id)
        return self._hold(request_id, user, "snooze", "snoozed", h.snooze_seconds if h else self.rt.policy.snooze_seconds)

    def exempt(self, request_id: int, user: str) -> Outcome:
        """Leave this consumer alone for the policy's ``exempt_seconds`` (default 7 d)."""
        h = self._handling(request_id)
        return self._hold(request_id, user, "exempt", "exempt", h.exempt_seconds if h else self.rt.policy.exempt_seconds)

    def deny(self, request_id: int, user: str) -> Outcome:
        """Refuse; not proposed again for the policy's ``deny_cooldown_seconds``."""
        h = self._handling(request_id)
        return self._hold(
            request_id, user, "deny", "denied", h.deny_cooldown_seconds if h else self.rt.policy.deny_cooldown_seconds
        )

    def restore(self, request_id: int, user: str) -> Outcome:
        """Undo a done action exactly (annotation removed, replicas restored, Workload active) in
        the cluster the request names. Refused, with nothing changed and the request left done,
        once the process is shutting down or while that cluster is not configured."""
        if not self.rt.inflight.start(request_id):
            return Outcome(False, SHUTTING_DOWN.format(verb="Restore"))
        try:
            done = self.rt.store.get(request_id)
            if done is not None and done.verb and not ActionVerb(done.verb).restorable:
                now = self.rt.clock()
                self.rt.store.audit(done.id, actor=user, event="restore-rejected", now=now, detail={"reason": "not restorable"})
                return Outcome(
                    False,
                    f"Request #{request_id} deleted {finding_of(done).action.target}: there is nothing to restore; "
                    "Karpenter provisions again for pods that need GPUs.",
                )
            if done is not None and done.state == RequestState.DONE and not done.dry_run:
                try:
                    self.rt.writer_for(done.cluster)
                except UnknownCluster as e:
                    # Left done: Restore works again once its cluster is configured again.
                    now = self.rt.clock()
                    self.rt.store.audit(done.id, actor=user, event="restore-rejected", now=now,
                                        detail={"reason": "cluster not configured", "cluster": done.cluster})
                    return Outcome(False, f"Request #{request_id}: nothing was restored: its cluster is not configured "
                                          f"({plain(e)}). Press Restore again once it is.")
            deadline = self.rt.clock() + timedelta(seconds=self.rt.timeouts.acting(recheck=False))
            req, refusal, now = self._decide(
                request_id, user, "restore", from_state="done", to_state="restoring",
                event="restore-requested", note="Restoring.", deadline_at=deadline,
            )
            return refusal or self.undo(req, now)
        finally:
            self.rt.inflight.finish(request_id)
            self.proposals.refresh_metrics()

    def undo(self, req: ActionRequest, now: datetime, why: str = "") -> Outcome:
        """Undo a request just moved to ``restoring`` (by Restore, or by :mod:`bot.chat.verify`
        with ``why`` starting the note) with its undo record."""
        request_id = req.id
        finding = finding_of(req)
        undo = json.loads(req.undo_json or "{}")
        if not req.dry_run:
            try:
                self.rt.writer_for(req.cluster).restore(finding.action, undo, now)
            except ExecutorError as e:
                self.rt.count_failure(req.verb, "restore", e)
                if e.uncertain:
                    # Stays restoring; settled from the cluster once nothing sent can land.
                    later = self.rt.clock()
                    self.rt.store.update_fields(
                        request_id, now=later, actor=SYSTEM, event="restore-uncertain", detail={"error": str(e)},
                        in_states=[RequestState.RESTORING],
                        deadline_at=later + timedelta(seconds=self.rt.timeouts.settle),
                        note=f"No answer from the cluster ({e}); reading the target back to see whether it was undone.",
                    )
                    return Outcome(
                        False, f"Restore of request #{request_id}: no answer from the cluster in time; it is read back."
                    )
                # Back to done, so Restore can be pressed again once the cause is fixed.
                self._settle(
                    request_id, "restoring", "done", now, event="restore-failed",
                    detail={"error": str(e)}, note=f"Restore failed: {e}",
                )
                return Outcome(False, f"Restore of request #{request_id} failed: {plain(e)}")
            if self.rt.metrics:
                self.rt.metrics.action_restored(req.verb)
        note = why + ("Dry run: nothing to restore." if req.dry_run else f"Restored: undid {finding.action.summary}.")
        self._settle(request_id, "restoring", "restored", now, event="restored", detail={"undo": undo}, note=note)
        return Outcome(True, f"Request #{request_id} restored.")

    def approve_all(self, request_ids: list[int], user: str) -> Outcome:
        """Approve each of ``request_ids`` (a freeing plan of a queue-wait alert) as if ``user``
        pressed each one's Approve: each is checked, re-checked and acted on by itself. ``ok``
        when every one was approved; the message says what happened to each."""
        # Each recorded on its own: a database that fails midway leaves the rest said, not lost.
        outcomes = [(rid, self._recorded(APPROVE, lambda rid=rid: self.approve(rid, user))) for rid in request_ids]
        lines = [f"#{rid}: {o.message}" for rid, o in outcomes]
        return Outcome(all(o.ok for _, o in outcomes), "\n".join(lines) or "No request to approve.")

    def press_button(self, action_id: str, value: str | None, user: str) -> Outcome:
        """:meth:`press` for a button's raw ``value``: one that is no request id (not a number) is
        audited like an id that names no request (``<verb>-unknown``) and changes nothing."""
        try:
            request_id = int(str(value))
        except ValueError:
            shown = str(value)[:100]

            def refuse() -> Outcome:
                verb = VERBS.get(action_id, "press").lower()
                now = self.rt.clock()
                self.rt.store.audit(None, actor=user, event=f"{verb}-unknown", now=now, detail={"value": shown})
                return Outcome(False, f"This button carries no request id ({plain(repr(shown))}); nothing was changed.")

            return self._recorded(action_id, refuse)
        return self.press(action_id, request_id, user)

    def press(self, action_id: str, request_id: int, user: str) -> Outcome:
        """Dispatch a button by its ``action_id`` (one of :data:`~bot.chat.blocks.proposals.BUTTON_ACTIONS`).
        Never raises for a database failure: the outcome then says the press was not recorded."""
        handler = {
            APPROVE: self.approve,
            SNOOZE: self.snooze,
            EXEMPT: self.exempt,
            DENY: self.deny,
            RESTORE: self.restore,
        }[action_id]
        return self._recorded(action_id, lambda: handler(request_id, user))

    def _recorded(self, action_id: str, press) -> Outcome:  # noqa: ANN001 - a press to run
        try:
            return press()
        except sqlalchemy.exc.SQLAlchemyError as e:
            # Whatever was committed before the failure is the store's, and a request left
            # approved is settled from the cluster once its deadline passes.
            first = database_error_line(e)
            log.warning("press %s not recorded: %s", action_id, first)
            return Outcome(False, NOT_RECORDED.format(error=plain(first), verb=VERBS.get(action_id, "the button")))
