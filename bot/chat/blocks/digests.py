"""Pure Block Kit renderers of the scheduled digests: a team's showback and the all-teams summary.

Data in (:class:`~actions.cost.report.TeamReport`, :class:`~actions.cost.report.CostReport`), :class:`Message`
out; no I/O, no clock reads. Money is USD, usage GPU-hours; efficiency, idle share and spot ratio
are ratios 0-1 shown as percentages. Every cost line names its price: USD per GPU-hour, where it
came from and as of when. Slack limits kept: 50 blocks, 3000 characters per section text, 10
fields per section, 150 characters per header.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Iterable
from zoneinfo import ZoneInfo

from actions.cost.fleet import FleetReport
from actions.cost.report import EFFICIENCY_TARGET, CostReport, PriceLine, TeamReport
from actions.model.energy import EnergyUse
from actions.text import energy_amount
from bot.chat.blocks import context, header, plain, section, usd
from bot.chat.blocks.fit import fit_rows
from bot.runtime.chat import Message

__all__ = ["admin_summary_message", "chart_comment", "clusters_note", "period_label", "team_digest_message"]

MAX_BLOCKS = 50


def period_label(start: datetime, end: datetime, tz: str) -> str:
    """``"2026-11-16 09:00 to 2026-11-23 09:00 (Europe/Berlin)"``: aware ``start``/``end`` shown
    in the IANA zone ``tz``."""
    zone = ZoneInfo(tz)
    fmt = "%Y-%m-%d %H:%M"
    return f"{start.astimezone(zone).strftime(fmt)} to {end.astimezone(zone).strftime(fmt)} ({tz})"


def _title(period_days: int) -> str:
    return "Weekly GPU cost" if period_days == 7 else f"GPU cost, last {period_days} days"


def _pct(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.0%}"


def _hours(h: float) -> str:
    return f"{h:,.1f}"


def _when(period_days: int) -> str:
    return "this week" if period_days == 7 else f"in the last {period_days} days"


def idle_energy_line(report: CostReport, period_days: int) -> str | None:
    """``"Idle GPUs drew 1,240 kWh (480 kg CO2e) this week: 900 kWh held idle by pods, 340 kWh on GPUs no
    pod requested."``; None when no energy was measured."""
    held = sum((t.energy for t in report.teams.values()), EnergyUse())
    free = report.unrequested.energy if report.unrequested is not None else EnergyUse()
    kwh = held.idle_gpu_energy_kwh + free.gpu_energy_kwh
    if not kwh:
        return None
    co2 = None if held.idle_co2e_kg is None and free.co2e_kg is None else (held.idle_co2e_kg or 0.0) + (free.co2e_kg or 0.0)
    return (f"Idle GPUs drew {energy_amount(kwh, co2)} {_when(period_days)}: {energy_amount(held.idle_gpu_energy_kwh, None)} "
            f"held idle by pods, {energy_amount(free.gpu_energy_kwh, None)} on GPUs no pod requested.")


def _energy_fields(e: EnergyUse) -> list[tuple[str, str]]:
    if not e.gpu_energy_kwh:
        return []
    return [("Energy (at the GPU)", energy_amount(e.gpu_energy_kwh, e.co2e_kg)),
            ("Idle energy", energy_amount(e.idle_gpu_energy_kwh, e.idle_co2e_kg))]


def _fields(pairs: Iterable[tuple[str, str]]) -> dict:
    return {"type": "section", "fields": [{"type": "mrkdwn", "text": f"*{k}*\n{v}"[:2000]} for k, v in list(pairs)[:10]]}


def _sections(title: str, lines: list[str], max_sections: int) -> list[dict]:
    """``lines`` under a bold ``title`` packed into at most ``max_sections`` sections of at most
    3000 characters each, never cut mid-line; lines that do not fit are counted in a last
    "... and N more" line."""
    return [section(t) for t in fit_rows(lines, max_sections=max_sections, title=f"*{title}*")]


