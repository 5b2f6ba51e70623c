"""How many pytest-xdist workers ``-n auto`` (pyproject's addopts) starts: one more than the cores
this process may run on. A good part of the suite waits on processes it started (the bot,
Prometheus, JupyterHub, PostgreSQL), so with one worker per core the cores idle; on 2 cores the
suite took 6:02 with 2 workers and 4:46 with 3. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still wins."""

from __future__ import annotations

import os

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + 1
