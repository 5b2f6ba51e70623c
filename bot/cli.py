"""The ``gpu-cost-bot`` command line (typer)."""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from datetime import datetime
from pathlib import Path
from typing import Optional

import typer

from actions.model import format_time, parse_time, to_jsonable
from bot.settings import ConfigError, Settings, load_settings

app = typer.Typer(
    help="gpu-cost-bot: finds idle GPUs on Kubernetes, asks in chat before stopping them, says what GPUs cost.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

ConfigOpt = typer.Option(None, "--config", "-c", help="YAML config file (default: built-in defaults)")


def _settings(config: Optional[Path]) -> Settings:
    try:
        return load_settings(config)
    except ConfigError as e:
        typer.echo(f"configuration error:\n{e}", err=True)
        raise typer.Exit(2)


def _at(value: Optional[str]) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not RFC 3339; write it like 2026-11-20T12:00:00Z", param_hint="--at")


@app.command()
def check(config: Optional[Path] = ConfigOpt) -> None:
    """Validate a config file and say precisely what is wrong."""
    s = _settings(config)
    problems = []
    if s.slack.mode == "socket" and not s.slack_app_token:
        problems.append("slack.mode is socket but SLACK_APP_TOKEN (xapp-...) is not set in the environment")
    if s.slack.mode == "http" and not s.slack_signing_secret:
        problems.append("slack.mode is http but SLACK_SIGNING_SECRET is not set in the environment")
    if not s.slack_bot_token:
        problems.append("SLACK_BOT_TOKEN (xoxb-...) is not set in the environment (needed by `run --chat slack`)")
    for team in s.teams:
        if not team.approvers:
            problems.append(f"team {team.name!r} has no approvers: nobody can approve its requests")
        if not (team.channel or s.slack.default_channel):
            problems.append(f"team {team.name!r} has no channel and there is no slack.default_channel")
    typer.echo(f"config OK: {len(s.teams)} team(s), dry_run={s.dry_run}, database {s.database_url.split('://')[0]}")
    for p in problems:
        typer.echo(f"warning: {p}")


@app.command()
def sweep(
    config: Optional[Path] = ConfigOpt,
    once: bool = typer.Option(False, "--once", help="run one sweep and exit"),
    dry_run: bool = typer.Option(False, "--dry-run", help="never patch the cluster"),
    as_json: bool = typer.Option(False, "--json", help="print the findings as JSON and post nothing"),
    prometheus_url: Optional[str] = typer.Option(None, help="overrides prometheus.url"),
    cluster_state: Optional[Path] = typer.Option(
        None, help="a `kubectl get pods,nodes,statefulsets,deployments,workloads.kueue.x-k8s.io,"
        "notebooks.kubeflow.org -A -o json` dump to read instead of the live API"
    ),
    telemetry: Optional[Path] = typer.Option(None, help="a telemetry recording to replay instead of Prometheus"),
    at: Optional[str] = typer.Option(None, help="evaluate at this RFC 3339 instant (default: now)"),
) -> None:
    """Find idle GPU consumers. With --json, print them; otherwise record and post proposals."""
    from bot.approvals import Approvals
    from bot.runtime import utc_now
    from bot.wiring import build_runtime, cluster_access, price_book, telemetry_source

    s = _settings(config)
    if prometheus_url:
        s.prometheus.url = prometheus_url
    if dry_run:
        s.dry_run = True
    when = _at(at) or utc_now()
    if not once:
        from bot.scheduler import run_sweeps_forever

        run_sweeps_forever(build_runtime(s, cluster_state=cluster_state, telemetry_file=telemetry), s)
        return
    if as_json:
        from actions.idle import detect_idle

        reader, _ = cluster_access(s, cluster_state)
        findings = detect_idle(
            reader.snapshot(when),
            telemetry_source(s, telemetry).fetch(when, s.policy),
            price_book(s),
            s.policy,
            s.team_directory(),
            when,
        )
        typer.echo(json.dumps([to_jsonable(f) for f in findings], indent=2))
        return
    rt = build_runtime(s, cluster_state=cluster_state, telemetry_file=telemetry, clock=lambda: when)
    counts = Approvals(rt).reconcile(rt.find_idle(when), when)
    typer.echo(f"sweep at {format_time(when)}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


@app.command()
def estimate(
    text: list[str] = typer.Argument(..., help="e.g. 16 a100 1w  |  8 h100 for 3 days  |  4 gpus 10h at $3/hr"),
    as_json: bool = typer.Option(False, "--json", help="print the estimate as JSON"),
    config: Optional[Path] = ConfigOpt,
) -> None:
    """What N GPUs for a while cost: on-demand, spot, and spot adjusted for interruptions."""
    from actions.estimate import EstimateInputError, compute_estimate, estimate_to_jsonable, parse_estimate
    from bot.commands.estimate import estimate_text
    from bot.wiring import price_book

    prices = price_book(_settings(config))
    try:
        est = compute_estimate(parse_estimate(" ".join(text)), prices)
    except EstimateInputError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2)
    typer.echo(json.dumps(estimate_to_jsonable(est), indent=2) if as_json else estimate_text(est))


@app.command()
def report(
    team: Optional[str] = typer.Option(None, "--team", "-t", help="one team's report (default: every team)"),
    period: str = typer.Option("30d", help="7d, 30d, mtd, last-month (also 12h, 2w)"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
    png: Optional[Path] = typer.Option(None, "--png", help="write the daily cost chart (PNG) to this file"),
    config: Optional[Path] = ConfigOpt,
    prometheus_url: Optional[str] = typer.Option(None, help="overrides prometheus.url"),
    cluster_state: Optional[Path] = typer.Option(
        None, help="a kubectl dump to read node capacity types from when kube_node_labels lacks them"
    ),
    at: Optional[str] = typer.Option(None, help="the period ends at this RFC 3339 instant (default: now)"),
) -> None:
    """GPU-hours and USD per team from Prometheus history: the chargeback report and its chart."""
    from actions.cost import PeriodError, parse_period
    from actions.cost import to_jsonable as report_jsonable
    from actions.sources.prometheus import TelemetryError
    from bot.chart import cost_chart_png
    from bot.commands.cost import all_teams_message, team_message
    from bot.console import to_text
    from bot.reports import build_report
    from bot.runtime import utc_now
    from bot.wiring import cluster_access, cost_setup, price_book

    s = _settings(config)
    if prometheus_url:
        s.prometheus.url = prometheus_url
    setup = cost_setup(s)
    try:
        start, end = parse_period(period, _at(at) or utc_now(), setup.timezone)
    except PeriodError as e:
        raise typer.BadParameter(str(e), param_hint="--period")
    try:
        built = build_report(
            setup, price_book(s), s.team_directory(), s.policy, start, end,
            api_nodes=lambda: cluster_access(s, cluster_state)[0].snapshot(end).nodes,
        )
    except TelemetryError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1)
    chosen = None
    if team is not None:
        chosen = built.teams.get(team)
        if chosen is None:
            typer.echo(f"error: no team {team!r} in this period; teams: {', '.join(sorted(built.teams))}", err=True)
            raise typer.Exit(2)
        chosen = dataclasses.replace(chosen, notes=chosen.notes + built.notes)
    if png is not None:
        cost_chart_png(chosen or built, png)
    if as_json:
        typer.echo(json.dumps(report_jsonable(chosen or built), indent=2))
    elif chosen is not None:
        typer.echo(to_text(team_message(chosen, spot_ratio_target=setup.spot_ratio_target)))
    else:
        typer.echo(to_text(all_teams_message(built)))


@app.command()
def migrate(config: Optional[Path] = ConfigOpt) -> None:
    """Bring the database schema to the latest version (run also at every start)."""
    from actions.store import Store

    s = _settings(config)
    Store(s.database_url).migrate()
    typer.echo(f"database at the latest schema ({s.database_url.split('://')[0]})")


@app.command()
def run(
    config: Optional[Path] = ConfigOpt,
    chat: str = typer.Option("slack", help="slack or console"),
    dry_run: bool = typer.Option(False, "--dry-run", help="never patch the cluster"),
    cluster_state: Optional[Path] = typer.Option(None, help="read a kubectl dump instead of the live API"),
    telemetry: Optional[Path] = typer.Option(None, help="replay a telemetry recording instead of Prometheus"),
) -> None:
    """Run the bot: scheduled sweeps plus the chat (Slack Socket Mode or HTTP, or the console)."""
    from bot import logs
    from bot.serve import serve

    s = _settings(config)
    if dry_run:
        s.dry_run = True
    if chat not in ("slack", "console"):
        raise typer.BadParameter("use slack or console", param_hint="--chat")
    # On the console the prompt shares the terminal, so lines stay short text there.
    logs.setup("text" if chat == "console" else s.server.log_format, s.server.log_level)
    serve(s, chat=chat, cluster_state=cluster_state, telemetry_file=telemetry)


@app.command()
def demo(
    interactive: bool = typer.Option(False, "--interactive", help="press the buttons yourself"),
) -> None:
    """The whole loop on bundled data: sweep, proposal, approval, action, restore (console, SQLite)."""
    from bot.demo import run_demo

    run_demo(interactive=interactive, out=sys.stdout)


@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="log debug output")) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
