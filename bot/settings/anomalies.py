"""The ``anomalies:`` section: spend anomalies within the hour, judged on each hour the usage
ledger rolls up (see :mod:`bot.jobs.anomalies` and :mod:`actions.alerts.anomalies`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from actions.alerts.anomalies import AnomalyRule


class AnomalySettings(BaseModel):
    """A team's or LocalQueue's GPU spend rate in a finished ledger hour against the median of
    the same UTC weekday and hour over the ``weeks`` before. ``enabled``: None (the default) runs
    the job when ``ledger.enabled``; ``factor``: an alert needs a rate over this many times the
    baseline, and ``floor_usd_per_hour`` over the baseline by more than this (USD per hour of
    excess; a new team's baseline is $0, so the floor alone judges it); ``by``: the scopes judged;
    ``lookback_hours``: how late a written hour is still judged (older ones, filled by a backfill,
    are not news)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool | None = None
    factor: float = Field(2.0, gt=1)
    floor_usd_per_hour: float = Field(20.0, ge=0)
    weeks: int = Field(4, ge=1, le=8)
    by: list[Literal["team", "localqueue"]] = Field(default_factory=lambda: ["team", "localqueue"], min_length=1)
    lookback_hours: int = Field(6, ge=1, le=48)

    def active(self, ledger_enabled: bool) -> bool:
        """Whether the job runs: ``enabled`` when set, else whenever the ledger is enabled."""
        return ledger_enabled if self.enabled is None else self.enabled

    def rule(self) -> AnomalyRule:
        return AnomalyRule(self.factor, self.floor_usd_per_hour, self.weeks, tuple(dict.fromkeys(self.by)))
