"""Showback by Kueue queue (:mod:`actions.cost.queues`) on the 30 days of tests/support/usage_history.py,
over a real Prometheus and from a usage ledger the backfill filled from it, the LocalQueue objects
read through the wire-level fake Kubernetes API: each LocalQueue's figures by hand to the cent,
the lines adding up to the team report's total, a LocalQueue whose object is gone."""

from __future__ import annotations

import concurrent.futures
from datetime import timedelta
from typing import Iterator

import pytest

from actions.cost.engine import compute_cost_report
from actions.cost.periods import parse_period
from actions.cost.queues import (
    BY_CLUSTER_QUEUE,
    BY_LOCAL_QUEUE,
    NO_LOCAL_QUEUE,
    UNKNOWN_CLUSTER_QUEUE,
    QueueLines,
    closest_grouping,
    grouping_of,
    queue_report,
)
from actions.cost.report import CostReport, to_jsonable
from actions.cost.reporting import CostSetup, build_report
from actions.ledger.rollup import LedgerRollup, LedgerUsage
from actions.model.kube import CapacityType
from actions.model.kueue import LocalQueue
from actions.model.times import hours_between
from actions.model.usage import NodeInfo, PodOwner, PodUsage, UsageData
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory
from actions.sources.kube.reader import KubernetesSource
from actions.sources.prometheus.usage import PrometheusUsage
from actions.store.database import Store
from actions.store.ledger import LedgerStore
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.usage_history import END, TEAMS, price_book

POLICY = Policy()
START, _ = parse_period("30d", END)
QUEUE = "training/training-queue"


def cents(x: float) -> float:
    return round(x + 0.0, 2)


def local_queue(namespace: str, name: str, cluster_queue: str) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"namespace": namespace, "name": name, "uid": f"uid-{namespace}-{name}"},
            "spec": {"clusterQueue": cluster_queue}}


def figures(report: CostReport) -> dict:
    """Every figure of every line, to the cent (GPU-hours to 1e-6)."""
    return {
        name: (round(t.gpu_hours, 6), cents(t.cost_usd), round(t.idle_gpu_hours, 6), cents(t.idle_cost_usd),
               None if t.efficiency is None else round(t.efficiency, 6),
               None if t.spot_ratio is None else round(t.spot_ratio, 6), round(t.energy.gpu_energy_kwh, 6),
               [(f.gpu_model, f.capacity_type, round(f.gpu_hours, 6), cents(f.cost_usd)) for f in t.price_lines],
               [(c.kind, c.namespace, c.name, c.queue, cents(c.cost_usd)) for c in t.top_consumers], t.namespaces)
        for name, t in report.teams.items()
    }


def assert_hand_computed_local_queues(report: CostReport) -> None:
    assert list(report.teams) == [QUEUE, NO_LOCAL_QUEUE]
    q = report.teams[QUEUE]
    # pretrain-worker-0: 4 spot H100s for 10 days (240 h) = 960 GPU-h x $2.50; 1 step in 12 idle.
    assert (round(q.gpu_hours, 6), cents(q.cost_usd)) == (960, cents(960 * 2.50)) == (960, 2400.00)
    assert (round(q.idle_gpu_hours, 6), cents(q.idle_cost_usd)) == (80, 200.00)
    assert q.efficiency == pytest.approx(880 / 960) and q.spot_ratio == 1.0
    (line,) = q.price_lines
    assert (line.gpu_model, line.capacity_type, cents(line.usd_per_gpu_hour)) == ("H100", "spot", 2.50)
    (wl,) = q.top_consumers
    assert (wl.kind, wl.namespace, wl.name, wl.queue) == ("Workload", "training", "pretrain", "training-queue")
    assert q.namespaces == ("training",) and q.daily == ()

    rest = report.teams[NO_LOCAL_QUEUE]
    # vision 312 h x $3.06, llm-explore 720 h, eval 120 h, scratch 48 h and render 24 h x $6.88
    # (render-0's node has no capacity type in the metrics: on-demand's price, as unknown).
    assert round(rest.gpu_hours, 6) == 312 + 720 + 120 + 48 + 24 == 1224
    assert cents(rest.cost_usd) == cents(312 * 3.06 + (720 + 120 + 48 + 24) * 6.88) == 7229.28
    assert round(rest.idle_gpu_hours, 6) == 540 + 120 + 48
    assert cents(rest.idle_cost_usd) == cents((540 + 120 + 48) * 6.88) == 4871.04
    assert rest.efficiency == pytest.approx((1224 - 708) / 1224) and rest.spot_ratio == 0.0
    assert rest.namespaces == ("ml-research", "platform-ns", "sandbox", "training", "vision")


