"""Where things are, for tests and benchmarks: the repository, the demo's bundled data and the
test data (the real H100 capture and the fleet built from it)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "bot" / "demo_data"
DEMO_CLUSTER = DEMO / "cluster.json"
DATA = ROOT / "tests" / "support" / "data"
