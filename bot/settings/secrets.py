"""Secrets a config file must not hold, found before the file is read as settings: the token
settings (:data:`SECRET_KEYS`), a URL's password anywhere
(``prometheus.url: http://bot:s3cret@prom:9090``, ``database_url``), and a ``headers`` entry that
carries a credential (``Authorization``, ``Proxy-Authorization``, ``Cookie``, or a name holding
``token``, ``secret``, ``password`` or ``api-key``). Each is refused with where to put it
instead: the environment (``GPU_COST_BOT_<PATH>``, ``__`` between keys), which Kubernetes fills
from a Secret. The file can then be a ConfigMap that anyone who reads the namespace may read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from actions.text import shown_url

ENV_PREFIX = "GPU_COST_BOT_"
# The settings that are secrets themselves, read from the environment by their own names.
SECRET_KEYS = ("slack_bot_token", "slack_app_token", "slack_signing_secret", "prometheus_bearer_token")
_SECRET_HEADER = re.compile(r"^(authorization|proxy-authorization|cookie)$|token|secret|password|api-?key", re.I)


def _env_name(path: tuple[Any, ...]) -> str | None:
    """The environment variable that sets ``path``, None inside a list (no variable reaches one
    item of it)."""
    if any(isinstance(p, int) for p in path):
        return None
    return ENV_PREFIX + "__".join(str(p).upper().replace("-", "_") for p in path)


def _instead(path: tuple[Any, ...], what: str) -> str:
    name = _env_name(path)
    if name:
        return f"set {what} in the environment as {name}"
    return (f"set {what} in the environment (a list item has no variable of its own: move it to the top level, "
            "or use a token variable)")


def _dotted(path: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in path)


def secrets_in_file(loaded: Mapping[str, Any]) -> list[str]:
    """One problem per secret in ``loaded`` (a config file's YAML as read), each naming where it
    is, what it looks like with the secret masked, and where to put it instead."""
    problems = [
        f"{k}: secrets are read only from the environment; remove it from the file and set {str(k).upper()}"
        for k in loaded
        if str(k).lower() in SECRET_KEYS
    ]
    _walk(loaded, (), problems)
    return problems


def _walk(node: Any, path: tuple[Any, ...], problems: list[str]) -> None:
    if isinstance(node, Mapping):
        for key, value in node.items():
            here = (*path, key)
            if path and path[-1] == "headers" and isinstance(key, str) and _SECRET_HEADER.search(key):
                problems.append(
                    f"{_dotted(here)}: a header that carries a credential is read only from the environment; remove it "
                    f"from the file and {_instead(here, 'it')} (a bearer token for Prometheus: PROMETHEUS_BEARER_TOKEN)"
                )
            elif str(key).lower() not in SECRET_KEYS or path:
                _walk(value, here, problems)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _walk(value, (*path, i), problems)
    elif isinstance(node, str) and "://" in node and "@" in node:
        try:
            parts = urlsplit(node)
        except ValueError:
            return
        if parts.password is not None:  # a user alone (postgresql://bot@postgres/db) is no secret
            problems.append(
                f"{_dotted(path)}: the URL {shown_url(node)} carries a password, which is read only from the "
                f"environment; remove it from the file and {_instead(path, 'the whole URL')}"
            )
