"""``/gpu cost [team] [period] [by localqueue|clusterqueue] [--cluster NAME]``: GPU-hours and USD
per team (or per Kueue LocalQueue or ClusterQueue), in the showback layout.

Without a team: one table of every team; ``by localqueue`` (``per lq``, ``cq``, ...) one table of
every LocalQueue or ClusterQueue, the same total (:mod:`actions.cost.queues`). A bot of several clusters reports the fleet, with a
line per cluster under the table; ``--cluster NAME`` reports that cluster alone. Periods: ``7d``, ``30d`` (default), ``mtd``,
``last-month`` (also ``12h``, ``2w``). The report reads weeks of Prometheus history, which can
take seconds: ``bot.chat.slack.app`` acks the slash command before dispatching and answers through the
command's ``response_url`` (Bolt's ``respond``), so Slack's 3-second limit does not apply.

The renderers (:func:`team_message`, :func:`all_teams_message`) are pure: report in, Block Kit out.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from actions.cost.fleet import FleetReport
from actions.cost.periods import PERIOD_EXAMPLES, PeriodError, parse_period
from actions.cost.queues import ALIASES, BY_CLUSTER_QUEUE, BY_LOCAL_QUEUE, BY_TEAM, closest_grouping, queue_report
from actions.cost.report import EFFICIENCY_TARGET, CostReport, TeamReport, table_order
from actions.model.energy import EnergyUse
from actions.sources.kube.reader import ClusterReadError
from actions.sources.prometheus.api import TelemetryError
from actions.text import co2e, kwh
from bot.chat import blocks
from bot.chat.blocks.fit import fit_rows
from bot.chat.commands.context import CommandContext, Reply, UsageError, cluster_arg
from bot.runtime.chat import Message
from bot.runtime.runtime import ReportUnavailable, UnknownCluster

NAME = "cost"
SUMMARY = "GPU-hours and cost per team, or by Kueue LocalQueue or ClusterQueue (idle share, efficiency, spot ratio, top consumers)"
EXAMPLE = "/gpu cost research 30d"
CLUSTER_EXAMPLE = "/gpu cost 30d --cluster gpu-west"
QUEUE_EXAMPLE = "/gpu cost by localqueue 30d"
# What a table's lines are, by grouping: its column heading and title word.
LINE_NOUN = {BY_TEAM: "team", BY_LOCAL_QUEUE: "LocalQueue", BY_CLUSTER_QUEUE: "ClusterQueue"}
# Grouping words understood without ``by``: those no one names a team.
_BARE = {w for w in ALIASES if w not in ("team", "teams", "queue", "queues")}
DEFAULT_PERIOD = "30d"
MAX_PRICE_LINES = 12  # keeps a section under Slack's 3000 characters


def _pct(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.1%}"


def _hours(h: float) -> str:
    return f"{h:,.0f} hrs" if h >= 10 else f"{h:,.1f} hrs"


def period_label(start: datetime, end: datetime) -> str:
    """``"2026-10-22 – 2026-11-21 (30 days)"``; the end date is the last day covered."""
    last = end - timedelta(microseconds=1)
    days = (end - start).total_seconds() / 86400
    span = f"{days:g} days" if days >= 1 else f"{days * 24:g} hours"
    return f"{start:%Y-%m-%d} – {last:%Y-%m-%d} ({span})"


def team_message(
    r: TeamReport, notes: tuple[str, ...] = (), spot_ratio_target: float | None = None, where: str = "",
    by_cluster: str | None = None,
) -> Message:
    """A team's report as Block Kit, laid out like a monthly showback: GPU-hours by GPU model
    and capacity type with their prices, idle GPU-hours and their cost, efficiency against the
    80% target, spot ratio (against ``spot_ratio_target``, ratio 0-1, when given), top consumers
    with their idle share; the price sources and ``notes`` in context blocks. ``where`` ends the
    title (``", all clusters"``); ``by_cluster`` (:func:`team_clusters_line`) follows the total."""
    title = f"GPU cost: {r.team}{where}"
    lines = [f"*GPU-hours consumed: {_hours(r.gpu_hours)}*" if r.gpu_hours else "*No GPU was used in this period.*"]
    for f in r.price_lines[:MAX_PRICE_LINES]:
        lines.append(
            f"• {blocks.plain(f.gpu_model)} {f.capacity_type} {_hours(f.gpu_hours)} × "
            f"{blocks.usd(f.usd_per_gpu_hour)} = "
            f"{blocks.usd(f.cost_usd)}"
        )
    hidden = len(r.price_lines) - MAX_PRICE_LINES
    if hidden > 0:
        lines.append(f"• … and {hidden} more lines, {blocks.usd(sum(f.cost_usd for f in r.price_lines[MAX_PRICE_LINES:]))}")
    totals = [f"*Total: {blocks.usd(r.cost_usd)}*"] + ([by_cluster] if by_cluster else [])
    eff_mark = "" if r.efficiency is None else (" :white_check_mark:" if r.efficiency > EFFICIENCY_TARGET else " :warning:")
    spot_target = "" if spot_ratio_target is None else f" (target > {spot_ratio_target:.0%})"
    kpis = [
        f"*Idle GPU-hours:* {_hours(r.idle_gpu_hours)} ({_pct(r.idle_share)}) = {blocks.usd(r.idle_cost_usd)}",
        f"*Efficiency score:* {_pct(r.efficiency)} (target > {EFFICIENCY_TARGET:.0%}){eff_mark}",
        f"*Spot ratio:* {_pct(r.spot_ratio)}{spot_target}",
    ]
    if r.energy.gpu_energy_kwh or r.energy.measured_gpu_hours:
        kpis.append(f"*Energy:* {energy_line(r.energy, r.gpu_hours)}")
    top = [
        f"{i}. {c.kind} {blocks.plain(f'{c.namespace}/{c.name}')}"
        f"{f' (queue {blocks.plain(c.queue)})' if c.queue else ''}: "
        f"{_hours(c.gpu_hours)}, {blocks.usd(c.cost_usd)}, idle {c.idle_share:.0%}"
        + (f", {kwh(c.gpu_energy_kwh)}" if c.gpu_energy_kwh else "")
        for i, c in enumerate(r.top_consumers, 1)
    ]
    out = [
        blocks.header(f"GPU cost: {r.team}", where),
        blocks.context(period_label(r.period_start, r.period_end)),
        *(blocks.section(t) for t in fit_rows(lines, max_sections=1, tail=totals, noun="more lines")),
        blocks.section("\n".join(kpis)),
    ]
    if r.top_consumers:
        out += [blocks.section(t) for t in fit_rows(top, max_sections=1, title="*Top consumers*", noun="more consumers")]
    sources = sorted({
        blocks.plain(
            f"{f.gpu_model} {f.capacity_type} {blocks.usd(f.usd_per_gpu_hour)}/GPU-hour: {f.price_source}"
            + (f", as of {f.price_as_of}" if f.price_as_of else "")
        )
        for f in r.price_lines
    })
    ctx = (["Prices: " + "; ".join(sources)] if sources else []) + [blocks.plain(n) for n in (*r.notes, *notes)]
    if ctx:
        out.append(blocks.context(*ctx))
    text = f"{blocks.plain(title)}: {blocks.usd(r.cost_usd)} for {_hours(r.gpu_hours)}, idle {_pct(r.idle_share)}"
    return Message(text=text, blocks=out)


def energy_line(e: EnergyUse, gpu_hours: float) -> str:
    """``"1,240 kWh at the GPU (idle 310 kWh), 1,612 kWh with PUE 1.3, 612 kg CO2e; measured for 98% of
    GPU-hours"``: what a team's (or the unrequested GPUs') energy was, and how much of it is known."""
    parts = [f"{kwh(e.gpu_energy_kwh)} at the GPU" + (f" (idle {kwh(e.idle_gpu_energy_kwh)})" if e.idle_gpu_energy_kwh else "")]
    if e.gpu_energy_kwh and abs(e.facility_energy_kwh - e.gpu_energy_kwh) > 1e-9:
        parts.append(f"{kwh(e.facility_energy_kwh)} with PUE {e.facility_energy_kwh / e.gpu_energy_kwh:.2g}")
    if e.co2e_kg is not None:
        parts.append(co2e(e.co2e_kg))
    share = e.measured_share(gpu_hours)
    return ", ".join(parts) + (f"; measured for {share:.0%} of GPU-hours" if share is not None and share < 0.995 else "")


