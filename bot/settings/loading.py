"""Reading the settings: the YAML file and the environment, into one checked :class:`Settings`, or
one :class:`ConfigError` that lists every problem where it is (YAML path and line), with a
"did you mean" for a misspelt key."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import BaseModel, ValidationError

from bot.settings.model import Settings
from bot.settings.secrets import ENV_PREFIX, secrets_in_file


class ConfigError(Exception):
    """The configuration is invalid; ``str(e)`` lists every problem, one per line, by YAML path
    (``teams.0.approvers (line 12): ...``)."""


def _model_at(path: tuple[Any, ...]) -> type[BaseModel] | None:
    """The settings model that holds the key at ``path`` (its parent), following list indexes;
    None when the path leaves the models (a free-form mapping such as prometheus.headers)."""
    model: Any = Settings
    for part in path:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        annotation = field.annotation
        inner = getattr(annotation, "__args__", None)
        candidates = [annotation, *(inner or ())]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if model is None:
            return None
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _did_you_mean(key: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(key, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(sorted(choices))}"


def _line_of(node: yaml.Node | None, path: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node at ``path`` (the key's line for a mapping entry)."""
    line = None
    for part in path:
        if isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if k.value == str(part)), None)
            if found is None:
                return line
            line, node = found[0].start_mark.line + 1, found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _format_errors(e: ValidationError, tree: yaml.Node | None) -> str:
    lines = []
    for err in e.errors():
        loc = tuple(err["loc"])
        path = ".".join(str(p) for p in loc) or "(top level)"
        line = _line_of(tree, loc)
        where = f"{path} (line {line})" if line else path
        if err["type"] == "extra_forbidden":
            parent = _model_at(loc[:-1])
            choices = list(parent.model_fields) if parent else []
            lines.append(f"{where}: unknown setting{_did_you_mean(str(loc[-1]), choices) if choices else ''}")
            continue
        value = err.get("input")
        # The bot's own checks name the value in their message; pydantic's type errors do not.
        own = err["type"] == "value_error"
        shown = "" if own or isinstance(value, (dict, list)) or value is None else f" (got {value!r})"
        message = err["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {message}{shown}")
    return "\n".join(lines)


def _env_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every environment variable name a setting can be given by (without ``GPU_COST_BOT_``)."""
    names = set()
    for name, field in model.model_fields.items():
        key = prefix + name.upper()
        names.add(key)
        sub = next(
            (c for c in (field.annotation, *getattr(field.annotation, "__args__", ())) if isinstance(c, type) and issubclass(c, BaseModel)),
            None,
        )
        if sub is not None:
            names |= _env_paths(sub, key + "__")
    return names


def unknown_environment(environ: Mapping[str, str]) -> list[str]:
    """Problems with ``GPU_COST_BOT_*`` variables in ``environ`` that name no setting (each with
    the closest real name). Entries of free-form mappings (``..._HEADERS__X``, ``..._IDLE_POWER_WATTS__A100``)
    are settings too."""
    known = _env_paths(Settings)
    problems = []
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX):
            continue
        rest = name[len(ENV_PREFIX):]
        if rest in known or any(rest.startswith(k + "__") for k in known):
            continue
        close = difflib.get_close_matches(rest, sorted(known), n=1, cutoff=0.6)
        hint = f"; did you mean {ENV_PREFIX}{close[0]}?" if close else ""
        problems.append(f"environment variable {name} is not a setting (nested keys take '__'){hint}")
    return problems


def load_settings(path: str | Path | None = None) -> Settings:
    """Read the YAML file at ``path`` (optional: without it, defaults and the environment) and
    the ``GPU_COST_BOT_*`` environment variables.

    Raises ConfigError listing every problem by its YAML path and line, e.g.
    ``teams.0.approvers (line 7): 'bob' is not a Slack user id (U0123ABCD) ...``: a file that is
    missing, a directory, unreadable, empty or not YAML; unknown keys (with the closest known one);
    secrets in the file; unknown ``GPU_COST_BOT_`` variables; any invalid value.
    """
    data: dict[str, Any] = {}
    tree: yaml.Node | None = None
    problems = unknown_environment(os.environ)
    if path is not None:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{p}: no such file") from None
        except IsADirectoryError:
            raise ConfigError(f"{p} is a directory; give the config file, e.g. --config {p / 'bot.yaml'}") from None
        except UnicodeDecodeError as e:
            raise ConfigError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from None
        except OSError as e:
            raise ConfigError(f"{p} cannot be read: {e.strerror or e}") from None
        try:
            tree = yaml.compose(text)
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ConfigError(f"{p}: not valid YAML: {e}") from None
        if loaded is None:
            raise ConfigError(
                f"{p} is empty: run without --config for the defaults, or start from the example in the README"
            )
        if not isinstance(loaded, dict):
            raise ConfigError(f"{p}: the top level must be a mapping of settings, got {type(loaded).__name__}")
        problems += secrets_in_file(loaded)
        data = loaded
    try:
        settings = Settings(**data)
    except ValidationError as e:
        problems.append(_format_errors(e, tree))
    if problems:
        raise ConfigError("\n".join(problems))
    return settings
