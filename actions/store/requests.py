"""The ``action_request`` table: one proposed action on one finding and where it stands
(:class:`ActionRequest`), the fields a caller may change, and a checked new request
(:func:`new_request`) ready to store.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Mapping, Sequence

import sqlalchemy as sa
from sqlmodel import Field

from actions.model.findings import ActionVerb
from actions.model.kube import ObjectRef
from actions.store.schema import StoreModel, UTCDateTime, as_utc
from actions.store.states import OPEN_KEY_WHERE, OPEN_STATES, STATE_CHECK, RequestState


class ActionRequest(StoreModel, table=True):
    """One proposed action on one finding, and where it stands.

    ``key`` is the finding's stable key (``"idle-notebook/ml-research/llm-explore"``); ``kind`` the
    finding kind; ``verb`` an ``ActionVerb`` value, or ``""`` when the finding is report-only (then
    the ``target_*`` columns are empty too). ``usd_per_hour`` is USD per hour for all ``gpus``.
    ``finding_json`` is the finding as JSON (``model.to_jsonable``); ``undo_json`` what the executor
    recorded to undo the action. ``until`` ends a snooze, an exemption or a denial's cooldown.
    ``version`` starts at 1 and is bumped by every change. ``act_at`` is set for a team in mode
    ``auto``: when the policy acts on a request still ``proposed`` (None: only Approve acts).
    Datetimes are aware UTC.

    ``deadline_at``: while ``approved`` or ``restoring``, the time by which nothing the acting
    replica sent can still land (after it, a request still there was interrupted and is read
    back); while ``uncertain``, the end of the read-back window. The Slack message is desired
    state: ``shown_version`` is the ``version`` the channel last showed (None: not yet), a
    message sync retries at ``sync_due_at`` after ``sync_failures`` failures, holds
    ``sync_lease_until`` while it writes, and ``post_started_at`` marks a first post that was
    attempted (its answer may have been lost, so the channel is searched before posting again).
    ``cluster`` names the cluster the finding was made in and the action goes to (a bot of one
    cluster names its ``cluster_name``); the action goes nowhere else, whatever the config's order.
    An empty one was stored by an older version: the bot names it at start
    (:meth:`~actions.store.state_machine.RequestStateMachine.name_unnamed_requests`), and until
    then acting on it is refused.
    """

    __tablename__ = "action_request"
    __table_args__ = (
        sa.Index(
            "uq_action_request_open_key",
            "key",
            unique=True,
            sqlite_where=sa.text(OPEN_KEY_WHERE),
            postgresql_where=sa.text(OPEN_KEY_WHERE),
        ),
        sa.CheckConstraint(STATE_CHECK, name="state"),
    )

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(sa_type=sa.String, index=True)
    team: str = Field(sa_type=sa.String, index=True)
    kind: str = Field(sa_type=sa.String)
    namespace: str = Field(sa_type=sa.String)
    name: str = Field(sa_type=sa.String)
    verb: str = Field(sa_type=sa.String)
    target_api_version: str = Field(sa_type=sa.String)
    target_kind: str = Field(sa_type=sa.String)
    target_name: str = Field(sa_type=sa.String)
    state: str = Field(sa_type=sa.String, index=True)
    finding_json: str = Field(sa_type=sa.Text)
    usd_per_hour: float = Field(sa_type=sa.Float)
    gpus: float = Field(sa_type=sa.Float)
    dry_run: bool = Field(sa_type=sa.Boolean)
    channel: str | None = Field(default=None, sa_type=sa.String, nullable=True)
    message_ts: str | None = Field(default=None, sa_type=sa.String, nullable=True)
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    until: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)
    decided_by: str | None = Field(default=None, sa_type=sa.String, nullable=True)
    decided_at: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)
    undo_json: str | None = Field(default=None, sa_type=sa.Text, nullable=True)
    note: str | None = Field(default=None, sa_type=sa.Text, nullable=True)
    version: int = Field(default=1, sa_type=sa.Integer)
    act_at: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True, index=True)
    deadline_at: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)
    shown_version: int | None = Field(default=None, sa_type=sa.Integer, nullable=True)
    sync_due_at: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)
    sync_failures: int = Field(default=0, sa_type=sa.Integer)
    sync_lease_until: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)
    post_started_at: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)
    cluster: str = Field(default="", sa_type=sa.String)

    @property
    def is_open(self) -> bool:
        """True while the request holds its key (``state in OPEN_STATES``)."""
        return self.state in OPEN_STATES

    def finding(self) -> dict[str, Any]:
        """``finding_json`` parsed. Raises json.JSONDecodeError if the stored text is not JSON."""
        return json.loads(self.finding_json)

    def undo(self) -> dict[str, Any] | None:
        """``undo_json`` parsed, or None when nothing was recorded."""
        return None if self.undo_json is None else json.loads(self.undo_json)


# Columns a caller may set through transition() and update_fields(); the rest (id, key, state,
# version, created_at, updated_at, and what identifies the target) belong to the store.
UPDATABLE_FIELDS: frozenset[str] = frozenset(
    {
        "until",
        "decided_by",
        "decided_at",
        "undo_json",
        "note",
        "channel",
        "message_ts",
        "finding_json",
        "usd_per_hour",
        "gpus",
        "expires_at",
        "dry_run",
        "team",
        "act_at",
        "deadline_at",
    }
)
_DATETIME_FIELDS = frozenset({"until", "decided_at", "expires_at", "act_at", "deadline_at"})
_JSON_FIELDS = frozenset({"finding_json", "undo_json"})
_NON_NULL_FIELDS = frozenset({"finding_json", "usd_per_hour", "gpus", "expires_at", "dry_run", "team"})


def check_json(name: str, value: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be JSON text, got {type(value).__name__}")
    try:
        json.loads(value)
    except ValueError as e:
        raise ValueError(f"{name} is not valid JSON: {e}") from None


def clean_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(fields) - UPDATABLE_FIELDS
    if unknown:
        raise ValueError(
            f"cannot set {sorted(unknown)}; settable fields are {sorted(UPDATABLE_FIELDS)}"
        )
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None:
            if name in _NON_NULL_FIELDS:
                raise ValueError(f"{name} cannot be None")
        elif name in _DATETIME_FIELDS:
            value = as_utc(value, name)
        elif name in _JSON_FIELDS:
            check_json(name, value)
        out[name] = value
    return out


@dataclass(frozen=True)
class NewRequest:
    """A checked, not yet stored proposal: ``values`` the row to insert (every column but
    ``id``); :meth:`~actions.store.database.Store.add_request` stores it."""

    values: dict[str, Any]

    @property
    def request(self) -> ActionRequest:
        """The row as a new, unsaved ActionRequest. A sweep's batch inserts ``values`` instead:
        building the model object costs more than inserting its row."""
        return ActionRequest(**self.values)


@functools.cache
def _column_defaults() -> dict[str, Any]:
    """The value each ActionRequest column without a value of its own takes (as the model sets it)."""
    return {
        name: field.get_default(call_default_factory=True)
        for name, field in ActionRequest.model_fields.items() if name != "id" and not field.is_required()
    }


def new_request(
    *,
    key: str,
    team: str,
    kind: str,
    namespace: str,
    name: str,
    verb: ActionVerb | str,
    target: ObjectRef | Sequence[str] | None,
    finding_json: str,
    usd_per_hour: float,
    gpus: float,
    dry_run: bool,
    now: datetime,
    ttl_seconds: float,
    act_at: datetime | None = None,
    cluster: str,
) -> NewRequest:
    """The request :meth:`~actions.store.database.Store.create_request` stores for these arguments (state ``proposed``,
    ``version`` 1, no id yet), checked as it checks them. Raises ValueError as it does."""
    now = as_utc(now)
    if not key:
        raise ValueError("key is empty")
    if not cluster:
        raise ValueError(f"{key}: name the cluster the request was made in (a bot of one cluster names its cluster_name)")
    verb_value = verb.value if isinstance(verb, ActionVerb) else str(verb)
    if verb_value and verb_value not in {v.value for v in ActionVerb}:
        raise ValueError(
            f"unknown verb {verb_value!r}; use one of {[v.value for v in ActionVerb]} or ''"
        )
    if isinstance(target, ObjectRef):
        target_fields = (target.api_version, target.kind, target.name)
    elif target is None:
        if verb_value:
            raise ValueError(f"verb {verb_value!r} needs a target")
        target_fields = ("", "", "")
    else:
        target_fields = tuple(str(t) for t in target)
        if len(target_fields) != 3:
            raise ValueError("target must be (api_version, kind, name)")
    if not ttl_seconds > 0:
        raise ValueError(f"ttl_seconds must be > 0, got {ttl_seconds}")
    if gpus < 0 or usd_per_hour < 0:
        raise ValueError("gpus and usd_per_hour cannot be negative")
    check_json("finding_json", finding_json)

    values = dict(
        _column_defaults(),
        key=key,
        team=team,
        kind=kind,
        namespace=namespace,
        name=name,
        verb=verb_value,
        target_api_version=target_fields[0],
        target_kind=target_fields[1],
        target_name=target_fields[2],
        state=RequestState.PROPOSED.value,
        finding_json=finding_json,
        usd_per_hour=float(usd_per_hour),
        gpus=float(gpus),
        dry_run=bool(dry_run),
        created_at=now,
        updated_at=now,
        expires_at=now + timedelta(seconds=ttl_seconds),
        version=1,
        act_at=None if act_at is None else as_utc(act_at, "act_at"),
        cluster=cluster,
    )
    return NewRequest(values)
