"""``/gpu budget [team]`` shows monthly GPU budgets; ``/gpu budget set <team> <usd>/month`` sets
one (the team's approvers only, audited); ``/gpu budget set localqueue|clusterqueue|team <name>
<amount> [gpu-hours] [/month|/week|every 14 days from 2026-11-02] [warn|ask|auto]`` sets a budget
Kueue can enforce (:mod:`actions.budgets.words`; a LocalQueue's by its team's approvers, a
ClusterQueue's by the cluster admins)."""

from __future__ import annotations

import difflib
import re
from datetime import datetime, timedelta

from actions.alerts.budgets import month_end_forecast, month_progress
from actions.budgets.words import BudgetWordsError, is_budget_rule, read_budget
from actions.policy.teams import ADMIN_TEAM, TeamDirectory
from bot.chat import blocks
from bot.chat.blocks.fit import fit_rows
from bot.chat.commands.context import CommandContext, Reply, UsageError, cluster_arg
from bot.chat.failures import explain
from bot.runtime.budgets import budget_state, budgets_in_force, team_of_budget
from bot.runtime.chat import Message

NAME = "budget"
SUMMARY = "a team's monthly GPU budget, spend and forecast; `set` changes it (approvers only)"
EXAMPLE = "/gpu budget set research 5000/month"
RULE_EXAMPLE = "/gpu budget set localqueue training/training-queue 2000 gpu-hours/month ask"

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
    rules = _rule_lines(rt, team)
    if not names and not rules:
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
    lines += rules
    # A spend of $0.00 from empty telemetry must not read as a team that spent nothing.
    warnings = ["\n".join(f":warning: {blocks.plain(w)}" for w in short)] if short else []
    # A team per row, never cut within one; teams past Slack's 50 blocks are counted, not
    # dropped, and the warnings always end the answer.
    sections = fit_rows(lines, max_sections=blocks.MESSAGE_BLOCKS, tail=warnings, noun="more teams",
                        hint="name one: `/gpu budget <team>`")
    return Reply(Message(text=lines[0].splitlines()[0].replace("*", ""), blocks=[blocks.section(t) for t in sections]))


def _rule_lines(rt, team: str | None) -> list[str]:  # noqa: ANN001 - a Runtime
    """A line per budget Kueue can enforce (``team``'s only, when named): its spend in its period
    and what happens at 100%."""
    lines, then = [], {"warn": "an alert", "ask": "a hold asked of the approvers", "auto": "a hold after the grace"}
    now, seen, usages = rt.clock(), {}, {}
    for b in budgets_in_force(rt):
        if team is not None and team_of_budget(rt, b) != team:
            continue
        head = f"*{blocks.plain(b.subject())}*: {blocks.plain(b.describe())}, at 100% {then[b.on_exhausted]} ({b.source})"
        try:
            cluster = b.cluster or rt.cluster_name
            if cluster not in seen:
                seen[cluster] = rt.snapshot_of(cluster, now)
            lines.append(f"{head}\n    used {blocks.plain(budget_state(rt, b, now, seen[cluster], usages).describe())}")
        except Exception as e:  # noqa: BLE001 - the budget is still worth showing without its spend
            lines.append(f"{head}\n    spend: unavailable ({blocks.plain(explain(e).message)})")
    return lines


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


def _set_rule(ctx: CommandContext, args: list[str]) -> Reply:
    """``set localqueue training/training-queue 2000 gpu-hours/month ask`` and the like."""
    rt = ctx.rt
    words, cluster = cluster_arg(" ".join(args), RULE_EXAMPLE)
    try:
        budget = read_budget(words, cluster or "")
    except BudgetWordsError as e:
        raise UsageError(blocks.plain(str(e)), blocks.plain(e.example)) from None
    team = team_of_budget(rt, budget)
    now = rt.clock()
    if ctx.user not in rt.approvers_of(team):
        rt.store.audit(None, actor=ctx.user, event="budget-set-rejected", now=now,
                       detail={"budget": budget.key, "reason": "not an approver", "team": team})
        return Reply(blocks.error_message(
            f"Only approvers of {'the cluster admins' if team == ADMIN_TEAM else 'team ' + blocks.plain(team)} can set "
            f"the budget of {blocks.plain(budget.subject())}. Nothing was changed."))
    rt.store.set_rule(budget, ctx.user, now)
    then = {"warn": "an alert at 100%", "ask": "a request to hold its LocalQueue(s) at 100%",
            "auto": f"its LocalQueue(s) held at 100% after {blocks.duration(budget.grace_seconds)}"}[budget.on_exhausted]
    return Reply(blocks.text_message(
        f":white_check_mark: <@{blocks.plain(ctx.user)}> set the GPU budget of {blocks.plain(budget.subject())} to "
        f"{blocks.plain(budget.describe())}, then {then}."), ephemeral=False)


def _set(ctx: CommandContext, args: list[str]) -> Reply:

    rt = ctx.rt
    if args and is_budget_rule(args[0]):
        return _set_rule(ctx, args)
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
