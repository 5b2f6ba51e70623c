"""The usage ledger at its edges: rolling finished hours up from Prometheus into the database,
and reading a period's usage back from it.

:class:`LedgerRollup` rolls one hour up with the same PromQL a report sends
(:class:`~actions.sources.prometheus.usage.PrometheusUsage` over that one hour: one set of
queries, however many hours the ledger holds) and backfills missing hours oldest first, as far
back as Prometheus holds data. :class:`LedgerUsage` is a usage source
(:class:`actions.ports.UsageSource`) over the ledger: whole hours from the database, and in
``auto`` mode the partial hours at either end and the current hour from Prometheus; the hours
neither holds are named in the usage's warnings.

With :class:`AdviceHours`, each hour also keeps what advice needs
(:class:`~actions.model.advice_hours.AdviceHour`, read by
:class:`~actions.ledger.advice_history.LedgerHistorySource`), and an hour written before the ledger
kept it (or read with another busy threshold) is missing until those facts are rolled up too: the
backfill fills them without reading the hour's usage again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Callable, Sequence

from actions.cost.gc_pause import gc_paused
from actions.ledger.plan import PeriodPlan, plan_period, plan_warnings
from actions.ledger.rows import merge_usage, price_groups, rows_from_usage, usage_from_rows
from actions.model.ledger import EMPTY, FILLED, PARTIAL
from actions.model.times import HOUR, floor_hour, hours_between
from actions.model.usage import UsageData
from actions.policy.advice import AdvicePolicy
from actions.policy.rules import Policy
from actions.ports import AdviceHourSource, AdviceHourTable, HourlyUsageSource, LedgerTable
from actions.pricing.book import PriceBook

SOURCES = ("auto", "ledger", "prometheus")


@dataclass(frozen=True)
class Rolled:
    """One hour's rollup: its ``status`` and ``rows`` written (``written`` False when another
    writer had written the hour first, or it was held already); ``advice`` whether its advice
    facts were written now."""

    hour: datetime
    status: str
    rows: int
    written: bool
    advice: bool = False


@dataclass(frozen=True)
class AdviceHours:
    """Where an hour's advice facts come from (``source``), go (``table``) and the policy they are
    read with (its ``busy_engine_pct``)."""

    source: AdviceHourSource
    table: AdviceHourTable
    policy: AdvicePolicy


class LedgerRollup:
    """Rolls finished hours of ``prometheus`` up into ``ledger`` for the cluster named
    ``cluster``, with ``team_label`` (``costs.team_label``) and ``prices`` (recorded as the price
    in force)."""

    def __init__(
        self, prometheus: HourlyUsageSource, ledger: LedgerTable, *, cluster: str, team_label: str | None,
        prices: PriceBook | None = None, advice: AdviceHours | None = None,
    ):
        self.prometheus, self.ledger, self.cluster = prometheus, ledger, cluster
        self.team_label, self.prices, self.advice = team_label, prices, advice

    def roll_up(self, hour: datetime, policy: Policy, now: datetime) -> Rolled:
        """Read the hour starting at ``hour`` from Prometheus and write what the ledger lacks of
        it: its usage rows, and its advice facts when kept. Raises ValueError when ``hour`` is
        not finished at ``now`` or not the start of an hour, TelemetryError when Prometheus fails
        (what was read before stays written)."""
        if hour != floor_hour(hour):
            raise ValueError(f"{hour.isoformat()} is not the start of an hour; e.g. 2026-11-20T06:00:00Z")
        if hour + HOUR > now:
            raise ValueError(f"the hour {hour:%Y-%m-%d %H:%M} UTC is not finished at {now.isoformat()}")
        held = self.ledger.held_hours(self.cluster, hour, hour + HOUR).get(hour)
        rolled = Rolled(hour, held, 0, False) if held else self._usage(hour, policy, now)
        a = self.advice
        if a is None or self._advice_held(hour, hour + HOUR):
            return rolled
        facts = a.source.fetch(hour, hour + HOUR, a.policy)
        return replace(rolled, advice=a.table.write_hour(self.cluster, facts, now))

    def _advice_held(self, start: datetime, end: datetime) -> set[datetime]:
        assert self.advice is not None
        return self.advice.table.held(self.cluster, start, end, self.advice.policy.busy_engine_pct)

    def _usage(self, hour: datetime, policy: Policy, now: datetime) -> Rolled:
        usage = self.prometheus.fetch(hour, hour + HOUR, policy)
        rows = rows_from_usage(usage, hour, self.cluster, self.team_label, self.prices)
        no_pods = any("kube-state-metrics" in w for w in usage.warnings)
        status = EMPTY if no_pods else PARTIAL if usage.warnings else FILLED
        detail = "; ".join(usage.warnings) or None
        written = self.ledger.write_hour(self.cluster, hour, rows, status, now, detail)
        return Rolled(hour, status, len(rows), written)

    def missing(self, since: datetime, now: datetime) -> list[datetime]:
        """The finished hours in ``[since, now)`` not written yet (or, with :class:`AdviceHours`,
        without their advice facts), oldest first."""
        until = floor_hour(now)
        held = self.ledger.held_hours(self.cluster, since, until)
        advised = self._advice_held(since, until) if self.advice is not None else None
        return [h for h in hours_between(since, until) if h not in held or (advised is not None and h not in advised)]

    def reachable(self, todo: Sequence[datetime], now: datetime) -> list[datetime]:
        """Of the missing hours ``todo`` (oldest first), those Prometheus can fill: an hour whose
        usage is missing from the first hour Prometheus holds kube-state-metrics series for, an
        hour whose usage the ledger holds (only its advice facts are missing) from the first
        hour it holds DCGM series for."""
        if not todo:
            return []
        held = self.ledger.held_hours(self.cluster, todo[0], todo[-1] + HOUR)

        def first(hours: list[datetime], source) -> datetime | None:
            return source.first_data_hour(hours[0], floor_hour(now)) if hours and source is not None else None

        usage = first([h for h in todo if h not in held], self.prometheus)
        advice = first([h for h in todo if h in held], self.advice.source if self.advice else None)
        return [h for h in todo if (h in held and advice is not None and h >= advice)
                or (h not in held and usage is not None and h >= usage)]

    def backfill(
        self, since: datetime, now: datetime, policy: Policy, *, limit: int | None = None,
        progress: Callable[[Rolled], None] | None = None,
    ) -> list[Rolled]:
        """Roll up the missing finished hours in ``[since, now)`` that Prometheus holds, oldest
        first, at most ``limit`` of them. Hours before Prometheus's first data stay missing.
        ``progress`` is told of each hour. Raises TelemetryError when Prometheus fails (the hours
        already written stay written)."""
        todo = self.reachable(self.missing(since, now), now)[: limit if limit is not None else None]
        done = []
        for hour in todo:
            rolled = self.roll_up(hour, policy, now)
            done.append(rolled)
            if progress is not None:
                progress(rolled)
        return done


class LedgerUsage:
    """A usage source over the ledger (``source`` ``ledger``: never a PromQL query) or over the
    ledger and Prometheus (``auto``: the partial hours at the period's ends and the current hour
    read live). ``kept`` says whether the hourly job keeps the ledger (``ledger.enabled``); in
    ``auto`` a ledger not kept (filled by ``ledger backfill``) is read for a period whose whole
    hours it holds, and any other period straight from Prometheus. ``last_plan`` is the plan of
    the latest :meth:`fetch`, for a caller that shows which hours came from where (the CLI);
    with threads sharing the source it may be another thread's, so chat and jobs read the
    warnings of the usage they got instead."""

    def __init__(
        self, ledger: LedgerTable, prometheus: HourlyUsageSource | None, *, cluster: str,
        team_label: str | None, source: str = "auto", kept: bool = True,
    ):
        if source not in ("auto", "ledger"):
            raise ValueError(f"source must be auto or ledger, got {source!r}")
        if source == "auto" and prometheus is None:
            raise ValueError("source auto reads the current hour from Prometheus; pass one")
        self.ledger, self.prometheus, self.cluster = ledger, prometheus, cluster
        self.team_label, self.source, self.kept = team_label, source, kept
        self.last_plan: PeriodPlan | None = None

    @property
    def step_seconds(self) -> float:
        return self.prometheus.step_seconds if self.prometheus is not None else 300

    def plan(self, start: datetime, end: datetime) -> PeriodPlan:
        """Which hours of ``[start, end]`` come from the ledger, from Prometheus, or nowhere."""
        held = self.ledger.held_hours(self.cluster, floor_hour(start), end)
        return plan_period(start, end, held, live=self.source == "auto")

    def fetch(self, start: datetime, end: datetime, policy: Policy, namespaces: Sequence[str] | None = None) -> UsageData:
        """Usage over ``[start, end]`` (aware), as :meth:`~actions.sources.prometheus.usage.PrometheusUsage.fetch` gives it, with
        the hours neither the ledger nor (``auto``) Prometheus holds named in the warnings.
        Raises ValueError for naive or reversed times, TelemetryError when Prometheus fails."""
        if start.tzinfo is None or end.tzinfo is None:
            raise ValueError("start and end need a time zone; pass aware UTC datetimes")
        if end <= start:
            raise ValueError(f"end {end} is not after start {start}")
        start, end = start.astimezone(timezone.utc), end.astimezone(timezone.utc)
        plan = self.plan(start, end)
        if self.source == "auto" and not self.kept and (plan.missing or not plan.ledger):
            # Nothing fills a ledger that is not kept: its gaps are Prometheus's to answer, whole.
            assert self.prometheus is not None  # auto mode has one (checked at construction)
            self.last_plan = PeriodPlan(start, end, live=((start, end),))
            return self.prometheus.fetch(start, end, policy)
        self.last_plan = plan
        with gc_paused():
            rows = self.ledger.key_sums(self.cluster, plan.ledger, namespaces)
            parts = [
                usage_from_rows(
                    rows, (), start, end, team_label=self.team_label, step_seconds=self.step_seconds,
                    idle_threshold_pct=policy.engine_idle_pct,
                )
            ]
        for a, b in plan.live:
            assert self.prometheus is not None  # auto mode has one (checked at construction)
            parts.append(self.prometheus.fetch(a, b, policy))
        usage = merge_usage(parts, start, end)
        # The daily split last: summed per price group of the merged usage, the live hours'
        # node labels included, so each row is priced as its own node would be.
        with gc_paused():
            days = self.ledger.daily_sums(self.cluster, plan.ledger, namespaces, price_groups(usage))
            usage = replace(usage, daily=tuple(d for d in days if d.gpu_hours > 0) + usage.daily)
        return replace(usage, warnings=plan_warnings(plan) + usage.warnings)


def retention_cutoff(now: datetime, retention_days: int) -> datetime:
    """The hour before which rows are dropped: ``retention_days`` before ``now``'s hour."""
    return floor_hour(now) - timedelta(days=retention_days)
