"""``gpu-cost-bot ledger status`` and ``gpu-cost-bot ledger backfill``: which hours the usage
ledger holds, and filling it by hand from Prometheus history (registered by :mod:`bot.cli`, which
also turns their errors into words and exit codes)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import sqlalchemy.exc
import typer

from actions.ledger.plan import PeriodPlan, ranges
from actions.model.ledger import EMPTY, FILLED, PARTIAL
from actions.model.times import floor_hour, format_time, hours_between, parse_time, utc_now
from bot.cli.settings import cli_settings, say_where_the_database_is
from bot.settings import Settings
from bot.settings.clusters import ClusterTarget

if TYPE_CHECKING:
    from actions.store.database import Store

ledger_app = typer.Typer(help="the usage ledger: which hours it holds, and filling it from Prometheus history",
                         no_args_is_help=True, rich_markup_mode=None)

ConfigOpt = typer.Option(None, "--config", "-c", help="YAML config file (default: built-in defaults)")
DATE_EXAMPLE = "2026-11-01 or 2026-11-01T06:00:00Z"


def parse_date(value: str, param: str) -> datetime:
    """A day (``YYYY-MM-DD``, midnight UTC) or an RFC 3339 instant, aware UTC; typer.BadParameter
    with an example otherwise."""
    try:
        if len(value) == 10:
            return datetime.fromisoformat(value).replace(tzinfo=timezone.utc)
        return parse_time(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date; write it like {DATE_EXAMPLE}", param_hint=param) from None


def _span(pieces: tuple[tuple[datetime, datetime], ...] | list[tuple[datetime, datetime]], limit: int = 6) -> str:
    shown = ", ".join(f"{format_time(a)} to {format_time(b)}" for a, b in pieces[:limit])
    return shown + (f" and {len(pieces) - limit} more" if len(pieces) > limit else "")


def describe_plan(plan: PeriodPlan) -> dict:
    """Where a report's hours came from, as JSON: ``ledger``, ``prometheus`` (read live) and
    ``missing`` ranges, and ``missing_hours``."""
    def out(p):
        return [[format_time(a), format_time(b)] for a, b in p]

    return {"ledger": out(plan.ledger), "prometheus": out(plan.live), "missing": out(plan.missing),
            "missing_hours": plan.missing_hours}


def describe_source(plan: PeriodPlan) -> str:
    """One line for stderr saying where a report's usage came from: the ledger's hours, the
    pieces read from Prometheus, the hours neither held."""
    held = sum((b - a).total_seconds() for a, b in plan.ledger) / 3600
    if not held:
        return "usage: read from Prometheus (the usage ledger does not hold this period)"
    out = f"usage: {held:g} hour(s) from the usage ledger"
    if plan.live:
        out += f", {_span(plan.live)} from Prometheus"
    return out + (f", {plan.missing_hours:g} hour(s) missing" if plan.missing else "")


def report_store(s: Settings, source: str) -> Store | None:
    """The migrated :class:`~actions.store.database.Store` a report reads the usage ledger from,
    or None: for ``ledger``, and for ``auto`` whenever the ledger may hold the period, since
    ``ledger.enabled`` governs the hourly job, not reading a ledger ``ledger backfill`` filled.
    Without ``ledger.enabled``, ``auto`` only reads: a SQLite file that does not exist, a
    database that cannot be reached, or one not at this version's schema holds none (nothing is
    made or migrated). Otherwise raises what the store raises (sqlalchemy errors) when the
    database cannot be reached."""
    from sqlalchemy.engine import make_url

    from actions.store.database import Store

    if source == "prometheus":
        return None
    url = make_url(s.database_url)
    if source == "auto" and not s.ledger.enabled and url.get_backend_name() == "sqlite":
        if not url.database or url.database == ":memory:" or not Path(url.database).is_file():
            return None
    say_where_the_database_is(s)
    store = Store(s.database_url)
    if source == "auto" and not s.ledger.enabled:
        # A ledger a backfill filled, read as it is: never migrated under the replicas that use
        # the database, and one that cannot be read (down, older or newer) holds nothing here.
        try:
            applied, newest = store.schema_status()
        except sqlalchemy.exc.SQLAlchemyError:
            return None
        return store if applied == newest else None
    store.migrate()  # as the bot does at every start: a new database holds an empty ledger
    return store


ClusterOpt = typer.Option(None, "--cluster", help="one cluster of `clusters:` (default: the first or only one)")


def _target(s: Settings, cluster: Optional[str]) -> ClusterTarget:
    """The cluster ``--cluster`` names (default: the first or only one); BadParameter naming the
    configured ones otherwise."""
    targets = s.cluster_targets()
    if cluster is None:
        return targets[0]
    for t in targets:
        if t.name == cluster:
            return t
    raise typer.BadParameter(f"no cluster {cluster!r}; the clusters are {', '.join(t.name for t in targets)}",
                             param_hint="--cluster")


@ledger_app.command()
def status(
    config: Optional[Path] = ConfigOpt,
    since: Optional[str] = typer.Option(None, help=f"from this day ({DATE_EXAMPLE}); default: ledger.backfill_days ago"),
    as_json: bool = typer.Option(False, "--json", help="print the status as JSON"),
    at: Optional[str] = typer.Option(None, help="as of this RFC 3339 instant (default: now)"),
    cluster: Optional[str] = ClusterOpt,
) -> None:
    """Which hours the ledger holds (filled, partial, empty) and which are missing, and which
    held hours lack advice's facts."""
    from actions.store.advice_hours import AdviceHourStore
    from actions.store.database import Store
    from actions.store.ledger import LedgerStore

    s = cli_settings(config)
    name = _target(s, cluster).name
    now = parse_date(at, "--at") if at else utc_now()
    start = parse_date(since, "--since") if since else floor_hour(now) - timedelta(days=s.ledger.backfill_days)
    say_where_the_database_is(s)
    store = Store(s.database_url)
    store.migrate()
    ledger = LedgerStore(store)
    hours = [row for row in ledger.hours(name) if start <= row[0] < floor_hour(now)]
    held = {row[0] for row in hours}
    by_status = {st: [row for row in hours if row[1] == st] for st in (FILLED, PARTIAL, EMPTY)}
    missing = ranges(x for x in hours_between(start, floor_hour(now)) if x not in held)
    advised = AdviceHourStore(store).held(name, floor_hour(start), floor_hour(now), s.advice.busy_engine_pct)
    unadvised = ranges(x for x in sorted(held) if x not in advised)
    counts = ledger.counts(name)
    data = {
        "cluster": name,
        "enabled": s.ledger.enabled,
        "from": format_time(floor_hour(start)), "until": format_time(floor_hour(now)),
        "hours": {st: len(rows) for st, rows in by_status.items()},
        "missing_hours": sum(int((b - a).total_seconds() // 3600) for a, b in missing),
        "missing": [[format_time(a), format_time(b)] for a, b in missing],
        "partial": [{"hour": format_time(r[0]), "detail": r[4]} for r in by_status[PARTIAL]],
        "without_advice_hours": sum(int((b - a).total_seconds() // 3600) for a, b in unadvised),
        "without_advice": [[format_time(a), format_time(b)] for a, b in unadvised],
        "rows": counts["rows"],
        "oldest": format_time(counts["oldest"]) if counts["oldest"] else None,
        "newest": format_time(counts["newest"]) if counts["newest"] else None,
    }
    store.close()
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    h = data["hours"]
    typer.echo(
        f"usage ledger of cluster {name} ({'enabled' if s.ledger.enabled else 'disabled: ledger.enabled is false'}), "
        f"{data['from']} to {data['until']}: {h[FILLED]} hour(s) filled, {h[PARTIAL]} partial, {h[EMPTY]} empty, "
        f"{data['missing_hours']} missing; {data['rows']} row(s) in all"
    )
    if missing:
        typer.echo(f"missing: {_span(missing)}")
    if unadvised:
        typer.echo(f"held without advice's facts ({data['without_advice_hours']} hour(s); "
                   f"`gpu-cost-bot ledger backfill` adds them while Prometheus keeps them): {_span(unadvised)}")
    for r in data["partial"][:10]:
        typer.echo(f"partial: {r['hour']}: {r['detail']}")


@ledger_app.command()
def backfill(
    since: str = typer.Option(..., help=f"fill from this day or instant ({DATE_EXAMPLE})"),
    until: Optional[str] = typer.Option(None, help="up to this day or instant (default: the last finished hour)"),
    config: Optional[Path] = ConfigOpt,
    prometheus_url: Optional[str] = typer.Option(None, help="overrides prometheus.url"),
    cluster: Optional[str] = ClusterOpt,
) -> None:
    """Roll the missing hours since DATE up from Prometheus history, oldest first, with a progress
    bar. Hours before the first data Prometheus holds stay missing."""
    from actions.ledger.rollup import LedgerRollup
    from actions.store.database import Store
    from actions.store.ledger import LedgerStore
    from bot.runtime.prices import price_book
    from bot.wiring.sources import advice_hours, prometheus_usage

    s = cli_settings(config, prometheus_url)
    start = parse_date(since, "--since")
    now = min(parse_date(until, "--until"), utc_now()) if until else utc_now()
    if start >= floor_hour(now):
        raise typer.BadParameter(f"{since} is not before {format_time(floor_hour(now))}; e.g. --since 2026-11-01",
                                 param_hint="--since")
    say_where_the_database_is(s)
    store = Store(s.database_url)
    store.migrate()
    target = _target(s, cluster)
    prometheus = prometheus_usage(s, target)
    rollup = LedgerRollup(prometheus, LedgerStore(store), cluster=target.name, team_label=s.costs.team_label,
                          prices=price_book(s),
                          advice=advice_hours(s, store, target) if s.advice.history_source == "auto" else None)
    todo = rollup.missing(start, now)
    fill = rollup.reachable(todo, now)
    unreachable = len(todo) - len(fill)
    with typer.progressbar(fill, label=f"rolling up {len(fill)} hour(s)", file=None) as bar:
        for hour in bar:
            rollup.roll_up(hour, s.policy, now)
    typer.echo(f"filled {len(fill)} hour(s) of cluster {target.name} since {format_time(start)}"
               + (f"; {unreachable} hour(s) are older than the first data Prometheus holds and stay missing"
                  if unreachable else ""))
    store.close()
