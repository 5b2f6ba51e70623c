"""A bot of two clusters reads every cluster, not the first: every cluster's queue waits,
ClusterQueue admission-wait p90 and spot ratio, each alert naming its cluster and claimed apart
from the other cluster's; one cluster's API server down silences only its own alerts; budget
alerts, ``/gpu budget``, ``/gpu cost <team>`` and the digests sum both clusters' spend, say so,
and name a cluster whose spend could not be read.

Two wire-level fake API servers hold the demo cluster (Kueue Workloads of ClusterQueue
``gpu-cluster-queue``); one real Prometheus holds Kueue's ``kueue_admission_wait_time_seconds``
histogram (label ``cluster_queue``; kueue ``pkg/metrics/metrics.go``, ``admissionWaitTime``) and
kube-state-metrics' pod and node series (tests/actions/sources/prometheus/test_kueue.py) with a ``cluster``
label per cluster, as a Thanos/Mimir query endpoint shows each Prometheus's external label.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from prometheus_client import CollectorRegistry

from bot.chat.commands import CommandContext, dispatch
from bot.chat.console import ConsoleChat, to_text
from bot.service.metrics import BotMetrics
from bot.settings import load_settings
from bot.wiring.jobs import alerts_for, digests_for
from bot.wiring.runtime import build_runtime
from bot.wiring.sources import kueue_by_cluster
from tests.support.clock import Clock
from tests.support.clusters import with_clusters
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.fakes.tcp_proxy import TcpProxy
from tests.support.kubeconfig import write_kubeconfig
from tests.support.kueue_metrics import AT, kueue_openmetrics
from tests.support.paths import DEMO
from tests.support.prometheus_server import running_prometheus
from tests.support.usage_history import PRICES, SPOT_NODE, TEAMS

pytestmark = pytest.mark.prometheus

# The demo's pending Workload (its uid in bot/demo_data/cluster.json), waiting since 2026-11-20.
EVAL_UID = "088e36aa-915f-5422-836d-53620aeea476"
CQ = "gpu-cluster-queue"


def _west_keeps(line: str) -> bool:
    # West runs ml-b's spot pod alone: team bc is all on spot there (ratio 1.0), 25% in east.
    return not any(f'pod="{p}"' in line for p in ("b2", "c1"))


@pytest.fixture(scope="module")
def kueue_endpoint(tmp_path_factory):
    """Kueue's and kube-state-metrics' series for cluster="east" and "west", the ClusterQueue
    named as the demo cluster names it in both."""
    text = kueue_openmetrics().replace('cluster_queue="gpu-cq"', f'cluster_queue="{CQ}"')
    with running_prometheus(with_clusters(text, {"east": lambda s: True, "west": _west_keeps}),
                            tmp_path_factory.mktemp("fleet-kueue")) as url:
        yield url


def _config(tmp_path: Path, prometheus_url: str, kubeconfig: Path, west_prometheus: str | None = None) -> Path:
    west = {"name": "west", "kubernetes": {"context": "west", "kubeconfig": str(kubeconfig)}}
    if west_prometheus:
        west["prometheus"] = {"url": west_prometheus, "cluster_label": "cluster"}
    path = tmp_path / "bot.yaml"
    path.write_text(yaml.safe_dump({
        "database_url": f"sqlite:///{tmp_path / 'bot.db'}",
        "prometheus": {"url": prometheus_url},
        "kubernetes": {"timeout_seconds": 5},
        # gpu-cluster-queue's p90 of 2880 s (tests/support/kueue_metrics.py) is over this 30 min threshold.
        "alerts": {"queue_wait_seconds": 1800},
        "teams": [
            {"name": "training", "namespaces": ["training"], "channel": "C0TRAIN"},
            {"name": "team-a", "namespaces": ["ml-a"], "channel": "C0A"},
            {"name": "bc", "namespaces": ["ml-b", "ml-c"], "channel": "C0BC"},
        ],
        "clusters": [{"name": "east", "kubernetes": {"context": "east", "kubeconfig": str(kubeconfig)}}, west],
    }))
    return path


@pytest.fixture
def fleet(tmp_path, kueue_endpoint):
    data = (DEMO / "cluster.json").read_bytes()
    with FakeKubeApi.from_list_json(data) as east, FakeKubeApi.from_list_json(data) as west:
        proxy = TcpProxy(("127.0.0.1", int(west.url.rsplit(":", 1)[1])))
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"east": east.url, "west": f"http://127.0.0.1:{proxy.port}"})
        settings = load_settings(_config(tmp_path, kueue_endpoint, kubeconfig))
        out = io.StringIO()
        rt = build_runtime(settings, chat=ConsoleChat(out), clock=Clock(AT), metrics=BotMetrics(CollectorRegistry()))
        try:
            yield SimpleNamespace(rt=rt, settings=settings, out=out, west_link=proxy)
        finally:
            proxy.close()


def _keys(alerts) -> set[tuple[str, str, str, str]]:
    return {(a.cluster, a.team, a.kind, a.period_key) for a in alerts}


def test_every_cluster_alerts_apart_and_names_itself(fleet):
    job = alerts_for(fleet.rt, fleet.settings, kueue=kueue_by_cluster(fleet.settings))
    alerts, failed = job.evaluate(AT, None)
    assert failed == []
    day = "2026-11-23"
    queues = {k for k in _keys(alerts) if k[2] == "queue-wait"}
    # The same Workload uid and the same ClusterQueue name in both clusters: two alerts each, the
    # first cluster's keyed as a bot of one keys them, west's prefixed with its name.
    assert {(c, key) for c, team, _, key in queues if team == "training"} == {
        ("east", EVAL_UID), ("west", f"west:{EVAL_UID}"),
        ("east", f"clusterqueue/{CQ}/{day}"), ("west", f"west:clusterqueue/{CQ}/{day}"),
    }
    # Spot ratio per cluster from each cluster's own series: bc is all on spot in west.
    spot = {(c, team, key) for c, team, kind, key in _keys(alerts) if kind == "spot-ratio"}
    assert spot == {("east", "team-a", day), ("east", "bc", day), ("west", "team-a", f"west:{day}")}
    west_cq = next(a for a in alerts if a.period_key == f"west:clusterqueue/{CQ}/{day}")
    assert west_cq.title.endswith("(cluster west)") and ("Cluster", "west") in west_cq.fields

    counts = job.run(AT)
    assert counts["errors"] == 0 and counts["duplicate"] == 0
    stored = {(a.team, a.kind, a.period_key) for a in fleet.rt.store.alerts()}
    assert ("training", "queue-wait", f"west:{EVAL_UID}") in stored and ("training", "queue-wait", EVAL_UID) in stored
    posted = fleet.out.getvalue()
    assert f"ClusterQueue {CQ}: admission wait p90 is 48m (cluster west)" in posted
    assert "Workload training/job-eval-4d5e6 has waited" in posted and "for admission (cluster east)" in posted
    assert job.run(AT)["posted"] == 0  # claimed once each


def test_one_cluster_down_fails_alone_and_is_named(fleet):
    job = alerts_for(fleet.rt, fleet.settings, kueue=kueue_by_cluster(fleet.settings))
    fleet.west_link.cut()
    alerts, failed = job.evaluate(AT, None)
    assert len(failed) == 1 and failed[0].startswith("cluster west: Kubernetes API: ClusterReadError")
    by_cluster = {(a.cluster, a.kind) for a in alerts}
    # East's queue alerts all go out; west's Prometheus still answers its spot ratio.
    assert {("east", "queue-wait"), ("east", "spot-ratio"), ("west", "spot-ratio")} <= by_cluster
    assert ("west", "queue-wait") not in by_cluster
    with pytest.raises(RuntimeError, match="failed: cluster west: Kubernetes API: ClusterReadError"):
        job.scheduled(AT)
    assert any(a.period_key == EVAL_UID for a in fleet.rt.store.alerts())  # east's were posted first


def test_one_reader_for_a_bot_of_two_clusters_is_refused(fleet):
    from bot.wiring.sources import kueue_metrics

    with pytest.raises(ValueError, match="reads Kueue per cluster"):
        alerts_for(fleet.rt, fleet.settings, kueue=kueue_metrics(fleet.settings))


def _usage_config(tmp_path: Path, usage_url: str, east_api: str, west_api: str, west_prometheus: str | None) -> Path:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"east": east_api, "west": west_api})
    clusters = [{"name": n, "kubernetes": {"context": n, "kubeconfig": str(kubeconfig)}} for n in ("east", "west")]
    if west_prometheus:
        clusters[1]["prometheus"] = {"url": west_prometheus}
    path = tmp_path / "bot.yaml"
    path.write_text(yaml.safe_dump({
        "database_url": f"sqlite:///{tmp_path / 'bot.db'}",
        # Generous: a loaded machine takes seconds over the daily idle query, and nothing here waits on it.
        "prometheus": {"url": usage_url, "timeout_seconds": 30},
        "teams": [{"name": t.name, "namespaces": t.namespaces, "channel": "C0ALL"} for t in TEAMS.teams.values()],
        "prices": PRICES.model_dump(exclude_none=True, exclude={"aws"}),
        "costs": {"team_label": "team", "query_timeout_seconds": 30},
        "slack": {"admin_channel": "C0ADMIN"},
        "clusters": clusters,
    }))
    return path


@pytest.fixture(params=[False, True], ids=["both-read", "west-unreadable"])
def usage_fleet(request, tmp_path, usage_endpoint):
    """A bot of clusters east and west over 30 days of usage history (tests/scenarios/test_clusters.py's
    shared endpoint), at 2026-11-21 00:00; with the param, west's own Prometheus refuses (a port
    nothing listens on), so its reports fail. ``east_usd``/``west_usd``: research's spend of
    November so far in each (0 for a west that cannot be read), from each cluster's own report."""
    east_items = json.dumps({"apiVersion": "v1", "kind": "List", "items": [SPOT_NODE]}).encode()
    west_items = json.dumps({"apiVersion": "v1", "kind": "List", "items": []}).encode()
    now = datetime(2026, 11, 21, tzinfo=timezone.utc)
    with FakeKubeApi.from_list_json(east_items) as east, FakeKubeApi.from_list_json(west_items) as west:
        dead = f"http://127.0.0.1:{_free_port()}" if request.param else None
        settings = load_settings(_usage_config(tmp_path, usage_endpoint, east.url, west.url, dead))
        out = io.StringIO()
        rt = build_runtime(settings, chat=ConsoleChat(out), clock=Clock(now))
        month = datetime(2026, 11, 1, tzinfo=timezone.utc)
        east_usd = rt.cost_report(month, now, cluster="east").teams["research"].cost_usd
        west_usd = 0.0 if request.param else rt.cost_report(month, now, cluster="west").teams["research"].cost_usd
        assert east_usd > 0 and (request.param or west_usd > 0)
        yield SimpleNamespace(rt=rt, settings=settings, out=out, now=now, west_down=request.param,
                              east_usd=east_usd, west_usd=west_usd)


