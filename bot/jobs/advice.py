"""The scheduled advice post: each team's new or changed recommendations to its channel, every
``advice.post_every_seconds`` (default daily).

A recommendation is claimed in the store (``Store.record_alert``, kind ``advice``, keyed by the
recommendation's key and fingerprint) before it is posted and posted only when this call
claimed it, so advice on unchanged use is never posted twice, by this replica or another; when
the use changes (another size, profile or rate, or a saving that moved) the fingerprint changes
and the advice is posted again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from actions.advice.recommend import could_save
from actions.advice.request import silenced
from actions.advice.round import AdviceResult
from actions.energy.settings import EnergyFactors
from actions.policy.teams import TeamDirectory
from actions.store.database import Store
from bot.chat.blocks.advice import MAX_SHOWN, advice_message
from bot.runtime.chat import Chat, ChatError

log = logging.getLogger(__name__)

JOB_ID = "advice-post"
KIND = "advice"

AdviceFn = Callable[[datetime, str | None], AdviceResult]


@dataclass
class AdviceJob:
    """Posts new advice: ``advice(at, team)`` computes it (:meth:`bot.runtime.runtime.Runtime.advice`),
    ``teams`` say where each team's goes."""

    store: Store
    chat: Chat
    teams: TeamDirectory
    advice: AdviceFn
    # Makes right-sizing advice that a patch can apply into requests for the team's approvers
    # (Proposals.propose_advice); None: advice is posted only.
    propose: Callable[[list, datetime, float], list[int]] | None = None
    window_seconds: float = 7 * 86400
    # The figures its CO2e is computed with (Runtime.energy_factors); None: kWh alone.
    energy: EnergyFactors | Mapping[str, EnergyFactors | None] | None = None

    def run(self, now: datetime) -> dict[str, int]:
        """Post every team's advice not posted before. Returns counts: ``posted`` (advice in
        messages sent, each shown in them), ``repeated`` (claimed before: unchanged), ``held`` (new
        advice beyond what one message shows, :data:`~bot.chat.blocks.advice.MAX_SHOWN` a team:
        left unclaimed for the next post, highest saving first), ``no-channel`` (a team without
        a channel and no default), ``requests`` (right-sizing requests made with Approve/Deny for the
        team's approvers), ``silenced`` (advice a team snoozed or exempted from a request's
        buttons: :func:`~actions.advice.request.silenced`). Raises what the advice sources raise; a post that fails is
        logged and its advice stays claimed (it may have been shown)."""
        result = self.advice(now, None)
        counts = {"posted": 0, "repeated": 0, "held": 0, "no-channel": 0, "requests": 0, "silenced": 0}
        # Snoozed and exempted right-sizing requests keep their advice out of the posts, unclaimed,
        # so advice that changed meanwhile is posted once they end.
        quiet = silenced(result.recommendations, self.store.list_requests(states=["snoozed", "exempt"]), now)
        counts["silenced"] = len(quiet)
        by_team: dict[str, list] = {}
        for r in result.recommendations:
            if r.key not in quiet:
                by_team.setdefault(r.team, []).append(r)
        for team, recs in sorted(by_team.items()):
            channel = self.teams.channel_for(self.teams.team_for_name(team))
            if channel is None:
                counts["no-channel"] += len(recs)
                continue
            fresh, held_before = [], counts["held"]
            for r in recs:
                # Only what one message shows is claimed; the rest waits, unclaimed, for the next post.
                if len(fresh) < MAX_SHOWN and self.store.record_alert(team, KIND, r.claim, now):
                    fresh.append(r)
                elif len(fresh) < MAX_SHOWN or self.store.alert(team, KIND, r.claim) is not None:
                    counts["repeated"] += 1
                else:
                    counts["held"] += 1
            if not fresh:
                continue
            try:
                self.chat.post(channel, advice_message(fresh, could_save(fresh), now, team, later=counts["held"] - held_before,
                                                  energy=self.energy))
            except ChatError:
                log.exception("advice for team %s could not be posted to %s", team, channel)
                continue
            counts["posted"] += len(fresh)
            if self.propose is not None:
                counts["requests"] += len(self.propose([r for r in fresh if r.action], now, self.window_seconds))
        return counts

    def scheduled(self, scheduled_at: datetime) -> None:
        """The scheduler's run for ``scheduled_at``."""
        self.run(scheduled_at)
