"""Alert decisions: budgets, queue waits, idle on-demand GPUs and the spot ratio.

Pure: every function takes data and an explicit ``now`` and returns :class:`Alert` objects. Each
alert is identified by ``(team, kind, period_key)``; the caller claims that triple in the store
before posting (``Store.record_alert``), so an alert goes out once however often it is decided,
and from one replica only.

Period keys:

- budget thresholds and the month-end forecast: the calendar month in the team's time zone,
  ``"2026-11"``, so each threshold fires once per month per team;
- a waiting Workload: its uid, so it fires once per Workload;
- a ClusterQueue's admission-wait p90: ``"clusterqueue/<name>/<YYYY-MM-DD>"``, at most daily;
- idle on-demand GPUs and the spot ratio: the UTC day, ``"2026-11-23"``, at most daily per team.

With several clusters, the queue-wait, ClusterQueue and spot-ratio alerts are decided per cluster
and :func:`in_cluster` names their cluster; the first cluster's keep the keys above (as its
findings do, :func:`actions.fleet.cluster_key`), every other cluster's start with its name
(``"gpu-west:clusterqueue/gpu-cq/2026-11-23"``), so the same ClusterQueue or team in two clusters
gives two alerts. Budgets are a team's across every cluster; idle on-demand GPUs one alert per
team naming each GPU's cluster.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Mapping, Sequence
from zoneinfo import ZoneInfo

from actions.fleet import cluster_key
from actions.freeing import FreeingPlan
from actions.model import CapacityType, Finding, Node
from actions.queue import QueueReport, wait_sentence
from actions.text import duration, gpu_amount, plain, usd

BUDGET_KINDS = {50.0: "budget-50", 80.0: "budget-80", 100.0: "budget-100"}
FORECAST = "budget-forecast"
QUEUE_WAIT = "queue-wait"
IDLE_ON_DEMAND = "idle-on-demand"
SPOT_RATIO = "spot-ratio"


@dataclass(frozen=True)
class Alert:
    """One alert to post to ``team``'s channel.

    ``title`` is one line; ``text`` mrkdwn; ``fields`` (label, value) pairs shown side by side;
    ``usd`` the dollar figure the alert is about (USD for budgets, USD per hour for idle GPUs;
    ``None`` when it has none). ``also_claims`` are kinds this alert makes redundant for the same
    period (a 100% budget alert covers the 50% and 80% ones not yet sent). ``approve_all`` are the
    proposals that together free enough GPUs for a waiting Workload (:mod:`actions.freeing`).
    ``cluster`` is the cluster the alert is about (empty: a bot of one cluster, or an alert
    about a team across every cluster).
    """

    team: str
    kind: str
    period_key: str
    title: str
    text: str
    fields: tuple[tuple[str, str], ...] = ()
    usd: float | None = None
    also_claims: tuple[str, ...] = ()
    approve_all: tuple[int, ...] = ()  # request ids one "Approve all" button approves together
    cluster: str = ""

    @property
    def family(self) -> str:
        """Alerts a snooze silences together: every budget alert of a team, else the kind."""
        return snooze_family(self.kind)


def snooze_family(kind: str) -> str:
    """``"budget"`` for every budget kind (thresholds and forecast), else ``kind`` itself."""
    return "budget" if kind.startswith("budget-") else kind


def in_cluster(alerts: Sequence[Alert], cluster: str, first: bool) -> list[Alert]:
    """``alerts`` decided in ``cluster`` (one of several): each names it (title, a ``Cluster``
    field, :attr:`Alert.cluster`) and its period key is :func:`~actions.fleet.cluster_key`'s,
    unchanged for the ``first`` cluster, else ``"<cluster>:<key>"``."""
    return [
        dataclasses.replace(
            a, cluster=cluster, period_key=cluster_key(a.period_key, cluster, first),
            title=f"{a.title} (cluster {cluster})", fields=(("Cluster", plain(cluster)), *a.fields),
        )
        for a in alerts
    ]


def _asks(gpus: float, family: str | None, flavors) -> str:  # noqa: ANN001 - a sequence of names
    return f"{gpu_amount(gpus)} × {family or 'GPU'}" + (f" ({', '.join(flavors)})" if flavors else "")


def gpus_text(n: float) -> str:
    """``"1 GPU"``, ``"8 GPUs"``, ``"0.14 GPUs"`` (physical-GPU equivalents)."""
    return f"{gpu_amount(n)} GPU" if n == 1 else f"{gpu_amount(n)} GPUs"


def _utc(now: datetime) -> datetime:
    if now.tzinfo is None:
        raise ValueError(f"now={now!r} has no time zone; pass an aware UTC datetime")
    return now.astimezone(timezone.utc)


def day_key(now: datetime) -> str:
    """The UTC day of ``now``: ``"2026-11-23"``."""
    return _utc(now).strftime("%Y-%m-%d")


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
    local = _utc(now).astimezone(ZoneInfo(tz))
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


# --- queues ------------------------------------------------------------------------------------


def queue_wait_alerts(
    report: QueueReport, threshold_seconds: float, plans: Mapping[str, FreeingPlan] | None = None
) -> list[Alert]:
    """One alert per pending Workload that has waited longer than ``threshold_seconds``, to the
    waiting team, keyed by the Workload's uid, with its position in its ClusterQueue, the idle
    GPUs of the same family elsewhere and, when ``plans`` (Workload uid -> plan) has one, the one
    proposal that frees enough of them, approvable with one button."""
    plans = plans or {}
    alerts = []
    for p in report.pending:
        if p.waiting_seconds <= threshold_seconds:
            continue
        w = p.workload
        idle = report.idle_elsewhere.get(w.uid, ())
        fields = [
            ("Workload", plain(f"{w.namespace}/{w.name}")),
            ("LocalQueue", plain(w.queue_name or "?")),
            ("ClusterQueue", plain(p.cluster_queue or "unknown")),
            ("Asks for", plain(_asks(w.gpus, p.gpu_family, p.flavors))),
            ("Waiting", duration(p.waiting_seconds)),
        ]
        if p.position_text:
            fields.append(("Position", plain(p.position_text)))
        idle_usd = sum(i.usd_per_hour for i in idle)
        if idle:
            fields.append(("Idle elsewhere", f"{gpus_text(sum(i.gpus for i in idle))}, {usd(idle_usd)}/h"))
        text = plain(wait_sentence(p, idle))
        plan = plans.get(w.uid)
        if plan is not None:
            text += "\n*" + plan.sentence() + ":*\n" + "\n".join(
                f"• #{rid} {plain(f.subject)}: {gpu_amount(f.gpus, dict(f.devices))} × {plain(f.gpu_model)}, "
                f"idle {duration(f.idle_seconds)} (team {plain(f.team)})"
                for rid, f in zip(plan.request_ids, plan.findings)
            )
        alerts.append(
            Alert(
                team=p.team,
                kind=QUEUE_WAIT,
                period_key=w.uid,
                title=f"Workload {w.namespace}/{w.name} has waited {duration(p.waiting_seconds)} for admission",
                text=text,
                fields=tuple(fields),
                usd=idle_usd if idle else None,
                approve_all=plan.request_ids if plan else (),
            )
        )
    return alerts


def cluster_queue_wait_alerts(
    p90_seconds: Mapping[str, float], report: QueueReport, threshold_seconds: float, now: datetime
) -> list[Alert]:
    """Alerts for ClusterQueues whose admission-wait p90 (seconds, from the
    ``kueue_admission_wait_time_seconds`` histogram) is above ``threshold_seconds``: one per team
    whose LocalQueues feed the ClusterQueue (the ClusterQueue's name as the team when none is
    known), at most once a day."""
    alerts = []
    states = {c.name: c for c in report.cluster_queues}
    for cq, p90 in sorted(p90_seconds.items()):
        if p90 <= threshold_seconds:
            continue
        state = states.get(cq)
        teams = state.teams if state and state.teams else (cq,)
        context = [wait_sentence(p, report.idle_elsewhere.get(p.workload.uid, ())) for p in (state.pending if state else ())]
        text = (
            f"In ClusterQueue *{plain(cq)}*, 90% of admitted Workloads waited up to {duration(p90)} "
            f"(p90 of admission wait; threshold {duration(threshold_seconds)})."
        )
        if context:
            text += "\n" + "\n".join(f"• {plain(line)}" for line in context[:10])
        fields = (
            ("Admission wait p90", duration(p90)),
            ("Pending now", str(len(state.pending)) if state else "unknown"),
            ("LocalQueues", plain(", ".join(state.local_queues)) if state else "unknown"),
        )
        for team in teams:
            alerts.append(
                Alert(
                    team=team,
                    kind=QUEUE_WAIT,
                    period_key=f"clusterqueue/{cq}/{day_key(now)}",
                    title=f"ClusterQueue {cq}: admission wait p90 is {duration(p90)}",
                    text=text,
                    fields=fields,
                )
            )
    return alerts


# --- idle on-demand GPUs -----------------------------------------------------------------------


def _capacity(f: Finding, nodes: Mapping[str, Mapping[str, Node]]) -> CapacityType:
    # Two clusters may each have a node of the same name: look in the finding's own cluster.
    node = nodes.get(f.cluster, {}).get(f.node or "")
    if node is not None and node.capacity_type is not CapacityType.UNKNOWN:
        return node.capacity_type
    return f.price.capacity_type


def idle_on_demand_alerts(
    findings: Sequence[Finding], nodes: Mapping[str, Mapping[str, Node]], threshold_seconds: float, now: datetime
) -> list[Alert]:
    """One alert per team holding on-demand GPUs idle for longer than ``threshold_seconds``
    (the node's capacity type, else the price's), priced in USD per hour, at most once a day,
    however many clusters they are in (each GPU's line names its cluster). ``nodes`` maps a
    cluster (:attr:`Finding.cluster`, empty for a bot of one) -> node name -> Node."""
    by_team: dict[str, list[Finding]] = {}
    for f in findings:
        if f.idle_seconds > threshold_seconds and _capacity(f, nodes) is CapacityType.ON_DEMAND:
            by_team.setdefault(f.team, []).append(f)
    alerts = []
    for team, fs in sorted(by_team.items()):
        fs.sort(key=lambda f: -f.usd_per_hour)
        gpus = sum(f.gpus for f in fs)
        usd_per_hour = sum(f.usd_per_hour for f in fs)
        lines = [
            f"• {plain(f.namespace) + '/' if f.namespace else ''}{plain(f.name)}"
            f"{' in cluster ' + plain(f.cluster) if f.cluster else ''}: {gpu_amount(f.gpus, dict(f.devices))} × "
            f"{plain(f.gpu_model)} idle {duration(f.idle_seconds)}, "
            f"{usd(f.usd_per_hour)}/h ({plain(f.price.source)})"
            for f in fs[:10]
        ]
        if len(fs) > 10:
            lines.append(f"• … and {len(fs) - 10} more")
        alerts.append(
            Alert(
                team=team,
                kind=IDLE_ON_DEMAND,
                period_key=day_key(now),
                title=f"{team}: {gpus_text(gpus).replace(' GPU', ' on-demand GPU')} idle, {usd(usd_per_hour)}/h",
                text=f"On-demand GPUs idle for over {duration(threshold_seconds)}:\n" + "\n".join(lines),
                fields=(("GPUs", gpu_amount(gpus)), ("Cost", f"{usd(usd_per_hour)}/h · {usd(usd_per_hour * 24)}/day")),
                usd=usd_per_hour,
            )
        )
    return alerts


# --- spot ratio --------------------------------------------------------------------------------


def spot_ratio_alerts(
    max_ratio_by_team: Mapping[str, float], target: float, window_seconds: float, now: datetime
) -> list[Alert]:
    """Alerts for teams whose spot ratio (ratio 0-1 of their requested GPUs that run on spot
    nodes) stayed below ``target`` for the whole window: ``max_ratio_by_team`` holds the highest
    ratio each team reached in the last ``window_seconds``, so below target means below it
    throughout. At most once a day per team."""
    alerts = []
    for team, ratio in sorted(max_ratio_by_team.items()):
        if ratio >= target:
            continue
        alerts.append(
            Alert(
                team=team,
                kind=SPOT_RATIO,
                period_key=day_key(now),
                title=f"{team}: spot ratio {ratio:.0%}, below the {target:.0%} target",
                text=(
                    f"For the last {duration(window_seconds)} at most {ratio:.0%} of *{plain(team)}*'s GPUs ran "
                    f"on spot "
                    f"capacity (target {target:.0%}). Fault-tolerant jobs (checkpointed training, batch "
                    f"inference) can run on spot for a fraction of the on-demand price."
                ),
                fields=(("Spot ratio (max over window)", f"{ratio:.0%}"), ("Target", f"{target:.0%}")),
            )
        )
    return alerts
