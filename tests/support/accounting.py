"""The GPU-accounting scenario (tests/support/gpu_shapes.py) as a user runs it: a config over its
Prometheus and API server, the CLI through typer's runner, figures to the cent."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner, Result

from actions.model.times import format_time
from bot.cli.main import app
from tests.support import gpu_shapes as shapes
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.kubeconfig import write_kubeconfig

runner = CliRunner()


TEAM_NAMESPACES = ("ml-research", "sandbox", "serving", "training", "vision")
# When the scenario's sweep runs, as the CLI's --at takes it.
SWEEP_AT = format_time(shapes.SWEEP_AT)


def write_config(folder: Path, prometheus: str, kube: FakeKubeApi | None = None) -> Path:
    """A config naming the Prometheus, the fake API server (when given) and the test prices; one
    team per namespace of a GPU pod, named as its namespace (as an unconfigured namespace's team
    is), with an approver, so the gate offers their actions."""
    prices = shapes.PRICES.model_dump(exclude_none=True, exclude={"aws"})
    teams = [{"name": ns, "namespaces": [ns], "approvers": ["U0LEAD"]} for ns in TEAM_NAMESPACES]
    cfg: dict = {"prometheus": {"url": prometheus}, "prices": prices, "teams": teams}
    if kube is not None:
        cfg["kubernetes"] = {"kubeconfig": str(write_kubeconfig(folder / "kubeconfig", kube.url))}
    path = folder / "bot.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def cli(*args: str) -> Result:
    """``gpu-cost-bot <args>`` through typer's runner; asserts it exits 0."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def cents(x: float) -> float:
    """USD rounded to the cent."""
    return round(x, 2)


def flavors(team: dict) -> dict[str, tuple[float, float]]:
    """A team's flavor lines: name -> (GPU-hours, USD to the cent)."""
    return {f["gpu_model"]: (round(f["gpu_hours"], 6), cents(f["cost_usd"])) for f in team["by_flavor"]}
