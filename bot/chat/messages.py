"""Each request's channel message as desired state: the store says what the message must show
(the request's ``version``), and :class:`MessageSync` writes it until the channel shows it.

Every change to a request bumps its ``version``; the message shows ``shown_version``. A change is
written at once by whoever made it (:meth:`MessageSync.sync`); when the chat fails (a 429, a 500,
a lost connection) the request stays due and the housekeeping of every replica retries it
(:meth:`MessageSync.sync_due`) with a backoff, for open and recently closed requests alike, so a
channel never keeps showing Approve buttons for a request that is done.

Writers take turns: a sync holds the request's message (``sync_lease_until``) while it writes, so
two replicas never leave an older rendering last. A first post carries Slack message metadata with
the request id and is recorded as started before it is sent; if its answer is lost (or the
process dies), the next attempt searches the channel for that metadata and adopts the message it
finds instead of posting a second one.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from datetime import datetime, timedelta

from actions.advice.request import RIGHT_SIZE
from actions.budgets.model import EXHAUSTED
from actions.model.codec import finding_from_jsonable
from actions.model.findings import Finding
from actions.store import bulk as store_bulk
from actions.store.requests import ActionRequest
from bot.chat.blocks.holds import hold_message
from bot.chat.blocks.proposals import RequestStatus, proposal_message
from bot.chat.blocks.right_size import right_size_message
from bot.runtime.chat import ChatError, Message, MessageRef
from bot.runtime.runtime import Runtime

log = logging.getLogger(__name__)

EVENT_TYPE = "gpu_cost_bot_request"
"""The ``event_type`` of the metadata every proposal is posted with; ``event_payload`` is
``{"request_id": <id>}``."""

# Longer than one write takes, retries included (slack_sdk's timeout is 30 s per call).
LEASE_SECONDS = 120.0
# A retry waits 1, 2, 4, ... seconds, at most this long.
MAX_BACKOFF_SECONDS = 30.0
# Slack's clock and ours may differ a little; the search for a lost post starts this much earlier.
SEARCH_MARGIN = timedelta(minutes=5)
# Messages whose holds are taken together: their writes must end within LEASE_SECONDS, and Slack
# answers chat.update about once a second per channel (Tier 3), so well under 120.
BATCH = 40
# A request changed again while its message was written is written again, at most this often in
# one call; anything left is due for the next round.
MAX_ROUNDS = 3


def status_of(req: ActionRequest, now: datetime | None = None) -> RequestStatus:
    """What a message says of ``req`` besides its finding, rendered at ``now`` (for mode auto's
    countdown)."""
    return RequestStatus(
        id=req.id, state=req.state, dry_run=req.dry_run, expires_at=req.expires_at, until=req.until,
        decided_by=req.decided_by, decided_at=req.decided_at, note=req.note, act_at=req.act_at, now=now,
    )


def render(req: ActionRequest, now: datetime | None = None, finding: Finding | None = None) -> Message:
    """The channel message for the request in its current state, with its metadata (``now``
    counts down to the policy's action in mode auto). ``finding``: the one ``req.finding_json``
    holds, when the caller has it already (a sweep that just wrote it), so it is not read back."""
    status = status_of(req, now)
    finding = finding or finding_from_jsonable(json.loads(req.finding_json))
    if finding.kind == RIGHT_SIZE:
        message = right_size_message(finding, status)
    elif finding.kind == EXHAUSTED:
        message = hold_message(finding, status)
    else:
        message = proposal_message(finding, status)
    return dataclasses.replace(message, metadata={"event_type": EVENT_TYPE, "event_payload": {"request_id": req.id}})


def backoff_seconds(failures: int) -> float:
    """Seconds before the next try after ``failures`` failed ones: 1, 2, 4, ... up to
    :data:`MAX_BACKOFF_SECONDS`."""
    return min(MAX_BACKOFF_SECONDS, 2.0 ** max(0, failures - 1))


class MessageSync:
    """Writes requests' messages through ``rt.chat`` until they show the store's state.
    ``recent_days``: how long after its last change a request is still kept in step."""

    def __init__(self, rt: Runtime, recent_days: float = 7.0):
        self.rt = rt
        self.recent = timedelta(days=recent_days)

    def sync(self, request_id: int, now: datetime | None = None) -> bool:
        """Make the channel show request ``request_id`` as the store has it. True when it does
        now; False when another writer holds it (that writer, or the next round, finishes) or the
        chat failed (retried by :meth:`sync_due` after a backoff, logged). Raises what the store
        raises (the database is down: the next round tries again)."""
        for _ in range(MAX_ROUNDS):
            now = now or self.rt.clock()
            req = self.rt.store.claim_message(request_id, now, LEASE_SECONDS)
            if req is None:
                return False
            written = self._write_claimed(req, now)
            if written is not None:
                return written
            now = None  # changed while it was written: write the newer state
        return False

    def _write_claimed(self, req: ActionRequest, now: datetime) -> bool | None:
        """Write the message of a request this caller holds: True when the channel shows it,
        False when the chat failed (retried after a backoff), None when the request changed
        while it was written."""
        try:
            self._write(req, now)
        except ChatError as e:
            self._failed(req, now, e)
            return False
        current = self.rt.store.get(req.id)
        return True if current is None or current.version == req.version else None

    def sync_many(self, request_ids: list[int], now: datetime, findings: Mapping[str, Finding] | None = None) -> int:
        """:meth:`sync` for many requests (a sweep's), the store's side batched: the holds are
        taken and the shown versions recorded for :data:`BATCH` messages at a time. A first
        post, a failed write and a request changed while written go through :meth:`sync`.
        ``findings``: finding JSON (as stored in ``finding_json``) -> that finding, for the ones
        the caller has at hand. Returns how many messages show their request now. Raises what
        the store raises."""
        findings = findings or {}
        done = 0
        store = self.rt.store
        for start in range(0, len(request_ids), BATCH):
            shown: list[tuple[int, int]] = []
            posted: list[tuple[int, int, str, str]] = []
            claimed = store_bulk.claim_messages(store, request_ids[start:start + BATCH], now, LEASE_SECONDS)
            first = {req.id: self._channel(req) for req in claimed if not (req.message_ts and req.channel)}
            # Recorded as started before any is sent, as Store.message_posting is for one.
            store_bulk.messages_posting(store, [i for i, ch in first.items() if ch], now)
            for req in claimed:
                if req.id in first and (not first[req.id] or req.post_started_at is not None):
                    # Nowhere to post, or an earlier post may have landed: the careful path.
                    written = self._write_claimed(req, now)
                    done += self.sync(req.id) if written is None else written
                    continue
                try:
                    if req.id in first:
                        ref = self.rt.chat.post(first[req.id], render(req, now, findings.get(req.finding_json)))
                        posted.append((req.id, req.version, ref.channel, ref.ts))
                    else:
                        self.rt.chat.update(MessageRef(req.channel, req.message_ts), render(req, now, findings.get(req.finding_json)))
                        shown.append((req.id, req.version))
                except ChatError as e:
                    self._failed(req, now, e)
            store_bulk.messages_shown(store, shown, now, posted)
            written = shown + [(i, v) for i, v, _, _ in posted]
            current = store_bulk.versions(store, [i for i, _ in written])
            for request_id, version in written:
                if current.get(request_id, version) != version:
                    done += self.sync(request_id)  # changed while it was written: write the newer state
                else:
                    done += 1
        return done

    def _channel(self, req: ActionRequest) -> str | None:
        """Where the request's message goes: where it is, else its team's channel."""
        return req.channel or self.rt.teams.channel_for(self.rt.teams.team_for_name(req.team))

    def _failed(self, req: ActionRequest, now: datetime, e: ChatError) -> None:
        retry_at = now + timedelta(seconds=backoff_seconds(req.sync_failures + 1))
        failures = self.rt.store.message_failed(req.id, retry_at)
        log.warning("request %s: message not written (try %d), will retry: %s", req.id, failures, e)

    def sync_due(self, now: datetime, limit: int = 100) -> dict[str, int]:
        """One round of the housekeeping: write every message that is due (changed within
        ``recent_days``, its retry time come, held by no one). Returns counts ``synced`` and
        ``failed``."""
        counts = {"synced": 0, "failed": 0}
        for req in self.rt.store.messages_due(now, now - self.recent, limit):
            counts["synced" if self.sync(req.id, now) else "failed"] += 1
        return counts

    def _write(self, req: ActionRequest, now: datetime) -> None:
        message = render(req, now)
        store = self.rt.store
        if req.message_ts and req.channel:
            self.rt.chat.update(MessageRef(req.channel, req.message_ts), message)
            store.message_shown(req.id, req.version, now)
            return
        channel = self._channel(req)
        if not channel:
            # Nowhere to show it; retrying cannot help until the config names a channel.
            log.warning("request %s: team %s has no channel; not posted", req.id, req.team)
            store.message_shown(req.id, req.version, now)
            return
        if req.post_started_at is not None:
            found = self._find_earlier_post(req, channel)
            if found is not None:
                log.info("request %s: found the message an earlier post left at %s", req.id, found.ts)
                self.rt.chat.update(found, message)
                store.message_shown(req.id, req.version, now, channel=found.channel, ts=found.ts, found=True)
                return
        store.message_posting(req.id, now)
        ref = self.rt.chat.post(channel, message)
        store.message_shown(req.id, req.version, now, channel=ref.channel, ts=ref.ts)

    def _find_earlier_post(self, req: ActionRequest, channel: str) -> MessageRef | None:
        """The message an earlier attempt posted, if Slack has it. An app installed before it
        asked for ``channels:history`` cannot search: it posts again rather than never."""
        since = req.post_started_at - SEARCH_MARGIN
        try:
            return self.rt.chat.find(channel, EVENT_TYPE, {"request_id": req.id}, since)
        except ChatError as e:
            if "missing_scope" not in str(e):
                raise
            log.warning("request %s: cannot look for an earlier post (%s); grant channels:history", req.id, e)
            return None