def _price_line(f: PriceLine) -> str:
    what = plain(f"{f.gpu_model} {f.capacity_type}" + (f" ({f.instance_type})" if f.instance_type else ""))
    idle = f", idle {usd(f.idle_cost_usd)}" if f.idle_gpu_hours else ""
    return f"• {what}: {_hours(f.gpu_hours)} GPU-hours × {usd(f.usd_per_gpu_hour)} = {usd(f.cost_usd)}{idle}"


def _price_source_line(f: PriceLine) -> str:
    as_of = f", as of {plain(f.price_as_of)}" if f.price_as_of else ""
    where = f" ({plain(f.instance_type)})" if f.instance_type else ""
    return (
        f"• {plain(f.gpu_model)} {f.capacity_type}{where} {usd(f.usd_per_gpu_hour)}/GPU-hour: "
        f"{plain(f.price_source)}{as_of}"
    )


def _unique(lines: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(lines))


def team_digest_message(report: TeamReport, tz: str, period_days: int) -> Message:
    """A team's digest: cost, GPU-hours, idle waste, efficiency (against the 80% target), spot
    ratio, the top consumers, cost by GPU model and capacity type, and where each price came from.
    ``tz`` (IANA name) is the zone the period is shown in; ``period_days`` names the digest
    ("Weekly" for 7). A report without GPU-hours says so instead of showing zeros."""
    title = f"{_title(period_days)}: {report.team}"
    period = period_label(report.period_start, report.period_end, tz)
    blocks: list[dict] = [header(title), context(f"Period {period}")]
    if not report.gpu_hours:
        text = f"{plain(title)}: no GPU use recorded from {period}."
        blocks.append(section(text))
        if report.notes:
            blocks.append(context(*(plain(n) for n in report.notes)))
        return Message(text=text, blocks=blocks)

    idle_share = report.idle_share
    blocks.append(
        _fields(
            [
                ("Cost", usd(report.cost_usd)),
                ("GPU-hours", _hours(report.gpu_hours)),
                ("Idle waste", f"{usd(report.idle_cost_usd)} ({_hours(report.idle_gpu_hours)} GPU-hours, {_pct(idle_share)})"),
                ("Efficiency", f"{_pct(report.efficiency)} (target {EFFICIENCY_TARGET:.0%})"),
                ("Spot ratio", _pct(report.spot_ratio)),
                ("Average price", f"{usd(report.cost_usd / report.gpu_hours)}/GPU-hour"),
                *_energy_fields(report.energy),
            ]
        )
    )
    if report.top_consumers:
        lines = [
            f"• {c.kind} `{plain(c.namespace)}/{plain(c.name)}`"
            + (f" (queue {plain(c.queue)})" if c.queue else "")
            + f": {usd(c.cost_usd)}, {_hours(c.gpu_hours)} GPU-hours, {_pct(c.idle_share)} idle"
            for c in report.top_consumers
        ]
        blocks += _sections("Top consumers", lines, 2)
    if report.price_lines:
        blocks += _sections("By GPU and capacity type", [_price_line(f) for f in report.price_lines], 2)
        blocks += _sections("Where the prices come from", _unique(_price_source_line(f) for f in report.price_lines), 2)
    if report.notes:
        # One context block: its tenth element counts the notes past Slack's ten.
        blocks.append(context(*(plain(n) for n in report.notes)))
    text = (
        f"{plain(title)}: {usd(report.cost_usd)} for {_hours(report.gpu_hours)} GPU-hours, "
        f"idle {usd(report.idle_cost_usd)} ({_pct(idle_share)}), from {period}"
    )
    return Message(text=text, blocks=blocks[:MAX_BLOCKS])


