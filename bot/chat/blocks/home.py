"""The Block Kit of the App Home tab: for the person who opened it, their teams' spend this month
against budget, the open requests (with the request's own buttons for those who may press them),
what the sweeps find idle now and the latest advice posted. Pure: :class:`HomeData` in, a
``views.publish`` view out.

The buttons are the channel message's (:func:`~bot.chat.blocks.proposals.buttons_for`: the same
``action_id`` and ``value``), so a press on the Home goes the same way as one in a channel.
Slack's limits for a Home tab view: 100 blocks, 3000 characters per section text
(docs.slack.dev/reference/views/home-tab-views, /reference/block-kit/blocks/section-block).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from actions.advice.request import RIGHT_SIZE
from actions.budgets.model import EXHAUSTED
from actions.model.findings import Finding
from actions.text import gpu_amount
from bot.chat.blocks import context, duration, header, plain, section, short_time, usd
from bot.chat.blocks.fit import fit_rows
from bot.chat.blocks.proposals import TITLES, RequestStatus, buttons_for, status_line

MAX_BLOCKS = 100  # Slack's limit on a Home tab view's blocks
MAX_REQUESTS = 20  # two blocks each: with the other sections well under MAX_BLOCKS


@dataclass(frozen=True)
class TeamSpend:
    """One team's month so far: ``budget_usd`` per month (None: no budget), ``spent_usd`` since the
    month began in the team's time zone (None: unknown, ``unavailable`` says why),
    ``forecast_usd`` the month-end forecast (None: unknown), ``month`` ``"2026-11"`` and
    ``fraction`` the ratio 0-1 of the month gone by."""

    team: str
    month: str
    fraction: float
    budget_usd: float | None
    spent_usd: float | None = None
    forecast_usd: float | None = None
    unavailable: str = ""


@dataclass(frozen=True)
class HomeRequest:
    """An open request as the Home shows it: its ``finding``, its ``status`` and whether the person
    looking may press its buttons (``may_press``: an approver of its team)."""

    finding: Finding
    status: RequestStatus
    team: str
    may_press: bool


@dataclass(frozen=True)
class PostedAdvice:
    """Advice posted to a team's channel: its key (``"mig/idle-notebook/ml/nb"``), the team, the
    channel it went to (None: unknown) and when (aware UTC)."""

    key: str
    team: str
    channel: str | None
    posted_at: datetime


@dataclass(frozen=True)
class HomeData:
    """What one person's Home shows at ``now`` (aware UTC). ``teams`` are theirs (the teams they
    approve for), empty when they approve for none: then every team is shown. ``requests`` are
    the open requests awaiting or being acted on, ``idle`` the idle findings held by a request in
    any open state (proposed ones included, for the totals), ``advice`` newest first. ``notice``
    is the answer to their last press (the bot's mrkdwn), shown on top (a press on the Home has no channel to answer
    in); ``problems`` what could not be read, shown as warnings at the end."""

    user: str
    now: datetime
    teams: tuple[str, ...]
    spend: tuple[TeamSpend, ...] = ()
    requests: tuple[HomeRequest, ...] = ()
    idle: tuple[HomeRequest, ...] = ()
    advice: tuple[PostedAdvice, ...] = ()
    notice: str = ""
    problems: tuple[str, ...] = ()


def _lines(title: str, lines: list[str], empty: str) -> dict:
    """A section of ``title`` and ``lines``, whole lines only within Slack's 3000 characters."""
    if not lines:
        return section(f"{title}\n{empty}")
    [text] = fit_rows(lines, max_sections=1, title=title, hint=None)
    return section(text)


def _spend_line(s: TeamSpend) -> str:
    if s.budget_usd is None:
        head = f"*{plain(s.team)}*: no budget"
    else:
        head = f"*{plain(s.team)}*: budget {usd(s.budget_usd)}/month"
    if s.spent_usd is None:
        return f"{head} · spend in {s.month}: unavailable ({plain(s.unavailable or 'unknown')})"
    line = f"{head} · spent {usd(s.spent_usd)} in {s.month}"
    if s.budget_usd:
        line += f" ({100 * s.spent_usd / s.budget_usd:.0f}%)"
    if s.forecast_usd is not None:
        line += f" · month-end forecast {usd(s.forecast_usd)}"
        if s.budget_usd:
            line += f" ({100 * s.forecast_usd / s.budget_usd:.0f}%)"
            if s.forecast_usd > s.budget_usd:
                line = ":warning: " + line
    return line


def _title(f: Finding) -> str:
    where = f"{f.namespace + '/' if f.namespace else ''}{f.name}"
    if f.kind == RIGHT_SIZE:
        return f"Right-size GPUs: {f.consumer_kind} {where}"
    if f.kind == EXHAUSTED:
        return f"GPU budget used up: hold LocalQueue {where}"
    return f"{TITLES.get(f.kind, 'Idle GPUs')}: {f.consumer_kind} {where}{' in cluster ' + f.cluster if f.cluster else ''}"


