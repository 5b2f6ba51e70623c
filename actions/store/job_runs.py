"""Scheduled job runs (``job_run``): each run claimed by its fire time, so across replicas and
restarts a run happens once, and its outcome.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, col, select

from actions.store.schema import StoreBase, StoreModel, UTCDateTime, as_utc


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


class JobRuns(StoreBase):
    """Claiming and finishing scheduled job runs."""

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
            .values(job_id=job_id, scheduled_at=as_utc(scheduled_at, "scheduled_at"), holder=holder, started_at=as_utc(now))
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
                sa.update(table).where(table.c.id == run_id).values(finished_at=as_utc(now), outcome=outcome, detail=detail)
            )

    def job_runs(self, job_id: str | None = None) -> list[JobRun]:
        """Claimed runs, oldest scheduled first, optionally only ``job_id``'s."""
        query = select(JobRun)
        if job_id is not None:
            query = query.where(JobRun.job_id == job_id)
        with self._session() as session:
            return list(session.exec(query.order_by(col(JobRun.scheduled_at), col(JobRun.id))).all())
