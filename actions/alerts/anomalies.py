"""Spend anomalies within the hour: a team's (or a LocalQueue's) GPU spend rate in one finished
ledger hour against its own baseline for that hour of the week.

- *Spend rate* (USD per hour): the hour's requested GPU-hours in the ledger, each row priced with
  today's prices (:meth:`~actions.pricing.book.PriceBook.quote`, as a report prices them:
  instance type, capacity type, GPU model; a node without a capacity type as ``unknown``), so a
  price correction moves the baseline and the hour alike. :func:`spend_lines`.
- *Baseline*: the **median** of the scope's spend rate at the same UTC weekday and hour in each
  of the ``weeks`` (4) previous weeks. The median, not the mean: one past spike, or a holiday
  week, in the baseline does not move it, so an anomaly that happened three weeks ago neither
  hides today's nor makes a normal hour look low. A week the ledger does not hold (the bot was
  down) is left out; a week it holds in which the scope had no spend counts as $0/h, and so does
  a week before the scope first appeared (a *new* team or LocalQueue: the alert says so). An
  hour none of whose baseline weeks the ledger holds is not judged.
- *Anomalous*: rate > ``factor`` x baseline **and** excess (rate - baseline) > ``floor`` USD per
  hour. The floor is on the excess, what the anomaly costs: a team at $300/h that is $20/h over
  a usual $150/h is not news, nor is one going from $3/h to $9/h. With a baseline of $0 (new)
  the excess is the rate, so a new scope is judged against the floor alone.
- *Episode*: consecutive anomalous hours of one scope. The alert goes out on the first (``H``
  anomalous, ``H - 1`` not, or not held); a recovery on the first normal hour after one.

Pure: the ledger's rows, prices and ``now`` in, :class:`~actions.alerts.alert.Alert` values out.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from statistics import median
from typing import Callable, Iterable, Mapping, Sequence

from actions.alerts.alert import Alert, utc
from actions.cost.engine import team_of
from actions.cost.priced import Priced, price_of
from actions.model.kube import CapacityType
from actions.model.ledger import REQUESTED, LedgerRow
from actions.model.usage import NodeInfo
from actions.policy.teams import TeamDirectory
from actions.pricing.book import PriceBook
from actions.text import plain, usd

SPEND_ANOMALY = "spend-anomaly"
SPEND_RECOVERED = "spend-anomaly-recovered"
TEAM, LOCALQUEUE = "team", "localqueue"
HOUR = timedelta(hours=1)
WEEK = timedelta(days=7)
TOP = 3  # contributors named per dimension


@dataclass(frozen=True)
class SpendLine:
    """One hour's spend of one consumer (``kind``/``namespace``/``name``, its LocalQueue) on one
    GPU model and capacity type, in USD (the hour's GPU-hours x today's USD per GPU-hour)."""

    hour: datetime
    team: str
    namespace: str
    kind: str
    name: str
    queue: str | None
    gpu_model: str
    capacity: str
    usd: float


@dataclass(frozen=True)
class SpendSeries:
    """What a judgement reads: ``hours`` maps each hour the ledger holds (aware UTC start) to its
    spend lines (an hour held without spend maps to ``()``; an hour not held is absent);
    ``first_days`` maps ``(namespace, queue)`` (queue None: the namespace's spend outside any
    LocalQueue) to the first UTC day the ledger shows it spending, within the span read."""

    hours: Mapping[datetime, Sequence[SpendLine]]
    first_days: Mapping[tuple[str, str | None], date] = field(default_factory=dict)


@dataclass(frozen=True)
class AnomalyRule:
    """``factor`` (x baseline) and ``floor_usd_per_hour`` (of excess) both to be exceeded;
    ``weeks`` of baseline; ``by``: the scopes judged (``team``, ``localqueue``)."""

    factor: float = 2.0
    floor_usd_per_hour: float = 20.0
    weeks: int = 4
    by: tuple[str, ...] = (TEAM, LOCALQUEUE)


@dataclass(frozen=True)
class Scope:
    """A team (``queue`` None) or a LocalQueue (``namespace``/``queue``, owned by ``team``)."""

    by: str
    team: str
    namespace: str = ""
    queue: str | None = None

    @property
    def key(self) -> str:
        return f"{TEAM}:{self.team}" if self.by == TEAM else f"{LOCALQUEUE}:{self.namespace}/{self.queue}"

    @property
    def shown(self) -> str:
        if self.by == TEAM:
            return f"team *{plain(self.team)}*"
        return f"LocalQueue *{plain(self.namespace)}/{plain(self.queue)}* (team {plain(self.team)})"

    def holds(self, line: SpendLine) -> bool:
        if self.by == TEAM:
            return line.team == self.team
        return line.namespace == self.namespace and line.queue == self.queue


@dataclass(frozen=True)
class Judgement:
    """One hour judged: the ``alerts`` of episodes starting in it and the ``recoveries`` of
    episodes that ended before it (both :class:`Alert`, kinds :data:`SPEND_ANOMALY` and
    :data:`SPEND_RECOVERED`, period key ``"<scope key>@<hour>"``)."""

    hour: datetime
    alerts: tuple[Alert, ...] = ()
    recoveries: tuple[Alert, ...] = ()
    judged: bool = True  # False: no baseline week of this hour is held, nothing judged


def spend_lines(
    rows: Iterable[LedgerRow], prices: PriceBook, teams: TeamDirectory, team_label: str | None,
) -> list[SpendLine]:
    """The requested GPU-hours of ``rows`` priced with ``prices`` as a report prices a node
    (:func:`~actions.cost.priced.price_of`, once per instance type, capacity type and GPU model), each row's team as a report names it
    (:func:`~actions.cost.engine.team_of`, the row's own team label). A row no price covers
    counts $0, as in a report."""
    quotes: dict[tuple, Priced] = {}
    out: list[SpendLine] = []
    for r in rows:
        if r.measure != REQUESTED or r.gpu_hours <= 0:
            continue
        capacity = CapacityType(r.capacity_type) if r.capacity_type else None
        key = (r.instance_type, capacity, r.gpu_model, r.gpu_product)
        if key not in quotes:
            quotes[key] = price_of(NodeInfo(r.node, r.instance_type, capacity, r.gpu_product), r.gpu_model, prices)
        pr = quotes[key]
        rate, shown_model, shown_capacity = pr.usd_per_gpu_hour, pr.gpu_model, pr.capacity_label
        labels = {r.namespace: {team_label: r.namespace_team}} if team_label and r.namespace_team else {}
        out.append(SpendLine(
            r.hour, team_of(r.namespace, teams, labels, team_label), r.namespace, r.consumer_kind, r.consumer_name,
            r.queue, shown_model, shown_capacity, r.gpu_hours * rate,
        ))
    return out


def baseline_hours(hour: datetime, weeks: int) -> list[datetime]:
    """The hours a judgement of ``hour`` reads: it, the hour before, and both a week, two weeks...
    ``weeks`` weeks earlier (the same UTC weekday and hour)."""
    return [h - WEEK * w for h in (hour, hour - HOUR) for w in range(weeks + 1)]


@dataclass(frozen=True)
class _Verdict:
    rate: float
    baseline: float
    weeks_held: int
    weeks_new: int
    anomalous: bool

    @property
    def excess(self) -> float:
        return self.rate - self.baseline


def _total(lines: Iterable[SpendLine], scope: Scope) -> float:
    return sum(x.usd for x in lines if scope.holds(x))


def _first_day(series: SpendSeries, scope: Scope, team_of_ns: Mapping[str, str]) -> date | None:
    days = [d for (ns, q), d in series.first_days.items()
            if (scope.by == TEAM and team_of_ns.get(ns, ns) == scope.team)
            or (scope.by == LOCALQUEUE and ns == scope.namespace and q == scope.queue)]
    return min(days) if days else None


def _verdict(series: SpendSeries, scope: Scope, hour: datetime, rule: AnomalyRule, first: date | None) -> _Verdict | None:
    held = [hour - WEEK * w for w in range(1, rule.weeks + 1) if hour - WEEK * w in series.hours]
    if hour not in series.hours or not held:
        return None
    values = [_total(series.hours[h], scope) for h in held]
    new = sum(1 for h in held if first is None or first > h.date())
    rate = _total(series.hours[hour], scope)
    base = median(values)
    anomalous = rate > rule.factor * base and rate - base > rule.floor_usd_per_hour
    return _Verdict(rate, base, len(held), new, anomalous)


def _scopes(lines: Iterable[SpendLine], by: Sequence[str]) -> set[Scope]:
    out: set[Scope] = set()
    for x in lines:
        if TEAM in by:
            out.add(Scope(TEAM, x.team))
        if LOCALQUEUE in by and x.queue:
            out.add(Scope(LOCALQUEUE, x.team, x.namespace, x.queue))
    return out


def judge_hour(series: SpendSeries, hour: datetime, now: datetime, rule: AnomalyRule = AnomalyRule()) -> Judgement:
    """Judge the finished ``hour`` (aware UTC hour start, ended by ``now``) against ``series``
    (at least the hours of :func:`baseline_hours`): an alert for each scope whose episode starts
    in ``hour`` (anomalous now, not in the hour before or that hour not held) and a recovery for
    each scope anomalous in the hour before and not in ``hour``. Raises ValueError for an hour
    that has not ended by ``now`` or a naive datetime."""
    hour, now = utc(hour), utc(now)
    if hour + HOUR > now:
        raise ValueError(f"hour {hour.isoformat()} has not ended at {now.isoformat()}")
    if hour not in series.hours or all(hour - WEEK * w not in series.hours for w in range(1, rule.weeks + 1)):
        return Judgement(hour, judged=False)
    team_of_ns = {x.namespace: x.team for lines in series.hours.values() for x in lines}
    before = hour - HOUR
    alerts: list[Alert] = []
    recoveries: list[Alert] = []
    scopes = _scopes([*series.hours[hour], *series.hours.get(before, ())], rule.by)
    for scope in sorted(scopes, key=lambda s: s.key):
        first = _first_day(series, scope, team_of_ns)
        now_v = _verdict(series, scope, hour, rule, first)
        was = _verdict(series, scope, before, rule, first)
        assert now_v is not None  # the hour and a baseline week are held
        was_anomalous = was is not None and was.anomalous
        if now_v.anomalous and not was_anomalous:
            alerts.append(_alert(series, scope, hour, now_v, rule, first))
        elif was_anomalous and not now_v.anomalous:
            recoveries.append(_recovery(scope, hour, now_v, rule))
    return Judgement(hour, tuple(alerts), tuple(recoveries))


def _shares(series: SpendSeries, scope: Scope, hour: datetime, rule: AnomalyRule,
            part: Callable[[SpendLine], str]) -> list[tuple[str, float, float]]:
    """``(part, share of the increase 0-1, increase USD/h)`` of the parts whose spend rose over
    their own baseline (median of the same weeks), largest first, at most :data:`TOP`."""
    held = [hour - WEEK * w for w in range(1, rule.weeks + 1) if hour - WEEK * w in series.hours]

    def by_part(lines: Iterable[SpendLine]) -> dict[str, float]:
        acc: dict[str, float] = defaultdict(float)
        for x in lines:
            if scope.holds(x):
                acc[part(x)] += x.usd
        return acc

    now = by_part(series.hours[hour])
    weeks = [by_part(series.hours[h]) for h in held]
    rises = {p: usd_now - median([w.get(p, 0.0) for w in weeks]) for p, usd_now in now.items()}
    rises = {p: r for p, r in rises.items() if r > 0}
    total = sum(rises.values())
    top = sorted(rises.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]
    return [(p, r / total, r) for p, r in top]


def _consumer(x: SpendLine) -> str:
    queue = f" (LocalQueue {plain(x.queue)})" if x.queue else ""
    return f"`{plain(x.kind)} {plain(x.namespace)}/{plain(x.name)}`{queue}"


def _rate(x: float) -> str:
    return f"{usd(x)}/h"


def period_key(scope: Scope, hour: datetime) -> str:
    return f"{scope.key}@{hour.strftime('%Y-%m-%dT%H:00Z')}"


def _hour_text(hour: datetime) -> str:
    return f"{hour.strftime('%a %Y-%m-%d %H:00')}-{(hour + HOUR).strftime('%H:00')} UTC"


def _alert(series: SpendSeries, scope: Scope, hour: datetime, v: _Verdict, rule: AnomalyRule,
           first: date | None) -> Alert:
    ratio = f"{v.rate / v.baseline:.1f}x" if v.baseline > 0 else "no usual spend"
    lines = [
        f"GPU spend of {scope.shown} in {_hour_text(hour)}: *{_rate(v.rate)}* against a baseline of "
        f"{_rate(v.baseline)} ({ratio}, {_rate(v.excess)} over). At this rate: *{usd(v.rate * 24)} a day*, "
        f"{usd(v.excess * 24)} a day over the baseline.",
        f"Baseline: the median of the same hour on the {v.weeks_held} previous "
        f"{hour.strftime('%A')}s the ledger holds; an alert needs over {rule.factor:g}x it and over "
        f"{_rate(rule.floor_usd_per_hour)} above it. One alert per episode; a note follows when it ends.",
    ]
    if v.weeks_new:
        since = f"no GPU spend before {first.isoformat()}" if first else "no GPU spend before this hour"
        lines.append(
            f"New: {since}, so its baseline is $0/h for {v.weeks_new} of the {v.weeks_held} weeks; "
            f"judged against the {_rate(rule.floor_usd_per_hour)} floor alone." if v.weeks_new == v.weeks_held else
            f"New: {since}, so its baseline is $0/h for {v.weeks_new} of the {v.weeks_held} weeks."
        )
    fields = []
    for label, part in (("Top workloads", _consumer), ("GPU models", lambda x: plain(x.gpu_model)),
                        ("Capacity", lambda x: plain(x.capacity))):
        shares = _shares(series, scope, hour, rule, part)
        if shares:
            fields.append((f"{label} (share of the increase)",
                           "\n".join(f"{p}: {s:.0%} (+{_rate(r)})" for p, s, r in shares)))
    what = scope.team if scope.by == TEAM else f"{scope.namespace}/{scope.queue}"
    return Alert(
        team=scope.team, kind=SPEND_ANOMALY, period_key=period_key(scope, hour),
        title=f"GPU spend anomaly: {scope.by} {what} at {_rate(v.rate)}", text="\n".join(lines),
        fields=tuple(fields), usd=v.rate,
    )


def _recovery(scope: Scope, hour: datetime, v: _Verdict, rule: AnomalyRule) -> Alert:
    what = scope.team if scope.by == TEAM else f"{scope.namespace}/{scope.queue}"
    text = (f"GPU spend of {scope.shown} is back to normal in {_hour_text(hour)}: {_rate(v.rate)} against a "
            f"baseline of {_rate(v.baseline)} (an alert needs over {rule.factor:g}x and "
            f"{_rate(rule.floor_usd_per_hour)} above it).")
    return Alert(
        team=scope.team, kind=SPEND_RECOVERED, period_key=period_key(scope, hour),
        title=f"GPU spend back to normal: {scope.by} {what}", text=text, usd=v.rate,
    )
