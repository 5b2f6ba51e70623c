"""``/gpu budget [team]`` shows monthly GPU budgets; ``/gpu budget set <team> <usd>/month`` sets
one (the team's approvers only, audited)."""

from __future__ import annotations

import difflib
import re
from datetime import datetime, timedelta

from actions.alerts.budgets import month_end_forecast, month_progress
from actions.policy.teams import ADMIN_TEAM, TeamDirectory
from bot.chat import blocks
from bot.chat.blocks.fit import fit_rows
from bot.chat.commands.context import CommandContext, Reply, UsageError
from bot.chat.failures import explain
from bot.runtime.chat import Message

NAME = "budget"
SUMMARY = "a team's monthly GPU budget, spend and forecast; `set` changes it (approvers only)"
EXAMPLE = "/gpu budget set research 5000/month"

# "5000", "$5,000", "5000/month", "$5,000.50 per month", "5k/mo"
_AMOUNT = re.compile(
    r"^\$?(?P<number>\d[\d,]*(?:\.\d+)?)(?P<k>k)?\s*(?:(?:/|per\s+)(?:month|mo))?$", re.IGNORECASE
)


def parse_usd_per_month(text: str) -> float | None:
    """``"$5,000/month"`` -> ``5000.0`` USD per month; ``None`` when ``text`` is not an amount."""
    m = _AMOUNT.match(text.strip())
    if not m:
        return None
    number = m["number"]
    if "," in number and not re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", number):
        return None
    value = float(number.replace(",", ""))
    return value * 1000 if m["k"] else value


def _across(rt, start: datetime, end: datetime) -> str:  # noqa: ANN001 - a Runtime
    """With several clusters: which clusters the spend sums (each cluster's report of the
    period, shared with the spend just read) and those whose report failed, not counted."""
    if not rt.clusters:
        return ""
    try:
        fleet = rt.fleet_report(start, end)
    except Exception:  # noqa: BLE001 - the spend was read; only its breakdown is missing
        return ""
    text = f"\n    summed over clusters {blocks.plain(', '.join(fleet.clusters))}"
    if fleet.failed:
        text += "; :warning: not counted, no report: " + "; ".join(
            f"{blocks.plain(c)} ({blocks.plain(why)})" for c, why in fleet.failed.items())
    return text


def _short_spend(rt, start: datetime, end: datetime) -> tuple[str, ...]:  # noqa: ANN001 - a Runtime
    """Why the spend of ``[start, end]`` may be short (no DCGM or kube-state-metrics series, hours
    the ledger lacks): the warnings of the cost report it was summed from, which the Runtime
    shares with the spend just read rather than computing it again."""
    if rt.costs is None and not rt.clusters:
        return ()
    try:
        return rt.cost_report(start, end).warnings
    except Exception:  # noqa: BLE001 - the spend's own failure is already shown in its line
        return ()


def _show(ctx: CommandContext, team: str | None) -> Reply:

    rt = ctx.rt
    budgets = rt.team_budgets()
    if team is None and ctx.channel:
        # In a team's channel, that team; elsewhere every team with a budget.
        here = [name for name, t in rt.teams.teams.items() if t.channel == ctx.channel]
        team = here[0] if len(here) == 1 else None
    names = [team] if team else sorted(budgets)
    if not names:
        return Reply(blocks.text_message(f"No team has a GPU budget yet. Set one: `{EXAMPLE}`"))
    now = rt.clock()
    stored = {b.team: b for b in rt.store.budgets()}
    lines = []
    short: dict[str, None] = {}  # each warning once, in the order met
    for name in names:
        usd = budgets.get(name)
        if usd is None:
            shown = blocks.plain(name)
            lines.append(f"*{shown}*: no budget. Its approvers can set one: `/gpu budget set {shown} 5000/month`")
            continue
        row = stored.get(name)
        origin = (
            f"set by <@{blocks.plain(row.set_by)}> on {blocks.short_time(row.set_at)}"
            if row else "from the bot's config"
        )
        line = f"*{blocks.plain(name)}*: {blocks.usd(usd)}/month ({origin})"
        progress = month_progress(now, rt.teams.team_for_name(name).timezone or "UTC")
        if ctx.spend_usd is None:
            line += "\n    spend: unavailable (no cost source in this bot)"
        else:
            start = now - timedelta(seconds=progress.elapsed_seconds)
            try:
                spent = float(ctx.spend_usd(start, now).get(name, 0.0))
            except Exception as e:  # noqa: BLE001 - the budget is still worth showing without the spend
                lines.append(f"{line}\n    spend: unavailable ({blocks.plain(explain(e).message)})")
                continue
            short.update(dict.fromkeys(_short_spend(rt, start, now)))
            forecast = month_end_forecast(spent, progress)
            line += f"\n    spent {blocks.usd(spent)} in {progress.key} ({100 * spent / usd:.0f}%)"
            if forecast is not None:
                line += (
                    f", month-end forecast {blocks.usd(forecast)} ({100 * forecast / usd:.0f}%; linear "
                    f"from {progress.fraction:.0%} of the month)"
                )
            line += _across(rt, start, now)
        lines.append(line)
    # A spend of $0.00 from empty telemetry must not read as a team that spent nothing.
    warnings = ["\n".join(f":warning: {blocks.plain(w)}" for w in short)] if short else []
    # A team per row, never cut within one; teams past Slack's 50 blocks are counted, not
    # dropped, and the warnings always end the answer.
    sections = fit_rows(lines, max_sections=blocks.MESSAGE_BLOCKS, tail=warnings, noun="more teams",
                        hint="name one: `/gpu budget <team>`")
    return Reply(Message(text=lines[0].splitlines()[0].replace("*", ""), blocks=[blocks.section(t) for t in sections]))