_NO_RATIOS = " " * 24  # where a team row has its idle, efficiency and spot columns


def _cost_cell(cost: float, hours: float, unpriced: float) -> str:
    # An unpriced GPU-hour is not a free one: say the figure leaves some out.
    if unpriced and unpriced >= hours:
        return "no price"
    return blocks.usd(cost) + ("*" if unpriced else "")


def team_clusters_line(fleet: FleetReport, team: str) -> str:
    """``team``'s share of each cluster of ``fleet``, USD and GPU-hours, in configured order; a
    cluster whose report failed says so (its figures are not in the total)."""
    parts = []
    for t in fleet.totals():
        if t.error is not None:
            parts.append(f"{blocks.plain(t.cluster)} no report")
            continue
        r = fleet.clusters[t.cluster].teams.get(team)
        parts.append(f"{blocks.plain(t.cluster)} {blocks.usd(r.cost_usd if r else 0.0)} ({_hours(r.gpu_hours if r else 0.0)})")
    return "By cluster: " + " · ".join(parts)


def team_where(fleet: FleetReport | None, cluster: str | None, team: str) -> tuple[str, str | None]:
    """``(where, by_cluster)`` for :func:`team_message` of a bot of several clusters:
    ``", cluster west"`` for a report of one named ``cluster``; ``", all clusters"`` and
    :func:`team_clusters_line` for the ``fleet``'s; ``("", None)`` for a bot of one
    (``cluster`` None and no fleet, or a fleet of one)."""
    if cluster:
        return f", cluster {cluster}", None
    if fleet is not None and len(fleet.totals()) > 1:
        return ", all clusters", team_clusters_line(fleet, team)
    return "", None


