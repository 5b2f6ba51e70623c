"""What `sweep --once` imports before its first read: only what it uses.

Each check runs in a fresh interpreter (this one has imported everything already).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.paths import ROOT
from tests.support.processes import python_env

pytestmark = pytest.mark.process


def _fresh(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=python_env(), capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_the_sweep_imports_nothing_it_does_not_use():
    seen = _fresh(
        "import json, sys\n"
        "import bot.cli.main, bot.wiring.runtime, bot.wiring.jobs, bot.wiring.process\n"
        "print(json.dumps({'loaded': sorted(m for m in ('matplotlib', 'slack_sdk', 'slack_bolt', 'boto3',"
        " 'apscheduler.schedulers') if m in sys.modules)}))"
    )
    assert seen == {"loaded": []}
