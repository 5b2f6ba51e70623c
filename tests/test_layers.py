"""The house keeps its shape: the contracts of .importlinter hold (decisions import nothing that
does I/O, actions/ and bot/ each run downwards, only the Slack backend imports Slack, the service
knows neither Slack nor Kueue), every module of actions/ is either an edge or inside the purity
contract, no two modules import each other, and no module of actions/ or bot/ outgrows one
reading."""

from __future__ import annotations

import ast
import configparser
import os
from pathlib import Path

import grimp
from importlinter.cli import lint_imports

from tests.support.paths import ROOT

MAX_MODULE_LINES = 450
# The edges of actions/: the only packages that may read or write the outside world.
EDGES = ("actions.sources", "actions.executors", "actions.store")
# What the standard library does I/O with; import-linter sees only installed packages, so the
# purity of the decisions is checked against these here.
STDLIB_IO = ("socket", "ssl", "http", "urllib", "subprocess", "sqlite3", "asyncio", "multiprocessing")
# Modules of those packages that only take strings apart: no I/O in them.
STDLIB_PURE = ("urllib.parse",)


def test_import_contracts_are_kept(capsys):
    cwd = os.getcwd()
    os.chdir(ROOT)  # import-linter reads .importlinter from the working directory
    try:
        code = lint_imports(no_cache=True, no_logo=True)
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 broken" in out


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each a cycle of imports,
    function-level and TYPE_CHECKING imports included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module) & modules:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return found


def test_no_two_modules_import_each_other_directly_or_through_others():
    graph = grimp.build_graph("actions", "bot", cache_dir=None)
    modules = {m for m in graph.modules if m.split(".")[0] in ("actions", "bot")}
    assert _cycles(graph, modules) == []


def test_no_module_is_longer_than_one_reading():
    lengths = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for package in ("actions", "bot") for path in (ROOT / package).rglob("*.py")
    }
    assert {p: n for p, n in lengths.items() if n > MAX_MODULE_LINES} == {}
    assert len(lengths) > 150  # the walk found both packages


def _pure_packages() -> list[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    return config["importlinter:contract:pure-decisions"]["source_modules"].split()


def _actions_modules() -> dict[str, Path]:
    out = {}
    for path in (ROOT / "actions").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _within(module: str, packages) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_every_module_of_actions_is_an_edge_or_under_the_purity_contract():
    pure = _pure_packages()
    assert not set(pure) & set(EDGES)
    uncovered = sorted(m for m in _actions_modules() if m != "actions" and not _within(m, (*pure, *EDGES)))
    assert uncovered == [], f"add each to .importlinter's pure-decisions contract, or move it into an edge: {uncovered}"


def test_pure_modules_use_no_io_of_the_standard_library():
    pure = _pure_packages()
    found = {}
    for module, path in _actions_modules().items():
        if not _within(module, pure):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            bad = [n for n in names if n.split(".")[0] in STDLIB_IO and n not in STDLIB_PURE]
            if bad:
                found.setdefault(module, []).extend(bad)
    assert found == {}


def _is_test_module(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def test_tests_share_code_only_through_tests_support():
    # A test module imported by another runs its fixtures and constants twice over and ties
    # rooms together; what two tests share lives in tests/support/ (fixtures as plugins).
    imports = {}
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            found = [n for n in names if n.startswith("tests.") and _is_test_module(n)]
            if found:
                imports.setdefault(str(path.relative_to(ROOT)), []).extend(found)
    assert imports == {}
    assert not any(_is_test_module(p.stem) for p in (ROOT / "tests" / "support").rglob("*.py"))