def clusters_table(fleet: FleetReport) -> str:
    """The fleet's line per cluster (GPU-hours, USD, idle USD) and its total, as a code block;
    a cluster whose report failed says so instead of figures."""
    totals = fleet.totals()
    width = max([len("cluster"), len("fleet")] + [len(t.cluster) for t in totals])
    lines = [f"{'cluster':<{width}}  {'GPU-hrs':>9}  {'cost':>12}  {'idle cost':>12}"]
    for t in totals:
        if t.error is not None:
            lines.append(f"{blocks.plain(t.cluster):<{width}}  no report: {blocks.plain(t.error)}")
        else:
            lines.append(
                f"{blocks.plain(t.cluster):<{width}}  {t.gpu_hours:>9,.0f}  {blocks.usd(t.cost_usd):>12}  "
                f"{blocks.usd(t.idle_cost_usd):>12}"
            )
    answered = [t for t in totals if t.error is None]
    lines.append(
        f"{'fleet':<{width}}  {sum(t.gpu_hours for t in answered):>9,.0f}  "
        f"{blocks.usd(sum(t.cost_usd for t in answered)):>12}  {blocks.usd(sum(t.idle_cost_usd for t in answered)):>12}"
    )
    return "```\n" + "\n".join(lines) + "\n```"


