"""The settings a CLI command runs on: the config file's, with ``--prometheus-url`` over them, and
where the database they open is; ``--at``'s instant."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Optional

import typer

from actions.model.times import parse_time
from bot.settings import Settings, load_settings
from bot.settings.model import http_url


def cli_settings(config: Optional[Path], prometheus_url: Optional[str] = None) -> Settings:
    """The settings of ``config`` (raises ConfigError), with ``--prometheus-url`` checked and
    applied over them (typer.BadParameter naming the option when it is no http(s) URL)."""
    s = load_settings(config)
    if prometheus_url:
        try:
            s.prometheus.url = http_url(prometheus_url, "http://localhost:9090")
        except ValueError as e:
            raise typer.BadParameter(str(e), param_hint="--prometheus-url") from None
    return s


def at_option(value: Optional[str]) -> datetime | None:
    """``--at``'s instant (None when not given); typer.BadParameter when it is not RFC 3339."""
    if value is None:
        return None
    try:
        return parse_time(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not RFC 3339; write it like 2026-11-20T12:00:00Z", param_hint="--at")


DEFAULT_DATABASE = Settings.model_fields["database_url"].default


def say_where_the_database_is(s: Settings) -> None:
    """One line on stderr naming the SQLite file of the default ``database_url``: it is relative,
    so a command run without a config makes (or reads) a file wherever it was started."""
    if s.database_url == DEFAULT_DATABASE:
        path = Path(DEFAULT_DATABASE.removeprefix("sqlite:///")).resolve()
        typer.echo(f"database: {path} (SQLite, the default; set database_url to keep it elsewhere)", err=True)
