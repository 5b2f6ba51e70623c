"""The list+watch cache of the big kinds against the wire-level fake API server.

Upstream shapes: a watch streams ``WatchEvent`` JSON lines (apimachinery pkg/apis/meta/v1
watch.go: ``type`` and ``object``); a ``BOOKMARK``'s object carries only
``metadata.resourceVersion``, and a watch from a resourceVersion the server no longer holds is
answered with a 410 (Kubernetes API concepts, "Efficient detection of changes" and "Watch
bookmarks"), an ``ERROR`` event whose object is a ``Status`` with reason ``Expired``
(k8s.io/apiserver storage errors, ``NewResourceExpired``).
"""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import datetime, timezone

import pytest
import yaml

from actions.sources.kube.reader import KubernetesSource
from actions.sources.kube.watch_cache import ClusterCache
from bot.settings import load_settings
from bot.wiring.runtime import build_runtime, cluster_caches
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.paths import DEMO_CLUSTER
from tests.support.waiting import wait_for

DUMP = DEMO_CLUSTER
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
WORKLOAD = "job-pretrain-1a2b3"
FAST = {"backoff_seconds": (0.05, 0.2), "watch_seconds": (30.0, 30.0)}


def _objects() -> list[dict]:
    return json.loads(DUMP.read_bytes())["items"]


@pytest.fixture
def kube():
    with FakeKubeApi(_objects()) as fake:
        fake.bookmark_seconds = 0.1
        yield fake


@pytest.fixture
def cache(kube):
    c = ClusterCache(kube.api_client(), page_size=2, **FAST).start()
    wait_for(lambda: c.synced, "the cache to sync")
    KubernetesSource(kube.api_client(), cache=c).snapshot(NOW)  # discovers Kueue: starts watching Workloads
    wait_for(lambda: "workloads" in c.on_demand and c.synced, "Workloads, StatefulSets ... to sync")
    yield c
    assert c.stop(timeout=5), "the watch threads did not stop"


def _pod(kube: FakeKubeApi, namespace: str, name: str) -> dict:
    pod = kube.get("Pod", namespace, name)
    assert pod is not None
    return pod


def _caught_up(kube: FakeKubeApi, cache: ClusterCache) -> bool:
    rv = kube.resource_version
    return all(r.resource_version == rv for r in (cache.pods, cache.nodes, *cache.on_demand.values()))


def _pod_lists(kube: FakeKubeApi) -> int:
    return sum(r.path == "/api/v1/pods" and "watch" not in r.query for r in kube.requests)


def _cached_lists(kube: FakeKubeApi) -> list[str]:
    """The list requests (not watches) of the kinds the cache holds."""
    paths = ("/api/v1/pods", "/api/v1/nodes", "/apis/kueue.x-k8s.io/v1beta2/workloads", "/apis/apps/v1/statefulsets",
             "/apis/apps/v1/deployments", "/apis/kubeflow.org/v1/notebooks")
    return [r.path for r in kube.requests if r.path in paths and "watch" not in r.query]


def _mutate(kube: FakeKubeApi, tag: str) -> None:
    """A new GPU pod, a pod that finishes, a node relabelled, a pod deleted."""
    new = _pod(kube, "ml-research", "llm-explore-0")
    new["metadata"] = {**new["metadata"], "name": f"llm-explore-{tag}", "uid": f"uid-{tag}"}
    kube.add(new)
    finished = _pod(kube, "training", "pretrain-worker-0")
    finished["status"]["phase"] = "Succeeded"
    kube.add(finished)
    node = kube.get("Node", "", "gpu-spot-1")
    node["metadata"]["labels"]["karpenter.sh/capacity-type"] = "on-demand"
    kube.add(node)
    kube.delete("Pod", "serving", "chat-api-6f7d8b9c4-x2x9z")
    workload = kube.get("Workload", "training", WORKLOAD)
    assert workload is not None
    workload["spec"]["active"] = False
    kube.add(workload)
    statefulset = kube.get("StatefulSet", "ml-research", "llm-explore")
    statefulset["spec"]["replicas"] = 0
    kube.add(statefulset)


