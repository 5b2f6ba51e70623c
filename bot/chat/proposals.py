"""An idle-GPU proposal's life in chat: posted, kept in step with its ActionRequest, reconciled
with each sweep's findings, and settled when an action's outcome is unknown.

States (see ``actions.store``)::

    proposed --approve--> approved --re-check busy--> superseded
                                   --dry run / applied--> done --restore--> restoring --> restored
                                   --executor error--> failed
                                   --no answer--> uncertain --read back--> done / failed
    proposed --snooze/exempt/deny--> snoozed/exempt/denied --(until passes, still idle)--> proposed
    proposed --(ttl passes)--> expired;  proposed --(no longer idle)--> superseded

The presses live in :mod:`bot.chat.approvals`; this module moves requests on their own
(:meth:`Proposals.reconcile`, run by every sweep) and has each request's message show its state
(:meth:`Proposals.refresh_message`, through :mod:`bot.chat.messages`). An action whose outcome is
unknown (the API server did not answer, the process was killed or its shutdown grace ran out) is
never guessed: :meth:`Proposals.settle` reads its target back and records ``done`` (with its
undo record, so Restore works) as soon as the cluster shows it applied, or ``failed`` once
nothing sent can still land (``deadline_at``). Every patch is a single merge patch, so the target
is either changed or not, never half.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timedelta

from actions.advice.model import Recommendation
from actions.advice.request import RIGHT_SIZE, advice_finding
from actions.budgets.model import EXHAUSTED
from actions.model.codec import finding_from_jsonable, to_jsonable
from actions.model.findings import Finding
from actions.remedy.patches import ActionRefused, ExecutorError, plan_apply, plan_restore
from actions.store import bulk as store_bulk
from actions.store.requests import ActionRequest, new_request
from actions.store.states import RequestState
from bot.chat.blocks import duration, short_time
from bot.chat.messages import MessageSync
from bot.runtime.identity import name_unnamed_requests
from bot.runtime.runtime import Runtime, UnknownCluster

log = logging.getLogger(__name__)

SYSTEM = "system"
# The actor of what a team's policy does on its own (mode auto), in the audit and the message.
POLICY = "policy"


# Requests the sweeps do not make, and so never close: an advice's right-sizing, a budget's hold.
NOT_THE_SWEEPS = (RIGHT_SIZE, EXHAUSTED)


def finding_of(req: ActionRequest) -> Finding:
    """The finding a request was proposed for (as last refreshed by a sweep)."""
    return finding_from_jsonable(json.loads(req.finding_json))


def act_at_for(f: Finding, now: datetime) -> datetime | None:
    """When the policy acts on a new proposal of ``f`` made at ``now``: after the grace in mode
    ``auto`` when there is an action, else never (None)."""
    if f.handling.mode != "auto" or f.action is None:
        return None
    return now + timedelta(seconds=f.handling.grace_seconds)


def settle_outcome(req: ActionRequest, current: dict | None, now: datetime, why: str) -> tuple[str, str, dict] | None:
    """Where a request whose outcome is unknown stands, judged from its target as the cluster
    shows it now (``current``, the object's JSON; None when it is gone): ``(state, note,
    detail)``, or None while an ``uncertain`` request may still see its patch land (before its
    ``deadline_at``). ``approved`` and ``restoring`` requests come here only past their
    deadline, when nothing the acting replica sent can land any more.

    - approved or uncertain, and the cluster shows the action applied: ``done`` (Restore offered),
      with ``detail["undo"]`` the undo record stored before the write (``undo_json``), else the
      one read back from the object;
    - otherwise (not applied, target gone, dry run): ``failed``, nothing was changed;
    - restoring, and nothing left to undo (or a dry run): ``restored``;
    - restoring, otherwise: back to ``done``, so Restore can be pressed again (it is idempotent).

    ``why`` starts the note (e.g. "The bot restarted"). Raises ValueError for any other state and
    ExecutorError for an undo record that does not fit the action.
    """
    action = finding_of(req).action
    detail: dict = {"from": req.state, "why": why, "target_exists": current is not None}
    if req.state in (RequestState.APPROVED, RequestState.UNCERTAIN):
        if req.dry_run or action is None:
            return "failed", f"{why} before acting; nothing was changed.", detail
        if not action.verb.restorable:
            # A deletion: done once the target is gone.
            if current is None:
                return "done", f"{why} while acting; the cluster shows it done: {action.summary}.", detail
            if req.state == RequestState.UNCERTAIN and req.deadline_at is not None and now < req.deadline_at:
                return None
            return "failed", f"{why} before acting; {action.target} is still there. Approve it again when re-proposed.", detail
        if current is not None:
            try:
                patch, undo = plan_apply(action, current, now)
            except ExecutorError as e:
                if not e.stale:
                    raise
                patch, undo = {}, {}  # right-sizing whose GPU request changed: not applied, never will be
            if patch is None:
                # The undo planned before the write, when stored: a set at zero no longer shows its count.
                detail["undo"] = json.loads(req.undo_json) if req.undo_json else undo
                return "done", f"{why} while acting; the cluster shows it done: {action.summary}.", detail
        if req.state == RequestState.UNCERTAIN and req.deadline_at is not None and now < req.deadline_at:
            return None
        when = "before acting" if req.state == RequestState.APPROVED else "and the cluster shows"
        if current is None:
            return "failed", f"{why} {when}; {action.target} no longer exists, nothing was changed.", detail
        return "failed", f"{why} {when}; nothing was changed. Approve it again when re-proposed.", detail
    if req.state == RequestState.RESTORING:
        if req.dry_run or action is None:
            return "restored", "Dry run: nothing to restore.", detail
        if current is None:
            return "done", f"{why} while restoring, and {action.target} no longer exists; nothing to restore.", detail
        if plan_restore(action, json.loads(req.undo_json or "{}"), current) is None:
            return "restored", f"{why} while restoring; the cluster shows it undone: {action.summary}.", detail
        return "done", f"{why} before the restore finished; nothing was undone. Press Restore again.", detail
    raise ValueError(f"request {req.id} is {req.state}, not approved, uncertain or restoring")


class Proposals:
    """Keeps every request's message in step with its state, and the requests in step with the
    sweeps. ``rt`` supplies the store, the chat, the teams, the cluster (read when settling an
    interrupted action) and the metrics."""

    def __init__(self, rt: Runtime, messages: MessageSync | None = None):
        self.rt = rt
        self.messages = messages or MessageSync(rt)

    def refresh_metrics(self) -> None:
        """Set the requests-by-state gauges from the store (no-op without metrics)."""
        if self.rt.metrics:
            self.rt.metrics.refresh_from_store(self.rt.store)

    # --- posting ----------------------------------------------------------------------------

    def refresh_message(self, req: ActionRequest, now: datetime) -> None:
        """Have the request's message show its state now (posted if it has none yet). A chat or
        database failure is logged and left to the housekeeping, which retries it."""
        try:
            self.messages.sync(req.id, now)
        except Exception as e:  # noqa: BLE001 - the message is desired state; the next round writes it
            log.warning("request %s: message left for the next round: %s", req.id, e)

    def refresh_messages(self, request_ids: list[int], now: datetime, findings: Mapping[str, Finding] | None = None) -> None:
        """:meth:`refresh_message` for many requests, their store reads and writes batched
        (:meth:`~bot.chat.messages.MessageSync.sync_many`, which takes ``findings``: finding
        JSON -> that finding, so what was just written is not parsed back)."""
        try:
            self.messages.sync_many(request_ids, now, findings)
        except Exception as e:  # noqa: BLE001 - the messages are desired state; the next round writes them
            log.warning("%d request message(s) left for the next round: %s", len(request_ids), e)

    # --- sweeps -----------------------------------------------------------------------------

    def reconcile(self, findings: list[Finding], now: datetime, unreachable: Collection[str] = ()) -> dict[str, int]:
        """Bring the store and the channels in line with one sweep's findings.

        Requests an older version stored without a cluster's name are named after the store's
        home cluster first, when the Runtime has one (:func:`~bot.runtime.identity.name_unnamed_requests`);
        then actions whose outcome is unknown are settled (:meth:`settle`). New findings become
        proposals, each naming its cluster; open ones are refreshed (one message per consumer,
        updated in place; a request of another cluster holding a finding's key, as after a
        cluster was renamed, is never refreshed with it: a proposal is superseded and the finding
        proposed anew, any other is left to its own cluster);
        proposals whose consumer is no longer idle are closed as superseded; overdue proposals
        expire; snoozes, exemptions and denials that ran out are re-proposed when the consumer is
        still idle. Requests of the ``unreachable`` clusters (names) are left as they are: their
        findings are unknown, not gone, so nothing of theirs is superseded, expired or woken.
        Returns counts by what happened.
        """
        store = self.rt.store

        def unseen(cluster: str) -> bool:
            return cluster in unreachable

        if self.rt.home_cluster:
            # Also those an older replica made during a rolling upgrade, after this one started.
            name_unnamed_requests(store, self.rt.home_cluster, now)
        # A replica that died mid-action left its request behind; settle it before proposing.
        self.settle(now)
        counts = {"proposed": 0, "updated": 0, "superseded": 0, "expired": 0, "reproposed": 0}
        # Each finding's request names its cluster; one that cannot be named is a bug, logged and skipped.
        clusters = self._clusters_of(findings)
        by_key = {f.key: f for f in findings if f.key in clusters}

        for req in store.due_for_expiry(now):
            if unseen(req.cluster):
                continue
            ttl_seconds = finding_of(req).handling.request_ttl_seconds
            done = store.transition(
                req.id, from_states=["proposed"], to_state="expired", now=now, actor=SYSTEM,
                event="expired", note=f"No decision within {duration(ttl_seconds)}.",
            )
            if done:
                counts["expired"] += 1
                self.refresh_message(done, now)

        for req in store.due_to_wake(now):
            if unseen(req.cluster):
                continue
            # A snoozed right-sizing or hold is asked again as it was (Approve re-checks it); an
            # exempt or denied one only when its advice or budget asks again (propose_findings).
            if req.kind in NOT_THE_SWEEPS:
                f = finding_of(req) if req.state == RequestState.SNOOZED else None
            else:
                f = by_key.get(req.key) if clusters.get(req.key) == req.cluster else None
            if f is None:
                done = store.transition(
                    req.id, from_states=[req.state], to_state="superseded", now=now, actor=SYSTEM,
                    event="superseded",
                    note="Asked again when the advice changes." if req.kind == RIGHT_SIZE
                    else "Asked again when the budget is used up again." if req.kind == EXHAUSTED else "No longer idle.",
                )
            else:
                done = store.transition(
                    req.id, from_states=[req.state], to_state="proposed", now=now, actor=SYSTEM,
                    event="reproposed", finding_json=json.dumps(to_jsonable(f)),
                    usd_per_hour=f.usd_per_hour, expires_at=now + timedelta(seconds=f.handling.request_ttl_seconds),
                    until=None, act_at=act_at_for(f, now),
                    note="Snooze over: asking again." if req.kind in NOT_THE_SWEEPS
                    else f"{req.state.capitalize()} period over and still idle.",
                )
                counts["reproposed"] += bool(done)
            if done:
                self.refresh_message(done, now)

        known = set(self.rt.cluster_names())
        for req in store_bulk.keys_in_state(store, "proposed"):
            elsewhere = req.key in by_key and clusters[req.key] != req.cluster
            if (req.key not in by_key or elsewhere) and not unseen(req.cluster) and req.kind not in NOT_THE_SWEEPS:
                done = store.transition(
                    req.id, from_states=["proposed"], to_state="superseded", now=now, actor=SYSTEM,
                    event="superseded", note=self._gone_note(req.cluster, known, now),
                )
                if done:
                    counts["superseded"] += 1
                    self.refresh_message(done, now)

        # One lookup, one insert and one update for all findings: a large fleet has hundreds.
        held, taken = self._held(by_key, clusters)
        by_key = {k: f for k, f in by_key.items() if k not in taken}
        refused = self._dry_runs([f for f in by_key.values() if f.key not in held], clusters, now)
        for key, e in refused.items():
            by_key[key] = dataclasses.replace(
                by_key[key], action=None, report_reason=f"the API server refuses the change: {e.message}"
            )
        # Each finding as stored, and back: its message is rendered from the finding itself.
        written = {json.dumps(to_jsonable(f)): f for f in by_key.values()}
        as_json = {f.key: text for text, f in written.items()}
        new = [
            new_request(
                key=f.key, team=f.team, kind=f.kind, namespace=f.namespace, name=f.name,
                verb=f.action.verb.value if f.action else "", target=f.action.target if f.action else None,
                finding_json=as_json[f.key], usd_per_hour=f.usd_per_hour, gpus=f.gpus,
                dry_run=self.rt.dry_run, now=now, ttl_seconds=f.handling.request_ttl_seconds, act_at=act_at_for(f, now),
                cluster=clusters[f.key],
            )
            for f in by_key.values() if f.key not in held
        ]
        changes = []
        for f in by_key.values():
            req = held.get(f.key)
            if req is not None and req.state in ("proposed", "done", "snoozed", "exempt", "denied"):
                # Refresh the evidence and the dollars; the message shows how long it has been idle.
                fields = {"finding_json": as_json[f.key], "usd_per_hour": f.usd_per_hour}
                if req.state == "proposed" and (req.act_at is None) != (act_at_for(f, now) is None):
                    # The team's mode changed: a countdown starts now, or stops.
                    fields["act_at"] = act_at_for(f, now)
                changes.append((req.id, fields))
        created = store_bulk.create_requests(store, new, now)
        for key, req in (store_bulk.open_for_keys(store, refused) if refused else {}).items():
            e = refused[key]
            store.audit(req.id, actor=SYSTEM, event="dry-run-refused", now=now,
                        detail=e.detail())
        updated = store_bulk.update_requests(store, changes, now=now, actor=SYSTEM, event="updated")
        counts["proposed"] += len(created)
        counts["updated"] += len(updated)
        self.refresh_messages(created + updated, now, written)
        return counts

    def _dry_runs(self, findings: Collection[Finding], clusters: Mapping[str, str], now: datetime) -> dict[str, ActionRefused]:
        """The new proposals' actions sent as server-side dry runs (none when the bot itself runs
        dry: its RBAC may not patch): finding key -> the API server's refusal, for those it
        refuses. A dry run that could not be sent leaves the proposal as it is; the one right
        before acting decides. ``clusters``: finding key -> its request's cluster."""
        if self.rt.dry_run:
            return {}
        out = {}
        for f in findings:
            if f.action is None:
                continue
            try:
                self.rt.writer_for(clusters[f.key]).dry_run(f.action, now)
            except ActionRefused as e:
                out[f.key] = e
            except Exception as e:  # noqa: BLE001 - an unreachable API server must not stop the sweep
                log.warning("dry run of %s not sent: %s", f.key, e)
        return out

    def propose_advice(self, recs: Collection[Recommendation], now: datetime, window_seconds: float) -> list[int]:
        """Make a ``right-size`` request, posted to its team's approvers with Approve/Deny, of each
        recommendation in ``recs`` that carries an action (:attr:`Recommendation.action`) and
        holds no open request yet; advice only is left to the advice post. Returns the ids made.
        Each request names the cluster its advice was made in (:meth:`~bot.runtime.runtime.Runtime.request_cluster`);
        a key held by a request of another cluster is left to it. The sweeps leave these requests
        alone; they expire after the policy's request TTL."""
        return self.propose_findings([advice_finding(r, now, window_seconds, r.cluster) for r in recs if r.action is not None],
                                     now)

    def propose_findings(self, found: Collection[Finding], now: datetime) -> list[int]:
        """Make a request of each of ``found`` (an advice's right-sizing, a budget's hold) that
        carries an action and holds no open request yet: dry-run first (a change the API server
        refuses is audited ``dry-run-refused`` and left out), posted to its team's approvers.
        The sweeps leave these requests alone; they expire after the policy's request TTL.
        Returns the ids made."""
        findings = {f.key: f for f in found if f.action is not None}
        clusters = self._clusters_of(findings.values())
        held, _ = self._held({k: f for k, f in findings.items() if k in clusters}, clusters)
        # A change the API server refuses (Kueue's webhook on a pod template it manages) is no
        # request: an advice stands in the advice post, a budget in its alert.
        fresh = [f for k, f in findings.items() if k in clusters and k not in held]
        for key, e in self._dry_runs(fresh, clusters, now).items():
            del findings[key]
            self.rt.store.audit(None, actor=SYSTEM, event="dry-run-refused", now=now,
                                detail={"key": key, **e.detail()})
        new = [
            new_request(
                key=f.key, team=f.team, kind=f.kind, namespace=f.namespace, name=f.name,
                verb=f.action.verb.value, target=f.action.target, finding_json=json.dumps(to_jsonable(f)),
                usd_per_hour=f.usd_per_hour, gpus=f.gpus, dry_run=self.rt.dry_run, now=now,
                ttl_seconds=f.handling.request_ttl_seconds, cluster=clusters[f.key], act_at=act_at_for(f, now),
            )
            for f in findings.values() if f.key in clusters and f.key not in held and f.action is not None
        ]
        created = store_bulk.create_requests(self.rt.store, new, now)
        self.refresh_messages(created, now)
        return created

    def _clusters_of(self, findings: Iterable[Finding]) -> dict[str, str]:
        """Finding key -> the cluster's name its request stores (:meth:`~bot.runtime.runtime.Runtime.request_cluster`);
        a finding whose cluster cannot be named is logged and left out: no request is made of it."""
        out = {}
        for f in findings:
            try:
                out[f.key] = self.rt.request_cluster(f.cluster)
            except UnknownCluster as e:
                log.error("%s: no request made: %s", f.key, e)
        return out

    def _held(self, by_key: Mapping[str, Finding], clusters: Mapping[str, str]) -> tuple[dict[str, ActionRequest], set[str]]:
        """``(key -> the open request of the finding's own cluster holding it, keys held by a
        request of another cluster)``: a finding never refreshes, or is proposed over, another
        cluster's request (one renamed or removed from the config keeps its key until it ends)."""
        held = store_bulk.open_for_keys(self.rt.store, by_key)
        taken = {k for k, r in held.items() if r.cluster != clusters[k]}
        for k in sorted(taken):
            log.warning("%s: held by request %s of cluster %r, not %s: left to it", k, held[k].id, held[k].cluster, clusters[k])
        return {k: r for k, r in held.items() if k not in taken}, taken

    @staticmethod
    def _gone_note(cluster: str, known: Collection[str], now: datetime) -> str:
        if cluster not in known:
            return f"Its cluster {cluster or '(unnamed)'} is no longer configured; not acted on."
        return f"No longer idle at {short_time(now)}."

    # --- actions whose outcome is unknown -----------------------------------------------------

    def settle(self, now: datetime, why: str | None = None) -> dict[str, int]:
        """Read back the target of every request whose outcome is unknown (``uncertain``, or
        ``approved``/``restoring`` past its ``deadline_at``: the acting process died) and record
        what the cluster shows (:func:`settle_outcome`), with a ``recovered`` audit event and its
        message updated. ``why`` starts the note (default: "The API server did not answer" for
        uncertain requests, "The bot stopped or lost its database" for the others). A target that cannot
        be read is left for the next round. Returns counts by the state each request moved to,
        plus ``waiting`` (still inside their window) and ``unchecked`` (unreadable)."""
        counts: dict[str, int] = {}
        for req in self.rt.store.overdue_actions(now):
            action = finding_of(req).action
            try:
                current = self.rt.writer_for(req.cluster).current(action) if action and not req.dry_run else None
            except UnknownCluster as e:
                # Its cluster is not configured (any more): what happened there cannot be read.
                log.warning("request %s: outcome still unknown, its cluster cannot be read: %s", req.id, e)
                counts["unchecked"] = counts.get("unchecked", 0) + 1
                continue
            except Exception as e:  # noqa: BLE001 - whatever the reader raised, the target is unknown
                if self.rt.metrics:
                    self.rt.metrics.kubernetes_error("read")
                log.warning("request %s: outcome still unknown, cannot read %s: %s", req.id, action.target, e)
                counts["unchecked"] = counts.get("unchecked", 0) + 1
                continue
            unanswered = req.state == RequestState.UNCERTAIN
            reason = why or ("The API server did not answer" if unanswered else "The bot stopped or lost its database")
            outcome = settle_outcome(req, current, now, reason)
            if outcome is None:
                counts["waiting"] = counts.get("waiting", 0) + 1
                continue
            to_state, note, detail = outcome
            fields = {"undo_json": json.dumps(detail["undo"])} if "undo" in detail else {}
            done = self.rt.store.transition(
                req.id, from_states=[req.state], to_state=to_state, now=now, actor=SYSTEM,
                event="recovered", detail={**detail, "to": to_state}, note=note, deadline_at=None, **fields,
            )
            if done is not None:
                log.warning("request %s was %s; now %s: %s", req.id, req.state, to_state, note)
                counts[to_state] = counts.get(to_state, 0) + 1
                self.refresh_message(done, now)
        if set(counts) - {"waiting", "unchecked"}:
            self.refresh_metrics()
        return counts

    def interrupted(self, request_ids: set[int], now: datetime, why: str) -> dict[str, int]:
        """Requests whose action is still running when the process must stop (its shutdown grace
        ran out): an approved one becomes ``uncertain`` (its patch may be on the way), read back
        by :meth:`settle` of whichever replica or start comes next; a restoring one stays, and is
        read back once its deadline passes. Returns counts by state."""
        counts: dict[str, int] = {}
        for req in self.rt.store.list_requests(states=[RequestState.APPROVED, RequestState.RESTORING]):
            if req.id not in request_ids:
                continue
            if req.state == RequestState.APPROVED:
                done = self.rt.store.transition(
                    req.id, from_states=[RequestState.APPROVED], to_state=RequestState.UNCERTAIN, now=now,
                    actor=SYSTEM, event="interrupted", detail={"why": why},
                    note=f"{why} while acting; reading the target back to see whether it changed.",
                )
                if done is not None:
                    counts["uncertain"] = counts.get("uncertain", 0) + 1
                    self.refresh_message(done, now)
            else:
                counts["restoring"] = counts.get("restoring", 0) + 1
        return counts
