"""``/gpu advise [team]``: how to spend less on GPUs that are used badly, each piece of advice with
its evidence, its dollars a month and where the prices come from."""

from __future__ import annotations

import dataclasses

from actions.advice.request import silenced
from actions.sources.kube.reader import ClusterReadError
from bot.chat import blocks
from bot.chat.blocks.advice import advice_message
from bot.chat.commands.context import CommandContext, Reply, UsageError

NAME = "advise"
SUMMARY = "right-size GPUs, move jobs to spot, commit to the steady baseline: each with its evidence and USD a month"
EXAMPLE = "/gpu advise research"


# Words people put around a team name ("advice for team research please?"); never team names.
FILLER = {"for", "team", "the", "of", "my", "our", "please", "me", "on", "about", "show", "what", "can", "we", "save"}


def handle(args: str, ctx: CommandContext) -> Reply:
    """Advice for every team, or the one named (filler words around it are ignored). Raises
    UsageError for more than one team name, or a name that is no team's."""
    parts = [w for w in (w.strip("?!.,:;'\"") for w in args.split()) if w and w.lower() not in FILLER]
    if len(parts) > 1:
        raise UsageError(
            f"`/gpu advise` takes at most one team name; I read {', '.join(repr(p) for p in parts)}.", EXAMPLE,
        )
    rt = ctx.rt
    if rt is None:
        return Reply(blocks.error_message("`/gpu advise` needs the running bot's cluster and Prometheus."))
    team = parts[0] if parts else None
    now = rt.clock()
    try:
        result = rt.advice(now, team=team)
    except ClusterReadError as e:
        return Reply(blocks.error_message(f"I could not read the cluster: {blocks.plain(e)}"))
    if team is not None and team not in rt.teams.teams and not result.usages:
        known = ", ".join(sorted(rt.teams.teams)) or "none configured"
        raise UsageError(f"I know no team {team!r} and no GPU pods of it are running (teams: {known}).", EXAMPLE)
    # Asked for, everything is shown; what a team silenced is marked, as the posts leave it out.
    quiet = silenced(result.recommendations, rt.store.list_requests(states=["snoozed", "exempt"]), now) \
        if rt.store is not None else set()
    message = advice_message(result.recommendations, result.could_save_usd_per_month, now, team, quiet,
                             energy=rt.energy_factors())
    blind = [u for u in result.usages if u.gpu_hours is None]
    if result.usages and len(blind) == len(result.usages):
        # "Nothing to advise" from empty telemetry would read as GPUs well used.
        said = (f"the history holds no DCGM series for any of the {len(blind)} GPU consumers in the window: "
                "the telemetry is empty, so nothing could be judged (is dcgm-exporter scraped by this Prometheus?)",)
    else:
        said = result.warnings()
    if said:
        message = dataclasses.replace(message, blocks=[*message.blocks, blocks.context(*(f":warning: {blocks.plain(w)}" for w in said))])
    return Reply(message)
