"""``gpu-cost-bot report``: the showback report per team, or per Kueue LocalQueue or ClusterQueue
(``--by``), as text, JSON or a chart; registered by :mod:`bot.cli.main` (which keeps the exit codes
and the error wording)."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

import typer

from actions.model.times import utc_now
from bot.chat.failures import USAGE
from bot.cli.advise import advice_for_report
from bot.cli.ledger import describe_plan, describe_source, report_store
from bot.cli.settings import at_option, cli_settings

INCOMPLETE = 3
ConfigOpt = typer.Option(None, "--config", "-c", help="YAML config file (default: built-in defaults)")


def _warn(warnings: list[str]) -> None:
    for w in warnings:
        typer.echo(f"warning: {w}", err=True)


def _grouping(by: str) -> str:
    """The grouping ``--by`` names (``team``, ``localqueue``, ``clusterqueue``; also ``lq``,
    ``cq``, ``queue``); typer.BadParameter naming the one meant for anything else."""
    from actions.cost.queues import closest_grouping, grouping_of

    found = grouping_of(by)
    if found is None:
        guess = closest_grouping(by)
        meant = f"; did you mean --by {guess}?" if guess else ""
        raise typer.BadParameter(
            f"{by!r} is not a grouping{meant} Use team, localqueue (lq) or clusterqueue (cq), e.g. --by localqueue",
            param_hint="--by",
        )
    return found


def report(
    team: Optional[str] = typer.Option(None, "--team", "-t", help="one team's report (default: every team)"),
    cluster: Optional[str] = typer.Option(None, "--cluster", help="one cluster's report (default: the fleet, a line per cluster)"),
    period: str = typer.Option("30d", help="7d, 30d, mtd, last-month (also 12h, 2w)"),
    by: str = typer.Option(
        "team", "--by", help="a line per team, Kueue LocalQueue (namespace/name) or ClusterQueue: team, localqueue, clusterqueue"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
    png: Optional[Path] = typer.Option(None, "--png", help="write the daily cost chart (PNG) to this file"),
    config: Optional[Path] = ConfigOpt,
    prometheus_url: Optional[str] = typer.Option(None, help="overrides prometheus.url"),
    cluster_state: Optional[Path] = typer.Option(
        None, help="a kubectl dump to read node capacity types (and, with --by clusterqueue, the LocalQueues) from"
    ),
    at: Optional[str] = typer.Option(None, help="the period ends at this RFC 3339 instant (default: now)"),
    source: str = typer.Option(
        "auto", help="auto (the usage ledger when it holds the period or ledger.enabled, the current hour from Prometheus), ledger, prometheus"
    ),
) -> None:
    """GPU-hours and USD per team from the usage ledger or Prometheus history: the chargeback report and its chart."""
    # The docstring is `report --help`, published CLI text: it keeps "chargeback" (the code says showback).
    from actions.cost.periods import PeriodError, parse_period
    from actions.cost.queues import BY_TEAM
    from actions.cost.report import to_jsonable as report_jsonable
    from actions.cost.reporting import build_report
    from bot.chat.chart import cost_chart_png
    from bot.chat.commands.cost import all_teams_message, team_message, team_where
    from bot.chat.console import to_text
    from bot.runtime.prices import price_book
    from bot.wiring.runtime import cluster_access
    from bot.wiring.sources import cost_setup

    grouping = _grouping(by)
    if grouping != BY_TEAM and (team is not None or png is not None):
        used = "--team" if team is not None else "--png (the chart is of each team's days)"
        raise typer.BadParameter(f"a report by {grouping} covers every team and has no daily split: leave out {used}, "
                                 f"e.g. `gpu-cost-bot report --by {grouping} --period 30d`", param_hint="--by")
    if png is not None and not png.parent.is_dir():
        raise typer.BadParameter(f"the folder {png.parent} does not exist; create it or write the chart elsewhere", param_hint="--png")
    s = cli_settings(config, prometheus_url)
    if source not in ("auto", "ledger", "prometheus"):
        raise typer.BadParameter(f"{source!r} is not a source; use auto, ledger or prometheus", param_hint="--source")
    store = report_store(s, source)
    setup = cost_setup(s, store, source)
    try:
        start, end = parse_period(period, at_option(at) or utc_now(), setup.timezone)
    except PeriodError as e:
        raise typer.BadParameter(str(e), param_hint="--period")
    if cluster not in (None, s.cluster_name) and not s.clusters:
        raise typer.BadParameter(f"no cluster {cluster!r}; this bot watches one cluster, {s.cluster_name}", param_hint="--cluster")
    if grouping != BY_TEAM:
        _queue_report(s, grouping, start, end, cluster, cluster_state, store, source, as_json)
        return
    fleet = None
    if s.clusters:
        from bot.runtime.runtime import UnknownCluster
        from bot.wiring.clusters import cost_reports
        try:
            built, fleet = cost_reports(s, start, end, cluster, store, source)
        except UnknownCluster as e:
            raise typer.BadParameter(str(e), param_hint="--cluster") from None
    else:
        built = build_report(
            setup, price_book(s), s.team_directory(), s.policy, start, end,
            api_nodes=lambda: cluster_access(s, cluster_state)[0].snapshot(end).nodes,
        )
    chosen = None
    if team is not None:
        chosen = built.team(team)
        if chosen is None:
            typer.echo(f"error: no team {team!r} in this period; teams: {', '.join(sorted(built.teams))}", err=True)
            raise typer.Exit(USAGE)
        chosen = dataclasses.replace(chosen, notes=chosen.notes + built.notes)
    if png is not None:
        cost_chart_png(chosen or built, png)
    warnings = list(built.warnings)
    if as_json:
        data = report_jsonable(chosen or built)
        data.update(advice_for_report(s, cluster_state, end, team), warnings=warnings)
        if getattr(setup.usage, "last_plan", None) is not None:
            data["source"] = describe_plan(setup.usage.last_plan)
        if fleet is not None:
            data["clusters"] = [dataclasses.asdict(t) for t in fleet.totals()]
        typer.echo(json.dumps(data, indent=2))
    elif chosen is not None:
        where, by_cluster = team_where(fleet, cluster if s.clusters else None, team)
        typer.echo(to_text(team_message(chosen, spot_ratio_target=setup.spot_ratio_target, where=where, by_cluster=by_cluster)))
    else:
        typer.echo(to_text(all_teams_message(built, fleet, cluster if s.clusters else None)))
    if not as_json and getattr(setup.usage, "last_plan", None) is not None:
        typer.echo(describe_source(setup.usage.last_plan), err=True)
    _warn(warnings)
    if warnings:
        raise typer.Exit(INCOMPLETE)


def _queue_report(
    s: Any, by: str, start: datetime, end: datetime, cluster: Optional[str], cluster_state: Optional[Path],
    store: Any, source: str, as_json: bool,
) -> None:
    """``report --by localqueue|clusterqueue``: a line per queue of one cluster (the only one, or
    ``--cluster``'s of ``clusters:``), the ClusterQueues from its LocalQueue objects (the API
    server, or ``--cluster-state``). JSON: the report's keys, the lines under ``localqueues`` or
    ``clusterqueues`` keyed ``namespace/name`` or the ClusterQueue's name, and ``by``."""
    from actions.cost.queues import BY_CLUSTER_QUEUE, queue_report
    from actions.cost.report import to_jsonable as report_jsonable
    from bot.chat.commands.cost import all_teams_message
    from bot.chat.console import to_text
    from bot.runtime.prices import price_book
    from bot.wiring.runtime import cluster_access
    from bot.wiring.sources import cost_setup

    if s.clusters:
        from bot.wiring.clusters import cluster_parts

        names = [t.name for t in s.clusters]
        if cluster not in names:
            raise typer.BadParameter(
                f"a report by {by} is of one cluster: name one of {', '.join(names)} (e.g. --cluster {names[0]})",
                param_hint="--cluster",
            )
        part = next(p for p in cluster_parts(s, store=store, source=source) if p.name == cluster)
        setup, reader = part.costs, (lambda: part.cluster)
    else:
        setup, reader = cost_setup(s, store, source), (lambda: cluster_access(s, cluster_state)[0])
    queues = reader().snapshot(end).local_queues if by == BY_CLUSTER_QUEUE else ()
    built = queue_report(setup, price_book(s), s.policy, start, end, by, queues,
                         api_nodes=lambda: reader().snapshot(end).nodes)
    warnings = list(built.warnings)
    plan = getattr(setup.usage, "last_plan", None)
    if as_json:
        data = report_jsonable(built)
        data[f"{by}s"] = data.pop("teams")
        data.update(by=by, warnings=warnings)
        if plan is not None:
            data["source"] = describe_plan(plan)
        typer.echo(json.dumps(data, indent=2))
    else:
        typer.echo(to_text(all_teams_message(built, None, cluster if s.clusters else None, by=by)))
        if plan is not None:
            typer.echo(describe_source(plan), err=True)
    _warn(warnings)
    if warnings:
        raise typer.Exit(INCOMPLETE)
