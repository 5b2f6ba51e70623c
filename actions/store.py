"""The bot's database: action requests, their state machine, and the audit trail; also the cache
of live prices (``PriceCache``), team budgets (``TeamBudget``) and the alerts already sent
(``AlertRecord``, one row per team, kind and period, so each alert fires once across replicas).

An ``ActionRequest`` is one proposal to act on one finding (stop a notebook, scale a StatefulSet to
zero, deactivate a Workload), from the moment it is posted to Slack until it is restored, expires or
is superseded. Every change to a request is one atomic ``UPDATE ... WHERE id = :id AND state IN
(...)`` that writes its ``AuditEvent`` in the same transaction, so a double click, a stale click or
two replicas handling the same click change the request once (see DESIGN.md, "Approval is opt-in
and bound").

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
cannot both succeed. ``TERMINAL_STATES`` release it.

Works on SQLite (a file, or in memory for demos) and PostgreSQL. All datetimes are timezone-aware
UTC going in and coming out; the store never reads the clock, every method that writes takes ``now``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.pool import StaticPool
from sqlmodel import Field, Session, SQLModel, col, select

from actions.model import ActionVerb, CapacityType, ObjectRef, to_jsonable
from actions.prices import LivePrice

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Named after the bot rather than alembic's default so the bot can share a database with other
# alembic-managed applications without both fighting over one version table.
VERSION_TABLE = "gpu_cost_bot_alembic_version"

# The largest id a BIGINT (PostgreSQL) or INTEGER (SQLite) primary key holds; a button or a typed
# command can carry any number, and a larger one must read as "no such request", not overflow.
MAX_ID = 2**63 - 1


def valid_id(value: int) -> bool:
    """Whether ``value`` can be the id of a row (1 to :data:`MAX_ID`)."""
    return 0 < value <= MAX_ID
# Tables the migrations create for a library (APScheduler's job store) rather than for a model
# here; autogenerate must neither drop them nor compare them.
FOREIGN_TABLES: frozenset[str] = frozenset({"apscheduler_jobs"})


def include_object(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
    """Alembic's ``include_object`` hook: leaves :data:`FOREIGN_TABLES` out of autogenerate."""
    table = getattr(obj, "table", obj) if type_ in ("index", "column") else obj
    return getattr(table, "name", name) not in FOREIGN_TABLES

# Any fixed 64-bit number works, as long as every replica uses the same one and nothing else in
# the database uses it: it is "gpucost" in ASCII.
MIGRATION_LOCK_ID = 0x67707563_6F7374


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

# alembic keeps the running migration's context in module globals, so two migrations in one process
# must not overlap; between processes the PostgreSQL advisory lock in env.py takes over.
_MIGRATE_LOCK = threading.Lock()


class StoreError(Exception):
    """Base of the store's own errors."""


class DuplicateOpenRequest(StoreError):
    """The key already has a request in an open state. ``key`` and ``existing`` (its id, or None
    when it closed again before it could be read) say which."""

    def __init__(self, key: str, existing: int | None) -> None:
        super().__init__(f"key {key!r} already has an open action request (id {existing})")
        self.key = key
        self.existing = existing


# --- types -----------------------------------------------------------------------------------------


