"""What every test may use: the shared fixtures (plugins in tests/support/fixtures/, named by the
test that wants one) and the markers' check (tests/support/needs.py); and how many pytest-xdist
workers ``-n auto`` (pyproject's addopts) starts: one more than the cores this process may run
on. A good part of the suite waits on processes it started (the bot,
Prometheus, JupyterHub, PostgreSQL), so with one worker per core the cores idle; on 2 cores the
suite took 6:02 with 2 workers and 4:46 with 3. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still wins."""

from __future__ import annotations

import os

import pytest

from tests.support import schemas

# Before anything imports the kubernetes client: its dynamic module would load kubernetes_validate.
schemas.hide()

pytest_plugins = [
    "tests.support.needs",  # first: the fixtures import it
    "tests.support.fixtures.accounting",
    "tests.support.fixtures.databases",
    "tests.support.fixtures.demo",
    "tests.support.fixtures.fakes",
    "tests.support.fixtures.prometheus",
]


@pytest.fixture(autouse=True)
def _no_log_handler_left_behind():
    """A test that runs `gpu-cost-bot run` installs a stderr log handler on the root logger; left
    there, a thread another test started (a Home refresh, a Slack retry) would write into the
    stderr of whichever later test is capturing a CLI's output."""
    yield
    from bot.service import logs

    logs.remove()


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + 1
