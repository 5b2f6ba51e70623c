"""The thresholds the decisions apply (:class:`Policy`): the idle window and warm-up, engine and
power ceilings per GPU family (where each figure comes from), the team's mode, ``act_on``, the
request and snooze durations. A pydantic model the YAML configuration validates into; the
decisions take it as a plain argument. No I/O.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from actions.hardware.gpus import gpu_family
from actions.model.durations import Seconds

# Mean power (watts) at or under which a GPU counts as drawing idle power, by GPU family, and where
# the figure comes from. Only H100 is measured (shared real-gpu-traces, NVML, driver 580): empty
# 74-97 W, idle holding a 20 GiB model 124-127 W, checkpoint pauses ~180 W, light serving at
# GPU_UTIL 0% 190-250 W; 150 W separates idle from all of those. The others scale that finding to
# each family's idle draw and are estimates: set policy.idle_power_watts once you have your own.
SCALED_NOTE = "estimate scaled from the measured H100 to this family's idle draw, not measured"
IDLE_POWER_SOURCES: dict[str, str] = {
    "H100": "measured on a real H100 (shared/data: idle 124-127 W, light serving 190-250 W)",
    **{family: SCALED_NOTE for family in ("H200", "H800", "A100", "A800", "L40S", "L40", "A10G", "A10", "L4", "T4", "V100")},
}
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

# Maximum board power (watts) of every other datacenter family, for the idle ceiling of a GPU
# whose DCGM series carry no power limit: Policy.idle_power_fraction of it. Each figure says how
# far it was checked; a GPU's own enforced limit, when exported, is used first since variants
# differ (H100 PCIe 350 W, SXM 700 W).
PUBLISHED_NOTE = "the commonly published figure, not checked against the vendor's datasheet"
BOARD_POWER_WATTS: dict[str, tuple[float, str]] = {
    "P100": (300.0, f"Tesla P100 SXM2, {PUBLISHED_NOTE}"),
    "A16": (250.0, PUBLISHED_NOTE),
    "A30": (165.0, PUBLISHED_NOTE),
    "A40": (300.0, PUBLISHED_NOTE),
    "RTX6000ADA": (300.0, PUBLISHED_NOTE),
    "RTXPRO6000": (600.0, f"Server Edition, {PUBLISHED_NOTE}"),
    "H20": (400.0, PUBLISHED_NOTE),
    "GH200": (1000.0, f"module maximum (configurable), {PUBLISHED_NOTE}"),
    "B100": (700.0, PUBLISHED_NOTE),
    "B200": (1000.0, "TGP in MLPerf Inference v5.1 B200-SXM-180GB system descriptions"),
    "GB200": (1200.0, "TGP in MLPerf Inference v5.1 GB200-NVL72 system descriptions, per GPU"),
    "B300": (1100.0, PUBLISHED_NOTE),
    "GB300": (1400.0, "TGP in MLPerf Inference v5.1 GB300-NVL72 system descriptions, per GPU"),
    "MI210": (300.0, PUBLISHED_NOTE),
    "MI250": (500.0, PUBLISHED_NOTE),
    "MI250X": (560.0, PUBLISHED_NOTE),
    "MI300X": (750.0, "MLPerf Inference v4.1 AMD system description (MI300X-NPS1-SPX-192GB-750W)"),
    "MI325X": (1000.0, PUBLISHED_NOTE),
}


class Policy(BaseModel):
    """When something counts as idle, and what the bot does about it.

    Durations are seconds; thresholds say their unit in the name.
    """

    model_config = ConfigDict(extra="forbid")

    window_seconds: Seconds = Field(3600, gt=0, description="idle must hold for this whole window")
    warmup_seconds: Seconds = Field(1800, ge=0, description="pods younger than this are never idle")
    engine_idle_pct: float = Field(
        1.0, ge=0, le=100, description="peak engine activity at or under this percent (0-100) is idle"
    )
    min_coverage: float = Field(
        0.9, ge=0, le=1, description="ratio 0-1 of the window that must have samples"
    )
    sample_step_seconds: Seconds = Field(60, gt=0, description="step of the coverage subquery")
    activity_lookback_seconds: Seconds = Field(
        7 * 86400, gt=0, description="how far back to look for the last busy moment"
    )
    idle_power_watts: dict[str, float] = Field(
        default_factory=dict, description="per GPU family, overrides the built-in ceilings"
    )
    request_ttl_seconds: Seconds = Field(86400, gt=0, description="a proposal expires after this")
    snooze_seconds: Seconds = Field(4 * 3600, gt=0)
    exempt_seconds: Seconds = Field(7 * 86400, gt=0)
    deny_cooldown_seconds: Seconds = Field(
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
    idle_power_fraction: float = Field(
        0.25, gt=0, le=1,
        description="for a GPU model with no idle ceiling: this ratio 0-1 of its enforced power limit",
    )
    reserved_nodepools: list[str] = Field(
        default_factory=list,
        description="node pools (or node groups) whose GPUs are reserved or committed capacity",
    )
    mode: Literal["ask", "auto", "report"] = Field(
        "ask",
        description="ask: only Approve acts; auto: the policy acts after grace_seconds unless someone "
        "pressed Snooze, Exempt or Deny; report: post, never act",
    )
    grace_seconds: Seconds = Field(4 * 3600, gt=0, description="in mode auto, how long a proposal waits before the policy acts")
    verify_seconds: Seconds = Field(
        600, gt=0,
        description="after an action, how long the cluster has to show it took effect (pods gone after a "
        "stop, the resized pod Running and Ready) before a resize is restored and a stop reported",
    )
    act_on: list[str] | None = Field(
        None,
        description="kinds the bot may act on (consumer kinds such as RayJob or Notebook, or target kinds "
        "such as Workload or Deployment); the others are reported only. None: every kind",
    )

    @model_validator(mode="after")
    def _grace_before_expiry(self) -> "Policy":
        if self.mode == "auto" and self.grace_seconds >= self.request_ttl_seconds:
            raise ValueError(
                f"grace_seconds ({self.grace_seconds:g}) must be shorter than request_ttl_seconds "
                f"({self.request_ttl_seconds:g}), or a proposal expires before the policy acts"
            )
        return self

    def acts_on(self, *kinds: str) -> bool:
        """Whether :attr:`act_on` lets the bot act on something of any of ``kinds``."""
        return self.act_on is None or any(k in self.act_on for k in kinds)

    def telemetry_key(self) -> tuple[float, float, float, float]:
        """What the telemetry query depends on: two policies with the same key share one query."""
        return (self.window_seconds, self.sample_step_seconds, self.activity_lookback_seconds, self.engine_idle_pct)

    def idle_power_ceiling(self, model_name: str) -> float | None:
        """Watts at or under which mean power counts as idle for this GPU model, or ``None``
        when the model is unknown (then power cannot confirm idleness)."""
        family = gpu_family(model_name)
        if family is None:
            return self.idle_power_watts.get(model_name)
        return self.idle_power_watts.get(family, DEFAULT_IDLE_POWER_WATTS.get(family))

    def idle_ceiling(self, model_name: str, power_limit_w: float | None = None) -> tuple[float | None, str | None]:
        """``(watts, where the figure comes from)``: the idle power ceiling of a GPU of
        ``model_name``: configured, else built in for its family (:data:`DEFAULT_IDLE_POWER_WATTS`),
        else :attr:`idle_power_fraction` of its enforced power limit ``power_limit_w`` (watts, from
        DCGM) when known, else of its family's datasheet board power
        (:data:`BOARD_POWER_WATTS`); ``(None, None)`` for a model none of these knows."""
        family = gpu_family(model_name) or model_name
        configured = self.idle_power_watts.get(family, self.idle_power_watts.get(model_name))
        if configured is not None:
            return configured, "policy.idle_power_watts"
        known = DEFAULT_IDLE_POWER_WATTS.get(family)
        if known is not None:
            return known, IDLE_POWER_SOURCES.get(family, "built-in ceiling")
        if power_limit_w:
            return (
                self.idle_power_fraction * power_limit_w,
                f"{self.idle_power_fraction:.0%} of its {power_limit_w:.0f} W power limit (no idle ceiling known for {family})",
            )
        board = BOARD_POWER_WATTS.get(family)
        if board is not None:
            watts, source = board
            return (
                self.idle_power_fraction * watts,
                f"{self.idle_power_fraction:.0%} of the {family}'s {watts:.0f} W board power ({source}); "
                "DCGM exported no power limit",
            )
        return None, None

    @field_validator("idle_power_watts")
    @classmethod
    def _positive(cls, v: dict[str, float]) -> dict[str, float]:
        for k, w in v.items():
            if w <= 0:
                raise ValueError(f"idle_power_watts[{k}] must be > 0 watts, got {w}")
        return v