def assert_reconciles(by_queue: CostReport, by_team: CostReport) -> None:
    assert cents(by_queue.cost_usd) == cents(by_team.cost_usd) == cents(2400.00 + 7229.28)
    assert round(by_queue.gpu_hours, 6) == round(by_team.gpu_hours, 6) == 2184
    assert cents(sum(t.idle_cost_usd for t in by_queue.teams.values())) == cents(
        sum(t.idle_cost_usd for t in by_team.teams.values()))
    assert by_queue.unrequested == by_team.unrequested
    assert (by_queue.node_gpu_hours, cents(by_queue.node_cost_usd)) == (by_team.node_gpu_hours, cents(by_team.node_cost_usd))


# --- over the real Prometheus ------------------------------------------------------------------------

pytestmark = pytest.mark.prometheus


@pytest.fixture(scope="module")
def setup(usage_prometheus) -> CostSetup:
    return CostSetup(PrometheusUsage(usage_prometheus, team_label="team"))


def test_each_local_queue_is_priced_by_hand_and_the_lines_add_up_to_the_team_report(setup):
    by_lq = queue_report(setup, price_book(), POLICY, START, END, BY_LOCAL_QUEUE)
    assert_hand_computed_local_queues(by_lq)
    assert_reconciles(by_lq, build_report(setup, price_book(), TEAMS, POLICY, START, END))
    # The JSON: a line per LocalQueue, keyed namespace/name, with the keys a team has.
    data = to_jsonable(by_lq)
    team_keys = set(to_jsonable(build_report(setup, price_book(), TEAMS, POLICY, START, END))["teams"]["training"])
    assert set(data["teams"]) == {QUEUE, NO_LOCAL_QUEUE} and set(data["teams"][QUEUE]) == team_keys


def test_cluster_queues_come_from_the_local_queue_objects_read_through_the_api(setup):
    objects = [local_queue("training", "training-queue", "h100-spot"), local_queue("vision", "vision-queue", "a100")]
    with FakeKubeApi(objects, kubeflow=False) as kube:
        snapshot = KubernetesSource(kube.api_client()).snapshot(END)
    assert {(q.namespace, q.name, q.cluster_queue) for q in snapshot.local_queues} >= {
        ("training", "training-queue", "h100-spot")}
    by_cq = queue_report(setup, price_book(), POLICY, START, END, BY_CLUSTER_QUEUE, snapshot.local_queues)
    assert list(by_cq.teams) == ["h100-spot", NO_LOCAL_QUEUE]  # a queue that ran nothing has no line
    cq = by_cq.teams["h100-spot"]
    assert (round(cq.gpu_hours, 6), cents(cq.cost_usd), cents(cq.idle_cost_usd)) == (960, 2400.00, 200.00)
    assert cents(by_cq.teams[NO_LOCAL_QUEUE].cost_usd) == 7229.28
    assert not any("no longer in the cluster" in n for n in by_cq.notes)
    assert_reconciles(by_cq, build_report(setup, price_book(), TEAMS, POLICY, START, END))


def test_a_local_queue_whose_object_is_gone_is_an_unknown_cluster_queue_and_said_so(setup):
    by_cq = queue_report(setup, price_book(), POLICY, START, END, BY_CLUSTER_QUEUE, [LocalQueue("vision", "q", "a100")])
    assert list(by_cq.teams) == [UNKNOWN_CLUSTER_QUEUE, NO_LOCAL_QUEUE]
    assert cents(by_cq.teams[UNKNOWN_CLUSTER_QUEUE].cost_usd) == 2400.00
    assert ("LocalQueue(s) training/training-queue no longer in the cluster: their GPU-hours are under "
            "(unknown ClusterQueue)") in by_cq.notes
    assert cents(by_cq.cost_usd) == cents(9629.28)


