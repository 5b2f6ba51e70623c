"""The settings, section by section, as pydantic models: what each key means, its unit and its
default, and the checks that make a config that loads one that works.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

import sqlalchemy as sa
import sqlalchemy.exc
from apscheduler.triggers.cron import CronTrigger
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from actions.energy.settings import EnergyFactors, EnergySettings
from actions.model.durations import Days, Seconds
from actions.policy.advice import AdvicePolicy
from actions.policy.namespaces import merged
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory, slack_ids
from actions.pricing.overrides import PriceOverrides
from bot.settings.anomalies import AnomalySettings
from bot.settings.budgets import BudgetSettings
from bot.settings.clusters import (
    ClusterSettings,
    ClusterTarget,
    check_clusters,
    cluster_energy,
    cluster_name_ok,
    targets,
)
from bot.settings.cron import digest_trigger, time_zone
from bot.settings.ledger import LedgerSettings


def http_url(value: str, example: str) -> str:
    """``value`` when it is an http(s) URL with a host; else ValueError showing ``example``."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{value!r} is not an http(s) URL; write it like {example}")
    return value


def database_url(value: str) -> str:
    """``value`` when SQLAlchemy can load its dialect and driver; else ValueError saying what to
    write instead (``postgresql+psycopg2://...``, ``sqlite:///path``)."""
    try:
        url = sa.engine.make_url(value)
        dialect = url.get_dialect()
    except (sqlalchemy.exc.ArgumentError, sqlalchemy.exc.NoSuchModuleError) as e:
        hint = "postgresql+psycopg2://user:password@host:5432/gpu_cost_bot or sqlite:///gpu-cost-bot.db"
        scheme = value.split("://", 1)[0] if "://" in value else value
        if scheme == "postgres":
            hint = "postgresql+psycopg2://" + value.split("://", 1)[1]
        raise ValueError(f"SQLAlchemy cannot use {scheme!r} ({str(e).splitlines()[0]}); write {hint}") from None
    try:
        dialect.import_dbapi()
    except ImportError as e:
        raise ValueError(
            f"the {url.drivername} driver is not installed ({e}); for PostgreSQL: pip install 'gpu-cost-bot[postgres]'"
        ) from None
    return value


class PrometheusSettings(BaseModel):
    """Where the DCGM metrics are. ``headers`` are sent with every query (e.g. ``X-Scope-OrgID``
    for Mimir or Thanos); a bearer token comes from ``PROMETHEUS_BEARER_TOKEN``. ``timeout_seconds``
    bounds each query in all (connect and every read), ``max_response_bytes`` its answer (decoded)."""

    model_config = ConfigDict(extra="forbid")

    url: str = "http://prometheus-operated.monitoring.svc:9090"
    headers: dict[str, str] = Field(default_factory=dict)
    verify_tls: bool = True
    timeout_seconds: Seconds = Field(30, gt=0)
    max_response_bytes: int = Field(128 * 1024 * 1024, ge=1024 * 1024)

    @field_validator("url")
    @classmethod
    def _http(cls, v: str) -> str:
        return http_url(v, "http://prometheus-operated.monitoring.svc:9090")


class KubernetesSettings(BaseModel):
    """How to reach the API server: in-cluster config when running in a pod, else kubeconfig."""

    model_config = ConfigDict(extra="forbid")

    kubeconfig: str | None = None
    context: str | None = None
    page_size: int = Field(500, ge=1, le=10000)
    # A hung API server must never hold a press, a sweep or a shutdown: every request, read or
    # patch, gives up after this many seconds.
    timeout_seconds: Seconds = Field(10, gt=0, le=120, description="seconds one API server request may take in all")
    max_response_bytes: int = Field(64 * 1024 * 1024, ge=1024 * 1024, description="the largest answer read, decoded")