class UTCDateTime(sa.types.TypeDecorator):
    """A timezone-aware UTC datetime on every backend.

    PostgreSQL stores ``timestamptz``; SQLite, which has no time zones, stores the UTC wall time.
    Either way the value read back is aware and in UTC. Binding a naive datetime raises
    ValueError: a naive time is ambiguous, and guessing would silently shift deadlines.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}")
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value!r}: pass a timezone-aware UTC datetime")
        value = value.astimezone(timezone.utc)
        # SQLite would write the offset into the text, and "+00:00" strings then sort and compare
        # differently from values written without one; store one canonical form instead.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def _utc(value: datetime, name: str = "now") -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} is naive ({value!r}); pass a timezone-aware UTC datetime")
    return value.astimezone(timezone.utc)


# --- tables ----------------------------------------------------------------------------------------

# Explicit constraint names, so that later migrations can refer to them on every backend (SQLite
# batch migrations need a name to drop or recreate a constraint).
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class StoreModel(SQLModel):
    """Base of the store's tables, with metadata of their own so that tables defined elsewhere in
    the process never leak into the migrations or into the migration-drift check."""

    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


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
    ``cluster`` is the cluster the finding was made in and the action goes to (empty: the only
    cluster, or the first of several).
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


class AuditEvent(StoreModel, table=True):
    """One thing that happened, who did it and when.

    ``request_id`` is None for events not tied to a request (e.g. an unauthorised click on a
    request id that does not exist). ``actor`` is a Slack user id or ``"system"``; ``event`` a short
    verb such as ``proposed``, ``approved``, ``approve-rejected``, ``applied``, ``restored``;
    ``detail_json`` a JSON object. ``at`` is aware UTC.
    """

    __tablename__ = "audit_event"

    id: int | None = Field(default=None, primary_key=True)
    request_id: int | None = Field(
        default=None, foreign_key="action_request.id", index=True, nullable=True
    )
    at: datetime = Field(sa_type=UTCDateTime, index=True)
    actor: str = Field(sa_type=sa.String)
    event: str = Field(sa_type=sa.String)
    detail_json: str = Field(default="{}", sa_type=sa.Text)

    def detail(self) -> dict[str, Any]:
        """``detail_json`` parsed."""
        return json.loads(self.detail_json)


class PriceCache(StoreModel, table=True):
    """The last live price fetched for one instance type, capacity type and region.

    ``usd_per_hour`` is USD per instance-hour; ``source`` says which API and how (see
    ``actions.prices.LivePrice``); ``as_of`` is when the price was known current, ``fetched_at``
    when it was written here (both aware UTC). One row per (instance type, capacity type, region):
    a refresh replaces it.
    """

    __tablename__ = "price_cache"

    instance_type: str = Field(sa_type=sa.String, primary_key=True)
    capacity_type: str = Field(sa_type=sa.String, primary_key=True)
    region: str = Field(sa_type=sa.String, primary_key=True)
    usd_per_hour: float = Field(sa_type=sa.Float)
    source: str = Field(sa_type=sa.Text)
    as_of: datetime = Field(sa_type=UTCDateTime)
    fetched_at: datetime = Field(sa_type=UTCDateTime)

    def live_price(self) -> LivePrice:
        """This row as the ``LivePrice`` it was stored from."""
        return LivePrice(
            instance_type=self.instance_type,
            capacity_type=CapacityType(self.capacity_type),
            usd_per_hour=self.usd_per_hour,
            source=self.source,
            as_of=self.as_of,
            region=self.region,
        )


class TeamBudget(StoreModel, table=True):
    """A team's monthly GPU budget in USD per calendar month, who set it (a Slack user id) and when
    (aware UTC)."""

    __tablename__ = "team_budget"

    team: str = Field(sa_type=sa.String, primary_key=True)
    usd_per_month: float = Field(sa_type=sa.Float)
    set_by: str = Field(sa_type=sa.String)
    set_at: datetime = Field(sa_type=UTCDateTime)


ALERT_KINDS: frozenset[str] = frozenset(
    {
        "budget-50",
        "budget-80",
        "budget-100",
        "budget-forecast",
        "queue-wait",
        "idle-on-demand",
        "spot-ratio",
        # A recommendation posted to a team channel; its period key is "<key>#<fingerprint>", so
        # the same advice on unchanged use is claimed once and posted once.
        "advice",
    }
)


class AlertRecord(StoreModel, table=True):
    """One alert that fired, so that it fires once: at most one row per (team, kind, period_key).

    ``kind`` is one of ``ALERT_KINDS``; ``period_key`` says what the alert is about: the month
    (``"2026-11"``) for budget thresholds, a Workload uid or ClusterQueue name for queue waits.
    ``channel``/``message_ts`` locate the Slack message once posted; ``snoozed_until`` (aware UTC)
    silences follow-ups until then.
    """

    __tablename__ = "alert_record"
    __table_args__ = (sa.UniqueConstraint("team", "kind", "period_key"),)

    id: int | None = Field(default=None, primary_key=True)
    team: str = Field(sa_type=sa.String)
    kind: str = Field(sa_type=sa.String)
    period_key: str = Field(sa_type=sa.String)
    fired_at: datetime = Field(sa_type=UTCDateTime)
    channel: str | None = Field(default=None, sa_type=sa.String, nullable=True)
    message_ts: str | None = Field(default=None, sa_type=sa.String, nullable=True)
    snoozed_until: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)


class JobRun(StoreModel, table=True):
    """One run of a scheduled job, claimed before it starts: at most one row per (job id, scheduled
    time), so a job whose run two schedulers both fire (a leader that stalled past its lease and
    the replica that took over) runs once. ``scheduled_at`` is the run's nominal fire time,
    ``started_at``/``finished_at`` wall clock (aware UTC), ``holder`` the replica that claimed it
    (pod name), ``outcome`` ``ok``/``error`` once finished (None while running or when the holder
    died mid-run)."""

    __tablename__ = "job_run"
    __table_args__ = (sa.UniqueConstraint("job_id", "scheduled_at"),)

    id: int | None = Field(default=None, primary_key=True)
    job_id: str = Field(sa_type=sa.String)
    scheduled_at: datetime = Field(sa_type=UTCDateTime)
    holder: str = Field(sa_type=sa.String)
    started_at: datetime = Field(sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime, nullable=True)
    outcome: str | None = Field(default=None, sa_type=sa.String, nullable=True)
    detail: str | None = Field(default=None, sa_type=sa.Text, nullable=True)


metadata = StoreModel.metadata

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


def _detail_json(detail: Mapping[str, Any] | None) -> str:
    return json.dumps(to_jsonable(dict(detail or {})), sort_keys=True, separators=(",", ":"))


def _check_json(name: str, value: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be JSON text, got {type(value).__name__}")
    try:
        json.loads(value)
    except ValueError as e:
        raise ValueError(f"{name} is not valid JSON: {e}") from None


def _clean_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
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
            value = _utc(value, name)
        elif name in _JSON_FIELDS:
            _check_json(name, value)
        out[name] = value
    return out


def _states(states: Iterable[str], what: str) -> list[str]:
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


@dataclass(frozen=True)
class NewRequest:
    """A checked, not yet stored proposal: ``values`` the row to insert (every column but
    ``id``); :meth:`Store.add_request` stores it."""

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
    cluster: str = "",
) -> NewRequest:
    """The request :meth:`Store.create_request` stores for these arguments (state ``proposed``,
    ``version`` 1, no id yet), checked as it checks them. Raises ValueError as it does."""
    now = _utc(now)
    if not key:
        raise ValueError("key is empty")
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
    _check_json("finding_json", finding_json)

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
        act_at=None if act_at is None else _utc(act_at, "act_at"),
        cluster=cluster,
    )
    return NewRequest(values)


# --- the store -------------------------------------------------------------------------------------


class Store:
    """Action requests, audit events, cached prices, budgets and alert records in a SQL database.

    ``url`` is a SQLAlchemy URL: ``sqlite:///relative.db``, ``sqlite:////abs/path.db``,
    ``sqlite://`` (in memory, one connection: demos and single-threaded use only) or
    ``postgresql://user@host/db`` (psycopg2 when installed; ``postgresql+psycopg://`` for
    psycopg 3). The store is safe to share between threads.

    Call ``migrate()`` once at start-up before anything else. Methods raise ValueError/TypeError for
    bad arguments (unknown states or fields, naive datetimes, text that is not JSON) and let
    ``sqlalchemy.exc.OperationalError`` through when the database cannot be reached.
    """

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = make_url(url)
        self.engine: Engine = _create_engine(self.url, echo=echo)

    def close(self) -> None:
        """Close every pooled connection. The store can still be used (it reconnects)."""
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema --

    def migrate(self) -> None:
        """Bring the schema up to the newest migration (``alembic upgrade head``).

        A no-op when already at head. Concurrent callers are serialised: within a process by a lock,
        and on PostgreSQL across processes (several replicas starting at once) by an advisory lock
        taken in the migration environment, so each migration runs once. Raises alembic/SQLAlchemy
        errors when a migration fails; the failed migration's transaction is rolled back where the
        backend has transactional DDL.
        """
        from alembic import command

        with _MIGRATE_LOCK, self.engine.begin() as connection:
            config = alembic_config(self.url.render_as_string(hide_password=False))
            # env.py uses this connection rather than building an engine of its own, so the
            # store's engine settings (SQLite pragmas, pool) apply to migrations too.
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def schema_status(self) -> tuple[str | None, str]:
        """``(applied, newest)``: the migration revision the database is at (None when it has
        none yet) and the newest one this version of the bot has. Raises SQLAlchemy errors when
        the database cannot be reached."""
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        script = ScriptDirectory.from_config(alembic_config(self.url.render_as_string(hide_password=False)))
        with self.engine.connect() as connection:
            applied = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE}).get_current_revision()
        return applied, script.get_current_head() or ""

    # -- requests --

    def create_request(
        self, *, actor: str = SYSTEM_ACTOR, detail: Mapping[str, Any] | None = None, **fields: Any,
    ) -> ActionRequest:
        """Record a new proposal in state ``proposed`` and audit it as ``proposed`` by ``actor``:
        ``fields`` are :func:`new_request`'s keyword arguments (``key``, ``team``, ``kind``,
        ``namespace``, ``name``, ``verb``, ``target``, ``finding_json``, ``usd_per_hour``,
        ``gpus``, ``dry_run``, ``now``, ``ttl_seconds``, and optionally ``act_at`` and
        ``cluster``), checked as it checks them.

        ``verb`` is an ``ActionVerb`` (or its value), or ``""`` for a report-only finding;
        ``target`` the object to act on as an ``ObjectRef`` or ``(api_version, kind, name)``, and
        None only when ``verb`` is empty. ``usd_per_hour`` is USD per hour; ``ttl_seconds`` (> 0)
        sets ``expires_at = now + ttl_seconds``; ``act_at`` (aware UTC) is when the policy acts
        unless someone decides first (mode ``auto``); ``cluster`` the cluster the action goes to
        (empty: the only or first one). Returns the stored request (``version`` 1).

        Raises DuplicateOpenRequest when ``key`` already has a request in an open state (checked by
        the database, so it holds across replicas); ValueError for an unknown verb, a missing
        target, ``ttl_seconds <= 0``, negative ``gpus``/``usd_per_hour`` or non-JSON
        ``finding_json``; TypeError for a missing or unknown field.
        """
        return self.add_request(new_request(**fields), actor=actor, detail=detail)

    def add_request(
        self, new: NewRequest, *, actor: str = SYSTEM_ACTOR, detail: Mapping[str, Any] | None = None,
    ) -> ActionRequest:
        """Store ``new`` (made by :func:`new_request`) and audit it as ``proposed`` by ``actor``,
        at its ``created_at``. Returns the stored request; raises DuplicateOpenRequest as
        :meth:`create_request`."""
        request = new.request
        now = request.created_at
        try:
            with self._session() as session, session.begin():
                session.add(request)
                session.flush()
                session.add(
                    AuditEvent(
                        request_id=request.id,
                        at=now,
                        actor=actor,
                        event="proposed",
                        detail_json=_detail_json(detail),
                    )
                )
        except IntegrityError:
            existing = self.open_for_key(request.key)
            if existing is None and not self._has_open_key_index():
                raise
            raise DuplicateOpenRequest(request.key, existing.id if existing else None) from None
        return request

    def get(self, request_id: int) -> ActionRequest | None:
        """The request with this id, or None (also for an id no database column can hold)."""
        if not valid_id(request_id):
            return None
        with self._session() as session:
            return session.get(ActionRequest, request_id)

    def open_for_key(self, key: str) -> ActionRequest | None:
        """The request holding ``key`` (in an open state), or None."""
        with self._session() as session:
            return session.exec(
                select(ActionRequest).where(
                    ActionRequest.key == key, col(ActionRequest.state).in_(sorted(OPEN_STATES))
                )
            ).first()

    def list_requests(
        self, states: Iterable[str] | None = None, team: str | None = None
    ) -> list[ActionRequest]:
        """Requests, oldest first (by ``created_at`` then id), optionally only those in ``states``
        and/or of ``team``. Raises ValueError for an unknown or empty ``states``."""
        query = select(ActionRequest)
        if states is not None:
            query = query.where(col(ActionRequest.state).in_(_states(states, "states")))
        if team is not None:
            query = query.where(ActionRequest.team == team)
        query = query.order_by(col(ActionRequest.created_at), col(ActionRequest.id))
        with self._session() as session:
            return list(session.exec(query).all())

    def count_by_state(self) -> dict[str, int]:
        """How many requests are in each state, ``{state: count}``, every state in ``STATES``
        present (0 when none), in one ``GROUP BY`` query. Cheap enough for a readiness probe."""
        query = select(ActionRequest.state, sa.func.count()).group_by(ActionRequest.state)
        counts = dict.fromkeys(sorted(str(s) for s in STATES), 0)
        with self._session() as session:
            for state, count in session.exec(query).all():
                counts[state] = int(count)
        return counts

    def transition(
        self,
        request_id: int,
        *,
        from_states: Iterable[str],
        to_state: str,
        now: datetime,
        actor: str,
        event: str,
        detail: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> ActionRequest | None:
        """Move a request from one of ``from_states`` to ``to_state``, atomically, once.

        One ``UPDATE ... WHERE id = :id AND state IN (:from_states)`` sets ``state``,
        ``updated_at = now``, ``version + 1`` and ``fields`` (names in ``UPDATABLE_FIELDS``:
        ``until``, ``decided_by``, ``decided_at``, ``undo_json``, ``note``, ``channel``,
        ``message_ts``, ``finding_json``, ``usd_per_hour``, ``expires_at``, ...), and the same
        transaction writes the ``AuditEvent`` (``actor``, ``event``, ``detail``). Of several callers
        racing from the same state, exactly one gets the updated request; the others get None.

        Returns the updated request, or None (writing nothing) when the request does not exist or
        is not in ``from_states``. Raises ValueError for unknown states or fields, naive datetimes
        or non-JSON ``*_json`` values; DuplicateOpenRequest when moving a closed request back to an
        open state while its key is held by another request.
        """
        now = _utc(now)
        sources = _states(from_states, "from_states")
        (target,) = _states([to_state], "to_state")
        values = _clean_fields(fields)
        values.update(state=target)
        try:
            return self._update(
                request_id,
                states=sources,
                values=values,
                now=now,
                actor=actor,
                event=event,
                detail=detail,
            )
        except IntegrityError:
            if target not in OPEN_STATES:
                raise
            current = self.get(request_id)
            key = current.key if current else "?"
            holder = self.open_for_key(key) if current else None
            raise DuplicateOpenRequest(key, holder.id if holder else None) from None

    def update_fields(
        self,
        request_id: int,
        *,
        now: datetime,
        actor: str,
        event: str,
        detail: Mapping[str, Any] | None = None,
        in_states: Iterable[str] | None = None,
        **fields: Any,
    ) -> ActionRequest | None:
        """Change fields other than ``state`` (the Slack message's ``channel``/``message_ts``, a
        refreshed ``finding_json`` and ``usd_per_hour``, ...), bump ``version``, set
        ``updated_at = now`` and write the audit event, in one transaction.

        With ``in_states`` the update only happens while the request is in one of them (e.g. only
        refresh a finding that is still ``proposed``). Returns the updated request, or None when it
        does not exist or is not in ``in_states``. Raises ValueError like ``transition``.
        """
        now = _utc(now)
        states = None if in_states is None else _states(in_states, "in_states")
        values = _clean_fields(fields)
        return self._update(
            request_id, states=states, values=values, now=now, actor=actor, event=event, detail=detail
        )

    def due_for_expiry(self, now: datetime) -> list[ActionRequest]:
        """Requests still ``proposed`` whose ``expires_at`` is at or before ``now``, oldest first."""
        now = _utc(now)
        query = (
            select(ActionRequest)
            .where(
                ActionRequest.state == RequestState.PROPOSED.value,
                col(ActionRequest.expires_at) <= now,
            )
            .order_by(col(ActionRequest.expires_at), col(ActionRequest.id))
        )
        with self._session() as session:
            return list(session.exec(query).all())

    def due_to_act(self, now: datetime) -> list[ActionRequest]:
        """Requests still ``proposed`` whose ``act_at`` is at or before ``now`` (mode ``auto``:
        nobody pressed Snooze, Exempt or Deny in the grace), soonest first."""
        now = _utc(now)
        query = (
            select(ActionRequest)
            .where(
                ActionRequest.state == RequestState.PROPOSED.value,
                col(ActionRequest.act_at).is_not(None),
                col(ActionRequest.act_at) <= now,
            )
            .order_by(col(ActionRequest.act_at), col(ActionRequest.id))
        )
        with self._session() as session:
            return list(session.exec(query).all())

    def due_to_wake(self, now: datetime) -> list[ActionRequest]:
        """Requests ``snoozed``, ``exempt`` or ``denied`` whose ``until`` is at or before ``now``,
        soonest first. Requests in those states with no ``until`` never wake."""
        now = _utc(now)
        query = (
            select(ActionRequest)
            .where(
                col(ActionRequest.state).in_(sorted(WAKEABLE_STATES)),
                col(ActionRequest.until).is_not(None),
                col(ActionRequest.until) <= now,
            )
            .order_by(col(ActionRequest.until), col(ActionRequest.id))
        )
        with self._session() as session:
            return list(session.exec(query).all())

    def overdue_actions(self, now: datetime) -> list[ActionRequest]:
        """Requests whose outcome must be read back from the cluster: ``uncertain`` ones, and
        ``approved``/``restoring`` ones whose ``deadline_at`` is at or before ``now`` (or unset:
        written by a version of the bot that kept none), oldest first."""
        now = _utc(now)
        acting = col(ActionRequest.state).in_([RequestState.APPROVED.value, RequestState.RESTORING.value])
        due = sa.or_(col(ActionRequest.deadline_at).is_(None), col(ActionRequest.deadline_at) <= now)
        query = (
            select(ActionRequest)
            .where(sa.or_(ActionRequest.state == RequestState.UNCERTAIN.value, sa.and_(acting, due)))
            .order_by(col(ActionRequest.updated_at), col(ActionRequest.id))
        )
        with self._session() as session:
            return list(session.exec(query).all())

    # -- the Slack message as desired state --

    def messages_due(self, now: datetime, changed_since: datetime, limit: int = 100) -> list[ActionRequest]:
        """Requests whose message does not show their current ``version`` yet, changed at or
        after ``changed_since``, whose retry time (``sync_due_at``) has come and that no sync
        holds (``sync_lease_until``), oldest change first, at most ``limit``."""
        now, since = _utc(now), _utc(changed_since, "changed_since")
        r = ActionRequest
        query = (
            select(r)
            .where(
                sa.or_(col(r.shown_version).is_(None), col(r.shown_version) != col(r.version)),
                col(r.updated_at) >= since,
                sa.or_(col(r.sync_due_at).is_(None), col(r.sync_due_at) <= now),
                sa.or_(col(r.sync_lease_until).is_(None), col(r.sync_lease_until) <= now),
            )
            .order_by(col(r.updated_at), col(r.id))
            .limit(limit)
        )
        with self._session() as session:
            return list(session.exec(query).all())

    def claim_message(self, request_id: int, now: datetime, lease_seconds: float) -> ActionRequest | None:
        """Hold the request's message for ``lease_seconds`` so that only this caller writes it
        (two writers could leave an older rendering last). Returns the request as it is now, or
        None when another caller holds it (or there is no such request). Changes neither
        ``version`` nor ``updated_at``."""
        now = _utc(now)
        table = ActionRequest.__table__
        free = sa.or_(table.c.sync_lease_until.is_(None), table.c.sync_lease_until <= now)
        statement = (
            sa.update(table)
            .where(table.c.id == request_id, free)
            .values(sync_lease_until=now + timedelta(seconds=lease_seconds))
        )
        with self._session() as session, session.begin():
            if session.connection().execute(statement).rowcount != 1:
                return None
            return session.get(ActionRequest, request_id)

    def message_posting(self, request_id: int, now: datetime) -> None:
        """Record that a first post of the request's message is about to be sent (kept when one
        was already recorded: the earliest attempt bounds the search for a post whose answer was
        lost)."""
        table = ActionRequest.__table__
        with self._session() as session, session.begin():
            session.connection().execute(
                sa.update(table)
                .where(table.c.id == request_id, table.c.post_started_at.is_(None))
                .values(post_started_at=_utc(now))
            )

    def message_shown(
        self, request_id: int, version: int, now: datetime, *, channel: str | None = None, ts: str | None = None,
        found: bool = False,
    ) -> None:
        """The channel now shows ``version`` of the request: record it, clear the retry state and
        release the hold. With ``channel`` and ``ts`` the message was just posted (audited as
        ``posted``), or with ``found`` found where an earlier post whose answer was lost put it
        (audited as ``post-found``). Changes neither ``version`` nor ``updated_at``."""
        now = _utc(now)
        table = ActionRequest.__table__
        values: dict[str, Any] = dict(shown_version=version, sync_failures=0, sync_due_at=None, sync_lease_until=None)
        if channel and ts:
            values.update(channel=channel, message_ts=ts)
        with self._session() as session, session.begin():
            session.connection().execute(sa.update(table).where(table.c.id == request_id).values(**values))
            if channel and ts:
                session.add(
                    AuditEvent(
                        request_id=request_id, at=now, actor=SYSTEM_ACTOR, event="post-found" if found else "posted",
                        detail_json=_detail_json({"channel": channel, "ts": ts}),
                    )
                )

    def message_failed(self, request_id: int, retry_at: datetime) -> int:
        """Writing the message failed: count it, retry at ``retry_at`` (aware UTC) and release the
        hold. Returns the failures so far (0 when there is no such request)."""
        table = ActionRequest.__table__
        with self._session() as session, session.begin():
            session.connection().execute(
                sa.update(table)
                .where(table.c.id == request_id)
                .values(
                    sync_failures=table.c.sync_failures + 1,
                    sync_due_at=_utc(retry_at, "retry_at"),
                    sync_lease_until=None,
                )
            )
            failures = session.connection().execute(
                sa.select(table.c.sync_failures).where(table.c.id == request_id)
            ).scalar()
        return int(failures or 0)

    # -- audit --

    def audit(
        self,
        request_id: int | None,
        *,
        actor: str,
        event: str,
        now: datetime,
        detail: Mapping[str, Any] | None = None,
    ) -> AuditEvent:
        """Record an event that changes no request (a rejected click, a failed Slack post).

        ``request_id`` may be None for events not tied to a request. ``detail`` must be
        JSON-serialisable after ``model.to_jsonable``. Returns the stored event. Raises
        sqlalchemy.exc.IntegrityError when ``request_id`` names no request (SQLite enforces this
        because the store turns foreign keys on).
        """
        event_row = AuditEvent(
            request_id=request_id, at=_utc(now), actor=actor, event=event, detail_json=_detail_json(detail)
        )
        with self._session() as session, session.begin():
            session.add(event_row)
        return event_row

    def events(self, request_id: int) -> list[AuditEvent]:
        """A request's audit events, in the order they happened (``at``, then id)."""
        query = (
            select(AuditEvent)
            .where(AuditEvent.request_id == request_id)
            .order_by(col(AuditEvent.at), col(AuditEvent.id))
        )
        with self._session() as session:
            return list(session.exec(query).all())

    def all_events(self) -> list[AuditEvent]:
        """Every audit event, in the order they happened (``at``, then id)."""
        query = select(AuditEvent).order_by(col(AuditEvent.at), col(AuditEvent.id))
        with self._session() as session:
            return list(session.exec(query).all())

    # -- live prices --

    def put_prices(self, rows: Iterable[LivePrice], now: datetime) -> int:
        """Cache live prices, replacing the row of the same (instance type, capacity type, region)
        and stamping ``fetched_at = now``. One transaction. Returns the number of rows written.

        Raises ValueError for a naive ``now`` or ``as_of``, or a price that is not > 0 USD/hour.
        """
        now = _utc(now)
        values = []
        for row in rows:
            if not row.usd_per_hour > 0:
                raise ValueError(f"{row.instance_type} {row.capacity_type}: price {row.usd_per_hour} is not > 0")
            values.append(
                dict(
                    instance_type=row.instance_type,
                    capacity_type=CapacityType(row.capacity_type).value,
                    region=row.region,
                    usd_per_hour=float(row.usd_per_hour),
                    source=row.source,
                    as_of=_utc(row.as_of, "as_of"),
                    fetched_at=now,
                )
            )
        if not values:
            return 0
        table = PriceCache.__table__
        keys = ("instance_type", "capacity_type", "region")
        with self._session() as session, session.begin():
            connection = session.connection()
            for value in values:
                statement = self._insert(table).values(**value)
                connection.execute(
                    statement.on_conflict_do_update(
                        index_elements=list(keys),
                        set_={k: statement.excluded[k] for k in value if k not in keys},
                    )
                )
        return len(values)

    def cached_prices(self, region: str, max_age_seconds: float, now: datetime) -> list[LivePrice]:
        """Cached prices of ``region`` fetched at most ``max_age_seconds`` before ``now``, by
        instance type then capacity type. Older rows are left out (not deleted)."""
        now = _utc(now)
        oldest = now - timedelta(seconds=max_age_seconds)
        query = (
            select(PriceCache)
            .where(PriceCache.region == region, col(PriceCache.fetched_at) >= oldest)
            .order_by(col(PriceCache.instance_type), col(PriceCache.capacity_type))
        )
        with self._session() as session:
            return [row.live_price() for row in session.exec(query).all()]

    # -- budgets --

    def set_budget(self, team: str, usd: float, by: str, now: datetime) -> TeamBudget:
        """Set ``team``'s budget to ``usd`` USD per calendar month (replacing any), recording who
        and when, and audit it as ``budget-set``. Returns the stored budget. Raises ValueError for
        an empty team or ``usd`` not > 0."""
        now = _utc(now)
        if not team:
            raise ValueError("team is empty")
        if not usd > 0:
            raise ValueError(f"a budget must be more than 0 USD per month, got {usd}")
        value = dict(team=team, usd_per_month=float(usd), set_by=by, set_at=now)
        table = TeamBudget.__table__
        with self._session() as session, session.begin():
            previous = session.get(TeamBudget, team)
            before = previous.usd_per_month if previous else None
            statement = self._insert(table).values(**value)
            session.connection().execute(
                statement.on_conflict_do_update(
                    index_elements=["team"],
                    set_={k: statement.excluded[k] for k in value if k != "team"},
                )
            )
            session.add(
                AuditEvent(
                    at=now,
                    actor=by,
                    event="budget-set",
                    detail_json=_detail_json(
                        {"team": team, "usd_per_month": float(usd), "previous_usd_per_month": before}
                    ),
                )
            )
        return TeamBudget(**value)

    def remove_budget(self, team: str, by: str, now: datetime) -> bool:
        """Remove ``team``'s budget, audited as ``budget-removed``. False when it had none."""
        now = _utc(now)
        table = TeamBudget.__table__
        with self._session() as session, session.begin():
            result = session.connection().execute(sa.delete(table).where(table.c.team == team))
            if result.rowcount != 1:
                return False
            session.add(
                AuditEvent(at=now, actor=by, event="budget-removed", detail_json=_detail_json({"team": team}))
            )
        return True

    def budget(self, team: str) -> TeamBudget | None:
        """``team``'s budget, or None when none is set."""
        with self._session() as session:
            return session.get(TeamBudget, team)

    def budgets(self) -> list[TeamBudget]:
        """Every team's budget, by team name."""
        with self._session() as session:
            return list(session.exec(select(TeamBudget).order_by(col(TeamBudget.team))).all())

    # -- alerts --

    def record_alert(
        self,
        team: str,
        kind: str,
        period_key: str,
        now: datetime,
        channel: str | None = None,
        message_ts: str | None = None,
    ) -> bool:
        """Claim the alert ``(team, kind, period_key)``: True when this call recorded it, False when
        it was already recorded (by this or another replica; the database decides, so of callers
        racing for the same alert exactly one gets True). Call it before posting and post only on
        True; then :meth:`set_alert_message` records where the message went.

        Raises ValueError for a ``kind`` not in ``ALERT_KINDS`` or an empty team or period key.
        """
        now = _utc(now)
        if kind not in ALERT_KINDS:
            raise ValueError(f"unknown alert kind {kind!r}; kinds are {sorted(ALERT_KINDS)}")
        if not team or not period_key:
            raise ValueError("team and period_key must not be empty")
        statement = (
            self._insert(AlertRecord.__table__)
            .values(
                team=team,
                kind=kind,
                period_key=period_key,
                fired_at=now,
                channel=channel,
                message_ts=message_ts,
            )
            .on_conflict_do_nothing(index_elements=["team", "kind", "period_key"])
        )
        with self._session() as session, session.begin():
            return session.connection().execute(statement).rowcount == 1

    def alert(self, team: str, kind: str, period_key: str) -> AlertRecord | None:
        """The recorded alert ``(team, kind, period_key)``, or None."""
        with self._session() as session:
            return session.exec(
                select(AlertRecord).where(
                    AlertRecord.team == team,
                    AlertRecord.kind == kind,
                    AlertRecord.period_key == period_key,
                )
            ).first()

    def get_alert(self, alert_id: int) -> AlertRecord | None:
        """The alert with this id, or None (also for an id no database column can hold)."""
        if not valid_id(alert_id):
            return None
        with self._session() as session:
            return session.get(AlertRecord, alert_id)

    def set_alert_message(self, alert_id: int, channel: str, message_ts: str) -> AlertRecord | None:
        """Record the Slack message an alert was posted as. Returns the updated alert, or None when
        there is no alert ``alert_id``."""
        with self._session() as session, session.begin():
            return self._update_alert(session, alert_id, channel=channel, message_ts=message_ts)

    def snooze_alert(
        self, alert_id: int, until: datetime, actor: str, now: datetime
    ) -> AlertRecord | None:
        """Silence an alert's follow-ups until ``until`` (aware UTC) and audit it as
        ``alert-snoozed`` (by ``actor``, a Slack user id), in one transaction. Returns the updated
        alert, or None (writing nothing) when there is no alert ``alert_id``. Raises ValueError for
        naive datetimes."""
        if not valid_id(alert_id):
            return None
        now = _utc(now)
        until = _utc(until, "until")
        with self._session() as session, session.begin():
            record = self._update_alert(session, alert_id, snoozed_until=until)
            if record is None:
                return None
            session.add(
                AuditEvent(
                    at=now,
                    actor=actor,
                    event="alert-snoozed",
                    detail_json=_detail_json(
                        {
                            "alert_id": alert_id,
                            "team": record.team,
                            "kind": record.kind,
                            "period_key": record.period_key,
                            "until": until,
                        }
                    ),
                )
            )
            return record

    def alerts(self, team: str | None = None) -> list[AlertRecord]:
        """Recorded alerts, oldest first (``fired_at``, then id), optionally only ``team``'s."""
        query = select(AlertRecord)
        if team is not None:
            query = query.where(AlertRecord.team == team)
        query = query.order_by(col(AlertRecord.fired_at), col(AlertRecord.id))
        with self._session() as session:
            return list(session.exec(query).all())

    # -- scheduled job runs --

    def claim_job_run(self, job_id: str, scheduled_at: datetime, holder: str, now: datetime) -> int | None:
        """Claim the run of ``job_id`` due at ``scheduled_at`` for ``holder``: the new run's id when
        this call claimed it, None when it was already claimed (by this or another replica; the
        database decides, so of racing callers exactly one gets an id). Raises ValueError for
        naive datetimes or an empty job id."""
        if not job_id:
            raise ValueError("job_id is empty")
        table = JobRun.__table__
        statement = (
            self._insert(table)
            .values(job_id=job_id, scheduled_at=_utc(scheduled_at, "scheduled_at"), holder=holder, started_at=_utc(now))
            .on_conflict_do_nothing(index_elements=["job_id", "scheduled_at"])
            .returning(table.c.id)
        )
        with self._session() as session, session.begin():
            # A conflict inserts nothing and so returns no row.
            return session.connection().execute(statement).scalar()

    def finish_job_run(self, run_id: int, outcome: str, now: datetime, detail: str | None = None) -> None:
        """Record how the claimed run ``run_id`` ended: ``outcome`` ``ok`` or ``error`` (with
        ``detail``, e.g. the exception). Raises ValueError for another outcome."""
        if outcome not in ("ok", "error"):
            raise ValueError(f"outcome must be 'ok' or 'error', got {outcome!r}")
        table = JobRun.__table__
        with self._session() as session, session.begin():
            session.connection().execute(
                sa.update(table).where(table.c.id == run_id).values(finished_at=_utc(now), outcome=outcome, detail=detail)
            )

    def job_runs(self, job_id: str | None = None) -> list[JobRun]:
        """Claimed runs, oldest scheduled first, optionally only ``job_id``'s."""
        query = select(JobRun)
        if job_id is not None:
            query = query.where(JobRun.job_id == job_id)
        with self._session() as session:
            return list(session.exec(query.order_by(col(JobRun.scheduled_at), col(JobRun.id))).all())

    # -- internals --

    def _insert(self, table: sa.Table) -> Any:
        # Both backends can resolve a conflict inside the INSERT itself, which is what lets
        # replicas race for the same row without one of them seeing an IntegrityError.
        backend = self.engine.dialect.name
        if backend == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        elif backend == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:
            raise StoreError(f"upserts need PostgreSQL or SQLite, not {backend}")
        return insert(table)

    @staticmethod
    def _update_alert(session: Session, alert_id: int, **values: Any) -> AlertRecord | None:
        table = AlertRecord.__table__
        result = session.connection().execute(sa.update(table).where(table.c.id == alert_id).values(**values))
        if result.rowcount != 1:
            return None
        return session.exec(
            select(AlertRecord).where(AlertRecord.id == alert_id).execution_options(populate_existing=True)
        ).one()

    def _session(self) -> Session:
        # Rows are handed to callers after the session closes; keep their loaded attributes.
        return Session(self.engine, expire_on_commit=False)

    def _update(
        self,
        request_id: int,
        *,
        states: list[str] | None,
        values: dict[str, Any],
        now: datetime,
        actor: str,
        event: str,
        detail: Mapping[str, Any] | None,
    ) -> ActionRequest | None:
        table = ActionRequest.__table__
        statement = (
            sa.update(table)
            .where(table.c.id == request_id)
            .values(**values, updated_at=now, version=table.c.version + 1)
        )
        if states is not None:
            statement = statement.where(table.c.state.in_(states))
        with self._session() as session, session.begin():
            # The row lock taken by this UPDATE (PostgreSQL) or the database write lock (SQLite)
            # makes a concurrent caller wait, then re-check the state and match nothing.
            result = session.connection().execute(statement)
            if result.rowcount != 1:
                return None
            session.add(
                AuditEvent(
                    request_id=request_id,
                    at=now,
                    actor=actor,
                    event=event,
                    detail_json=_detail_json(detail),
                )
            )
            return session.exec(
                select(ActionRequest)
                .where(ActionRequest.id == request_id)
                .execution_options(populate_existing=True)
            ).one()

    def _has_open_key_index(self) -> bool:
        with self.engine.connect() as connection:
            indexes = sa.inspect(connection).get_indexes(ActionRequest.__tablename__)
        return any(ix["name"] == "uq_action_request_open_key" for ix in indexes)


