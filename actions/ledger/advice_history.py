"""Advice's history from the usage ledger (:class:`LedgerHistorySource`, a
:class:`~actions.ports.HistorySource`): the whole hours of each window the ledger holds, added up
by the database, and only the rest from Prometheus: the partial hours at the window's ends and the
finished hours not rolled up yet, each read as one piece
(:class:`~actions.ports.AdviceHourSource`). The figures equal those the queries of
:mod:`actions.sources.prometheus.history` give over the whole window (:mod:`actions.ledger.advice_tally`).

When the ledger lacks more than :data:`MAX_LIVE_HOURS` whole hours of a window (a ledger just
started, an hour rolled up with another busy threshold, a gap the backfill has not reached), the
whole round is read from Prometheus as before, and advice says so; with no Prometheus (``ledger``
only) the hours it lacks are left out and named.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Mapping, Sequence

from actions.ledger.advice_tally import AdviceTally
from actions.ledger.plan import ranges
from actions.model.advice_hours import AdviceHour
from actions.model.history import AdviceHistory
from actions.model.times import HOUR, ceil_hour, floor_hour, hours_between
from actions.policy.advice import AdvicePolicy
from actions.ports import AdviceHourSource, AdviceHourTable, HistorySource

MAX_LIVE_HOURS = 6  # whole hours read live one by one before a round reads Prometheus whole instead


def _pieces(start: datetime, end: datetime, lacking: Sequence[datetime]) -> list[tuple[datetime, datetime]]:
    """The pieces of ``(start, end]`` outside the held whole hours: the partial hours at either end
    and each of the ``lacking`` hours."""
    out = [(h, h + HOUR) for h in lacking]
    head = min(ceil_hour(start), end)
    if start < head:
        out.append((start, head))
    tail = max(floor_hour(end), head)
    if tail < end:
        out.append((tail, end))
    return sorted(out)


class LedgerHistorySource:
    """Advice history for the cluster named ``cluster`` from ``table`` (the ledger's advice
    hours) and, when given, ``live`` (pieces from Prometheus) and ``whole`` (the whole window from
    Prometheus, when the ledger lacks too much). ``last_read`` says what the latest fetch read:
    ``("ledger", hours, live pieces)`` or ``("prometheus", lacking hours, 0)``."""

    def __init__(self, table: AdviceHourTable, cluster: str, live: AdviceHourSource | None = None,
                 whole: HistorySource | None = None):
        self.table, self.cluster, self.live, self.whole = table, cluster, live, whole
        self.last_read: tuple[str, int, int] | None = None

    def fetch(
        self, at: datetime, policy: AdvicePolicy, consumers: Mapping[str, tuple[str, Sequence[str]]],
        teams: Mapping[str, Sequence[str]], reserved_nodes: Sequence[str] = (),
        container_pods: Sequence[tuple[str, str]] = (),
    ) -> AdviceHistory:
        """As :meth:`actions.sources.prometheus.history.AdviceHistorySource.fetch`. Raises
        ValueError for a naive ``at``, TelemetryError when Prometheus fails, and lets the
        database's errors through."""
        if at.tzinfo is None:
            raise ValueError(f"at={at!r} has no time zone; pass an aware UTC datetime")
        at = at.astimezone(timezone.utc)
        windows = {"pods": at - timedelta(seconds=policy.window_seconds),
                   "marks": at - timedelta(seconds=policy.commitment_window_seconds)}
        held = self.table.held(self.cluster, floor_hour(min(windows.values())), at, policy.busy_engine_pct)
        plans = {}
        for name, start in windows.items():
            whole = hours_between(start, at)
            plans[name] = (start, [h for h in whole if h in held], [h for h in whole if h not in held])
        lacking = {h for _, _, missing in plans.values() for h in missing}
        if self.whole is not None and len(lacking) > MAX_LIVE_HOURS:
            self.last_read = ("prometheus", len(lacking), 0)
            history = self.whole.fetch(at, policy, consumers, teams, reserved_nodes, container_pods)
            return _warned(history, f"the usage ledger lacks {len(lacking)} hours of advice's windows: "
                                    "this round read them from Prometheus (the hourly rollup fills them)")
        tally = AdviceTally(consumers, container_pods, teams, reserved_nodes)
        self.table.add_pods(tally, self.cluster, ranges(plans["pods"][1]))
        self.table.add_marks(tally, self.cluster, ranges(plans["marks"][1]))
        warnings = []
        pieces = {name: _pieces(start, at, missing) for name, (start, _, missing) in plans.items()}
        if self.live is not None:
            read: dict[tuple[datetime, datetime], AdviceHour] = {}
            for name, wanted in pieces.items():
                for a, b in wanted:
                    if (a, b) not in read:
                        read[(a, b)] = self.live.fetch(a, b, policy)
                    tally.add_hour(read[(a, b)], pods=name == "pods", marks=name == "marks")
            self.last_read = ("ledger", len(held), len(read))
        else:
            self.last_read = ("ledger", len(held), 0)
            gone = sorted({p for wanted in pieces.values() for p in wanted})
            if gone:
                hours = sum((b - a).total_seconds() for a, b in gone) / 3600
                shown = ", ".join(f"{a:%Y-%m-%d %H:%M}-{b:%H:%M}" for a, b in gone[:5])
                warnings.append(f"the usage ledger does not hold {hours:g} hours of advice's windows ({shown}"
                                f"{f' and {len(gone) - 5} more' if len(gone) > 5 else ''} UTC): they are left out")
        history = tally.history(at, policy.busy_quantile, policy.baseline_quantile, policy.window_seconds,
                                policy.commitment_window_seconds)
        return _warned(history, *warnings)


def _warned(history: AdviceHistory, *warnings: str) -> AdviceHistory:
    return replace(history, warnings=history.warnings + tuple(warnings)) if warnings else history
