"""The layering of .importlinter holds: decisions import nothing that does I/O, only the chat
layer imports Slack, and the chat layer reaches the cluster only through actions."""

from __future__ import annotations

import os
from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


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
