"""The states of an action request and which hold its key.

States::

    proposed --approve--> approved --applied--> done --restore--> restoring --> restored
        |                    |                  ^                     |
        |                    |                  |                     +--restore failed--> done
        |                    +--apply failed--> failed
        |                    +--outcome unknown--> uncertain --read back--> done / failed
        +--deny--> denied ----+
        +--snooze--> snoozed -+-- (until passes) --> expired / superseded
        +--exempt--> exempt --+
        +--ttl passes--> expired
        +--finding changed or gone--> superseded

``OPEN_STATES`` hold the key: a key (the finding's stable key) has at most one request in an open
state, enforced by a partial unique index so that two replicas racing to propose the same finding
cannot both succeed. ``TERMINAL_STATES`` release it. The moves themselves are
:mod:`actions.store.state_machine`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Iterable


class RequestState(StrEnum):
    """States of an ``ActionRequest``. Members compare equal to their string values."""

    PROPOSED = "proposed"  # posted, waiting for a decision
    APPROVED = "approved"  # approval recorded; the executor is acting
    DONE = "done"  # the action was applied; Restore is offered
    RESTORING = "restoring"  # restore recorded; the executor is undoing
    RESTORED = "restored"
    SNOOZED = "snoozed"  # not now; ``until`` says when to look again
    EXEMPT = "exempt"  # not this one; ``until`` says when the exemption ends
    DENIED = "denied"  # no; ``until`` ends the cooldown before it may be proposed again
    EXPIRED = "expired"
    SUPERSEDED = "superseded"
    FAILED = "failed"  # the action could not be applied
    UNCERTAIN = "uncertain"  # the patch may have landed; read back until ``deadline_at``


STATES: frozenset[str] = frozenset(RequestState)
OPEN_STATES: frozenset[str] = frozenset(
    {
        RequestState.PROPOSED,
        RequestState.APPROVED,
        RequestState.DONE,
        RequestState.RESTORING,
        RequestState.SNOOZED,
        RequestState.EXEMPT,
        RequestState.DENIED,
        RequestState.UNCERTAIN,
    }
)
TERMINAL_STATES: frozenset[str] = STATES - OPEN_STATES
WAKEABLE_STATES: frozenset[str] = frozenset(
    {RequestState.SNOOZED, RequestState.EXEMPT, RequestState.DENIED}
)

# Sorted so the SQL text (and so the migration) is the same on every run.
_OPEN_STATES_SQL = ", ".join(f"'{s}'" for s in sorted(OPEN_STATES))
_ALL_STATES_SQL = ", ".join(f"'{s}'" for s in sorted(STATES))
OPEN_KEY_WHERE = f"state IN ({_OPEN_STATES_SQL})"
STATE_CHECK = f"state IN ({_ALL_STATES_SQL})"

SYSTEM_ACTOR = "system"


class StoreError(Exception):
    """Base of the store's own errors."""


class DuplicateOpenRequest(StoreError):
    """The key already has a request in an open state. ``key`` and ``existing`` (its id, or None
    when it closed again before it could be read) say which."""

    def __init__(self, key: str, existing: int | None) -> None:
        super().__init__(f"key {key!r} already has an open action request (id {existing})")
        self.key = key
        self.existing = existing


def checked_states(states: Iterable[str], what: str) -> list[str]:
    if isinstance(states, str):
        # A bare string would otherwise be read as its characters.
        states = [states]
    out = sorted({str(s) for s in states})
    if not out:
        raise ValueError(f"{what} is empty")
    bad = [s for s in out if s not in STATES]
    if bad:
        raise ValueError(f"unknown state(s) {bad} in {what}; states are {sorted(STATES)}")
    return out
