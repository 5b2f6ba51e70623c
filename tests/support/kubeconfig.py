"""Kubeconfig files that point the real kubernetes client at wire-level fake API servers."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml


def write_kubeconfig(path: Path, servers: str | Mapping[str, str]) -> Path:
    """Writes a kubeconfig to ``path`` and returns ``path``: one context per API server of
    ``servers`` (context name -> base URL; a bare URL is the context ``fake``), each with a
    bearer token, the first one current."""
    named = {"fake": servers} if isinstance(servers, str) else dict(servers)
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": next(iter(named)),
        "clusters": [{"name": n, "cluster": {"server": url}} for n, url in named.items()],
        "users": [{"name": "bot", "user": {"token": "test-token"}}],
        "contexts": [{"name": n, "context": {"cluster": n, "user": "bot"}} for n in named],
    }))
    return path
