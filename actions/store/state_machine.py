"""The request state machine: proposing (at most one open request per finding key), reading, and
moving a request from state to state (:mod:`actions.store.states`), each move one atomic
``UPDATE ... WHERE id = :id AND state IN (...)`` that writes its ``AuditEvent`` in the same
transaction, so a double click, a stale click or two replicas handling the same click change the
request once (shared/DESIGN.md, "Approval is opt-in and bound").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from actions.store.audit import AuditEvent, detail_json
from actions.store.requests import ActionRequest, NewRequest, clean_fields, new_request
from actions.store.schema import StoreBase, as_utc, valid_id
from actions.store.states import (
    OPEN_STATES,
    STATES,
    SYSTEM_ACTOR,
    WAKEABLE_STATES,
    DuplicateOpenRequest,
    RequestState,
    checked_states,
)


class RequestStateMachine(StoreBase):
    """Requests and their moves: create one (at most one open per key), read them, and move one
    from state to state in one atomic ``UPDATE ... WHERE id = :id AND state IN (...)`` that writes
    its audit event in the same transaction, so a double click, a stale click or two replicas
    handling the same click change the request once."""

    def create_request(
        self, *, actor: str = SYSTEM_ACTOR, detail: Mapping[str, Any] | None = None, **fields: Any,
    ) -> ActionRequest:
        """Record a new proposal in state ``proposed`` and audit it as ``proposed`` by ``actor``:
        ``fields`` are :func:`new_request`'s keyword arguments (``key``, ``team``, ``kind``,
        ``namespace``, ``name``, ``verb``, ``target``, ``finding_json``, ``usd_per_hour``,
        ``gpus``, ``dry_run``, ``now``, ``ttl_seconds``, ``cluster``, and optionally
        ``act_at``), checked as it checks them.

        ``verb`` is an ``ActionVerb`` (or its value), or ``""`` for a report-only finding;
        ``target`` the object to act on as an ``ObjectRef`` or ``(api_version, kind, name)``, and
        None only when ``verb`` is empty. ``usd_per_hour`` is USD per hour; ``ttl_seconds`` (> 0)
        sets ``expires_at = now + ttl_seconds``; ``act_at`` (aware UTC) is when the policy acts
        unless someone decides first (mode ``auto``); ``cluster`` names the cluster the finding
        was made in and the action goes to. Returns the stored request (``version`` 1).

        Raises DuplicateOpenRequest when ``key`` already has a request in an open state (checked by
        the database, so it holds across replicas); ValueError for an unknown verb, a missing
        target, ``ttl_seconds <= 0``, negative ``gpus``/``usd_per_hour``, non-JSON
        ``finding_json`` or an empty ``cluster``; TypeError for a missing or unknown field.
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
                        detail_json=detail_json(detail),
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
            query = query.where(col(ActionRequest.state).in_(checked_states(states, "states")))
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

    def name_unnamed_requests(self, cluster: str, now: datetime, why: str) -> list[int]:
        """Give every request stored without a cluster's name (``cluster`` empty: made by a
        version that stored none) the name ``cluster``, each audited ``cluster-named`` by the
        system with ``why`` at ``now``, in one transaction. Neither the state nor the ``version``
        changes (the request is the same, its message too). Returns the ids named by this call,
        ascending; of replicas doing it at once each request is named, and audited, by one.
        Raises ValueError for an empty ``cluster``."""
        now = as_utc(now)
        if not cluster:
            raise ValueError("name the cluster the unnamed requests were made in")
        table = ActionRequest.__table__
        with self.engine.connect() as connection:
            # Almost always none: a read, so a sweep that finds none takes no write lock.
            if connection.execute(sa.select(table.c.id).where(table.c.cluster == "").limit(1)).first() is None:
                return []
        with self._session() as session, session.begin():
            connection = session.connection()
            named = sorted(connection.execute(
                sa.update(table).where(table.c.cluster == "").values(cluster=cluster).returning(table.c.id)
            ).scalars())
            if named:
                detail = detail_json({"cluster": cluster, "why": why})
                connection.execute(sa.insert(AuditEvent.__table__), [
                    {"request_id": i, "at": now, "actor": SYSTEM_ACTOR, "event": "cluster-named", "detail_json": detail}
                    for i in named
                ])
        return named

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
        now = as_utc(now)
        sources = checked_states(from_states, "from_states")
        (target,) = checked_states([to_state], "to_state")
        values = clean_fields(fields)
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
        now = as_utc(now)
        states = None if in_states is None else checked_states(in_states, "in_states")
        values = clean_fields(fields)
        return self._update(
            request_id, states=states, values=values, now=now, actor=actor, event=event, detail=detail
        )

    def due_for_expiry(self, now: datetime) -> list[ActionRequest]:
        """Requests still ``proposed`` whose ``expires_at`` is at or before ``now``, oldest first."""
        now = as_utc(now)
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
        now = as_utc(now)
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
        now = as_utc(now)
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
        now = as_utc(now)
        acting = col(ActionRequest.state).in_([RequestState.APPROVED.value, RequestState.RESTORING.value])
        due = sa.or_(col(ActionRequest.deadline_at).is_(None), col(ActionRequest.deadline_at) <= now)
        query = (
            select(ActionRequest)
            .where(sa.or_(ActionRequest.state == RequestState.UNCERTAIN.value, sa.and_(acting, due)))
            .order_by(col(ActionRequest.updated_at), col(ActionRequest.id))
        )
        with self._session() as session:
            return list(session.exec(query).all())

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
                    detail_json=detail_json(detail),
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
