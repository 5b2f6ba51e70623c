"""The ``ledger:`` section: the hourly usage rollup from Prometheus into the database (see
:mod:`bot.jobs.ledger`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from actions.model.durations import Seconds


class LedgerSettings(BaseModel):
    """The usage ledger: each finished hour's GPU usage rolled up from Prometheus into the
    database, so reports read hours, not weeks of raw series. ``enabled``: run the rollup job
    and let reports (``report --source auto``, ``/gpu cost``, digests, alerts) read the ledger.
    ``interval_seconds``: how often the job looks for hours to roll up; ``hours_per_run``: at most
    this many hours per run (each hour is one set of PromQL queries over one hour), oldest first;
    ``backfill_days``: how far back a first start or a gap is filled from Prometheus history;
    ``retention_days``: rows older than this are dropped (at most ten years)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    interval_seconds: Seconds = Field(300, ge=60)
    hours_per_run: int = Field(24, ge=1, le=744)
    backfill_days: int = Field(90, ge=1, le=400)
    retention_days: int = Field(400, ge=1, le=3660)

    @model_validator(mode="after")
    def _keeps_what_it_fills(self) -> "LedgerSettings":
        if self.retention_days < self.backfill_days:
            raise ValueError(
                f"retention_days ({self.retention_days}) is shorter than backfill_days ({self.backfill_days}): "
                "filled hours would be dropped again; e.g. backfill_days: 90, retention_days: 400"
            )
        return self