def test_the_fake_streams_upstream_watch_events(kube):
    """The fake's wire: ADDED/MODIFIED/DELETED lines, a BOOKMARK with only a resourceVersion,
    and a 410 Expired ERROR for a compacted resourceVersion."""
    rv = kube.resource_version
    pod = _pod(kube, "ml-research", "llm-explore-0")
    pod["metadata"]["labels"]["touched"] = "yes"
    kube.add(pod)
    kube.delete("Pod", "ml-research", "llm-explore-0")
    url = f"{kube.url}/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1"
    with urllib.request.urlopen(url, timeout=10) as r:
        events = [json.loads(line) for line in r.read().splitlines()]
    assert [e["type"] for e in events if e["type"] != "BOOKMARK"] == ["MODIFIED", "DELETED"]
    assert events[0]["object"]["kind"] == "Pod" and events[0]["object"]["metadata"]["labels"]["touched"] == "yes"
    assert events[-1]["type"] == "BOOKMARK"  # also at the end of the watch
    assert events[-1]["object"] == {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": kube.resource_version}}
    kube.compact()
    with urllib.request.urlopen(url, timeout=10) as r:
        (error,) = [json.loads(line) for line in r.read().splitlines()]
    assert error["type"] == "ERROR"
    assert (error["object"]["kind"], error["object"]["code"], error["object"]["reason"]) == ("Status", 410, "Expired")


def test_synced_cache_equals_a_fresh_list_after_changes(kube, cache):
    api = kube.api_client()
    watched, listed = KubernetesSource(api, cache=cache), KubernetesSource(api)
    assert watched.snapshot(NOW) == listed.snapshot(NOW)
    _mutate(kube, "a")
    wait_for(lambda: _caught_up(kube, cache), "the cache to catch up")
    kube.clear_requests()
    snap = watched.snapshot(NOW)
    assert _cached_lists(kube) == []
    assert snap == listed.snapshot(NOW)
    assert not next(w for w in snap.workloads if w.name == WORKLOAD).active
    assert next(s for s in snap.statefulsets if s.name == "llm-explore").replicas == 0
    pods = {(p.namespace, p.name) for p in snap.pods}
    assert ("ml-research", "llm-explore-a") in pods
    assert ("training", "pretrain-worker-0") not in pods and ("serving", "chat-api-6f7d8b9c4-x2x9z") not in pods
    assert snap.nodes["gpu-spot-1"].capacity_type.value == "on-demand"
    assert cache.pods.lists == 1  # all of it from the watch


def test_cached_pods_share_the_strings_they_repeat(kube, cache):
    """A pod kept from the list and one kept from a watch event, in the same namespace on the
    same node with the same labels, tolerations and owner kind, hold one copy of each of those
    strings: the cache keeps tens of thousands of pods, and the copies were 16 MB of the 53 MB
    one cluster of benchmarks/scale_fleet.py's fleet took."""
    twin = _pod(kube, "ml-research", "llm-explore-0")
    twin["metadata"] = {**twin["metadata"], "name": "llm-explore-b", "uid": "uid-b"}
    kube.add(twin)
    wait_for(lambda: _caught_up(kube, cache), "the cache to catch up")
    pods, _ = cache.gpu_pods_and_tenants()
    listed, watched = (next(p for p in pods if p.name == name) for name in ("llm-explore-0", "llm-explore-b"))
    assert watched.namespace is listed.namespace and watched.node is listed.node and watched.node == "gpu-od-1"
    assert watched.phase is listed.phase and watched.gpu_resource is listed.gpu_resource
    assert listed.labels == watched.labels and len(listed.labels) == 6
    for (k1, v1), (k2, v2) in zip(listed.labels.items(), watched.labels.items()):
        assert k1 is k2 and v1 is v2, k1
    assert [t.key for t in watched.tolerations] == ["nvidia.com/gpu", "node.kubernetes.io/not-ready"]
    for t1, t2 in zip(listed.tolerations, watched.tolerations):
        assert t1.key is t2.key and t1.operator is t2.operator and t1.effect is t2.effect
    (o1,), (o2,) = listed.owners, watched.owners
    assert o1.kind is o2.kind and o1.api_version is o2.api_version


def test_owner_kinds_the_walk_lists_are_watched_too(kube):
    """A fleet's walk lists an owner kind it needs more than ``owner_list_above`` of (5,000 Kueue
    Jobs); with a cache it watches that kind instead of listing it every sweep."""
    kube.add({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "pretrain", "namespace": "training", "uid": "f0b81c1e-5336-5eaa-b39a-5753b01f7591", "labels": {}}})
    cache = ClusterCache(kube.api_client(), **FAST).start()
    try:
        watched = KubernetesSource(kube.api_client(), cache=cache, owner_list_above=0)
        listed = KubernetesSource(kube.api_client(), owner_list_above=0)
        watched.snapshot(NOW)  # asks for Jobs: starts watching them
        wait_for(lambda: "owners batch/Job" in cache.on_demand and cache.synced, "the Jobs to sync")
        job = kube.get("Job", "training", "pretrain")
        job["metadata"]["labels"]["touched"] = "yes"
        kube.add(job)
        wait_for(lambda: _caught_up(kube, cache), "the cache to catch up")
        kube.clear_requests()
        snap = watched.snapshot(NOW)
        assert not any("/jobs" in r.path for r in kube.requests)  # neither listed nor read one by one
        assert snap == listed.snapshot(NOW)
        assert next(o for o in snap.objects if o.kind == "Job" and o.name == "pretrain").labels["touched"] == "yes"
    finally:
        assert cache.stop()


