"""How advice is judged (:class:`AdvicePolicy`, the ``advice:`` settings: windows, quantiles,
headroom, the minimum saving) and the committed rates it prices commitments at
(:class:`CommitmentRate`). Pydantic models the YAML validates into; no I/O.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from actions.model.durations import Hours, Seconds
from actions.pricing.catalog import by_family


class CommitmentRate(BaseModel):
    """A committed price for one GPU family: ``usd_per_gpu_hour`` (USD per GPU-hour, what a
    1- or 3-year reservation or savings plan costs per GPU-hour used or not), the ``term`` it
    binds (``"1 year, no upfront"``), where the figure comes from (``source``: "our EDP", "AWS
    Savings Plans pricing page") and when it was checked (``as_of``, a date)."""

    model_config = ConfigDict(extra="forbid")

    usd_per_gpu_hour: float = Field(gt=0)
    term: str = "1 year"
    source: str = Field(min_length=1)
    as_of: str = Field(min_length=1)


class AdvicePolicy(BaseModel):
    """How advice is judged (the ``advice`` section of the config).

    ``window_seconds`` of history per consumer (default 7 days); ``commitment_window_seconds`` of
    hourly history per team for commitments (default 30 days); a GPU counts as busy when its
    engine activity is above ``busy_engine_pct`` (percent 0-100); ``busy_quantile`` (ratio 0-1)
    of the GPUs busy at once decides how many a consumer needs; ``fb_headroom`` (ratio 0-1) is
    added to the peak framebuffer before a MIG profile or a smaller GPU must hold it; on a smaller
    GPU the peak activity scaled by the datasheets' throughput ratio must stay at or under
    ``smaller_gpu_max_pct`` (percent 0-100); ``baseline_quantile``
    (ratio 0-1) of hourly GPUs in use is the steady baseline worth committing to, and
    ``min_baseline_coverage`` (ratio 0-1) of the period's hours must have seen GPUs in use or
    the baseline is 0. ``interruption_hours``/``checkpoint_hours`` price spot when a consumer's
    annotations do not say (REFERENCE: one interruption per 4 h on AWS GPU spot).
    ``commitment_rates`` maps GPU family -> your committed rate; reserved GPUs idle (activity at
    or under ``busy_engine_pct``) in more than ``reserved_idle_ratio`` (ratio 0-1) of the
    commitment window's hours are advice too. Advice saving less than
    ``min_saving_usd_per_month`` (USD) is left out. Every ``post_every_seconds`` the advice that
    is new or changed since it was last posted goes to each team's channel. Right before a change
    is applied its evidence is read again over the time since the advice was made, at least the
    last ``recheck_window_seconds`` (default 1 h) and at most ``window_seconds``.
    ``history_source``: ``auto`` reads the history from the usage ledger's advice facts when
    ``ledger.enabled`` (the whole hours it holds; the rest from Prometheus), ``prometheus`` reads
    the windows whole from Prometheus every round.
    """

    model_config = ConfigDict(extra="forbid")

    window_seconds: Seconds = Field(7 * 86400, ge=3600)
    commitment_window_seconds: Seconds = Field(30 * 86400, ge=86400)
    busy_engine_pct: float = Field(1.0, ge=0, le=100)
    busy_quantile: float = Field(0.99, gt=0, le=1)
    fb_headroom: float = Field(0.10, ge=0, le=1)
    baseline_quantile: float = Field(0.10, gt=0, lt=1)
    min_baseline_coverage: float = Field(0.9, gt=0, le=1)
    interruption_hours: Hours = Field(4.0, gt=0)
    checkpoint_hours: Hours = Field(0.5, ge=0)
    min_saving_usd_per_month: float = Field(10.0, ge=0)
    post_every_seconds: Seconds | None = Field(
        86400, ge=3600, description="how often new or changed advice is posted to team channels (null: never)",
    )

    @field_validator("commitment_rates")
    @classmethod
    def _family_keys(cls, v: dict[str, CommitmentRate]) -> dict[str, CommitmentRate]:
        return by_family(v, "commitment_rates")
    commitment_rates: dict[str, CommitmentRate] = Field(default_factory=dict)
    smaller_gpu_max_pct: float = Field(80.0, gt=0, le=100)
    reserved_idle_ratio: float = Field(0.2, gt=0, le=1)
    recheck_window_seconds: Seconds = Field(3600, ge=600)
    history_source: Literal["auto", "prometheus"] = "auto"