def _facts(f: Finding) -> str:
    if f.kind == RIGHT_SIZE:
        saving = f"saves {usd(f.usd_per_hour * 730)}/month" if f.usd_per_hour else "saving unknown"
        return f"{plain(f.action.summary) if f.action else 'advice'}: {saving}"
    if f.kind == EXHAUSTED:
        return plain(f.notes[0] if f.notes else "budget used up")
    cost = f"reserved, {usd(f.usd_per_hour)}/h paid either way" if f.reserved else f"{usd(f.usd_per_hour)}/h"
    return f"{gpu_amount(f.gpus)} × {plain(f.gpu_model)} idle for {duration(f.idle_seconds)} · {cost}"


def _approvable(f: Finding) -> bool:
    return f.action is not None and (f.kind in (RIGHT_SIZE, EXHAUSTED) or f.handling.mode != "report")


def _request_blocks(r: HomeRequest) -> list[dict]:
    f, s = r.finding, r.status
    text = (
        f"*{plain(_title(f))}* (team {plain(r.team)}, request #{s.id})\n{_facts(f)}\n"
        f"{status_line(s, approvable=_approvable(f))}"
    )
    blocks = [section(text)]
    if r.may_press:
        restorable = f.kind == RIGHT_SIZE or (f.action is not None and f.action.verb.restorable)
        buttons = buttons_for(s, has_action=_approvable(f), restorable=restorable)
        if buttons:
            # block_id as the channel message's: the press handlers read only action_id and value.
            blocks.append({"type": "actions", "block_id": f"request-{s.id}", "elements": buttons})
    return blocks


def _idle_line(r: HomeRequest) -> str:
    f = r.finding
    return f"• {plain(_title(f))} (team {plain(r.team)}): {_facts(f)} · {r.status.state}"


def home_view(home: HomeData) -> dict:
    """The ``views.publish`` view of ``home``: ``{"type": "home", "blocks": [...]}``, at most
    :data:`MAX_BLOCKS` blocks, every section within Slack's 3000 characters. Buttons only on the
    requests ``home`` marks ``may_press``."""
    scope = ", ".join(plain(t) for t in home.teams) if home.teams else "every team"
    blocks: list[dict] = [
        header("GPU cost"),
        context(f"For <@{plain(home.user)}>: {scope} · updated {short_time(home.now)}"),
    ]
    if home.notice:
        # The bot's own mrkdwn (an Outcome's message, its user input already made plain): it names
        # approvers as <@U...> mentions, which plain() would show as text.
        blocks.append(section(f":speech_balloon: Your last press: {home.notice}"))
    blocks += [
        {"type": "divider"},
        _lines("*Spend this month*", [_spend_line(s) for s in home.spend],
               "No budgets yet. An approver sets one: `/gpu budget set <team> 5000/month`"),
        {"type": "divider"},
    ]
    shown = home.requests[:MAX_REQUESTS]
    waiting = sum(1 for r in home.requests if r.status.state == "proposed")
    blocks.append(section(f"*Open requests* ({waiting} awaiting a decision)" if home.requests
                          else "*Open requests*\nNothing awaits a decision."))
    for r in shown:
        blocks += _request_blocks(r)
    if len(home.requests) > len(shown):
        blocks.append(context(f"… and {len(home.requests) - len(shown)} more in the teams' channels."))
    if home.requests and not any(r.may_press for r in home.requests):
        blocks.append(context("Only a team's approvers get its buttons here; the channel shows who they are."))
    blocks.append({"type": "divider"})
    idle_gpus = sum(r.finding.gpus for r in home.idle)
    idle_usd = sum(r.finding.usd_per_hour for r in home.idle if not r.finding.reserved)
    held = [r for r in home.idle if r.status.state != "proposed"]
    title = (
        f"*Idle GPUs now*: {gpu_amount(idle_gpus)} GPU(s) in {len(home.idle)} consumer(s), {usd(idle_usd)}/h"
        if home.idle else "*Idle GPUs now*"
    )
    blocks.append(_lines(title, [_idle_line(r) for r in held],
                         "The last sweep found nothing idle." if not home.idle else "Each one is an open request above."))
    blocks.append({"type": "divider"})
    advice = [
        f"• `{plain(a.key)}` (team {plain(a.team)}) posted {short_time(a.posted_at)}"
        + (f" in <#{plain(a.channel)}>" if a.channel else "")
        for a in home.advice
    ]
    blocks.append(_lines("*Latest advice*", advice, "No advice posted yet. `/gpu advise` shows it now."))
    if home.problems:
        blocks.append(context(*(f":warning: {plain(p)}" for p in home.problems)))
    return {"type": "home", "blocks": blocks[:MAX_BLOCKS]}