def test_an_expired_resource_version_means_a_fresh_list(kube, cache):
    kube.clear_requests()
    kube.compact()  # the open watches get a 410 Expired ERROR event
    def pod_requests():
        return [r for r in kube.requests if r.path == "/api/v1/pods"]

    # Synced once the relist's last page is read; its watch is sent a moment later.
    wait_for(lambda: cache.pods.lists == 2 and cache.synced and (sent := pod_requests())
             and sent[-1].query.get("watch") == "1", "a relist after 410, then a watch")
    pod_requests = pod_requests()
    assert "watch" not in pod_requests[0].query  # listed again, not resumed from the expired version
    assert pod_requests[-1].query.get("watch") == "1" and int(pod_requests[-1].query["resourceVersion"]) >= int(
        kube.resource_version)
    _mutate(kube, "b")
    wait_for(lambda: _caught_up(kube, cache), "the cache to catch up")
    assert KubernetesSource(kube.api_client(), cache=cache).snapshot(NOW) == KubernetesSource(kube.api_client()).snapshot(NOW)


def test_a_dropped_watch_resumes_where_it_was(kube, cache):
    before = cache.pods.resource_version
    kube.clear_requests()
    kube.drop_watches()
    _mutate(kube, "c")
    wait_for(lambda: _caught_up(kube, cache), "the cache to catch up after the drop")
    resumed = [r.query for r in kube.requests if r.path == "/api/v1/pods" and r.query.get("watch") == "1"]
    assert resumed and resumed[0]["resourceVersion"] == before
    assert resumed[0]["allowWatchBookmarks"] == "true" and int(resumed[0]["timeoutSeconds"]) == 30
    assert cache.pods.lists == 1  # resumed, not listed again
    assert KubernetesSource(kube.api_client(), cache=cache).snapshot(NOW) == KubernetesSource(kube.api_client()).snapshot(NOW)


def test_a_failing_api_server_unsyncs_the_cache_until_it_lists_again(kube):
    cache = ClusterCache(kube.api_client(), **FAST)
    source = KubernetesSource(kube.api_client(), cache=cache)
    assert source.snapshot(NOW).pods  # not started, so not synced: listed
    assert _pod_lists(kube) == 1 and cache.nodes.items() is None
    cache.start()
    try:
        wait_for(lambda: cache.synced, "the cache to sync")
        kube.fail("GET", "/api/v1/nodes", 500, "InternalError", "etcd is down", times=5)
        kube.drop_watches()  # the resumed watch, then the lists, get the 500s
        wait_for(lambda: not cache.nodes.synced, "the failure to unsync the nodes")
        assert cache.nodes.items() is None  # a sweep now lists nodes for itself
        wait_for(lambda: cache.nodes.synced and cache.nodes.lists == 2, "a fresh list once the API server answers")
        assert cache.pods.lists == 1  # the pods' watch resumed
    finally:
        assert cache.stop(timeout=5)


