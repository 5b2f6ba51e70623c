"""Kubernetes' own schemas of the objects we deploy (the package ``kubernetes_validate``, in the
test extra), loaded when a test asks for them.

Everything else runs without it, as the bot does in production: the kubernetes client's dynamic
module imports it whenever it is installed, 1.5 s of jsonschema start-up in every test process
and every child, so tests/conftest.py and the children's ``sitecustomize`` hide it (a ``None``
in ``sys.modules`` reads as not installed).
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

NAME = "kubernetes_validate"


def hide() -> None:
    """Makes ``import kubernetes_validate`` raise ImportError until :func:`validator` is called."""
    sys.modules.setdefault(NAME, None)  # type: ignore[arg-type]


def validator() -> ModuleType:
    """The ``kubernetes_validate`` module (``validate(obj, version, strict=True)``,
    ``ValidationError``, ``utils.latest_version()``), imported now if it was hidden."""
    if NAME in sys.modules and sys.modules[NAME] is None:
        del sys.modules[NAME]
    return importlib.import_module(NAME)