def all_teams_message(
    report: CostReport, fleet: FleetReport | None = None, cluster: str | None = None, by: str = BY_TEAM,
) -> Message:
    """Every team in one table (GPU-hours, USD, idle share, efficiency, spot ratio), highest cost
    first and ``unallocated`` last, with the total; then, when the nodes' GPU capacity was read,
    the GPU-hours no pod requested and what all GPU nodes cost (the two add up to it); with a
    ``fleet`` of several clusters, a line per cluster (:func:`clusters_table`); the report's
    notes and warnings below. ``cluster`` names the one cluster reported, when one was chosen.
    ``by`` a queue grouping: the lines are :func:`actions.cost.queues.queue_report`'s, in its order."""
    rows = table_order(report.teams.values()) if by == BY_TEAM else list(report.teams.values())
    noun = LINE_NOUN[by]
    width = max([len(noun), len("unrequested")] + [len(r.team) for r in rows])
    header = f"{noun:<{width}}  {'GPU-hrs':>9}  {'cost':>12}  {'idle':>6}  {'effic.':>6}  {'spot':>6}"
    # Energy columns only where DCGM measured some: a cluster without power series shows none.
    energy = any(r.energy.gpu_energy_kwh for r in rows)
    carbon = energy and any(r.energy.co2e_kg is not None for r in rows)
    header += (f"  {'kWh':>9}" if energy else "") + (f"  {'kg CO2e':>9}" if carbon else "")

    def energy_cells(e: EnergyUse) -> str:
        return (f"  {e.gpu_energy_kwh:>9,.0f}" if energy else "") + (f"  {e.co2e_kg or 0:>9,.0f}" if carbon else "")

    body = [
        f"{blocks.plain(r.team):<{width}}  {r.gpu_hours:>9,.0f}  "
        f"{_cost_cell(r.cost_usd, r.gpu_hours, r.unpriced_gpu_hours):>12}  "
        f"{_pct(r.idle_share):>6}  {_pct(r.efficiency):>6}  {_pct(r.spot_ratio):>6}{energy_cells(r.energy)}"
        for r in rows
    ]
    unpriced = sum(r.unpriced_gpu_hours for r in rows)
    body.append(f"{'total':<{width}}  {report.gpu_hours:>9,.0f}  {_cost_cell(report.cost_usd, report.gpu_hours, unpriced):>12}"
                + (_NO_RATIOS + energy_cells(sum((r.energy for r in rows), EnergyUse())) if energy else ""))
    if report.unrequested is not None:
        free = report.unrequested
        body.append(f"{'unrequested':<{width}}  {free.gpu_hours:>9,.0f}  {blocks.usd(free.cost_usd):>12}"
                    + (_NO_RATIOS + energy_cells(free.energy) if energy else ""))
        body.append(f"{'GPU nodes':<{width}}  {report.node_gpu_hours:>9,.0f}  {blocks.usd(report.node_cost_usd):>12}"
                    + (f"{_NO_RATIOS}  {report.node_energy_kwh:>9,.0f}" if energy else ""))
    several = fleet is not None and len(fleet.totals()) > 1
    title = f"GPU cost by {noun}" + (f", cluster {cluster}" if cluster else ", all clusters" if several else "")
    out = [blocks.header(title), blocks.context(period_label(report.period_start, report.period_end))]
    # Every team's row in sections of their own code block, the totals always last; rows that
    # would pass Slack's 50 blocks are counted in a "more" line instead.
    room = blocks.MESSAGE_BLOCKS - len(out) - (2 if several else 1)
    total_rows = body[len(rows):]
    out += [blocks.section(t) for t in fit_rows(body[: len(rows)], max_sections=room, repeat=header, tail=total_rows,
                                                 code=True, noun=f"more {noun}s")]
    if several:
        out.append(blocks.section("*By cluster*\n" + clusters_table(fleet)))
    notes = [blocks.plain(n) for n in (*report.warnings, *report.notes)] if several else [blocks.plain(n) for n in report.notes]
    if unpriced:
        notes.append(f"* leaves out {unpriced:,.1f} GPU-hours on GPUs with no price (named above)")
    if report.unrequested is not None and report.unrequested.by_node:
        top = list(report.unrequested.by_node.items())[:3]
        notes.append(
            "Unrequested: GPUs on nodes that no pod requested, at the node's price: "
            + ", ".join(f"{blocks.plain(node)} {h:,.0f} GPU-hrs {blocks.usd(c)}" for node, (h, c) in top)
            + (f" and {len(report.unrequested.by_node) - 3} more nodes" if len(report.unrequested.by_node) > 3 else "")
        )
    for r in rows:
        notes += [blocks.plain(n) for n in r.notes]
    notes.append(f"Details and price sources: `{blocks.plain('/gpu cost <team> <period>')}`")
    out.append(blocks.context(*notes))
    return Message(text=f"GPU cost by {noun}: {blocks.usd(report.cost_usd)} for {report.gpu_hours:,.0f} GPU-hours", blocks=out)