def alembic_config(url: str) -> Config:
    """An alembic ``Config`` for the bot's migrations at ``url``, built in code so it works from an
    installed package (no ``alembic.ini`` or working directory needed). Useful for
    ``alembic.command.revision(config, autogenerate=True, ...)`` when writing a new migration."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("file_template", "%%(rev)s_%%(slug)s")
    # ConfigParser interpolation would read a "%" in a URL-encoded password as a reference.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def _create_engine(url: sa.URL, *, echo: bool) -> Engine:
    backend = url.get_backend_name()
    if backend == "sqlite":
        in_memory = url.database in (None, "", ":memory:")
        engine = sa.create_engine(
            url,
            echo=echo,
            # timeout is SQLite's busy timeout (seconds): a writer waits for another writer's lock
            # instead of failing at once with "database is locked".
            connect_args={"check_same_thread": False, "timeout": 30},
            # An in-memory database exists per connection; keep exactly one.
            poolclass=StaticPool if in_memory else None,
        )

        @sa.event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute("PRAGMA foreign_keys=ON")
                if not in_memory:
                    # Readers no longer block the writer (and vice versa), which matters with a
                    # scheduler thread and Slack handler threads sharing one file.
                    cursor.execute("PRAGMA journal_mode=WAL")
                    cursor.execute("PRAGMA synchronous=NORMAL")
            finally:
                cursor.close()

        return engine
    if backend == "postgresql":
        if url.drivername == "postgresql" and importlib.util.find_spec("psycopg2") is not None:
            # SQLAlchemy 2.1 reads a bare postgresql:// as psycopg 3, but the driver this project
            # installs (the "postgres" extra) is psycopg2.
            url = url.set(drivername="postgresql+psycopg2")
        return sa.create_engine(
            url,
            echo=echo,
            # A database host that does not answer must fail a press in seconds ("not recorded,
            # press again"), not after the kernel's TCP connect timeout of minutes.
            connect_args={"connect_timeout": 10} if url.get_driver_name() == "psycopg2" else {},
            pool_size=5,
            max_overflow=5,
            pool_timeout=30,
            # Connections dropped by a proxy or a database failover are replaced, not handed out.
            pool_pre_ping=True,
            pool_recycle=1800,
        )
    return sa.create_engine(url, echo=echo, pool_pre_ping=True)