def test_budget_alerts_sum_every_cluster_and_say_which(usage_fleet):
    f = usage_fleet
    f.rt.store.set_budget("research", f.east_usd + f.west_usd, "U0ADMIN", f.now)  # exactly 100% of both
    job = alerts_for(f.rt, f.settings)
    spend = job.month_to_date_spend(f.now)
    assert spend.usd["research"] == pytest.approx(f.east_usd + f.west_usd)
    assert spend.clusters == ("east", "west") and set(spend.missing) == ({"west"} if f.west_down else set())
    alerts, _ = job.evaluate(f.now, spend)
    (hundred,) = [a for a in alerts if a.team == "research" and a.kind == "budget-100"]
    assert hundred.cluster == "" and hundred.period_key == "2026-11"  # one per team, not per cluster
    if f.west_down:
        assert "Spend summed over clusters east. Not counted, could not be read: west (" in hundred.text
        with pytest.raises(RuntimeError, match="cluster west: spend not counted in budgets"):
            job.scheduled(f.now)
    else:
        assert "Spend summed over clusters east, west." in hundred.text
        job.scheduled(f.now)
        assert "research has used 100% of its GPU budget for 2026-11" in f.out.getvalue()


def _command(rt, text: str) -> str:
    return to_text(dispatch(text, CommandContext(user="U0ANY", prices=rt.prices, rt=rt, channel="C0ANY",
                                                 spend_usd=rt.spend_function())).message)


