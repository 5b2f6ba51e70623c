"""``gpu-cost-bot report`` and ``/gpu cost`` over the real Prometheus of the usage history
(tests/support/usage_history.py: 30 days, hand-computed figures there), the Kubernetes API through the wire-level fake for the node
capacity-type fallback, and the slash command through a signed request to the real Bolt app."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from actions.cost.reporting import CostSetup
from actions.policy.rules import Policy
from actions.sources.kube.reader import KubernetesSource
from actions.sources.prometheus.usage import PrometheusUsage
from actions.store.database import Store
from bot.chat.commands import CommandContext, dispatch
from bot.chat.console import ConsoleChat, to_text
from bot.chat.slack.app import build_app
from bot.chat.slack.web import web_client
from bot.cli.main import app
from bot.runtime.runtime import Runtime
from tests.support.clock import Clock
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import bolt_request, slash_command_body
from tests.support.usage_history import END, PRICES, SPOT_NODE, TEAMS, price_book
from tests.support.waiting import wait_for

pytestmark = pytest.mark.prometheus

runner = CliRunner()
SECRET = "test-signing-secret"


def _config(tmp_path: Path, url: str) -> Path:
    cfg = {
        "prometheus": {"url": url},
        "teams": [{"name": t.name, "namespaces": t.namespaces} for t in TEAMS.teams.values()],
        "prices": PRICES.model_dump(exclude_none=True, exclude={"aws"}),
        "costs": {"team_label": "team"},
        "alerts": {"spot_ratio_target": 0.7},
    }
    path = tmp_path / "bot.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _report(tmp_path, url, *args):
    dump = tmp_path / "cluster.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [SPOT_NODE]}))
    return runner.invoke(
        app,
        ["report", "--config", str(_config(tmp_path, url)), "--at", "2026-11-21T00:00:00Z",
         "--cluster-state", str(dump), *args],
    )


def test_report_json_for_one_team(tmp_path, usage_prometheus):
    result = _report(tmp_path, usage_prometheus, "--team", "training", "--period", "30d", "--json")
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)
    assert (r["team"], r["period_start"], r["period_end"]) == ("training", "2026-10-22T00:00:00Z", "2026-11-21T00:00:00Z")
    assert round(r["gpu_hours"], 6) == 1080 and round(r["cost_usd"], 2) == 3225.60
    assert round(r["idle_gpu_hours"], 6) == 200 and round(r["idle_cost_usd"], 2) == 1025.60
    assert round(r["efficiency"], 4) == round(880 / 1080, 4) and round(r["spot_ratio"], 4) == round(960 / 1080, 4)
    assert [(f["gpu_model"], f["capacity_type"], round(f["cost_usd"], 2)) for f in r["by_flavor"]] == [
        ("H100", "spot", 2400.00), ("H100", "on-demand", 825.60)]
    assert r["by_flavor"][0]["price_source"] == "config override prices.instance_types.p5.48xlarge (spot)"
    assert [(c["kind"], c["name"]) for c in r["top_consumers"]] == [("Workload", "pretrain"), ("Deployment", "eval")]
    assert len(r["daily"]) == 30 and r["daily"][9]["day"] == "2026-10-31"


def test_report_png_and_the_all_teams_table(tmp_path, usage_prometheus):
    png = tmp_path / "cost.png"
    result = _report(tmp_path, usage_prometheus, "--period", "30d", "--png", str(png))
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = result.output.splitlines()
    research = next(line for line in lines if line.startswith("research "))
    assert "720" in research and "$4,953.60" in research and "25.0%" in research
    # a namespace in no team and without a team label is its own team, as in the sweep
    assert lines.index(next(line for line in lines if line.startswith("sandbox"))) > lines.index(research)
    assert not any(line.startswith("unallocated") for line in lines)
    # platform's node has no capacity type in kube_node_labels: the kubectl dump says spot
    assert "$60.00" in next(line for line in lines if line.startswith("platform "))
    assert "capacity type read from the Kubernetes API" in result.output


def test_report_rejects_a_bad_period_and_an_unknown_team(tmp_path, usage_prometheus):
    bad = _report(tmp_path, usage_prometheus, "--period", "fortnight")
    assert bad.exit_code == 2 and "mtd" in bad.output
    unknown = _report(tmp_path, usage_prometheus, "--team", "nobody", "--period", "7d")
    assert unknown.exit_code == 2 and "teams: platform, research, sandbox, training, vision" in unknown.output


def test_a_team_that_ran_only_cpu_pods_gets_a_report_of_nothing(tmp_path, usage_prometheus):
    # team-d is no configured team: a namespace whose pods never requested a GPU.
    text = _report(tmp_path, usage_prometheus, "--team", "team-d", "--period", "30d")
    assert text.exit_code == 0, text.output
    assert "GPU cost: team-d" in text.stdout and "No GPU was used in this period." in text.stdout
    assert "Total: $0.00" in text.stdout
    as_json = _report(tmp_path, usage_prometheus, "--team", "team-d", "--period", "30d", "--json")
    assert as_json.exit_code == 0, as_json.output
    r = json.loads(as_json.stdout)
    assert (r["team"], r["gpu_hours"], r["cost_usd"], len(r["daily"])) == ("team-d", 0, 0, 30)
    # ...and it stays out of the table of the teams that used GPUs.
    table = _report(tmp_path, usage_prometheus, "--period", "30d")
    assert "team-d" not in table.stdout


@pytest.fixture
def runtime(tmp_path, usage_prometheus):
    with FakeKubeApi([SPOT_NODE], kueue_versions=(), kubeflow=False) as kube, FakeSlack() as slack:
        clock = Clock()
        clock.now = END
        store = Store(f"sqlite:///{tmp_path / 'bot.db'}")
        source = KubernetesSource(kube.api_client())
        rt = Runtime(
            store=store,
            chat=ConsoleChat(io.StringIO()),
            cluster=source,
            telemetry=None,  # type: ignore[arg-type]  # cost reports never read instant telemetry
            writer=None,  # type: ignore[arg-type]
            prices=price_book(),
            teams=TEAMS,
            policy=Policy(),
            dry_run=True,
            clock=clock,
            costs=CostSetup(PrometheusUsage(usage_prometheus, team_label="team"), spot_ratio_target=0.7),
        )
        yield rt, kube, slack
        store.close()


def test_cost_report_reads_missing_capacity_types_from_the_kubernetes_api(runtime):
    rt, kube, _ = runtime
    report = rt.cost_report(END.replace(day=20), END)
    platform = report.teams["platform"]
    assert round(platform.cost_usd, 2) == 60.00 and platform.spot_ratio == 1.0
    assert any("h100-nolabel-1" in n and "Kubernetes API" in n for n in report.notes)
    assert any(r.path == "/api/v1/nodes" for r in kube.requests)


def _cost(rt, text):
    return dispatch(text, CommandContext(user="U0ANY", prices=rt.prices, rt=rt, channel="C0ANY"))


def test_gpu_cost_for_a_team_renders_the_chargeback_layout(runtime):
    rt, _, _ = runtime
    reply = _cost(rt, "cost vision 30d")
    assert not reply.ephemeral
    text = to_text(reply.message)
    assert "GPU cost: vision" in text and "2026-10-22 – 2026-11-20 (30 days)" in text
    assert "GPU-hours consumed: 312 hrs" in text
    assert "A100 on-demand 312 hrs × $3.06 = $954.72" in text
    assert "Efficiency score: 100.0% (target > 80%)" in text and "Spot ratio: 0.0% (target > 70%)" in text
    assert "Job vision/a100-train: 312 hrs, $954.72, idle 0%" in text
    assert "config override prices.instance_types.p4d.24xlarge (on-demand): seed rate" in text
    assert "Idle: GPU-hours in 5-minute steps whose engine activity peaked at or under 1%" in text
    training = to_text(_cost(rt, "cost 30d training").message)  # either order
    assert "Idle GPU-hours: 200 hrs (18.5%) = $1,025.60" in training and "Spot ratio: 88.9%" in training


def test_gpu_cost_of_a_team_that_ran_only_cpu_pods_says_no_gpu_was_used(runtime):
    rt, _, _ = runtime
    reply = _cost(rt, "cost team-d 30d")
    assert not reply.ephemeral
    text = to_text(reply.message)
    assert "GPU cost: team-d" in text and "No GPU was used in this period." in text and "Total: $0.00" in text


@pytest.mark.parametrize(
    "text, problem",
    [
        ("cost nobody 7d", "No team 'nobody' in this period"),
        ("cost research fortnightly", "'fortnightly' is not a period"),
        ("cost research 30d extra", "takes a team and a period"),
        ("cost 7d 30d", "Two periods given"),
    ],
)
def test_gpu_cost_bad_input_is_ephemeral_with_an_example(runtime, text, problem):
    rt, _, _ = runtime
    reply = _cost(rt, text)
    assert reply.ephemeral
    assert problem in reply.message.text and "For example: `/gpu cost " in reply.message.text


def test_gpu_cost_through_slack_is_acked_then_answered_at_the_response_url(runtime):
    rt, _, slack = runtime
    client = web_client("xoxb-test", slack.base_url)
    bolt = build_app(rt, client, SECRET)
    body = slash_command_body(text="cost", user_id="U0ANY", channel_id="C0ANY", response_url=slack.response_url("cost"))
    ack = bolt.dispatch(bolt_request(SECRET, body))
    assert ack.status == 200 and ack.body == ""  # the ack carries nothing: the report follows
    wait_for(lambda: slack.responses_to("cost"), "the report", timeout=20)
    (answer,) = slack.responses_to("cost")
    assert answer["response_type"] == "in_channel"
    table = answer["blocks"][2]["text"]["text"]
    assert "research" in table and "$4,953.60" in table and "sandbox" in table


def test_gpu_cost_says_when_prometheus_cannot_answer(runtime):
    from tests.support.prometheus_server import free_port

    rt, _, _ = runtime
    rt.costs = CostSetup(PrometheusUsage(f"http://127.0.0.1:{free_port()}", attempts=1))
    reply = _cost(rt, "cost research 7d")
    assert reply.ephemeral
    assert "I could not build the cost report: Prometheus at http://127.0.0.1:" in reply.message.text
    assert "is unreachable (Connection refused; tried once): check prometheus.url" in reply.message.text


# --- by Kueue queue ----------------------------------------------------------------------------------

LQ = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
      "metadata": {"namespace": "training", "name": "training-queue", "uid": "lq-1"}, "spec": {"clusterQueue": "h100-spot"}}


def test_report_by_localqueue_as_json_keys_the_lines_namespace_slash_name(tmp_path, usage_prometheus):
    by_team = json.loads(_report(tmp_path, usage_prometheus, "--period", "30d", "--json").stdout)
    result = _report(tmp_path, usage_prometheus, "--by", "localqueue", "--period", "30d", "--json")
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)
    assert r["by"] == "localqueue" and "teams" not in r
    lines = r["localqueues"]
    assert list(lines) == ["training/training-queue", "(no LocalQueue)"]
    q = lines["training/training-queue"]
    assert (round(q["gpu_hours"], 6), round(q["cost_usd"], 2), round(q["idle_cost_usd"], 2), q["spot_ratio"]) == (
        960, 2400.00, 200.00, 1.0)
    assert set(q) == set(by_team["teams"]["training"])  # the keys a team has
    # The same total as the team report, to the cent (render-0's spot node read from the dump by both).
    assert round(sum(x["cost_usd"] for x in lines.values()), 2) == round(
        sum(t["cost_usd"] for t in by_team["teams"].values()), 2) == round(2400.00 + 7229.28 - 165.12 + 60.00, 2)


def test_report_by_clusterqueue_reads_the_local_queues_of_the_cluster_state(tmp_path, usage_prometheus):
    dump = tmp_path / "cluster.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [SPOT_NODE, LQ]}))
    args = ["report", "--config", str(_config(tmp_path, usage_prometheus)), "--at", "2026-11-21T00:00:00Z",
            "--cluster-state", str(dump), "--by", "cq"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "GPU cost by ClusterQueue" in result.stdout
    row = next(line for line in lines if line.startswith("h100-spot "))
    assert "960" in row and "$2,400.00" in row and "100.0%" in row  # spot ratio
    assert next(line for line in lines if line.startswith("(no LocalQueue)")).split()[2] == "1,224"
    assert "unknown ClusterQueue" not in result.stdout


@pytest.mark.parametrize("args, said", [
    (["--by", "clustrqueue"], "did you mean --by clusterqueue?"),
    (["--by", "namespace"], "Use team, localqueue (lq) or clusterqueue (cq)"),
    (["--by", "lq", "--team", "training"], "leave out --team"),
])
def test_report_by_a_grouping_it_does_not_know_is_a_usage_error(tmp_path, usage_prometheus, args, said):
    result = _report(tmp_path, usage_prometheus, *args)
    assert result.exit_code == 2 and said in result.output


@pytest.fixture
def kueue_runtime(tmp_path, usage_prometheus):
    """The runtime of ``runtime`` over a Kubernetes API that serves Kueue and holds training's LocalQueue."""
    with FakeKubeApi([SPOT_NODE, LQ], kubeflow=False) as kube:
        clock = Clock()
        clock.now = END
        store = Store(f"sqlite:///{tmp_path / 'kueue.db'}")
        rt = Runtime(
            store=store, chat=ConsoleChat(io.StringIO()), cluster=KubernetesSource(kube.api_client()),
            telemetry=None, writer=None,  # type: ignore[arg-type]  # cost reports never read them
            prices=price_book(), teams=TEAMS, policy=Policy(), dry_run=True, clock=clock,
            costs=CostSetup(PrometheusUsage(usage_prometheus, team_label="team")),
        )
        yield rt
        store.close()


