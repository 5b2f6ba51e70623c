"""What a test needs beyond its own process, held to its markers.

Three markers say it (pyproject.toml): ``prometheus`` (a real Prometheus server), ``postgres``
(PostgreSQL) and ``process`` (a child process of the bot, a replica, a migration or a JupyterHub:
seconds each). ``pytest -m "not process"`` is the inner loop; ``-m "not prometheus and not
postgres"`` runs where neither is installed.

The code that starts one of them calls :func:`needs`. A test that needed something its markers do
not name fails, naming the marker to add, so a deselection by marker never starts what it meant to
leave out. A need met in a fixture's setup counts for every test that uses the fixture, also when a
wider-scoped fixture was set up for an earlier test.
"""

from __future__ import annotations

import pytest

KINDS = ("prometheus", "postgres", "process")

_setting_up: list[object] = []
_current: pytest.Item | None = None
_by_fixture: dict[int, set[str]] = {}
_by_test: dict[str, set[str]] = {}


def needs(kind: str) -> None:
    """Records that the running test (or the fixture being set up for it) starts ``kind``, one of
    :data:`KINDS`. Raises ValueError for another kind."""
    if kind not in KINDS:
        raise ValueError(f"unknown need {kind!r}; one of {', '.join(KINDS)}")
    if _setting_up:
        _by_fixture.setdefault(id(_setting_up[-1]), set()).add(kind)
    if _current is not None:
        _by_test.setdefault(_current.nodeid, set()).add(kind)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    _setting_up.append(fixturedef)
    try:
        return (yield)
    finally:
        _setting_up.pop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    global _current
    _current = item
    try:
        return (yield)
    finally:
        _current = None


def _needed_by(item: pytest.Item) -> set[str]:
    found = set(_by_test.get(item.nodeid, ()))
    # The fixtures this test resolves to (pytest keeps them on the item; no public accessor): a
    # session-scoped Prometheus set up for an earlier test is needed by this one too.
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info is not None else ()):
        for fixturedef in defs:
            found |= _by_fixture.get(id(fixturedef), set())
    return found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call" and report.passed:
        missing = sorted(_needed_by(item) - {m.name for m in item.iter_markers()})
        if missing:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} starts {' and '.join(missing)} without the marker: add "
                + ", ".join(f"pytest.mark.{kind}" for kind in missing)
                + " to the test or its module's pytestmark (tests/support/needs.py)"
            )
    return report
