"""What one person's App Home shows, gathered from what the bot already keeps: the store's open
requests (and which of them the person may press), the teams' budgets with this month's spend
(as ``/gpu budget`` reads them), the idle findings the sweeps hold requests for, and the advice
posted to the teams' channels. Reads the store and the cost source; renders nothing itself
(:mod:`bot.chat.blocks.home` does).

"Their teams" are the teams the person approves for (user groups expanded): the bot keeps no
list of members. Someone who approves for none sees every team, without buttons.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta

from actions.alerts.budgets import month_end_forecast, month_progress
from actions.policy.teams import ADMIN_TEAM
from actions.store.requests import ActionRequest
from actions.store.schema import as_utc
from bot.chat.blocks.home import HomeData, HomeRequest, PostedAdvice, TeamSpend
from bot.chat.failures import explain
from bot.chat.messages import status_of
from bot.chat.proposals import NOT_THE_SWEEPS, finding_of
from bot.runtime.runtime import Runtime

log = logging.getLogger(__name__)

ADVICE_KIND = "advice"  # the alert kind advice posts are claimed under (bot.jobs.advice.KIND)
MAX_ADVICE = 5
# The requests a person can still do something about, or is waiting on: awaiting a decision, or
# being acted on.
REQUEST_STATES = ("proposed", "approved", "uncertain", "restoring")
# The requests that hold an idle finding (snoozed, exempt and denied ones only while the sweeps
# still see it: SEEN_WITHIN).
IDLE_STATES = ("proposed", "approved", "uncertain", "snoozed", "exempt", "denied")

# How recently a sweep must have seen a held request's finding for it to count as idle now: the
# sweeps run every 15 minutes by default.
SEEN_WITHIN = timedelta(hours=1)

Spend = Callable[[datetime, datetime], Mapping[str, float]]


def teams_of(rt: Runtime, user: str) -> tuple[str, ...]:
    """The teams ``user`` (a Slack user id) approves for, sorted, the admin team (GPUs no pod
    requests) included when they approve for it; empty when none."""
    names = sorted(rt.teams.teams) + [ADMIN_TEAM]
    return tuple(name for name in names if user in rt.approvers_of(name))


def _spend(rt: Runtime, teams: tuple[str, ...], spend: Spend | None, now: datetime) -> list[TeamSpend]:
    """Each budgeted team of ``teams`` (every budgeted team when empty): its budget, what it spent
    since its month began and the month-end forecast. A spend that cannot be read is shown as
    unavailable, with why; the budgets are still worth showing."""
    budgets = rt.team_budgets()
    names = [t for t in teams if t in budgets] if teams else sorted(budgets)
    read: dict[datetime, Mapping[str, float] | str] = {}
    out = []
    for name in names:
        progress = month_progress(now, rt.teams.team_for_name(name).timezone or "UTC")
        start = now - timedelta(seconds=progress.elapsed_seconds)
        line = TeamSpend(team=name, month=progress.key, fraction=progress.fraction, budget_usd=budgets[name])
        if spend is None:
            out.append(replace(line, unavailable="no cost source in this bot"))
            continue
        if start not in read:
            # Teams of one time zone share the month's start, so one report serves them all.
            try:
                read[start] = spend(start, now)
            except Exception as e:  # noqa: BLE001 - the budgets are worth showing without the spend
                log.warning("home: spend since %s unreadable: %s", start.isoformat(), e)
                read[start] = explain(e).message
        got = read[start]
        if isinstance(got, str):
            out.append(replace(line, unavailable=got))
            continue
        spent = float(got.get(name, 0.0))
        out.append(replace(line, spent_usd=spent, forecast_usd=month_end_forecast(spent, progress)))
    return out


def home_data(rt: Runtime, user: str, *, spend: Spend | None = None, notice: str = "") -> HomeData:
    """What ``user``'s Home shows now (``rt.clock()``): spend against budget of their teams
    (:func:`teams_of`; every team for someone who approves for none), the open requests of those
    teams with ``may_press`` where they approve, the idle findings, the latest advice. ``spend``
    is ``(start, end) -> {team: USD}`` (default: ``rt.spend_function()``); ``notice`` the answer
    to their last press. A request whose stored finding cannot be read is left out and named in
    ``problems``. Raises what the store raises (sqlalchemy errors)."""
    now = rt.clock()
    teams = teams_of(rt, user)
    mine = set(teams)
    spend = spend if spend is not None else rt.spend_function()
    problems: list[str] = []
    may: dict[str, bool] = {}

    def shown(req: ActionRequest) -> HomeRequest | None:
        if teams and req.team not in mine:
            return None
        try:
            finding = finding_of(req)
        except Exception as e:  # noqa: BLE001 - one unreadable request must not hide the others
            log.warning("home: request %s has an unreadable finding: %s", req.id, e)
            problems.append(f"Request #{req.id} could not be read.")
            return None
        if req.team not in may:
            may[req.team] = user in rt.approvers_of(req.team)
        return HomeRequest(finding=finding, status=status_of(req, now), team=req.team, may_press=may[req.team])

    held = [(q, shown(q)) for q in rt.store.list_requests(states=sorted(set(REQUEST_STATES) | set(IDLE_STATES)))]
    requests = [r for q, r in held if r is not None and q.state in REQUEST_STATES]
    # Those awaiting a decision first, the oldest first: they expire first.
    requests.sort(key=lambda r: (r.status.state != "proposed", r.status.expires_at))
    # A snoozed, exempt or denied request stays open until its hold ends; it counts as idle only
    # while a sweep still sees its finding (each sweep refreshes the requests it still sees).
    seen_since = now - SEEN_WITHIN
    idle = [r for q, r in held if r is not None and q.state in IDLE_STATES and q.kind not in NOT_THE_SWEEPS
            and (q.state in REQUEST_STATES or as_utc(q.updated_at) >= seen_since)]
    advice = [
        PostedAdvice(
            key=a.period_key.split("#", 1)[0], team=a.team,
            channel=rt.teams.channel_for(rt.teams.team_for_name(a.team)), posted_at=a.fired_at,
        )
        for a in sorted(rt.store.alerts(), key=lambda a: a.fired_at, reverse=True)
        if a.kind == ADVICE_KIND and (not teams or a.team in mine)
    ][:MAX_ADVICE]
    return HomeData(
        user=user, now=now, teams=teams, spend=tuple(_spend(rt, teams, spend, now)), requests=tuple(requests),
        idle=tuple(idle), advice=tuple(advice), notice=notice, problems=tuple(problems),
    )
