"""Budget alerts: a team's month-to-date spend at 50, 80 and 100% of its monthly budget (USD),
and a month-end forecast over it. Pure: spend and ``now`` are parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Mapping, Sequence
from zoneinfo import ZoneInfo

from actions.alerts.alert import FORECAST, Alert, utc
from actions.text import plain, usd

BUDGET_KINDS = {50.0: "budget-50", 80.0: "budget-80", 100.0: "budget-100"}


# --- budgets -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MonthProgress:
    """Where ``now`` falls in its calendar month (in ``tz``): ``key`` ``"2026-11"``,
    ``elapsed_seconds`` since the month began and ``total_seconds`` in the whole month."""

    key: str
    elapsed_seconds: float
    total_seconds: float

    @property
    def fraction(self) -> float:
        """Ratio 0-1 of the month gone by."""
        return self.elapsed_seconds / self.total_seconds


def month_progress(now: datetime, tz: str = "UTC") -> MonthProgress:
    """The calendar month of ``now`` in time zone ``tz`` (IANA name). Raises ValueError for a
    naive ``now`` and ``zoneinfo.ZoneInfoNotFoundError`` for an unknown zone."""
    local = utc(now).astimezone(ZoneInfo(tz))
    start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if local.month == 12:
        end = start.replace(year=local.year + 1, month=1)
    else:
        end = start.replace(month=local.month + 1)
    # Subtracting aware datetimes of one zone ignores DST shifts; go through UTC to count them.
    total = (end.astimezone(timezone.utc) - start.astimezone(timezone.utc)).total_seconds()
    elapsed = (local.astimezone(timezone.utc) - start.astimezone(timezone.utc)).total_seconds()
    return MonthProgress(key=f"{local.year:04d}-{local.month:02d}", elapsed_seconds=elapsed, total_seconds=total)


def month_end_forecast(month_to_date_usd: float, progress: MonthProgress) -> float | None:
    """The month's cost in USD if it goes on as it went so far: a linear extrapolation,
    ``month_to_date / fraction_of_month_elapsed``. ``None`` at the very start of the month."""
    if progress.elapsed_seconds <= 0:
        return None
    return month_to_date_usd / progress.fraction


def budget_kind(threshold_percent: float) -> str:
    """The alert kind of a budget threshold (percent 0-100 of the monthly budget).

    Raises ValueError for a threshold without a kind (the store knows 50, 80 and 100)."""
    kind = BUDGET_KINDS.get(float(threshold_percent))
    if kind is None:
        raise ValueError(
            f"budget threshold {threshold_percent:g}% has no alert kind; use some of {sorted(BUDGET_KINDS)}"
        )
    return kind


def budget_alerts(
    team: str,
    budget_usd: float,
    month_to_date_usd: float,
    now: datetime,
    *,
    thresholds_percent: Sequence[float] = (50.0, 80.0, 100.0),
    tz: str = "UTC",
    min_forecast_elapsed_seconds: float = 86400.0,
    clusters: Sequence[str] = (),
    missing: Mapping[str, str] | None = None,
) -> list[Alert]:
    """Budget alerts for ``team`` with a budget of ``budget_usd`` USD per month, having spent
    ``month_to_date_usd`` USD so far this month (in ``tz``).

    Returns at most two alerts: the highest threshold (percent 0-100) reached, which also claims
    the lower ones so they are not sent after it; and the month-end forecast when the linear
    extrapolation of the month so far exceeds the budget while the spend has not reached it yet
    (only once ``min_forecast_elapsed_seconds`` of the month have passed: a forecast from the
    first hours is noise). With several ``clusters`` the spend is the team's in all of them
    together, and the alerts say so, naming each cluster of ``missing`` (cluster -> why) whose
    spend could not be read and is not counted. Raises ValueError for a budget not > 0 or a
    threshold without a kind.
    """
    if not budget_usd > 0:
        raise ValueError(f"budget must be > 0 USD per month, got {budget_usd}")
    kinds = sorted((float(t), budget_kind(t)) for t in thresholds_percent)
    progress = month_progress(now, tz)
    used_pct = 100.0 * month_to_date_usd / budget_usd
    forecast = month_end_forecast(month_to_date_usd, progress)
    fields = (
        ("Budget", f"{usd(budget_usd)}/month"),
        ("Spent this month", f"{usd(month_to_date_usd)} ({used_pct:.0f}%)"),
        (
            "Month-end forecast",
            "n/a" if forecast is None else f"{usd(forecast)} (linear, from {progress.fraction:.0%} of the month)",
        ),
    )
    across = ""
    if len(clusters) > 1 or missing:
        counted = [c for c in clusters if c not in (missing or {})]
        across = f" Spend summed over clusters {plain(', '.join(counted))}."
        if missing:
            across += " Not counted, could not be read: " + "; ".join(
                f"{plain(c)} ({plain(why)})" for c, why in missing.items()) + "."
        fields += (("Clusters", plain(", ".join(counted)) + (f" (missing {plain(', '.join(missing))})" if missing else "")),)
    alerts: list[Alert] = []
    reached = [(t, k) for t, k in kinds if used_pct >= t]
    if reached:
        threshold, kind = reached[-1]
        alerts.append(
            Alert(
                team=team,
                kind=kind,
                period_key=progress.key,
                title=f"{team} has used {used_pct:.0f}% of its GPU budget for {progress.key}",
                text=(
                    f"*{plain(team)}* has spent {usd(month_to_date_usd)} of its {usd(budget_usd)} monthly GPU budget "
                    f"({used_pct:.0f}%, past the {threshold:g}% mark).{across}"
                ),
                fields=fields,
                usd=month_to_date_usd,
                also_claims=tuple(k for _, k in reached[:-1]),
            )
        )
    if (
        forecast is not None
        and forecast > budget_usd
        and month_to_date_usd < budget_usd
        and progress.elapsed_seconds >= min_forecast_elapsed_seconds
    ):
        alerts.append(
            Alert(
                team=team,
                kind=FORECAST,
                period_key=progress.key,
                title=f"{team} is on course to exceed its GPU budget for {progress.key}",
                text=(
                    f"At this month's pace *{plain(team)}* ends {progress.key} at about {usd(forecast)}, "
                    f"{usd(forecast - budget_usd)} over its {usd(budget_usd)} budget "
                    f"(linear extrapolation of {usd(month_to_date_usd)} spent in {progress.fraction:.0%} of the month).{across}"
                ),
                fields=fields,
                usd=forecast,
            )
        )
    return alerts
