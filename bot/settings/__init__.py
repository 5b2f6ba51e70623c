"""Configuration: one YAML file plus environment variables, read once into one typed object.

Precedence, highest first: environment variables (``GPU_COST_BOT_`` prefix, ``__`` between nested
keys, e.g. ``GPU_COST_BOT_PROMETHEUS__URL``), then the YAML file. Secrets are read only from the
environment (``SLACK_BOT_TOKEN``, ``SLACK_APP_TOKEN``, ``SLACK_SIGNING_SECRET``,
``PROMETHEUS_BEARER_TOKEN``); a YAML file that contains one, a URL with a password or a header
carrying a credential is rejected (:mod:`.secrets`), so a config file can be kept in git or a
ConfigMap without leaking anything.

:mod:`.model` holds the sections and their checks, :mod:`.loading` reads the file and the
environment, :mod:`.cron` reads crontab lines. The settings import only ``actions``.
"""

from bot.settings.cron import digest_trigger
from bot.settings.loading import ConfigError, load_settings, unknown_environment
from bot.settings.model import (
    ActionSettings,
    AlertSettings,
    CostSettings,
    HubSettings,
    JupyterHubSettings,
    KubernetesSettings,
    LeaderElectionSettings,
    LedgerSettings,
    PrometheusSettings,
    ServerSettings,
    Settings,
    SlackSettings,
    SweepSettings,
)

__all__ = [
    "ActionSettings",
    "AlertSettings",
    "ConfigError",
    "CostSettings",
    "HubSettings",
    "JupyterHubSettings",
    "KubernetesSettings",
    "LeaderElectionSettings",
    "LedgerSettings",
    "PrometheusSettings",
    "ServerSettings",
    "Settings",
    "SlackSettings",
    "SweepSettings",
    "digest_trigger",
    "load_settings",
    "unknown_environment",
]
