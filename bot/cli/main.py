"""The ``gpu-cost-bot`` command line (typer).

Every command answers bad input and services it cannot reach with one or two lines on stderr
(``--verbose`` adds the traceback), and exits with:

- 0: the answer is whole;
- 1: a service (Prometheus, the Kubernetes API, the database, AWS) could not be used;
- 2: the input (arguments, configuration, a file given) is wrong;
- 3: answered, but the data was incomplete (the warnings on stderr, and in ``--json``, say what
  is missing).
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from actions.model.codec import to_jsonable
from actions.model.times import format_time, utc_now
from actions.sources.recording import RecordedTelemetry, describe_recording
from bot.chat.failures import UNAVAILABLE, USAGE, explain
from bot.cli.advise import advise
from bot.cli.ledger import ledger_app
from bot.cli.report import report
from bot.cli.settings import at_option as _at
from bot.cli.settings import cli_settings, say_where_the_database_is

INCOMPLETE = 3
"""Exit code: answered, but the data was incomplete."""

app = typer.Typer(
    help="gpu-cost-bot: finds idle GPUs on Kubernetes, asks in chat before stopping them, says what GPUs cost. "
    "Exit codes: 0 whole answer, 1 a service could not be reached, 2 bad input or configuration, "
    "3 answered with incomplete data.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Plain usage errors: one line a terminal or a log keeps whole, not a box that wraps it.
    rich_markup_mode=None,
)

ConfigOpt = typer.Option(None, "--config", "-c", help="YAML config file (default: built-in defaults)")
_verbose = {"on": False}


def _explained(command: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``command``; an error it raises becomes one or two lines on stderr and the exit code
    of :func:`bot.chat.failures.explain` (with the traceback under ``--verbose``)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.TyperException, KeyboardInterrupt):
            raise  # typer's own usage errors and exits already speak for themselves
        except Exception as e:  # noqa: BLE001 - every failure ends as words and an exit code
            said = explain(e)
            if _verbose["on"]:
                traceback.print_exc(file=sys.stderr)
            typer.echo(f"error: {said.message}", err=True)
            raise typer.Exit(said.exit_code) from None

    return run


def _warn(warnings: tuple[str, ...] | list[str]) -> None:
    for w in warnings:
        typer.echo(f"warning: {w}", err=True)


def _probe(what: str, probe: Callable[[], str]) -> tuple[str, int]:
    """``(line, exit code)``: what ``probe`` found (0), or why it failed and the failure's exit
    code, after ``what``."""
    try:
        return f"{what}: {probe()}", 0
    except Exception as e:  # noqa: BLE001 - one unreachable service must not hide the others
        said = explain(e)
        return f"{what}: FAILED: {said.message}", said.exit_code


@app.command()
def check(
    config: Optional[Path] = ConfigOpt,
    connect: bool = typer.Option(False, "--connect", help="also reach Prometheus, the Kubernetes API and the database"),
) -> None:
    """Validate a config file and say precisely what is wrong; with --connect, say what each
    service holds."""
    s = cli_settings(config)
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
    _warn(problems)
    if not connect:
        return
    from bot.wiring.probes import cluster_probes, database_holds

    results = [_probe(what, probe) for what, probe in cluster_probes(s)] + [_probe("database", lambda: database_holds(s))]
    for line, _ in results:
        typer.echo(line)
    codes = {code for _, code in results}
    for code in (USAGE, UNAVAILABLE):  # a wrong setting first: fixing it may fix the rest
        if code in codes:
            raise typer.Exit(code)
    if any("\n  missing:" in line for line, _ in results):
        raise typer.Exit(INCOMPLETE)


@app.command()
def sweep(
    config: Optional[Path] = ConfigOpt,
    once: bool = typer.Option(False, "--once", help="run one sweep and exit"),
    dry_run: bool = typer.Option(False, "--dry-run", help="never patch the cluster"),
    as_json: bool = typer.Option(False, "--json", help="with --once: print the findings as JSON and post nothing"),
    prometheus_url: Optional[str] = typer.Option(None, help="overrides prometheus.url"),
    cluster_state: Optional[Path] = typer.Option(
        None, help="a `kubectl get pods,nodes,statefulsets,deployments,workloads.kueue.x-k8s.io,"
        "notebooks.kubeflow.org -A -o json` dump to read instead of the live API"
    ),
    telemetry: Optional[Path] = typer.Option(None, help="a telemetry recording to replay instead of Prometheus"),
    at: Optional[str] = typer.Option(None, help="with --once: evaluate at this RFC 3339 instant (default: now)"),
) -> None:
    """Find idle GPU consumers. With --json, print them; otherwise record and post proposals.
    Without --once, sweep every sweep.interval_seconds until stopped."""
    from bot.wiring.jobs import scheduled_jobs, sweep_for
    from bot.wiring.runtime import build_runtime, detect_only, keep_alive_to_exit

    if not once and (as_json or at):
        used = " and ".join(o for o, on in (("--json", as_json), ("--at", at)) if on)
        raise typer.BadParameter(
            f"{used} need --once: without it the bot sweeps every sweep.interval_seconds and posts proposals. "
            "Write `gpu-cost-bot sweep --once --json`", param_hint="--once",
        )
    s = cli_settings(config, prometheus_url)
    if dry_run:
        s.dry_run = True
    when, replay = _at(at), ""
    if telemetry is not None:
        # A recording is of its own time: read at it (once) or shown as if now (the loop), said
        # either way, with the answer (after it: an error stays the first line).
        recording = RecordedTelemetry.from_file(telemetry)
        if once and when is None:
            when = recording.recorded_at
        replay = describe_recording(recording, when if once else None)
    when = when or utc_now()
    keep_alive_to_exit()  # the modules imported
    if not once:
        from bot.jobs.scheduler import run_jobs_forever

        say_where_the_database_is(s)
        if replay:
            typer.echo(replay, err=True)
        rt = build_runtime(s, cluster_state=cluster_state, telemetry_file=telemetry)
        keep_alive_to_exit()
        run_jobs_forever(rt.store, scheduled_jobs(rt, s, verify=True), s.leader_election, s.kubernetes)
        return
    if as_json:
        found = detect_only(s, cluster_state, telemetry).detection(when)
        _warn(found.warnings)
        typer.echo(json.dumps(
            {"at": format_time(when), "findings": [to_jsonable(f) for f in found.findings], "warnings": list(found.warnings)},
            indent=2,
        ))
        if replay:
            typer.echo(replay, err=True)
        if found.warnings:
            raise typer.Exit(INCOMPLETE)
        return
    say_where_the_database_is(s)
    rt = build_runtime(s, cluster_state=cluster_state, telemetry_file=telemetry, clock=lambda: when)
    keep_alive_to_exit()
    outcome = sweep_for(rt, verify=True).run(when)
    keep_alive_to_exit()  # the process ends now: collecting the sweep's objects only slows its exit
    typer.echo(f"sweep at {format_time(when)}: " + ", ".join(f"{k} {v}" for k, v in outcome.counts.items()))
    if replay:
        typer.echo(replay)
    _warn(outcome.warnings)
    if outcome.warnings:
        raise typer.Exit(INCOMPLETE)


@app.command()
def estimate(
    text: list[str] = typer.Argument(
        ...,
        help="the request as you would say it, e.g. 16 h100 for a week | 2 nodes of p4d for 3 days | "
        "'4 gpus 10h at $3/hr' (in single quotes when it holds a dollar sign or a question mark)",
    ),
    as_json: bool = typer.Option(False, "--json", help="print the estimate as JSON (one object per model under options)"),
    config: Optional[Path] = ConfigOpt,
) -> None:
    """What GPUs for a while would cost, on-demand beside spot (and spot adjusted for
    interruptions), with the source of every price.

    \b
    gpu-cost-bot estimate 16 h100 for a week
    gpu-cost-bot estimate 'what would 16 gpus for a week cost?'
    gpu-cost-bot estimate 2 nodes of p4d for 3 days on spot
    gpu-cost-bot estimate 1000 gpu-hours of a100-40gb
    gpu-cost-bot estimate '4 gpus 10h at $3/hr'

    Without a GPU model or a price, common models are compared side by side. A request that
    cannot be priced gets what was read, what is wrong and an example on stderr, and exit code 2.
    """
    import shlex

    from actions.estimate.parse import parse_estimate
    from actions.estimate.price import compute_estimate
    from actions.estimate.render import estimate_to_jsonable
    from actions.estimate.request import EstimateInputError
    from bot.chat.commands.estimate import estimate_text
    from bot.runtime.prices import price_book

    prices = price_book(cli_settings(config))
    try:
        est = compute_estimate(parse_estimate(" ".join(text), prices), prices)
    except EstimateInputError as e:
        read = f" (I read: {e.understood})" if e.understood else ""
        typer.echo(f"error: {e.problem}{read}", err=True)
        # Quoted as a shell needs it, so a $ in the example survives being pasted.
        typer.echo("write it like: " + " or ".join(f"gpu-cost-bot estimate {shlex.quote(x)}" for x in e.examples), err=True)
        raise typer.Exit(USAGE)
    typer.echo(json.dumps(estimate_to_jsonable(est), indent=2) if as_json else estimate_text(est))


# Registered here so that `--help` lists it where it always was, after estimate.
app.command(name="report")(report)


@app.command()
def migrate(config: Optional[Path] = ConfigOpt) -> None:
    """Bring the database schema to the latest version and name the cluster of requests stored
    without one (run also at every start)."""
    from actions.store.database import Store
    from bot.runtime.identity import settle_home_cluster

    s = cli_settings(config)
    say_where_the_database_is(s)
    store = Store(s.database_url)
    store.migrate()
    settle_home_cluster(store, [t.name for t in s.cluster_targets()], utc_now())
    typer.echo(f"database at the latest schema ({s.database_url.split('://')[0]})")


@app.command()
def run(
    config: Optional[Path] = ConfigOpt,
    chat: str = typer.Option("slack", help="slack or console"),
    dry_run: bool = typer.Option(False, "--dry-run", help="never patch the cluster"),
    cluster_state: Optional[Path] = typer.Option(None, help="read a kubectl dump instead of the live API"),
    telemetry: Optional[Path] = typer.Option(None, help="replay a telemetry recording instead of Prometheus"),
    user: str = typer.Option(
        "UCONSOLE", help="with --chat console: the Slack user id you act as (an approver from the config may approve)"
    ),
) -> None:
    """Run the bot: scheduled sweeps plus the chat (Slack Socket Mode or HTTP, or the console)."""
    from bot.service import logs
    from bot.wiring.process import serve

    if chat not in ("slack", "console"):
        raise typer.BadParameter(f"{chat!r} is not a chat; use slack or console", param_hint="--chat")
    s = cli_settings(config)
    if dry_run:
        s.dry_run = True
    if chat == "console":
        # The prompt shares the terminal: only what needs a reader's attention, as short text.
        logs.setup("text", "DEBUG" if _verbose["on"] else "WARNING")
    else:
        logs.setup(s.server.log_format, s.server.log_level)
    say_where_the_database_is(s)
    if telemetry is not None:
        replay = describe_recording(RecordedTelemetry.from_file(telemetry), None)
        # At a terminal, a line for the person there; in a pod, a record, so a JSON log stays JSON.
        if chat == "console":
            typer.echo(replay, err=True)
        else:
            logging.getLogger("bot.cli").warning(replay)
    serve(s, chat=chat, cluster_state=cluster_state, telemetry_file=telemetry, user=user)


@app.command()
def demo(
    interactive: bool = typer.Option(
        False, "--interactive", help="press the buttons and type the /gpu commands yourself (cost, budget, advise, queue)"
    ),
    png: Optional[Path] = typer.Option(
        None, "--png", help="instead of the loop: write the daily cost chart of the bundled 30 days (PNG) to this file"
    ),
) -> None:
    """The whole loop on bundled data: sweep, proposal, approval, action, restore (console, SQLite),
    with 30 days of bundled history for the cost, budget and advice commands."""
    from bot.demo import run_demo, write_chart

    if png is not None:
        if interactive:
            raise typer.BadParameter("--png writes the chart and exits; leave out --interactive", param_hint="--png")
        if not png.parent.is_dir():
            raise typer.BadParameter(f"the folder {png.parent} does not exist; create it or write the chart elsewhere", param_hint="--png")
        write_chart(png, sys.stdout)
        return
    run_demo(interactive=interactive, out=sys.stdout)


def _version(show: bool) -> None:
    if show:
        try:
            typer.echo(f"gpu-cost-bot {version('gpu-cost-bot')}")
        except PackageNotFoundError:
            typer.echo("gpu-cost-bot (not installed as a package)")
        raise typer.Exit()


@app.callback()
def _main(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="log debug output and show tracebacks"),
    show_version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="print the version and exit"),
) -> None:
    from bot.service import logs

    _verbose["on"] = verbose
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logs.quiet_libraries(logging.DEBUG if verbose else logging.WARNING)


app.add_typer(ledger_app, name="ledger")
app.command(name="advise")(advise)

# Every command speaks in words and exit codes, never a traceback (see the module docstring).
for _command in (*app.registered_commands, *ledger_app.registered_commands):
    _command.callback = _explained(_command.callback)


if __name__ == "__main__":
    app()
