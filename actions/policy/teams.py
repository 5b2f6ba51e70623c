"""The teams the decisions apply the policy to: their namespaces, channel, approvers, budget and
policy overrides (:class:`Team`), and the lookups every decision makes (:class:`TeamDirectory`:
which team a namespace belongs to, by config or by its team label). No I/O.
"""

from __future__ import annotations

import re
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator

from actions.policy.rules import Policy


def slack_ids(ids: list[str]) -> list[str]:
    """``ids`` when each is a Slack user id (``U…``/``W…``) or user group id (``S…``); else
    ValueError naming every one that is not, and where to find a real one."""
    bad = [a for a in ids if not re.fullmatch(r"[UWS][A-Z0-9]{2,}", a)]
    if bad:
        listed = ", ".join(repr(a) for a in bad)
        raise ValueError(
            f"{listed} {'is not a Slack user id' if len(bad) == 1 else 'are not Slack user ids'} "
            "(U0123ABCD) or user group ids (S0123ABCD); find one in Slack under a profile's "
            "\u22ee menu, \"Copy member ID\""
        )
    return ids


class Team(BaseModel):
    """A team: the namespaces it owns, where the bot talks to it, who may approve actions.

    ``approvers`` holds Slack user ids (``U...``/``W...``) and user group ids (``S...``).
    ``timezone`` is an IANA zone name (``Europe/Berlin``) for the team's digests; None means
    the config's ``costs.timezone``.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    namespaces: list[str] = Field(default_factory=list, validate_default=True)
    channel: str | None = None
    approvers: list[str] = Field(default_factory=list)
    timezone: str | None = None
    monthly_budget_usd: float | None = Field(None, ge=0)
    policy: dict[str, Any] = Field(
        default_factory=dict,
        description="overrides of the global policy for this team's namespaces (any policy key: window_seconds, "
        "mode, grace_seconds, act_on, ...)",
    )

    @field_validator("policy")
    @classmethod
    def _policy_keys(cls, v: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(v) - set(Policy.model_fields))
        if unknown:
            raise ValueError(f"unknown policy key(s) {unknown}; policy keys are {sorted(Policy.model_fields)}")
        # Each override must be valid on its own; combined with the global policy it is checked
        # again when the team's policy is built.
        Policy.model_validate(v)
        return v

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                ZoneInfo(v)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"timezone {v!r} is not an IANA time zone name such as Europe/Berlin or UTC") from None
        return v

    @field_validator("namespaces")
    @classmethod
    def _owns_something(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("a team owns at least one namespace; list them like namespaces: [ml-research]")
        return v

    @field_validator("approvers")
    @classmethod
    def _slack_ids(cls, v: list[str]) -> list[str]:
        return slack_ids(v)


ADMIN_TEAM = "cluster-admins"
"""Who hears of, and approves, what belongs to no namespace: GPUs no pod requests, whole nodes."""


class TeamDirectory:
    """Maps namespaces to teams. Namespaces in no configured team become their own team (the
    default when there is no config at all), so nothing is ever dropped. Cluster-level findings
    belong to :data:`ADMIN_TEAM`, which posts to ``admin_channel`` (else ``default_channel``) and
    whose approvers are ``admin_approvers`` (Slack user and user group ids)."""

    def __init__(
        self,
        teams: list[Team],
        default_channel: str | None = None,
        admin_channel: str | None = None,
        admin_approvers: list[str] | None = None,
    ):
        self.teams = {t.name: t for t in teams}
        self._by_ns = {ns: t for t in teams for ns in t.namespaces}
        self.default_channel = default_channel
        # Built without validation: it owns no namespace, which no configured team may do.
        self.admin = Team.model_construct(
            name=ADMIN_TEAM, namespaces=[], channel=admin_channel or default_channel,
            approvers=list(admin_approvers or ()), timezone=None, monthly_budget_usd=None,
        )

    def team_for(self, namespace: str) -> Team:
        """The team owning ``namespace``; a synthetic one-namespace team when none does."""
        team = self._by_ns.get(namespace)
        if team is not None:
            return team
        return self.teams.get(namespace) or Team(
            name=namespace, namespaces=[namespace], channel=self.default_channel
        )

    def team_for_name(self, name: str) -> Team:
        """The configured team called ``name``, the admin team for :data:`ADMIN_TEAM`, or the
        one-namespace team of that name that :meth:`team_for` makes for unconfigured namespaces."""
        if name == ADMIN_TEAM and name not in self.teams:
            return self.admin
        return self.teams.get(name) or self.team_for(name)

    def channel_for(self, team: Team) -> str | None:
        return team.channel or self.default_channel
