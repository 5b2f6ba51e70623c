"""Configuration: one YAML file plus environment variables, read once into one typed object.

Precedence, highest first: environment variables (``GPU_COST_BOT_`` prefix, ``__`` between nested
keys, e.g. ``GPU_COST_BOT_PROMETHEUS__URL``), then the YAML file. Secrets are read only from the
environment (``SLACK_BOT_TOKEN``, ``SLACK_APP_TOKEN``, ``SLACK_SIGNING_SECRET``,
``PROMETHEUS_BEARER_TOKEN``); a YAML file that contains one is rejected, so a config file can be
kept in git or a ConfigMap without leaking anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from actions.policy import Policy, Team, TeamDirectory
from actions.prices import PriceOverrides

SECRET_KEYS = ("slack_bot_token", "slack_app_token", "slack_signing_secret", "prometheus_bearer_token")


class ConfigError(Exception):
    """The configuration is invalid; ``str(e)`` lists every problem, one per line, by YAML path."""


class PrometheusSettings(BaseModel):
    """Where the DCGM metrics are. ``headers`` are sent with every query (e.g. ``X-Scope-OrgID``
    for Mimir or Thanos); a bearer token comes from ``PROMETHEUS_BEARER_TOKEN``."""

    model_config = ConfigDict(extra="forbid")

    url: str = "http://prometheus-operated.monitoring.svc:9090"
    headers: dict[str, str] = Field(default_factory=dict)
    verify_tls: bool = True
    timeout_seconds: float = Field(30, gt=0)


class KubernetesSettings(BaseModel):
    """How to reach the API server: in-cluster config when running in a pod, else kubeconfig."""

    model_config = ConfigDict(extra="forbid")

    kubeconfig: str | None = None
    context: str | None = None
    page_size: int = Field(500, ge=1, le=10000)


class SlackSettings(BaseModel):
    """How the bot talks to Slack. ``mode`` ``socket`` needs ``SLACK_APP_TOKEN`` (xapp-);
    ``http`` needs ``SLACK_SIGNING_SECRET`` and serves on ``http_port``."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["socket", "http"] = "socket"
    http_port: int = Field(3000, ge=1, le=65535)
    default_channel: str | None = None
    admin_channel: str | None = None
    base_url: str | None = Field(None, description="Web API base URL; only for tests and proxies")


class SweepSettings(BaseModel):
    """How often the idle sweep runs."""

    model_config = ConfigDict(extra="forbid")

    interval_seconds: float = Field(900, ge=60)


class ServerSettings(BaseModel):
    """The bot's own HTTP endpoints and logs. ``port`` serves ``/healthz``, ``/readyz`` and
    ``/metrics`` (and, in Slack HTTP mode, nothing else: Slack events use ``slack.http_port``;
    give both the same port to serve everything on one). ``log_format`` ``json`` writes one JSON
    object per line (for log pipelines), ``text`` a human line."""

    model_config = ConfigDict(extra="forbid")

    port: int = Field(8080, ge=1, le=65535)
    log_format: Literal["json", "text"] = "json"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    shutdown_grace_seconds: float = Field(25, gt=0, description="how long an action in flight may take to finish on SIGTERM")