class SlackSettings(BaseModel):
    """How the bot talks to Slack. ``mode`` ``socket`` needs ``SLACK_APP_TOKEN`` (xapp-);
    ``http`` needs ``SLACK_SIGNING_SECRET`` and serves on ``http_port``."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["socket", "http"] = "socket"
    http_port: int = Field(3000, ge=1, le=65535)
    default_channel: str | None = None
    admin_channel: str | None = None
    admin_approvers: list[str] = Field(
        default_factory=list,
        description="Slack user or user group ids who approve cluster-level actions (deleting an empty node's NodeClaim)",
    )
    base_url: str | None = Field(None, description="Web API base URL; only for tests and proxies")
    clock_skew_seconds: Seconds = Field(2.0, ge=0, le=60, description="how far this host's clock may be from Slack's")
    sync_recent_days: Days = Field(
        7, gt=0, description="how long after its last change a request's message is still kept in step, days"
    )

    @field_validator("base_url")
    @classmethod
    def _http(cls, v: str | None) -> str | None:
        return None if v is None else http_url(v, "https://slack.com/api/")

    @field_validator("admin_approvers")
    @classmethod
    def _slack_ids(cls, v: list[str]) -> list[str]:
        return slack_ids(v)


class SweepSettings(BaseModel):
    """How often the idle sweep runs."""

    model_config = ConfigDict(extra="forbid")

    interval_seconds: Seconds = Field(900, ge=60)


class ServerSettings(BaseModel):
    """The bot's own HTTP endpoints, its workers and logs. ``port`` serves ``/healthz``,
    ``/readyz`` and ``/metrics`` (and, in Slack HTTP mode, nothing else: Slack events use
    ``slack.http_port``; give both the same port to serve everything on one). ``log_format``
    ``json`` writes one JSON object per line (for log pipelines), ``text`` a human line.

    ``max_body_bytes``: larger requests are refused with 413 before they are read (Slack's own
    payloads, a button press carrying its whole message, stay far below 1 MiB). ``http_threads``
    answer requests (each only verifies, acks and hands the work on); ``backlog`` connections may
    wait to be accepted. Slow work runs on two bounded pools: ``command_workers`` for slash
    commands (cost reports, queue reads) with ``command_queue`` waiting, ``press_workers`` for
    button presses (re-checks, actions) with ``press_queue`` waiting; a press or command that
    finds its pool full is answered "busy" at once. ``housekeeping_seconds``: how often every
    replica settles actions whose outcome is unknown and brings Slack messages in line with
    the store."""

    model_config = ConfigDict(extra="forbid")

    port: int = Field(8080, ge=1, le=65535)
    log_format: Literal["json", "text"] = "json"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    shutdown_grace_seconds: Seconds = Field(25, gt=0, description="how long an action in flight may take to finish on SIGTERM")
    max_body_bytes: int = Field(1024 * 1024, ge=16 * 1024, le=64 * 1024 * 1024)
    http_threads: int = Field(8, ge=1, le=256)
    backlog: int = Field(1024, ge=128, le=65535)
    command_workers: int = Field(4, ge=1, le=64)
    command_queue: int = Field(16, ge=0, le=1024)
    press_workers: int = Field(4, ge=1, le=64)
    press_queue: int = Field(32, ge=0, le=1024)
    housekeeping_seconds: Seconds = Field(5, gt=0, le=60)


class ActionSettings(BaseModel):
    """How long an approved action may take, and how its outcome is found when the API server did
    not say. ``recheck_timeout_seconds``: the evidence re-read before acting (cluster and
    Prometheus); a slower re-check leaves the cluster alone. ``settle_seconds``: how long an action
    whose outcome is unknown (a patch that timed out, a lost connection, a killed process) is read
    back before it counts as not applied; the API server gives up on a request after 60 s by
    default, so nothing can land after this window. All in seconds."""

    model_config = ConfigDict(extra="forbid")

    recheck_timeout_seconds: Seconds = Field(60, gt=0, le=600)
    settle_seconds: Seconds = Field(50, gt=0, le=600)


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
    lease_duration_seconds: Seconds = Field(15, gt=0)
    renew_deadline_seconds: Seconds = Field(10, gt=0)
    retry_period_seconds: Seconds = Field(2, gt=0)

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
    query_timeout_seconds: Seconds = Field(120, gt=0)

    def digest_trigger(self, tz: str | None = None) -> CronTrigger:
        """The digests' schedule in the IANA zone ``tz`` (default :attr:`timezone`); see
        :func:`digest_trigger`."""
        return digest_trigger(self.digest_cron, tz or self.timezone)

    @field_validator("digest_cron", "timezone")
    @classmethod
    def _schedule_parses(cls, v: str, info: ValidationInfo) -> str:
        # A typo must fail at start, not at 09:00 on Monday, and the error name the key it is in.
        digest_trigger(v) if info.field_name == "digest_cron" else time_zone(v)
        return v


class AlertSettings(BaseModel):
    """Scheduled alerts, each sent once per threshold and period. Percentages are 0-100 of the
    monthly budget; ``spot_ratio_target`` is a ratio 0-1; durations in seconds."""

    model_config = ConfigDict(extra="forbid")

    interval_seconds: Seconds = Field(900, ge=60)
    budget_thresholds_percent: list[float] = Field(default_factory=lambda: [50.0, 80.0, 100.0])
    queue_wait_seconds: Seconds = Field(3600, gt=0)
    idle_on_demand_seconds: Seconds = Field(3600, gt=0)
    spot_ratio_target: float = Field(0.4, ge=0, le=1)
    spot_ratio_window_seconds: Seconds = Field(1800, gt=0)
    snooze_seconds: Seconds = Field(4 * 3600, gt=0)

    @field_validator("budget_thresholds_percent")
    @classmethod
    def _known_thresholds(cls, value: list[float]) -> list[float]:
        # Each threshold is its own alert kind in the store (budget-50, ...), claimed once a month.
        unknown = sorted(set(value) - {50.0, 80.0, 100.0})
        if unknown:
            raise ValueError(f"thresholds {unknown} are not supported; use any of 50, 80 and 100")
        return value


class HubSettings(BaseModel):
    """One JupyterHub whose single-user pods run in ``namespace``: its REST API at ``api_url``
    (``http://hub.<namespace>.svc:8081/hub/api`` in Zero to JupyterHub) and the environment
    variable that holds a token with the ``servers`` scope (never the token itself); ``cluster``
    names the cluster of ``clusters:`` its pods run in (None: the first, or the only one)."""

    model_config = ConfigDict(extra="forbid")

    namespace: str = Field(min_length=1)
    api_url: str
    token_env: str = "JUPYTERHUB_API_TOKEN"
    cluster: str | None = Field(None, description="the cluster its pods run in, of `clusters:` (default: the first)")

    @field_validator("api_url")
    @classmethod
    def _http(cls, v: str) -> str:
        return http_url(v, "http://hub.jhub.svc:8081/hub/api")


class JupyterHubSettings(BaseModel):
    """The Hubs the bot stops and starts single-user servers through. ``timeout_seconds``
    bounds each request; ``settle_seconds`` how long a stop or start may stay pending."""

    model_config = ConfigDict(extra="forbid")

    hubs: list[HubSettings] = Field(default_factory=list)
    timeout_seconds: Seconds = Field(10, gt=0)
    settle_seconds: Seconds = Field(60, gt=0)

    @field_validator("hubs")
    @classmethod
    def _one_per_namespace(cls, v: list[HubSettings]) -> list[HubSettings]:
        seen = [(h.cluster or "", h.namespace) for h in v]
        dup = sorted({n for c, n in seen if seen.count((c, n)) > 1})
        if dup:
            raise ValueError(f"namespace(s) {dup} have more than one Hub")
        return v


class Settings(BaseSettings):
    """Everything the bot reads at start-up. Build it with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        env_prefix="GPU_COST_BOT_", env_nested_delimiter="__", extra="forbid"
    )

    dry_run: bool = Field(True, description="post and record everything but never patch the cluster")
    cluster_name: str = Field(
        "default", min_length=1,
        description="the cluster's name in ledger rows and reports; the single cluster's when `clusters:` is absent",
    )
    clusters: list[ClusterSettings] = Field(
        default_factory=list, description="several GPU clusters, each with its Kubernetes access and telemetry"
    )
    database_url: str = "sqlite:///gpu-cost-bot.db"
    prometheus: PrometheusSettings = Field(default_factory=PrometheusSettings)
    kubernetes: KubernetesSettings = Field(default_factory=KubernetesSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    sweep: SweepSettings = Field(default_factory=SweepSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    leader_election: LeaderElectionSettings = Field(default_factory=LeaderElectionSettings)
    costs: CostSettings = Field(default_factory=CostSettings)
    alerts: AlertSettings = Field(default_factory=AlertSettings)
    budgets: list[BudgetSettings] = Field(default_factory=list)
    anomalies: AnomalySettings = Field(default_factory=AnomalySettings)
    actions: ActionSettings = Field(default_factory=ActionSettings)
    teams: list[Team] = Field(default_factory=list)
    policy: Policy = Field(default_factory=Policy)
    prices: PriceOverrides = Field(default_factory=PriceOverrides)
    jupyterhub: JupyterHubSettings = Field(default_factory=JupyterHubSettings)
    ledger: LedgerSettings = Field(default_factory=LedgerSettings)
    advice: AdvicePolicy = Field(default_factory=AdvicePolicy)
    energy: EnergySettings = Field(default_factory=EnergySettings)

    slack_bot_token: SecretStr | None = Field(None, validation_alias=AliasChoices("SLACK_BOT_TOKEN"))
    slack_app_token: SecretStr | None = Field(None, validation_alias=AliasChoices("SLACK_APP_TOKEN"))
    slack_signing_secret: SecretStr | None = Field(None, validation_alias=AliasChoices("SLACK_SIGNING_SECRET"))
    prometheus_bearer_token: SecretStr | None = Field(None, validation_alias=AliasChoices("PROMETHEUS_BEARER_TOKEN"))

    @field_validator("database_url")
    @classmethod
    def _loadable(cls, v: str) -> str:
        return database_url(v)

    @field_validator("cluster_name")
    @classmethod
    def _cluster_name(cls, v: str) -> str:
        return cluster_name_ok(v)

    @field_validator("clusters")
    @classmethod
    def _clusters(cls, v: list[ClusterSettings]) -> list[ClusterSettings]:
        return check_clusters(v)

    @model_validator(mode="after")
    def _hubs_in_known_clusters(self) -> "Settings":
        names = [c.name for c in self.clusters] or [self.cluster_name]
        for hub in self.jupyterhub.hubs:
            if hub.cluster is not None and hub.cluster not in names:
                raise ValueError(
                    f"jupyterhub.hubs: the Hub of namespace {hub.namespace!r} names cluster {hub.cluster!r}, "
                    f"which is not one of the clusters ({', '.join(names)}); write cluster: {names[0]}"
                )
        return self

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
            if team.policy:
                try:
                    merged(self.policy, team.policy)
                except ValidationError as e:
                    problems = "; ".join(err["msg"] for err in e.errors())
                    raise ValueError(f"team {team.name!r}: its policy with the global one is invalid: {problems}") from None
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
        return TeamDirectory(
            self.teams, self.slack.default_channel, self.slack.admin_channel, self.slack.admin_approvers
        )

    def cluster_targets(self) -> list[ClusterTarget]:
        """The clusters the bot watches, the first one first (its request keys keep the form of a
        bot of one cluster): ``clusters``, or the one cluster ``cluster_name`` through the top-level
        ``kubernetes`` and ``prometheus`` (see :func:`bot.settings.clusters.targets`)."""
        return targets(
            self.clusters, single_name=self.cluster_name, kubeconfig=self.kubernetes.kubeconfig,
            context=self.kubernetes.context, prometheus_url=self.prometheus.url, headers=self.prometheus_headers(),
        )

    def energy_factors(self, cluster: str | None = None) -> EnergyFactors:
        """The energy figures of ``cluster`` (default: the first, or the only one): the top-level
        ``energy`` with that cluster's own ``energy`` over it (see
        :func:`bot.settings.clusters.cluster_energy`). ValueError for a cluster not configured."""
        return cluster_energy(self.clusters, cluster, base=self.energy, single_name=self.cluster_name)

    def prometheus_headers(self) -> dict[str, str]:
        """Headers for Prometheus queries, with the bearer token from the environment if set."""
        headers = dict(self.prometheus.headers)
        if self.prometheus_bearer_token:
            headers["Authorization"] = f"Bearer {self.prometheus_bearer_token.get_secret_value()}"
        return headers
