"""A pod of two GPU containers: fewer GPUs judged per container, on a real Prometheus (a week of
DCGM series built from the real H100 trace, as tests/support/advice_fleet.py builds its own), and the
Apply that names the one container it changes, against the wire-level fake API server.

dcgm-exporter's Kubernetes mapping labels each GPU's series with the ``pod``, ``namespace`` and
``container`` holding it (NVIDIA/dcgm-exporter internal/pkg/transformation/const.go:
podAttribute "pod", namespaceAttribute "namespace", containerAttribute "container";
"container_name" before 2.0), so a container's GPUs busy at once are counted apart. Prices:
the bundled catalog's p5.48xlarge, $55.04/h for 8 H100s (AWS Price List, 2026-07-20) = $6.88
per GPU-hour."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from actions.advice.round import AdviceResult, gather_advice, recheck_change
from actions.executors.kubernetes import KubernetesWriter
from actions.ledger.advice_history import LedgerHistorySource
from actions.model.advice_hours import AdviceHour
from actions.model.findings import AdviceLimits, GpuResize
from actions.model.times import hours_between
from actions.policy.advice import AdvicePolicy
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.kube.dump import snapshot_from_kubectl_dump
from actions.sources.prometheus.advice_hours import PrometheusAdviceHours
from actions.sources.prometheus.api import PrometheusApi
from actions.sources.prometheus.history import AdviceHistorySource
from actions.store.advice_hours import AdviceHourStore
from tests.support.advice_fleet import (
    ADVISE_AT,
    CONSUMER_SCRAPE,
    STARTED,
    WEEK_START,
    Gpu,
    _meta,
    _node,
    _owner,
    cycled,
    openmetrics,
)
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.prometheus_server import running_prometheus

pytestmark = pytest.mark.prometheus

POD = "detect-7c9d8b6f5-k2v4n"
# trainer holds GPUs 0-3 and keeps one busy (the trace's training rows), three idle with a model
# loaded; indexer holds GPU 4, busy.
HELD = (("trainer", 0, "training"), ("trainer", 1, "notebook_idle_model_loaded"),
        ("trainer", 2, "notebook_idle_model_loaded"), ("trainer", 3, "notebook_idle_model_loaded"),
        ("indexer", 4, "training"))


def fleet() -> list[Gpu]:
    out = []
    for container, index, phase in HELD:
        g = Gpu("vision", POD, "h100-2", index, cycled(phase), start=WEEK_START, scrape=CONSUMER_SCRAPE)
        g.labels["container"] = container
        out.append(g)
    return out


def _containers(trainer_gpus: int = 4) -> list[dict]:
    return [
        {"name": "trainer", "image": "detect:3", "resources": {
            "limits": {"nvidia.com/gpu": str(trainer_gpus), "memory": "64Gi"},
            "requests": {"nvidia.com/gpu": str(trainer_gpus), "cpu": "16"}}},
        {"name": "indexer", "image": "indexer:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
    ]


def deployment() -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {**_meta("vision", "detect", "Deployment"), "resourceVersion": "41"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "detect"}},
                     "template": {"metadata": {"labels": {"app": "detect"}}, "spec": {"containers": _containers()}}}}


def cluster() -> bytes:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": _meta("vision", POD, "Pod", owner=_owner("apps/v1", "ReplicaSet", "vision", "detect-7c9d8b6f5"),
                             labels={"app": "detect", "pod-template-hash": "7c9d8b6f5"}),
           "spec": {"nodeName": "h100-2", "containers": _containers()},
           "status": {"phase": "Running", "startTime": STARTED}}
    items = [_node("h100-2"), deployment(), pod]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}).encode()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdviceHistorySource]:
    with running_prometheus(openmetrics(fleet()), tmp_path_factory.mktemp("advice-containers")) as url:
        yield AdviceHistorySource(PrometheusApi(url))


@pytest.fixture(scope="module")
def result(history) -> AdviceResult:
    snapshot = snapshot_from_kubectl_dump(cluster(), ADVISE_AT)
    teams = TeamDirectory([Team(name="vision", namespaces=["vision"], approvers=["U0LEAD"])])
    return gather_advice(snapshot, history, PriceBook(PriceCatalog.bundled()), Policy(), AdvicePolicy(), teams, ADVISE_AT)


def test_each_container_keeps_what_it_used_at_once_and_the_apply_names_the_one_it_changes(result):
    [u] = result.usages
    assert (u.whole_gpus, u.busy_gpus) == (5, 2)
    assert u.containers == (("trainer", 4, 1.0), ("indexer", 1, 1.0))
    [r] = result.recommendations
    assert r.kind == "fewer-gpus" and "2 GPUs instead of 5" in r.summary
    assert r.change == "set `nvidia.com/gpu: 1` in container `trainer` (now 4)"
    assert dict(r.evidence)["p99 of GPUs busy at once per container"] == "trainer 1 of 4, indexer 1 of 1"
    # By hand: 5 GPUs x 730 h x $6.88 = $25,112.00; 2 of 5 of it $10,044.80; saved $15,067.20.
    assert (r.current_usd_per_month, r.advised_usd_per_month, r.saving_usd_per_month) == (25112.00, 10044.80, 15067.20)
    assert r.action.resize == GpuResize(before=(("nvidia.com/gpu", 4),), after=(("nvidia.com/gpu", 1),),
                                        container="trainer", limits=AdviceLimits(busy_gpus=1))


def test_the_re_check_before_acting_reads_the_containers_own_gpus(result, history):
    [r] = result.recommendations
    pods = snapshot_from_kubectl_dump(cluster(), ADVISE_AT).pods
    # The last hour: trainer keeps one GPU busy (indexer's busy one is not its own).
    assert recheck_change(history, AdvicePolicy(), r.action.resize, pods, ADVISE_AT - timedelta(hours=1), ADVISE_AT) is None
    # Advice that trainer needs none of its GPUs busy would not hold: its one busy GPU is read.
    none_busy = replace(r.action.resize, limits=AdviceLimits(busy_gpus=0))
    why = recheck_change(history, AdvicePolicy(), none_busy, pods, ADVISE_AT - timedelta(hours=1), ADVISE_AT)
    assert why == "1 GPU busy at once in the last 1h 0m, more than the 0 advised"


def test_the_apply_changes_only_the_named_container_and_restore_puts_it_back(result):
    [r] = result.recommendations
    now = datetime(2026, 11, 30, 1, 0, tzinfo=timezone.utc)
    with FakeKubeApi([deployment()]) as fake:
        writer = KubernetesWriter(fake.api_client())
        before = copy.deepcopy(fake.get("Deployment", "vision", "detect"))
        undo = writer.apply(r.action, now)
        [patch] = [q for q in fake.requests if q.method == "PATCH"]
        trainer, indexer = patch.body["spec"]["template"]["spec"]["containers"]
        assert trainer["name"] == "trainer" and trainer["resources"]["limits"]["nvidia.com/gpu"] == "1"
        assert trainer["resources"]["requests"]["nvidia.com/gpu"] == "1"
        assert indexer == before["spec"]["template"]["spec"]["containers"][1]
        assert undo["container"] == "trainer"
        writer.restore(r.action, undo, now)
        assert fake.get("Deployment", "vision", "detect")["spec"] == before["spec"]


def test_when_two_containers_would_change_the_advice_names_both_and_is_advice_only():
    from actions.advice.model import ConsumerUsage
    from actions.advice.recommend import advise_consumer
    from actions.model.kube import CapacityType, ObjectRef
    from tests.support.gpu_nodes import h100_cluster

    u = ConsumerUsage(
        key="idle-serving/vision/Deployment/detect", team="vision", namespace="vision", consumer_kind="Deployment",
        name="detect", role="serving", pods=(POD,), whole_gpus=6, gpus=6.0, gpu_model="NVIDIA H100 80GB HBM3",
        instance_type="p5.48xlarge", capacity=CapacityType.ON_DEMAND, window_seconds=7 * 86400,
        gpu_hours=6 * 168.0, peak_fb_mib=60000, peak_engine_pct=95, busy_gpus=2,
        target=ObjectRef("apps/v1", "Deployment", "vision", "detect"),
        containers=(("trainer", 4, 1.0), ("indexer", 2, 0.4)), landing=h100_cluster(),
    )
    [r] = advise_consumer(u, PriceBook(PriceCatalog.bundled()), AdvicePolicy())
    assert r.change == ("set `nvidia.com/gpu: 1` in container `trainer` (now 4); "
                        "set `nvidia.com/gpu: 1` in container `indexer` (now 2)")
    assert r.action is None  # one patch changes one container: a person makes both changes
    # Without per-container figures each container still keeps one GPU, and nothing is applied.
    blind = advise_consumer(
        ConsumerUsage(**{**u.__dict__, "containers": (("trainer", 4, None), ("indexer", 2, None)), "busy_gpus": 1}),
        PriceBook(PriceCatalog.bundled()), AdvicePolicy())
    assert [(x.kind, x.action) for x in blind] == [("fewer-gpus", None)] and "2 GPUs instead of 6" in blind[0].summary


def test_the_container_query_is_asked_only_for_pods_of_several_gpu_containers():
    from actions.advice.usage import consumer_pods, multi_container_pods
    from tests.support.advice_fleet import _pod

    items = json.loads(cluster())["items"]
    items.append(_pod("vision", "single-0", "h100-2", 2, None))  # one container of 2 GPUs
    snapshot = snapshot_from_kubectl_dump(json.dumps({"kind": "List", "apiVersion": "v1", "items": items}).encode(),
                                          ADVISE_AT)
    groups = consumer_pods(snapshot, Policy(), TeamDirectory([]))
    assert multi_container_pods(groups) == [("vision", POD)]


def test_advice_from_the_ledger_judges_each_container_as_prometheus_does(result, history, store):
    """The same week rolled up hour by hour into the ledger (hours before the series began written
    empty, as the rollup writes them): the same per-container figures and the same advice."""
    live, table, policy = PrometheusAdviceHours(history.api), AdviceHourStore(store), AdvicePolicy()
    for h in hours_between(ADVISE_AT - timedelta(seconds=policy.commitment_window_seconds), ADVISE_AT):
        end = h + timedelta(hours=1)
        hour = live.fetch(h, end, policy) if end > WEEK_START else AdviceHour(h, end, policy.busy_engine_pct, None, None)
        assert table.write_hour("default", hour, ADVISE_AT)
    source = LedgerHistorySource(table, "default", live=live)
    teams = TeamDirectory([Team(name="vision", namespaces=["vision"], approvers=["U0LEAD"])])
    ledger = gather_advice(snapshot_from_kubectl_dump(cluster(), ADVISE_AT), source, PriceBook(PriceCatalog.bundled()),
                           Policy(), policy, teams, ADVISE_AT)
    assert source.last_read[0] == "ledger"
    [u] = ledger.usages
    assert u.containers == (("trainer", 4, 1.0), ("indexer", 1, 1.0)) == result.usages[0].containers
    # The mean power is summed hour by hour here, in one pass in Prometheus: the last digits differ.
    assert u.mean_power_w == pytest.approx(result.usages[0].mean_power_w, rel=1e-12)
    assert replace(u, mean_power_w=None) == replace(result.usages[0], mean_power_w=None)
    assert ledger.recommendations == result.recommendations