@pytest.mark.parametrize("text", ["cost by localqueue 30d", "cost 30d per lq", "cost lq", "cost by-queue"])
def test_gpu_cost_by_localqueue_in_the_words_people_type(runtime, text):
    rt, _, _ = runtime
    reply = _cost(rt, text)
    assert not reply.ephemeral, reply.message.text
    out = to_text(reply.message)
    assert "GPU cost by LocalQueue" in out
    row = next(line for line in out.splitlines() if line.startswith("training/training-queue"))
    assert "960" in row and "$2,400.00" in row


def test_gpu_cost_by_clusterqueue_and_a_local_queue_gone(kueue_runtime, runtime):
    out = to_text(_cost(kueue_runtime, "cost 7d by clusterqueue").message)
    assert "GPU cost by ClusterQueue" in out and "h100-spot" not in out  # pretrain ran in October
    out = to_text(_cost(kueue_runtime, "cost by cq 30d").message)
    assert next(line for line in out.splitlines() if line.startswith("h100-spot ")).split()[2] == "$2,400.00"
    rt, _, _ = runtime  # an API without Kueue: no LocalQueue object left
    gone = to_text(_cost(rt, "cost by cq 30d").message)
    assert "(unknown ClusterQueue)" in gone and "training/training-queue no longer in the cluster" in gone


@pytest.mark.parametrize("text, problem, example", [
    ("cost by clustrqueue 30d", "`by clustrqueue` is not one of team, localqueue (lq) or clusterqueue (cq); "
     "did you mean `by clusterqueue`? I read the rest as: 30d.", "/gpu cost by clusterqueue 30d"),
    ("cost 7d per", "`per` needs one of team", "/gpu cost by localqueue 7d"),
    ("cost research by lq", "covers every team; leave out the team (I read: team 'research', by localqueue)",
     "/gpu cost by localqueue 30d"),
    ("cost localqeue 7d", "'localqeue' is no team; to see cost by queue, write `by localqueue`", "/gpu cost by localqueue 30d"),
])
def test_gpu_cost_by_a_misspelt_grouping_answers_what_it_read_and_an_example(runtime, text, problem, example):
    rt, _, _ = runtime
    reply = _cost(rt, text)
    assert reply.ephemeral
    assert problem in reply.message.text and f"For example: `{example}`" in reply.message.text
