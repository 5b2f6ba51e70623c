"""The house keeps its shape: the contracts of .importlinter hold (decisions import nothing that
does I/O, bot/ runs downwards from the CLI to the settings, only the Slack backend imports Slack,
the service knows neither Slack nor Kueue), no two modules import each other, and no module of
bot/ outgrows one reading."""

from __future__ import annotations

import os
from pathlib import Path

import grimp
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent
MAX_BOT_MODULE_LINES = 450


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


def test_no_module_in_bot_is_longer_than_one_reading():
    lengths = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in (ROOT / "bot").rglob("*.py")
    }
    assert {p: n for p, n in lengths.items() if n > MAX_BOT_MODULE_LINES} == {}
    assert len(lengths) > 30  # the walk found the package