def _refuse_unknown_team(teams: TeamDirectory, team: str, amount: str) -> None:
    """Raises UsageError naming the configured teams when ``team`` is none of them. Any other
    name is a namespace's own team, which has no approvers: saying so would hide the typo."""
    names = sorted(teams.teams)
    if team in names or team == ADMIN_TEAM:
        return
    if not names:
        raise UsageError(
            f"No team `{blocks.plain(team)}`: the bot's config lists no teams. Add them under teams: with their approvers.",
            EXAMPLE,
        )
    closest = (difflib.get_close_matches(team, names, n=1) or names)[0]
    raise UsageError(
        f"No team `{blocks.plain(team)}`. Teams: {blocks.plain(', '.join(names))}.",
        f"/gpu budget set {blocks.plain(closest)} {blocks.plain(amount)}",
    )


def _set(ctx: CommandContext, args: list[str]) -> Reply:

    rt = ctx.rt
    if len(args) < 2:
        raise UsageError("Say which team and how many USD per month.", EXAMPLE)
    team, amount_text = args[0], " ".join(args[1:])
    usd = parse_usd_per_month(amount_text)
    _refuse_unknown_team(ctx.rt.teams, team, amount_text if usd else "5000/month")
    if usd is None or usd <= 0:
        raise UsageError(
            f"`{blocks.plain(amount_text)}` is not an amount in USD per month (a number above 0).",
            f"/gpu budget set {blocks.plain(team)} 5000/month",
        )
    now = rt.clock()
    if ctx.user not in rt.approvers_of(team):
        rt.store.audit(
            None, actor=ctx.user, event="budget-set-rejected", now=now,
            detail={"team": team, "usd_per_month": usd, "reason": "not an approver"},
        )
        configured = rt.teams.team_for_name(team).approvers
        who = ", ".join(f"<!subteam^{a}>" if a.startswith("S") else f"<@{a}>" for a in configured)
        if not who:
            message = (
                f"Team {blocks.plain(team)} has no approvers configured, so nobody can set its budget here. "
                "Add them under teams[].approvers in the bot's config."
            )
        else:
            message = f"Only approvers of team {blocks.plain(team)} ({who}) can set its budget. Nothing was changed."
        return Reply(blocks.error_message(message))
    previous = rt.store.budget(team)
    rt.store.set_budget(team, usd, ctx.user, now)
    was = f" (was {blocks.usd(previous.usd_per_month)}/month)" if previous else ""
    who, whose = blocks.plain(ctx.user), blocks.plain(team)
    text = f":white_check_mark: <@{who}> set team {whose}'s GPU budget to {blocks.usd(usd)}/month{was}."
    return Reply(blocks.text_message(text), ephemeral=False)


def handle(args: str, ctx: CommandContext) -> Reply:

    if ctx.rt is None:
        return Reply(blocks.error_message("`/gpu budget` needs the running bot's store."))
    parts = args.split()
    if parts and parts[0].lower() == "set":
        return _set(ctx, parts[1:])
    if len(parts) > 1:
        raise UsageError(blocks.plain("`/gpu budget` takes one team name, or `set <team> <usd>/month`."), EXAMPLE)
    return _show(ctx, parts[0] if parts else None)