def parse_args(args: str, now: datetime, tz: str = "UTC") -> tuple[str | None, datetime, datetime]:
    """``(team or None, start, end)`` from ``[team] [period]`` in either order. Raises
    UsageError for a period that cannot be read or more than two words."""

    words = args.split()
    if len(words) > 2:
        raise UsageError(f"`/gpu cost` takes a team and a period, got {args!r}.", EXAMPLE)
    team, period = None, None
    for w in words:
        try:
            parse_period(w, now, tz)
            if period is not None:
                raise UsageError(f"Two periods given ({period}, {w}); give one.", EXAMPLE)
            period = w
        except PeriodError:
            if team is not None:
                raise UsageError(
                    f"{w!r} is not a period ({', '.join(PERIOD_EXAMPLES)}) and the team is already {team!r}.",
                    EXAMPLE,
                ) from None
            team = w
    start, end = parse_period(period or DEFAULT_PERIOD, now, tz)
    return team, start, end


def grouping_arg(args: str) -> tuple[str, str]:
    """``(the other words, grouping)`` from ``by localqueue``, ``per lq``, ``by-cq``, a bare ``lq``
    or ``clusterqueue`` anywhere in ``args`` (:data:`actions.cost.queues.ALIASES`; default
    ``team``). Raises UsageError, saying what was read and with an example, for ``by`` without a
    grouping it knows (a misspelling gets the one meant) and for two groupings."""
    words, rest, found, i = args.split(), [], None, 0
    while i < len(words):
        word = words[i].lower()
        head, dash, tail = word.partition("-")
        if word in ("by", "per") or (dash and head in ("by", "per")):
            said = tail if dash else (words[i + 1].lower() if i + 1 < len(words) else "")
            i += 1 if dash else 2
        elif word in _BARE:
            head, said, i = "by", word, i + 1
        else:
            rest.append(words[i])
            i += 1
            continue
        by = ALIASES.get(said)
        others = " ".join(rest + words[i:])
        if by is None:
            guess = closest_grouping(said) if said else None
            meant = f"; did you mean `{head} {guess}`?" if guess else "."
            what = f"`{head} {said}` is not" if said else f"`{head}` needs"
            raise UsageError(
                blocks.plain(f"{what} one of team, localqueue (lq) or clusterqueue (cq){meant} "
                             f"I read the rest as: {others or 'nothing (every team, 30d)'}."),
                blocks.plain(f"/gpu cost by {guess or BY_LOCAL_QUEUE} {others or DEFAULT_PERIOD}"),
            )
        if found not in (None, by):
            raise UsageError(f"Two groupings given ({found}, {by}); give one.", QUEUE_EXAMPLE)
        found = by
    return " ".join(rest), found or BY_TEAM