class LeaderElectionSettings(BaseModel):
    """One replica runs the scheduled jobs, chosen by a coordination.k8s.io/v1 Lease; every replica
    answers Slack. Off for a single replica. ``namespace`` defaults to the pod's own (the service
    account's namespace file, else ``POD_NAMESPACE``); ``identity`` to the pod name (``HOSTNAME``).
    A leader renews every ``retry_period_seconds``; one that could not renew for
    ``renew_deadline_seconds`` stops its jobs; another replica takes over once the Lease is
    ``lease_duration_seconds`` old. All in seconds."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    lease_name: str = "gpu-cost-bot"
    namespace: str | None = None
    identity: str | None = None
    lease_duration_seconds: float = Field(15, gt=0)
    renew_deadline_seconds: float = Field(10, gt=0)
    retry_period_seconds: float = Field(2, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> "LeaderElectionSettings":
        if not self.retry_period_seconds < self.renew_deadline_seconds < self.lease_duration_seconds:
            raise ValueError(
                "need retry_period_seconds < renew_deadline_seconds < lease_duration_seconds, got "
                f"{self.retry_period_seconds:g} / {self.renew_deadline_seconds:g} / {self.lease_duration_seconds:g}"
            )
        return self


class CostSettings(BaseModel):
    """Showback reports and digests. ``team_label``: the namespace label that names a namespace's
    team when no configured team lists the namespace (None: such namespaces are "unallocated").
    ``digest_cron``: when digests go out (crontab, in ``timezone`` unless a team sets its own);
    default Monday 09:00. ``digest_period_days``: how far back a digest looks.
    ``query_timeout_seconds``: how long one cost query may take (seconds)."""

    model_config = ConfigDict(extra="forbid")

    team_label: str | None = "team"
    digest_cron: str = "0 9 * * mon"
    timezone: str = "UTC"
    digest_period_days: int = Field(7, ge=1, le=93)
    top_consumers: int = Field(5, ge=1, le=50)
    # A report scans weeks of history: ~10 ms per GPU-day on the slowest query (benchmarks/report.py),
    # so 30 days of 400 GPUs take 46 s. Prometheus's own --query.timeout (2 min) caps it as well.
    query_timeout_seconds: float = Field(120, gt=0)

    @model_validator(mode="after")
    def _schedule_parses(self) -> "CostSettings":
        # Imported here: bot.digests imports this module. A typo must fail at start, not at 09:00.
        from bot.digests import digest_trigger

        digest_trigger(self.digest_cron, self.timezone)
        return self


class AlertSettings(BaseModel):
    """Scheduled alerts, each sent once per threshold and period. Percentages are 0-100 of the
    monthly budget; ``spot_ratio_target`` is a ratio 0-1; durations in seconds."""

    model_config = ConfigDict(extra="forbid")

    interval_seconds: float = Field(900, ge=60)
    budget_thresholds_percent: list[float] = Field(default_factory=lambda: [50.0, 80.0, 100.0])
    queue_wait_seconds: float = Field(3600, gt=0)
    idle_on_demand_seconds: float = Field(3600, gt=0)
    spot_ratio_target: float = Field(0.4, ge=0, le=1)
    spot_ratio_window_seconds: float = Field(1800, gt=0)
    snooze_seconds: float = Field(4 * 3600, gt=0)

    @field_validator("budget_thresholds_percent")
    @classmethod
    def _known_thresholds(cls, value: list[float]) -> list[float]:
        # Each threshold is its own alert kind in the store (budget-50, ...), claimed once a month.
        unknown = sorted(set(value) - {50.0, 80.0, 100.0})
        if unknown:
            raise ValueError(f"thresholds {unknown} are not supported; use any of 50, 80 and 100")
        return value


class Settings(BaseSettings):
    """Everything the bot reads at start-up. Build it with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        env_prefix="GPU_COST_BOT_", env_nested_delimiter="__", extra="forbid"
    )

    dry_run: bool = Field(True, description="post and record everything but never patch the cluster")
    database_url: str = "sqlite:///gpu-cost-bot.db"
    prometheus: PrometheusSettings = Field(default_factory=PrometheusSettings)
    kubernetes: KubernetesSettings = Field(default_factory=KubernetesSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    sweep: SweepSettings = Field(default_factory=SweepSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    leader_election: LeaderElectionSettings = Field(default_factory=LeaderElectionSettings)
    costs: CostSettings = Field(default_factory=CostSettings)
    alerts: AlertSettings = Field(default_factory=AlertSettings)
    teams: list[Team] = Field(default_factory=list)
    policy: Policy = Field(default_factory=Policy)
    prices: PriceOverrides = Field(default_factory=PriceOverrides)

    slack_bot_token: SecretStr | None = Field(None, validation_alias=AliasChoices("SLACK_BOT_TOKEN"))
    slack_app_token: SecretStr | None = Field(None, validation_alias=AliasChoices("SLACK_APP_TOKEN"))
    slack_signing_secret: SecretStr | None = Field(
        None, validation_alias=AliasChoices("SLACK_SIGNING_SECRET")
    )
    prometheus_bearer_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("PROMETHEUS_BEARER_TOKEN")
    )

    @model_validator(mode="after")
    def _teams_consistent(self) -> "Settings":
        seen: dict[str, str] = {}
        names = set()
        for team in self.teams:
            if team.name in names:
                raise ValueError(f"team {team.name!r} is listed twice")
            names.add(team.name)
            for ns in team.namespaces:
                if ns in seen:
                    raise ValueError(
                        f"namespace {ns!r} belongs to both team {seen[ns]!r} and team {team.name!r}"
                    )
                seen[ns] = team.name
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The YAML arrives as init kwargs (see load_settings), so env must come first to win.
        return (env_settings, init_settings)

    def team_directory(self) -> TeamDirectory:
        """The teams, with the default channel for namespaces in no configured team."""
        return TeamDirectory(self.teams, self.slack.default_channel)

    def prometheus_headers(self) -> dict[str, str]:
        """Headers for Prometheus queries, with the bearer token from the environment if set."""
        headers = dict(self.prometheus.headers)
        if self.prometheus_bearer_token:
            headers["Authorization"] = f"Bearer {self.prometheus_bearer_token.get_secret_value()}"
        return headers


def _format_errors(e: ValidationError) -> str:
    lines = []
    for err in e.errors():
        path = ".".join(str(p) for p in err["loc"]) or "(top level)"
        value = err.get("input")
        shown = "" if isinstance(value, (dict, list)) or value is None else f" (got {value!r})"
        lines.append(f"{path}: {err['msg']}{shown}")
    return "\n".join(lines)


def load_settings(path: str | Path | None = None) -> Settings:
    """Read the YAML file at ``path`` (optional: without it, defaults and the environment).

    Raises ConfigError listing every problem by its YAML path, e.g.
    ``teams.0.approvers: Value error, approver 'bob' is not a Slack user id (U0123ABCD) ...``.
    """
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        try:
            loaded = yaml.safe_load(p.read_text()) or {}
        except FileNotFoundError:
            raise ConfigError(f"{p}: no such file") from None
        except yaml.YAMLError as e:
            raise ConfigError(f"{p}: not valid YAML: {e}") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{p}: the top level must be a mapping of settings, got {type(loaded).__name__}")
        leaked = [k for k in loaded if k.lower() in SECRET_KEYS]
        if leaked:
            raise ConfigError(
                "\n".join(
                    f"{k}: secrets are read only from the environment; remove it from the file and set {k.upper()}"
                    for k in leaked
                )
            )
        data = loaded
    try:
        return Settings(**data)
    except ValidationError as e:
        raise ConfigError(_format_errors(e)) from None