def test_gpu_budget_sums_every_cluster_and_names_one_not_read(usage_fleet):
    f = usage_fleet
    f.rt.store.set_budget("research", 2 * (f.east_usd + f.west_usd), "U0ADMIN", f.now)
    answer = _command(f.rt, "budget research")
    assert f"spent ${f.east_usd + f.west_usd:,.2f} in 2026-11 (50%)" in answer
    if f.west_down:
        assert "summed over clusters east; ⚠️ not counted, no report: west (" in answer
    else:
        assert "summed over clusters east, west" in answer and "not counted" not in answer


def test_gpu_cost_of_a_team_says_each_cluster_s_share(usage_fleet):
    f = usage_fleet
    answer = _command(f.rt, "cost research mtd")
    assert "GPU cost: research, all clusters" in answer
    total = f"Total: ${f.east_usd + f.west_usd:,.2f}\nBy cluster: east ${f.east_usd:,.2f} ("
    assert total in answer
    if f.west_down:
        assert "· west no report" in answer
    else:
        assert f"· west ${f.west_usd:,.2f} (" in answer
    one = _command(f.rt, "cost research mtd --cluster east")
    assert "GPU cost: research, cluster east" in one and "By cluster" not in one


def test_digests_sum_every_cluster_and_name_one_not_read(usage_fleet):
    f = usage_fleet
    # Monday 2026-11-16 09:00 UTC, the default digest_cron: the week of Nov 9-16.
    monday = datetime(2026, 11, 16, 9, 5, tzinfo=timezone.utc)
    start, end = datetime(2026, 11, 9, 9, tzinfo=timezone.utc), datetime(2026, 11, 16, 9, tzinfo=timezone.utc)
    east = f.rt.cost_report(start, end, cluster="east").teams["research"]
    results = digests_for(f.rt, f.settings, holder="test").run(monday)
    # West's report failing does not stop the digests: they go out with east's figures.
    assert {r.outcome for r in results} == {"sent"}
    posted = f.out.getvalue()
    east_share = f"All clusters together: east ${east.cost_usd:,.2f} ({east.gpu_hours:,.0f} GPU-hrs)"
    if f.west_down:
        assert f"{east_share}. ⚠️ Not in the totals, no report: west (" in posted
    else:
        west = f.rt.cost_report(start, end, cluster="west").teams["research"]
        assert f"{east_share}, west ${west.cost_usd:,.2f} ({west.gpu_hours:,.0f} GPU-hrs)." in posted
    # The all-teams summary: each cluster's whole cost.
    everyone = f.rt.cost_report(start, end, cluster="east")
    assert f"All clusters together: east ${everyone.cost_usd:,.2f} ({everyone.gpu_hours:,.0f} GPU-hrs)" in posted


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
