"""Thresholds and rules the decisions apply, and the teams they apply them to.

Both are pydantic models so that the YAML configuration validates into them directly
(``bot.settings``), but they carry no I/O and the decisions take them as plain arguments.
"""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Mean power (watts) at or under which a GPU counts as drawing idle power, by GPU model. H100 is
# measured (shared real-gpu-traces, NVML, driver 580): empty 74-97 W, idle holding a 20 GiB model
# 124-127 W, checkpoint pauses ~180 W, light serving at GPU_UTIL 0% 190-250 W; 150 W separates idle
# from all of those. The other figures are the same idea scaled to each model's idle draw and are
# not measured here: override them in config (policy.idle_power_watts) once you have your own.
DEFAULT_IDLE_POWER_WATTS: dict[str, float] = {
    "H100": 150.0,
    "H200": 150.0,
    "H800": 150.0,
    "A100": 90.0,
    "A800": 90.0,
    "L40S": 90.0,
    "L40": 90.0,
    "A10G": 60.0,
    "A10": 60.0,
    "L4": 30.0,
    "T4": 30.0,
    "V100": 60.0,
}


def gpu_family(model_name: str) -> str | None:
    """The family key of a DCGM ``modelName`` or GFD ``nvidia.com/gpu.product``.

    ``"NVIDIA H100 80GB HBM3"`` -> ``"H100"``, ``"NVIDIA-A100-SXM4-40GB"`` -> ``"A100"``,
    ``"Tesla T4"`` -> ``"T4"``. Returns ``None`` when no known family matches.
    """
    tokens = re.split(r"[\s\-_]+", model_name.upper())
    for token in tokens:
        if token in DEFAULT_IDLE_POWER_WATTS:
            return token
    return None


class Policy(BaseModel):
    """When something counts as idle, and what the bot does about it.

    Durations are seconds; thresholds say their unit in the name.
    """

    model_config = ConfigDict(extra="forbid")

    window_seconds: float = Field(3600, gt=0, description="idle must hold for this whole window")
    warmup_seconds: float = Field(1800, ge=0, description="pods younger than this are never idle")
    engine_idle_pct: float = Field(
        1.0, ge=0, le=100, description="peak engine activity at or under this percent (0-100) is idle"
    )
    min_coverage: float = Field(
        0.9, ge=0, le=1, description="ratio 0-1 of the window that must have samples"
    )
    sample_step_seconds: float = Field(60, gt=0, description="step of the coverage subquery")
    activity_lookback_seconds: float = Field(
        7 * 86400, gt=0, description="how far back to look for the last busy moment"
    )
    idle_power_watts: dict[str, float] = Field(
        default_factory=dict, description="per GPU family, overrides the built-in ceilings"
    )
    request_ttl_seconds: float = Field(86400, gt=0, description="a proposal expires after this")
    snooze_seconds: float = Field(4 * 3600, gt=0)
    exempt_seconds: float = Field(7 * 86400, gt=0)
    deny_cooldown_seconds: float = Field(
        86400, ge=0, description="after Deny, the same consumer is not proposed again for this long"
    )
    notebook_selector: dict[str, str] = Field(
        default_factory=dict,
        description="extra label selector (all must match) that marks a pod as a notebook",
    )
    opt_out_annotation: str = Field(
        "gpu-cost-bot/exclude-until",
        description="annotation whose RFC 3339 value exempts a pod or its owner until then",
    )

    def idle_power_ceiling(self, model_name: str) -> float | None:
        """Watts at or under which mean power counts as idle for this GPU model, or ``None``
        when the model is unknown (then power cannot confirm idleness)."""
        family = gpu_family(model_name)
        if family is None:
            return self.idle_power_watts.get(model_name)
        return self.idle_power_watts.get(family, DEFAULT_IDLE_POWER_WATTS.get(family))

    @field_validator("idle_power_watts")
    @classmethod
    def _positive(cls, v: dict[str, float]) -> dict[str, float]:
        for k, w in v.items():
            if w <= 0:
                raise ValueError(f"idle_power_watts[{k}] must be > 0 watts, got {w}")
        return v


class Team(BaseModel):
    """A team: the namespaces it owns, where the bot talks to it, who may approve actions.

    ``approvers`` holds Slack user ids (``U...``/``W...``) and user group ids (``S...``).
    ``timezone`` is an IANA zone name (``Europe/Berlin``) for the team's digests; None means
    the config's ``costs.timezone``.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    namespaces: list[str] = Field(default_factory=list)
    channel: str | None = None
    approvers: list[str] = Field(default_factory=list)
    timezone: str | None = None
    monthly_budget_usd: float | None = Field(None, ge=0)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                ZoneInfo(v)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"timezone {v!r} is not an IANA time zone name such as Europe/Berlin or UTC") from None
        return v

    @field_validator("approvers")
    @classmethod
    def _slack_ids(cls, v: list[str]) -> list[str]:
        for a in v:
            if not re.fullmatch(r"[UWS][A-Z0-9]{2,}", a):
                raise ValueError(
                    f"approver {a!r} is not a Slack user id (U0123ABCD) or user group id (S0123ABCD)"
                )
        return v


class TeamDirectory:
    """Maps namespaces to teams. Namespaces in no configured team become their own team (the
    default when there is no config at all), so nothing is ever dropped."""

    def __init__(self, teams: list[Team], default_channel: str | None = None):
        self.teams = {t.name: t for t in teams}
        self._by_ns = {ns: t for t in teams for ns in t.namespaces}
        self.default_channel = default_channel

    def team_for(self, namespace: str) -> Team:
        """The team owning ``namespace``; a synthetic one-namespace team when none does."""
        team = self._by_ns.get(namespace)
        if team is not None:
            return team
        return self.teams.get(namespace) or Team(
            name=namespace, namespaces=[namespace], channel=self.default_channel
        )

    def team_for_name(self, name: str) -> Team:
        """The configured team called ``name``, or the one-namespace team of that name that
        :meth:`team_for` makes for unconfigured namespaces."""
        return self.teams.get(name) or self.team_for(name)

    def channel_for(self, team: Team) -> str | None:
        return team.channel or self.default_channel
