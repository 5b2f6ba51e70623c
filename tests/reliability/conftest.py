"""Fixtures of the reliability suite: the wire fakes and a started bot process per test (SQLite
and PostgreSQL through ``database_url``)."""

from __future__ import annotations

import pytest

from tests.support.bot_process import BotProcess
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.fakes.prometheus_api import FakePrometheus
from tests.support.fakes.slack_api import FakeSlack
from tests.support.paths import DEMO


@pytest.fixture
def slack():
    with FakeSlack() as fake:
        yield fake


@pytest.fixture
def kube():
    with FakeKubeApi.from_list_json((DEMO / "cluster.json").read_bytes()) as fake:
        yield fake


@pytest.fixture
def prometheus():
    with FakePrometheus() as fake:
        yield fake


def _maker(tmp_path, database_url, slack, kube, prometheus):
    made: list[BotProcess] = []

    def make(config: dict | None = None, **kwargs) -> BotProcess:
        sub = tmp_path / f"bot{len(made)}"
        sub.mkdir()
        bot = BotProcess(sub, database_url, slack, kube, prometheus.url, config=config, **kwargs)
        made.append(bot)
        return bot

    return make, made


@pytest.fixture
def make_bot(tmp_path, database_url, slack, kube, prometheus):
    """``make_bot(config=None, **kwargs)``: a BotProcess over this test's fakes and database
    (SQLite, then PostgreSQL), not started; every one made is killed after the test if it still
    runs."""
    make, made = _maker(tmp_path, database_url, slack, kube, prometheus)
    yield make
    for bot in made:
        bot.__exit__()


@pytest.fixture
def make_sqlite_bot(tmp_path, sqlite_url, slack, kube, prometheus):
    """``make_bot`` on SQLite only, for what does not depend on the database."""
    make, made = _maker(tmp_path, sqlite_url, slack, kube, prometheus)
    yield make
    for bot in made:
        bot.__exit__()


@pytest.fixture
def make_postgres_bot(tmp_path, postgres_url, slack, kube, prometheus):
    """``make_bot`` on PostgreSQL only (what several replicas share)."""
    make, made = _maker(tmp_path, postgres_url, slack, kube, prometheus)
    yield make
    for bot in made:
        bot.__exit__()


@pytest.fixture
def bot(make_bot):
    """A started bot process (Slack HTTP mode) with the defaults, on SQLite and PostgreSQL."""
    with make_bot() as running:
        yield running


@pytest.fixture
def sqlite_bot(make_sqlite_bot):
    """A started bot process with the defaults, on SQLite."""
    with make_sqlite_bot() as running:
        yield running
