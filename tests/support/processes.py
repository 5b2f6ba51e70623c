"""The environment of every Python process the tests spawn to run the bot (``gpu-cost-bot run``,
a replica, a migration): one place, so each starts as production does.

- ``tests/support/child_site/`` first on ``PYTHONPATH``: its ``sitecustomize.py`` hides the test extra's
  ``kubernetes_validate`` from the child (production images never have it; see that module);
- then the repository root, so the child imports this checkout's ``bot`` and ``actions`` whatever
  its working directory and wherever the package is installed from;
- then whatever ``PYTHONPATH`` the tests themselves run with.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from tests.support.needs import needs
from tests.support.paths import ROOT

CHILD_SITE = Path(__file__).resolve().parent / "child_site"


def python_env(extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) updated with ``extra``, with ``PYTHONPATH``
    as the module docstring says (a ``PYTHONPATH`` in ``extra`` or ``base`` comes after ours).
    The test that asks starts a process: it carries the ``process`` marker."""
    needs("process")
    env = {**(os.environ if base is None else base), **(extra or {})}
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in (str(CHILD_SITE), str(ROOT))]
    env["PYTHONPATH"] = os.pathsep.join([str(CHILD_SITE), str(ROOT), *rest])
    return env
