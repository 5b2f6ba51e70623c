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
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator
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