def test_a_forbidden_watch_gives_up_and_sweeps_list(kube):
    """RBAC without ``watch`` (a deployment not updated): the watch stops for good instead of
    listing 50,000 pods again every back-off."""
    kube.fail("GET", "/api/v1/pods", 403, "Forbidden", 'pods is forbidden: cannot watch resource "pods"', times=1)
    cache = ClusterCache(kube.api_client(), **FAST)
    cache.pods.start()
    wait_for(lambda: not cache.pods.running, "the pods watch to give up")
    assert cache.pods.gave_up
    assert not cache.pods.synced and cache.pods.items() is None
    assert cache.pods.lists == 0 and _pod_lists(kube) == 1


def test_a_kind_not_served_is_listed_by_sweeps_and_the_rest_stays_synced():
    """No Kubeflow: the Notebooks watch gets a 404 and gives up; the cache is still synced and a
    sweep reads the same as a fresh list (no Notebooks)."""
    with FakeKubeApi(_objects(), kubeflow=False) as kube:
        cache = ClusterCache(kube.api_client(), **FAST).start()
        try:
            watched = KubernetesSource(kube.api_client(), cache=cache)
            watched.snapshot(NOW)
            wait_for(lambda: cache.on_demand["/apis/kubeflow.org/v1/notebooks"].gave_up, "the Notebooks watch to give up")
            wait_for(lambda: cache.synced, "the other kinds to sync")
            snap = watched.snapshot(NOW)
            assert snap == KubernetesSource(kube.api_client()).snapshot(NOW) and snap.notebooks == ()
        finally:
            assert cache.stop()


def test_stop_ends_an_open_watch_promptly(kube, cache):
    started = time.monotonic()
    assert cache.stop(timeout=5)
    assert time.monotonic() - started < 2


def test_run_sweeps_read_no_pod_list_once_synced(kube, tmp_path):
    """The wiring of ``run``: its runtime's source has a cache, started and stopped by the
    Process; a sweep after the sync lists no pods and no nodes."""
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": kube.url}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "bot"}}],
        "users": [{"name": "bot", "user": {"token": "t"}}]}))
    (tmp_path / "bot.yaml").write_text(yaml.safe_dump({
        "dry_run": True, "database_url": f"sqlite:///{tmp_path / 'bot.db'}",
        "kubernetes": {"kubeconfig": str(tmp_path / "kubeconfig")}}))
    settings = load_settings(tmp_path / "bot.yaml")
    once = build_runtime(settings, migrate=True)
    assert cluster_caches(once) == []  # `sweep --once` lists as before
    rt = build_runtime(settings, migrate=False, watch=True)
    (cache,) = cluster_caches(rt)
    cache.start()
    try:
        wait_for(lambda: cache.synced, "the cache to sync")
        kube.clear_requests()
        rt.snapshot(NOW)  # discovers Kueue: starts watching Workloads
        wait_for(lambda: "workloads" in cache.on_demand and cache.synced, "the Workloads to sync")
        kube.clear_requests()
        snap = rt.snapshot(NOW)
        assert _cached_lists(kube) == []
        assert snap == once.snapshot(NOW)
    finally:
        assert cache.stop(timeout=5)


def test_process_starts_and_stops_its_watches():
    from actions.store.database import Store
    from bot.service.metrics import BotMetrics
    from bot.service.process import ActionsInFlight, Process

    class Watch:
        def __init__(self):
            self.calls = []

        def start(self):
            self.calls.append("start")

        def stop(self, timeout):
            self.calls.append(("stop", timeout > 0))

    class Background:
        def running(self):
            return True

        def shutdown(self, wait=True):
            pass

    watch = Watch()
    p = Process(store=Store("sqlite://"), inflight=ActionsInFlight(), metrics=BotMetrics(),
                start_background=Background, watches=[watch], probe_port=0, host="127.0.0.1")
    p.start()
    assert watch.calls == ["start"]
    p.stop()
    assert watch.calls == ["start", ("stop", True)]