def admin_summary_message(report: CostReport, tz: str, period_days: int) -> Message:
    """The all-teams summary for the admin channel: totals (cost, GPU-hours, idle waste,
    efficiency and spot ratio weighted by GPU-hours), one line per team by cost (highest first),
    the distinct price sources used, and the report's notes."""
    teams = sorted(report.teams.values(), key=lambda t: (-t.cost_usd, t.team))
    title = f"{_title(period_days)}: all teams"
    period = period_label(report.period_start, report.period_end, tz)
    blocks: list[dict] = [header(title), context(f"Period {period}")]
    hours = report.gpu_hours
    idle_hours = sum(t.idle_gpu_hours for t in teams)
    idle_cost = sum(t.idle_cost_usd for t in teams)
    spot_hours = sum((t.spot_ratio or 0.0) * t.gpu_hours for t in teams)
    efficiency = (hours - idle_hours) / hours if hours else None
    blocks.append(
        _fields(
            [
                ("Cost", usd(report.cost_usd)),
                ("GPU-hours", _hours(hours)),
                ("Idle waste", f"{usd(idle_cost)} ({_hours(idle_hours)} GPU-hours, {_pct(idle_hours / hours if hours else None)})"),
                ("Efficiency", f"{_pct(efficiency)} (target {EFFICIENCY_TARGET:.0%})"),
                ("Spot ratio", _pct(spot_hours / hours if hours else None)),
                ("Teams", str(len(teams))),
                *_energy_fields(sum((t.energy for t in teams), EnergyUse())),
            ]
        )
    )
    idle_energy = idle_energy_line(report, period_days)
    if idle_energy:
        blocks.append(section(idle_energy))
    if teams:
        lines = [
            f"• *{plain(t.team)}*: {usd(t.cost_usd)}, {_hours(t.gpu_hours)} GPU-hours, idle {usd(t.idle_cost_usd)} "
            f"({_pct(t.idle_share)}), efficiency {_pct(t.efficiency)}, spot {_pct(t.spot_ratio)}"
            for t in teams
        ]
        # Every team while 50 blocks allow: the price sources (3) and the notes (1) come after.
        blocks += _sections("By team", lines, MAX_BLOCKS - len(blocks) - 4)
        prices = _unique(_price_source_line(f) for t in teams for f in t.price_lines)
        if prices:
            blocks += _sections("Where the prices come from", prices, 3)
    notes = list(report.notes) + [f"{t.team}: {n}" for t in teams for n in t.notes]
    if notes:
        blocks.append(context(*(plain(n) for n in notes)))
    text = f"{title}: {usd(report.cost_usd)} for {_hours(hours)} GPU-hours across {len(teams)} teams, from {period}"
    return Message(text=text, blocks=blocks[:MAX_BLOCKS])


def chart_comment(team: str | None, start: datetime, end: datetime, tz: str) -> str:
    """The comment posted with a digest's chart (``team`` None for the all-teams chart)."""
    who = plain(team) if team is not None else "all teams"
    return f"Daily GPU cost by capacity type, idle share marked: {who}, {period_label(start, end, tz)}"


def unreachable_note(unreachable: Mapping[str, str]) -> dict | None:
    """A context block naming the clusters the last sweep could not read (cluster -> why), whose
    idle GPUs are therefore not in the proposals; None when every cluster was read."""
    if not unreachable:
        return None
    # The reason is for a person to recognise (refused, timed out, denied), not a log line.
    named = "; ".join(f"*{plain(c)}* ({plain(why if len(why) <= 160 else why[:159] + '…')})" for c, why in sorted(unreachable.items()))
    return context(f":warning: Not swept for idle GPUs at the last sweep, could not be reached: {named}")


def clusters_note(fleet: FleetReport, team: str | None) -> dict | None:
    """A context block saying a digest's figures are every cluster's together, with each
    cluster's share (USD and GPU-hours; ``team``'s, or every team's for None) and the clusters
    whose report failed, whose figures are not in the totals; None for a fleet of one cluster."""
    if len(fleet.clusters) + len(fleet.failed) < 2:
        return None
    shares = []
    for name, report in fleet.clusters.items():
        part = report if team is None else report.teams.get(team)
        cost, hours = (part.cost_usd, part.gpu_hours) if part is not None else (0.0, 0.0)
        shares.append(f"{plain(name)} {usd(cost)} ({hours:,.0f} GPU-hrs)")
    text = "All clusters together: " + ", ".join(shares) + "."
    if fleet.failed:
        text += " :warning: Not in the totals, no report: " + "; ".join(
            f"*{plain(c)}* ({plain(why if len(why) <= 160 else why[:159] + '…')})" for c, why in fleet.failed.items()) + "."
    return context(text)