# --- from the usage ledger ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ledger(usage_prometheus, tmp_path_factory) -> Iterator[Store]:
    """A SQLite ledger the backfill filled for the 30 days (two backfills at once, 15 days each)."""
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('queue-ledger') / 'bot.db'}")
    store.migrate()

    def rollup() -> LedgerRollup:
        return LedgerRollup(PrometheusUsage(usage_prometheus, team_label="team"), LedgerStore(store), cluster="eu-1",
                            team_label="team", prices=price_book())

    split = START + timedelta(days=15)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        early = pool.submit(rollup().backfill, START, split, POLICY)
        late = pool.submit(rollup().backfill, split, END, POLICY)
        rolled = early.result() + late.result()
    assert sorted(r.hour for r in rolled) == hours_between(START, END)
    yield store
    store.close()


def test_the_ledgers_queue_report_is_the_same_to_the_cent(ledger, setup):
    from_ledger = CostSetup(LedgerUsage(LedgerStore(ledger), None, cluster="eu-1", team_label="team", source="ledger"))
    mine = queue_report(from_ledger, price_book(), POLICY, START, END, BY_LOCAL_QUEUE)
    assert mine.warnings == ()
    assert_hand_computed_local_queues(mine)
    assert figures(mine) == figures(queue_report(setup, price_book(), POLICY, START, END, BY_LOCAL_QUEUE))
    assert_reconciles(mine, build_report(from_ledger, price_book(), TEAMS, POLICY, START, END))
    by_cq = queue_report(from_ledger, price_book(), POLICY, START, END, BY_CLUSTER_QUEUE,
                         [LocalQueue("training", "training-queue", "h100-spot")])
    assert cents(by_cq.teams["h100-spot"].cost_usd) == 2400.00


# --- pure ------------------------------------------------------------------------------------------


H100 = NodeInfo("n1", "p5.48xlarge", CapacityType.ON_DEMAND, "NVIDIA H100 80GB HBM3")


def _pod(ns: str, pod: str, hours: float, idle: float, kwh: float, queue: str | None) -> tuple[PodUsage, PodOwner]:
    labels = {"kueue.x-k8s.io/local-queue-name": queue} if queue else {}
    return (PodUsage(ns, pod, "n1", hours, idle, energy_kwh=kwh, energy_gpu_hours=hours),
            PodOwner(ns, pod, "Job", pod.rsplit("-", 1)[0], labels))


def test_two_local_queues_of_one_cluster_queue_make_one_line_with_their_energy():
    rows = [_pod("a", "train-0", 10, 2, 6.0, "q1"), _pod("b", "tune-0", 5, 5, 1.0, "q2"), _pod("c", "nb-0", 1, 0, 0.5, None)]
    usage = UsageData(START, END, 300, pods=tuple(p for p, _ in rows), nodes={"n1": H100},
                      owners={(o.namespace, o.pod): o for _, o in rows})
    lines = QueueLines(BY_CLUSTER_QUEUE, [LocalQueue("a", "q1", "gpu"), LocalQueue("b", "q2", "gpu")])
    by_cq = lines.finish(compute_cost_report(usage, price_book(), TeamDirectory([]), team_label=None, group_of=lines))
    gpu = by_cq.teams["gpu"]
    assert (gpu.gpu_hours, cents(gpu.cost_usd), gpu.idle_gpu_hours, cents(gpu.idle_cost_usd)) == (15, 103.20, 7, 48.16)
    assert gpu.energy.gpu_energy_kwh == pytest.approx(7.0) and gpu.namespaces == ("a", "b")
    assert [(c.name, c.queue, c.gpu_energy_kwh) for c in gpu.top_consumers] == [("train", "q1", 6.0), ("tune", "q2", 1.0)]
    assert by_cq.teams[NO_LOCAL_QUEUE].energy.gpu_energy_kwh == pytest.approx(0.5)
    by_team = compute_cost_report(usage, price_book(), TeamDirectory([]), team_label=None)
    assert cents(by_cq.cost_usd) == cents(by_team.cost_usd) == cents(16 * 6.88)


@pytest.mark.parametrize("word, by", [("lq", BY_LOCAL_QUEUE), ("LocalQueues", BY_LOCAL_QUEUE), ("queue", BY_LOCAL_QUEUE),
                                      ("cq", BY_CLUSTER_QUEUE), ("cluster-queue", BY_CLUSTER_QUEUE), ("team", "team"),
                                      ("namespace", None)])
def test_the_words_people_type_for_a_grouping(word, by):
    assert grouping_of(word) == by


def test_a_misspelt_grouping_finds_the_one_meant():
    assert closest_grouping("clustrqueue") == BY_CLUSTER_QUEUE and closest_grouping("localqeue") == BY_LOCAL_QUEUE
    assert closest_grouping("research") is None
