"""``gpu-cost-bot advise``: the advice of ``/gpu advise`` at a terminal or as JSON, registered by
:mod:`bot.cli` (which keeps the exit codes and the error wording)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from actions.model.times import format_time, parse_time, utc_now
from bot.cli.settings import cli_settings

INCOMPLETE = 3


def cli_energy(settings, cluster_state: Optional[Path]):  # noqa: ANN001, ANN201 - Settings -> factors
    """The energy factors the advice's CO2e is computed with: each cluster's by name when the
    advice is of the config's ``clusters:``, else the one cluster's (the top-level ``energy``)."""
    if settings.clusters and cluster_state is None:
        return {t.name: settings.energy_factors(t.name) for t in settings.clusters}
    return settings.energy_factors()


def advice_for_report(settings, cluster_state: Optional[Path], at, team: Optional[str]) -> dict:
    """``report --json``'s ``advice`` (list) and ``could_save_usd_per_month`` at the period's
    end, with ``advice_warnings`` when consumers had no DCGM history. A source that fails (no
    cluster to read, Prometheus down) makes both null and says why in ``advice_unavailable``.
    Neither is one of the report's warnings nor changes its exit code: the report's own figures
    do not depend on the advice."""
    from actions.advice.jsonable import energy_totals, recommendation_to_jsonable
    from actions.advice.round import gather_advice
    from bot.chat.failures import explain
    from bot.runtime.prices import price_book
    from bot.wiring.runtime import cluster_access
    from bot.wiring.sources import advice_setup

    try:
        if settings.clusters and cluster_state is None:
            from bot.wiring.clusters import clusters_advice

            result = clusters_advice(settings, at, team)
        else:
            snapshot = cluster_access(settings, cluster_state)[0].snapshot(at)
            setup = advice_setup(settings)
            result = gather_advice(snapshot, setup.history, price_book(settings), settings.policy, setup.policy,
                                   settings.team_directory(), at, team=team)
    except Exception as e:  # noqa: BLE001 - the report stands without its advice
        # The report itself is whole without the cluster; the advice, an extra, says why it is missing.
        return {"advice": None, "could_save_usd_per_month": None, "advice_unavailable": explain(e).message}
    data: dict = {
        "advice": [recommendation_to_jsonable(r) for r in result.recommendations],
        "could_save_usd_per_month": result.could_save_usd_per_month,
        **energy_totals(result.recommendations, cli_energy(settings, cluster_state)),
    }
    if result.warnings():
        data["advice_warnings"] = list(result.warnings())
    return data


def advise(
    team: Optional[str] = typer.Option(None, "--team", "-t", help="one team's advice (default: every team)"),
    as_json: bool = typer.Option(False, "--json", help="print the advice as JSON"),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config file (default: built-in defaults)"),
    prometheus_url: Optional[str] = typer.Option(None, help="overrides prometheus.url"),
    cluster_state: Optional[Path] = typer.Option(None, help="a kubectl dump to read instead of the live API"),
    at: Optional[str] = typer.Option(None, help="the history ends at this RFC 3339 instant (default: now)"),
) -> None:
    """Advice that saves money: fewer GPUs, a MIG profile, spot for jobs that restart cleanly,
    commitments for the steady baseline; sorted by USD a month saved, each with its evidence and
    price sources. Reads 7 days (advice.window_seconds) and 30 days (advice.commitment_window_seconds)
    of DCGM history from Prometheus."""
    from actions.advice.jsonable import energy_totals, recommendation_to_jsonable
    from bot.chat.blocks.advice import advice_message
    from bot.chat.console import to_text
    from bot.runtime.prices import price_book
    from bot.wiring.runtime import cluster_access
    from bot.wiring.sources import advice_setup

    s = cli_settings(config, prometheus_url)
    try:
        when = parse_time(at) if at else utc_now()
    except ValueError:
        raise typer.BadParameter(f"{at!r} is not RFC 3339; write it like 2026-11-30T00:30:00Z", param_hint="--at") from None
    teams = s.team_directory()
    if s.clusters and cluster_state is None:
        from bot.wiring.clusters import clusters_advice

        result = clusters_advice(s, when)
        seen = {u.team for u in result.usages}
    else:
        from actions.advice.round import gather_advice

        snapshot = cluster_access(s, cluster_state)[0].snapshot(when)
        setup = advice_setup(s)
        result = gather_advice(snapshot, setup.history, price_book(s), s.policy, setup.policy, teams, when)
        seen = {teams.team_for(p.namespace).name for p in snapshot.pods}
    if team is not None and team not in teams.teams and team not in seen:
        known = sorted(set(teams.teams) | seen)
        raise typer.BadParameter(f"no team {team!r}; teams: {', '.join(known) or 'none'}", param_hint="--team")
    if team is not None:
        result = result.for_team(team)
    energy = cli_energy(s, cluster_state)
    warnings = result.warnings()
    if as_json:
        typer.echo(json.dumps({
            "at": format_time(when),
            "team": team,
            "advice": [recommendation_to_jsonable(r) for r in result.recommendations],
            "could_save_usd_per_month": result.could_save_usd_per_month,
            **energy_totals(result.recommendations, energy),
            "warnings": list(warnings),
        }, indent=2))
    else:
        typer.echo(to_text(advice_message(result.recommendations, result.could_save_usd_per_month, when, team,
                                          energy=energy)))
    for w in warnings:
        typer.echo(f"warning: {w}", err=True)
    if warnings:
        raise typer.Exit(INCOMPLETE)
