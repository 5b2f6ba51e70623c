"""``gpu-cost-bot ledger status``, ``ledger backfill`` and ``report --source`` through the real CLI,
over the real Prometheus of tests/actions/cost/test_report_prometheus.py and a SQLite file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest
import yaml
from typer.testing import CliRunner

from bot.cli.main import app
from tests.support.prometheus_server import running_prometheus
from tests.support.scaled_to_zero import scaled_to_zero_openmetrics
from tests.support.usage_history import PRICES, SPOT_NODE, TEAMS

pytestmark = pytest.mark.prometheus

runner = CliRunner()


def _config(tmp_path: Path, url: str, **extra) -> Path:
    cfg = {
        "prometheus": {"url": url},
        "database_url": f"sqlite:///{tmp_path / 'bot.db'}",
        "cluster_name": "eu-1",
        "teams": [{"name": t.name, "namespaces": t.namespaces} for t in TEAMS.teams.values()],
        "prices": PRICES.model_dump(exclude_none=True, exclude={"aws"}),
        "ledger": {"enabled": True},
        **extra,
    }
    path = tmp_path / "bot.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _report(tmp_path: Path, config: Path, *args: str):
    dump = tmp_path / "cluster.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [SPOT_NODE]}))
    return runner.invoke(app, ["report", "--config", str(config), "--cluster-state", str(dump), "--json", *args])


def test_backfill_then_status_then_a_report_from_the_ledger(tmp_path, usage_prometheus):
    config = _config(tmp_path, usage_prometheus)
    filled = runner.invoke(app, ["ledger", "backfill", "--config", str(config), "--since", "2026-11-19",
                                 "--until", "2026-11-20T00:00:00Z"])
    assert filled.exit_code == 0, filled.output
    assert "rolling up 24 hour(s)" in filled.output and "filled 24 hour(s) of cluster eu-1" in filled.output

    status = runner.invoke(app, ["ledger", "status", "--config", str(config), "--since", "2026-11-18",
                                 "--at", "2026-11-20T00:30:00Z", "--json"])
    assert status.exit_code == 0, status.output
    s = json.loads(status.stdout)
    assert s["hours"] == {"filled": 24, "partial": 0, "empty": 0} and s["missing_hours"] == 24
    assert s["missing"] == [["2026-11-18T00:00:00Z", "2026-11-19T00:00:00Z"]] and s["cluster"] == "eu-1"
    assert s["without_advice_hours"] == 0  # the backfill kept advice's facts of each hour too
    text = runner.invoke(app, ["ledger", "status", "--config", str(config), "--since", "2026-11-18",
                               "--at", "2026-11-20T00:30:00Z"])
    assert "24 hour(s) filled, 0 partial, 0 empty, 24 missing" in text.output
    assert "missing: 2026-11-18T00:00:00Z to 2026-11-19T00:00:00Z" in text.output

    at = ["--period", "1d", "--at", "2026-11-20T00:00:00Z"]
    ledger = _report(tmp_path, config, "--source", "ledger", *at)
    direct = _report(tmp_path, config, "--source", "prometheus", *at)
    assert ledger.exit_code == direct.exit_code == 0, ledger.output + direct.output
    mine, theirs = json.loads(ledger.stdout), json.loads(direct.stdout)
    assert mine.pop("source") == {"ledger": [["2026-11-19T00:00:00Z", "2026-11-20T00:00:00Z"]], "prometheus": [],
                                  "missing": [], "missing_hours": 0}
    assert mine == theirs  # every figure, note and day: the same report
    assert round(mine["teams"]["research"]["cost_usd"], 2) == round(24 * 6.88, 2)


def test_hours_held_without_advice_facts_are_named_and_the_backfill_adds_them(tmp_path, usage_prometheus):
    window = ["--since", "2026-11-19T20:00:00Z", "--until", "2026-11-20T00:00:00Z"]
    # A ledger kept while advice read Prometheus whole: usage only.
    raw = _config(tmp_path, usage_prometheus, advice={"history_source": "prometheus"})
    assert runner.invoke(app, ["ledger", "backfill", "--config", str(raw), *window]).exit_code == 0
    config = _config(tmp_path, usage_prometheus)  # the same database, advice now from the ledger
    status = ["ledger", "status", "--config", str(config), "--since", "2026-11-19T20:00:00Z", "--at", "2026-11-20T00:30:00Z"]
    text = runner.invoke(app, status).output
    assert "4 hour(s) filled" in text and "0 missing" in text
    assert ("held without advice's facts (4 hour(s); `gpu-cost-bot ledger backfill` adds them while Prometheus keeps "
            "them): 2026-11-19T20:00:00Z to 2026-11-20T00:00:00Z") in text
    filled = runner.invoke(app, ["ledger", "backfill", "--config", str(config), *window])
    assert filled.exit_code == 0 and "filled 4 hour(s) of cluster eu-1" in filled.output, filled.output
    after = json.loads(runner.invoke(app, [*status, "--json"]).stdout)
    assert after["without_advice_hours"] == 0 and after["hours"]["filled"] == 4


def test_a_report_over_hours_the_ledger_lacks_says_which_and_exits_3(tmp_path, usage_prometheus):
    config = _config(tmp_path, usage_prometheus)
    assert runner.invoke(app, ["ledger", "backfill", "--config", str(config), "--since", "2026-11-19T18:00:00Z",
                               "--until", "2026-11-20T00:00:00Z"]).exit_code == 0
    r = _report(tmp_path, config, "--source", "ledger", "--period", "1d", "--at", "2026-11-20T00:00:00Z")
    assert r.exit_code == 3, r.output
    data = json.loads(r.output[: r.output.rindex("}") + 1])
    assert data["source"]["missing"] == [["2026-11-19T00:00:00Z", "2026-11-19T18:00:00Z"]]
    assert data["source"]["missing_hours"] == 18
    assert any("does not hold 18 of the 24 hours" in w for w in data["warnings"])
    # auto: the same ledger, the current (unfinished) hour read from Prometheus
    r = _report(tmp_path, config, "--period", "6h", "--at", "2026-11-20T00:20:00Z")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["source"]["prometheus"] == [["2026-11-19T18:20:00Z", "2026-11-19T19:00:00Z"],
                                            ["2026-11-20T00:00:00Z", "2026-11-20T00:20:00Z"]]
    assert round(data["teams"]["research"]["gpu_hours"], 6) == 6


def test_backfill_before_prometheus_history_leaves_those_hours_missing(tmp_path, usage_prometheus):
    config = _config(tmp_path, usage_prometheus)
    r = runner.invoke(app, ["ledger", "backfill", "--config", str(config), "--since", "2026-10-14T21:00:00Z",
                            "--until", "2026-10-15T03:00:00Z"])
    assert r.exit_code == 0, r.output
    assert "filled 3 hour(s)" in r.output and "3 hour(s) are older than the first data Prometheus holds" in r.output


def test_bad_input_is_told_with_an_example(tmp_path, usage_prometheus):
    config = _config(tmp_path, usage_prometheus)
    r = runner.invoke(app, ["ledger", "backfill", "--config", str(config), "--since", "last tuesday"])
    assert r.exit_code == 2 and "write it like 2026-11-01" in r.output
    r = runner.invoke(app, ["report", "--config", str(config), "--source", "thanos"])
    assert r.exit_code == 2 and "use auto, ledger or prometheus" in r.output
    r = runner.invoke(app, ["ledger", "backfill", "--config", str(config), "--since", "2999-01-01"])
    assert r.exit_code == 2 and "is not before" in r.output


def test_a_report_from_a_new_empty_ledger_says_every_hour_is_missing(tmp_path, usage_prometheus):
    config = _config(tmp_path, usage_prometheus)
    r = _report(tmp_path, config, "--source", "ledger", "--period", "1d", "--at", "2026-11-20T00:00:00Z")
    assert r.exit_code == 3, r.output
    data = json.loads(r.output[: r.output.rindex("}") + 1])
    assert data["source"]["missing_hours"] == 24 and data["teams"]["research"]["gpu_hours"] == 0
    assert "warning: the usage ledger does not hold 24 of the 24 hours" in r.output


@pytest.fixture(scope="module")
def scaled_prometheus(tmp_path_factory) -> Iterator[str]:
    """A real Prometheus holding tests/support/scaled_to_zero.py: GPU nodes scaled to zero between jobs."""
    with running_prometheus(scaled_to_zero_openmetrics(), tmp_path_factory.mktemp("scaled-prometheus")) as url:
        yield url


def test_hours_without_any_gpu_are_complete_and_an_hour_with_gpus_but_no_dcgm_is_not(tmp_path, scaled_prometheus):
    config = _config(tmp_path, scaled_prometheus, teams=[{"name": "ml", "namespaces": ["ml"]}])
    filled = runner.invoke(app, ["ledger", "backfill", "--config", str(config), "--since", "2026-11-10",
                                 "--until", "2026-11-10T09:00:00Z"])
    assert filled.exit_code == 0, filled.output
    assert "filled 9 hour(s) of cluster eu-1" in filled.output
    status = runner.invoke(app, ["ledger", "status", "--config", str(config), "--since", "2026-11-10",
                                 "--at", "2026-11-10T09:00:00Z", "--json"])
    s = json.loads(status.stdout)
    # 00-02 with GPUs and DCGM, 02-05 and 06-09 with no GPU at all: filled. 05-06: a GPU, no DCGM.
    assert s["hours"] == {"filled": 8, "partial": 1, "empty": 0} and s["missing_hours"] == 0
    [partial] = s["partial"]
    assert partial["hour"] == "2026-11-10T05:00:00Z" and "holds no DCGM series" in partial["detail"]

    def report(*args: str):
        r = runner.invoke(app, ["report", "--config", str(config), "--json", *args])
        return r, json.loads(r.stdout[: r.stdout.rindex("}") + 1])

    # The GPU job and the hours scaled to zero after it: whole, no warning.
    r, data = report("--source", "ledger", "--period", "5h", "--at", "2026-11-10T05:00:00Z")
    assert r.exit_code == 0, r.output
    assert data["warnings"] == [] and "warning:" not in r.output
    # 8 H100s x 2 h at $55.04 / 8 per GPU-hour (p5.48xlarge on-demand).
    assert round(data["teams"]["ml"]["gpu_hours"], 6) == 16 and round(data["teams"]["ml"]["cost_usd"], 2) == 110.08
    # auto, hours scaled to zero at either end read live from Prometheus: no DCGM series, none missing.
    r, data = report("--period", "2h", "--at", "2026-11-10T08:20:00Z")
    assert r.exit_code == 0, r.output
    assert data["warnings"] == [] and data["source"]["prometheus"] == [
        ["2026-11-10T06:20:00Z", "2026-11-10T07:00:00Z"], ["2026-11-10T08:00:00Z", "2026-11-10T08:20:00Z"]]
    # The hour a GPU ran without dcgm-exporter stays incomplete.
    r, data = report("--source", "ledger", "--period", "9h", "--at", "2026-11-10T09:00:00Z")
    assert r.exit_code == 3, r.output
    assert data["warnings"] == ["1 hour(s) of this period were rolled up with incomplete data "
                                "(see `gpu-cost-bot ledger status`)"]
    assert round(data["teams"]["ml"]["gpu_hours"], 6) == 17


def test_auto_reads_a_backfilled_ledger_without_ledger_enabled_and_says_so(tmp_path, usage_prometheus):
    config = _config(tmp_path, usage_prometheus, ledger={"enabled": False})
    at = ["--period", "1d", "--at", "2026-11-20T00:00:00Z"]
    # No ledger yet: auto reads Prometheus and makes no database file for it.
    r = _report(tmp_path, config, *at)
    assert r.exit_code == 0, r.output
    assert "source" not in json.loads(r.stdout) and not (tmp_path / "bot.db").exists()
    direct = json.loads(r.stdout)

    filled = runner.invoke(app, ["ledger", "backfill", "--config", str(config), "--since", "2026-11-19",
                                 "--until", "2026-11-20T00:00:00Z"])
    assert filled.exit_code == 0, filled.output
    r = _report(tmp_path, config, *at)
    assert r.exit_code == 0, r.output
    mine = json.loads(r.stdout)
    assert mine.pop("source") == {"ledger": [["2026-11-19T00:00:00Z", "2026-11-20T00:00:00Z"]], "prometheus": [],
                                  "missing": [], "missing_hours": 0}
    assert mine == direct  # the same report, to the cent
    text = runner.invoke(app, ["report", "--config", str(config), "--cluster-state", str(tmp_path / "cluster.json"),
                               *at])
    assert text.exit_code == 0, text.output
    assert "usage: 24 hour(s) from the usage ledger" in text.stderr and "GPU cost" in text.stdout
    # A period the backfill did not fill: nothing keeps this ledger, so Prometheus answers it whole.
    r = _report(tmp_path, config, "--period", "1d", "--at", "2026-11-21T00:00:00Z")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["source"] == {
        "ledger": [], "prometheus": [["2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z"]], "missing": [], "missing_hours": 0}
    text = runner.invoke(app, ["report", "--config", str(config), "--cluster-state", str(tmp_path / "cluster.json"),
                               "--period", "1d", "--at", "2026-11-21T00:00:00Z"])
    assert "usage: read from Prometheus (the usage ledger does not hold this period)" in text.stderr


def test_auto_without_ledger_enabled_reads_prometheus_when_the_database_cannot_be_read(tmp_path, usage_prometheus):
    from tests.support.prometheus_server import free_port

    # A CI job that never had the database: auto must not need it, nor migrate one it reaches.
    down = f"postgresql+psycopg2://bot@127.0.0.1:{free_port()}/gpu"
    config = _config(tmp_path, usage_prometheus, ledger={"enabled": False}, database_url=down)
    r = _report(tmp_path, config, "--period", "1d", "--at", "2026-11-20T00:00:00Z")
    assert r.exit_code == 0, r.output
    assert "source" not in json.loads(r.stdout)  # read from Prometheus alone
