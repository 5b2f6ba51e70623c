"""What `sweep --once` imports before its first read: only what it uses.

Each check runs in a fresh interpreter (this one has imported everything already). The
``kubernetes`` client's package ``__init__`` imports ``kubernetes.dynamic.client``, which imports
``kubernetes_validate`` whenever it is installed (kubernetes-client/python,
``kubernetes/dynamic/client.py``: ``try: import kubernetes_validate``); the test extra installs it,
and with it jsonschema's format checkers, whose ``rfc3987_syntax`` builds a grammar at import.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _fresh(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_the_sweep_imports_neither_kubernetes_validate_nor_what_it_does_not_use():
    seen = _fresh(
        "import json, sys\n"
        "import bot.cli, bot.wiring, kubernetes.client, kubernetes.dynamic.client as dynamic\n"
        "print(json.dumps({'loaded': sorted(m for m in ('kubernetes_validate', 'jsonschema', 'rfc3987_syntax',"
        " 'matplotlib', 'slack_sdk', 'slack_bolt', 'boto3', 'apscheduler.schedulers') if m in sys.modules),"
        " 'validates': dynamic.HAS_KUBERNETES_VALIDATE}))"
    )
    assert seen == {"loaded": [], "validates": False}


def test_kubernetes_validate_is_still_importable_after_the_client():
    seen = _fresh(
        "import json, actions, kubernetes, kubernetes_validate\n"
        "print(json.dumps({'validate': callable(kubernetes_validate.validate)}))"
    )
    assert seen == {"validate": True}