def _by_queue(ctx: CommandContext, by: str, start: datetime, end: datetime, cluster: str | None) -> Reply:
    """The table of every LocalQueue or ClusterQueue (``by``) of one cluster: the only one, or the
    one named; the ClusterQueues from the cluster's LocalQueue objects."""
    rt = ctx.rt
    assert rt is not None
    if rt.clusters and cluster is None:
        raise UsageError(f"A cost by {LINE_NOUN[by]} is of one cluster: name it (the clusters: {', '.join(rt.cluster_names())}).",
                         f"/gpu cost by {by} 30d --cluster {rt.cluster_names()[0]}")
    try:
        costs = rt.parts(cluster).costs if rt.clusters else rt.costs
        if cluster not in (None, rt.cluster_name) and not rt.clusters:
            raise UnknownCluster(f"no cluster {cluster!r}; this bot watches one cluster, {rt.cluster_name}")
    except UnknownCluster as e:
        raise UsageError(blocks.plain(str(e)), CLUSTER_EXAMPLE) from None
    if costs is None:
        return Reply(blocks.error_message("Cost reports need the running bot with Prometheus configured."))
    name = cluster or rt.cluster_name
    try:
        queues = rt.snapshot_of(name, rt.clock()).local_queues if by == BY_CLUSTER_QUEUE else ()
        report = queue_report(costs, rt.prices, rt.policy, start, end, by, queues,
                              api_nodes=lambda: rt.snapshot_of(name, rt.clock()).nodes)
    except ClusterReadError as e:
        return Reply(blocks.error_message(f"I could not read the cluster's LocalQueues: {blocks.plain(e)}"))
    except TelemetryError as e:
        return Reply(blocks.error_message(f"I could not build the cost report: {blocks.plain(e)}"))
    report = dataclasses.replace(report, notes=report.warnings + report.notes)
    return Reply(all_teams_message(report, None, cluster if rt.clusters else None, by=by), ephemeral=False)


def handle(args: str, ctx: CommandContext) -> Reply:

    rt = ctx.rt
    if rt is None or rt.costs is None:
        return Reply(blocks.error_message("Cost reports need the running bot with Prometheus configured."))
    args, cluster = cluster_arg(args, CLUSTER_EXAMPLE)
    args, by = grouping_arg(args)
    team, start, end = parse_args(args, rt.clock(), rt.costs.timezone)
    if by != BY_TEAM:
        if team is not None:
            raise UsageError(
                blocks.plain(f"A cost by {LINE_NOUN[by]} covers every team; leave out the team (I read: team {team!r}, by {by})."),
                blocks.plain(f"/gpu cost by {by} {args.replace(team, '').strip() or DEFAULT_PERIOD}"),
            )
        return _by_queue(ctx, by, start, end, cluster)
    fleet = None
    try:
        if cluster is None and rt.clusters:
            fleet = rt.fleet_report(start, end)
            report = fleet.fleet
        else:
            report = rt.cost_report(start, end, cluster)
    except UnknownCluster as e:
        raise UsageError(blocks.plain(str(e)), CLUSTER_EXAMPLE) from None
    except (TelemetryError, ReportUnavailable) as e:
        return Reply(blocks.error_message(f"I could not build the cost report: {blocks.plain(e)}"))
    # What the report lacks (hours the usage ledger does not hold, history Prometheus no longer
    # keeps) is said first, with the figures it qualifies.
    report = dataclasses.replace(report, notes=report.warnings + report.notes)
    if team is None:
        return Reply(all_teams_message(report, fleet, cluster if rt.clusters else None), ephemeral=False)
    found = report.team(team)
    if found is None:
        if closest_grouping(team):  # a grouping misspelt: not a team
            raise UsageError(blocks.plain(f"{team!r} is no team; to see cost by queue, write `by {closest_grouping(team)}`."),
                             blocks.plain(f"/gpu cost by {closest_grouping(team)} 30d"))
        known = ", ".join(sorted(report.teams)) or "none yet"
        raise UsageError(
            blocks.plain(f"No team {team!r} in this period (teams: {known})."),
            blocks.plain(f"/gpu cost {next(iter(sorted(report.teams)), 'research')} 30d"),
        )
    where, by_cluster = team_where(fleet, cluster if rt.clusters else None, team)
    return Reply(team_message(found, report.notes, rt.costs.spot_ratio_target, where, by_cluster), ephemeral=False)
