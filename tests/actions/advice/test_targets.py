"""Targets that can schedule (issue 21, item 4): right-sizing names only a size a node the
consumer's pods can land on offers, and a consumer Kueue manages is resubmitted, never resized.

Upstream rules, read at these commits:

- Where a pod can land: kubernetes/component-helpers 1961876b scheduling/corev1/nodeaffinity/
  nodeaffinity.go (``RequiredNodeAffinity.Match``: every nodeSelector label, then some required
  term; a term's matchExpressions over labels, matchFields over ``metadata.name``; an empty term
  matches nothing) and kubernetes/api 10b39a39 core/v1/toleration.go (``ToleratesTaint``: empty
  effect or key match all, ``Exists`` any value, ``Equal``/empty the same value); NoSchedule and
  NoExecute keep a pod off, PreferNoSchedule only steers (core/v1 types.go TaintEffect).
- What a node offers: NVIDIA/k8s-device-plugin v0.20.0 (1b826acc) internal/lm/strategy.go
  (``nvidia.com/mig.strategy``, no label under ``none``), internal/lm/mig-strategy.go (``mixed``:
  ``nvidia.com/mig-<name>.product`` = ``<GPU>-MIG-<name>``; ``single``: ``nvidia.com/gpu.product``
  = ``<GPU>-MIG-<name>``, every ``nvidia.com/gpu`` one instance), internal/rm/rm.go (one
  ``nvidia.com/mig-<name>`` resource per profile, ``+`` as ``.``).
- Kueue: kubernetes-sigs/kueue ff69552e pkg/controller/jobs/statefulset/statefulset_webhook.go
  ``ValidateUpdate`` calls jobframework ``ValidateImmutablePodGroupPodSpec`` (pkg/controller/
  jobframework/validation.go) over pkg/util/pod ``SpecShape``: the containers'
  ``resources.requests``, ``nodeSelector``, ``affinity`` and ``tolerations`` may not change while
  Kueue manages the StatefulSet; the queue is the label ``kueue.x-k8s.io/queue-name``
  (pkg/controller/constants QueueLabel), and the Deployment/StatefulSet webhooks label the pod
  template ``kueue.x-k8s.io/managed: "true"`` (pkg/constants ManagedByKueueLabelKey).

Prices: the bundled catalog's p5.48xlarge, $55.04/h for 8 H100s = $6.88 per GPU-hour; a notebook
busy all week is 730 GPU-hours a month = $5,022.40.
"""

from __future__ import annotations

import json
from dataclasses import replace

from actions.advice.model import ConsumerUsage
from actions.advice.recommend import advise_consumer
from actions.advice.targets import can_land, landing, node_offer
from actions.advice.usage import consumer_pods, consumer_usages
from actions.model.kube import (
    CapacityType,
    GpuPod,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectRef,
    Taint,
    Toleration,
)
from actions.policy.advice import AdvicePolicy
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.pricing.overrides import PriceOverrides
from actions.sources.kube.dump import snapshot_from_kubectl_dump
from tests.support.advice_fleet import ADVISE_AT, _meta, _mig_node, _node, _owner, _pod
from tests.support.gpu_nodes import H100, mixed_node, offers, single_node, whole_node

BUNDLED = PriceBook(PriceCatalog.bundled())
# An instance type the catalog does not list (so no smaller GPU is compared): one H100 at $6.88.
ONPREM = PriceBook(PriceCatalog.bundled(), PriceOverrides.model_validate({"instance_types": {
    "onprem.h100": {"on_demand_usd_per_hour": 6.88, "gpus": 1, "note": "test rate"}}}))
NOTEBOOK = ObjectRef("kubeflow.org/v1", "Notebook", "ml", "nb")


def notebook(**changes) -> ConsumerUsage:
    base = dict(
        key="idle-notebook/ml/nb", team="ml", namespace="ml", consumer_kind="Notebook", name="nb", role="notebook",
        pods=("nb-0",), whole_gpus=1, gpus=1.0, gpu_model=H100, instance_type="onprem.h100",
        capacity=CapacityType.ON_DEMAND, window_seconds=7 * 86400, gpu_hours=168.0, peak_fb_mib=6144,
        peak_engine_pct=9.0, busy_gpus=1, target=NOTEBOOK,
    )
    base.update(changes)
    return ConsumerUsage(**base)


def pod(**changes) -> GpuPod:
    return GpuPod("ml", "nb-0", "uid", "h100-1", "Running", ADVISE_AT, ADVISE_AT, 1, **changes)


# --- where a pod can land --------------------------------------------------------------------------


def test_node_selector_required_affinity_and_taints_decide_where_a_pod_can_land():
    node = mixed_node("mig-1", labels={"pool": "research", "zone": "a"},
                      taints=(Taint("nvidia.com/mig", "true", "NoSchedule"), Taint("spot", "", "PreferNoSchedule")))
    tolerated = (Toleration("nvidia.com/mig", "Equal", "true", "NoSchedule"),)
    assert not can_land(pod(), node)  # the NoSchedule taint; PreferNoSchedule only steers
    assert can_land(pod(tolerations=tolerated), node)
    assert can_land(pod(tolerations=(Toleration(operator="Exists"),)), node)  # tolerates everything
    assert not can_land(pod(tolerations=(Toleration("nvidia.com/mig", "Equal", "false"),)), node)
    assert not can_land(pod(tolerations=tolerated, node_selector={"pool": "other"}), node)
    assert can_land(pod(tolerations=tolerated, node_selector={"pool": "research"}), node)
    zone_b = NodeSelectorTerm((NodeSelectorRequirement("zone", "In", ("b",)),))
    no_pool = NodeSelectorTerm((NodeSelectorRequirement("pool", "DoesNotExist"),))
    by_name = NodeSelectorTerm(match_fields=(NodeSelectorRequirement("metadata.name", "In", ("mig-1",)),))
    assert not can_land(pod(tolerations=tolerated, node_affinity=(zone_b, no_pool)), node)
    assert can_land(pod(tolerations=tolerated, node_affinity=(zone_b, by_name)), node)  # terms are ORed
    assert not can_land(pod(tolerations=tolerated, node_affinity=(NodeSelectorTerm(),)), node)  # empty: nothing


def test_what_a_node_offers_follows_its_mig_strategy():
    mixed = node_offer(mixed_node("mig-1", profiles={"1g.10gb": 7, "3g.40gb": 2}, whole=4))
    assert [(o.strategy, o.resource, o.selector) for o in mixed.mig] == [
        ("mixed", "nvidia.com/mig-1g.10gb", ("nvidia.com/mig-1g.10gb.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb")),
        ("mixed", "nvidia.com/mig-3g.40gb", ("nvidia.com/mig-3g.40gb.product", "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb"))]
    assert (mixed.product, mixed.strategy, mixed.whole_gpus) == ("NVIDIA-H100-80GB-HBM3", "mixed", 4)
    single = node_offer(single_node("mig-s", H100, "1g.10gb", 56))
    [o] = single.mig
    assert (o.strategy, o.resource, o.selector) == (
        "single", "nvidia.com/gpu", ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"))
    assert (single.product, single.whole_gpus) == ("NVIDIA-H100-80GB-HBM3", 0)  # its GPUs are slices
    none = node_offer(whole_node("h100-1"))
    assert (none.strategy, none.mig, none.whole_gpus) == ("none", (), 8)


# --- a MIG profile only where a node offers it -------------------------------------------------------


def test_no_node_offering_the_profile_means_no_profile_and_the_advice_says_why():
    [r] = advise_consumer(notebook(landing=offers(whole_node("h100-1"))), ONPREM, AdvicePolicy())
    assert r.kind == "mig" and r.action is None and r.resize is None
    assert r.summary == ("no MIG profile for Notebook ml/nb: no node offers `nvidia.com/mig-1g.10gb`: nodes with "
                         "NVIDIA-H100-80GB-HBM3 it can land on run MIG strategy none (1)")
    assert (r.advised_usd_per_month, r.saving_usd_per_month) == (None, None)
    # 730 GPU-hours x $6.88 = $5,022.40; a 1g slice would be 1/7: $717.49.
    assert r.current_usd_per_month == 5022.40 and "$717.49" in r.notes[0]
    # A node with MIG nodes of another GPU does not count: an A100's 1g.10gb is not an H100's.
    a100 = mixed_node("a100-mig", "NVIDIA A100-SXM4-80GB")
    [r] = advise_consumer(notebook(landing=offers(whole_node("h100-1"), a100)), ONPREM, AdvicePolicy())
    assert r.saving_usd_per_month is None and "run MIG strategy none (1)" in r.summary


def test_a_profile_offered_on_a_node_the_pods_can_land_on_is_advised_with_that_nodes_label():
    landing_ = offers(whole_node("h100-1"), mixed_node("mig-1", profiles={"1g.10gb": 7}))
    [r] = advise_consumer(notebook(landing=landing_), ONPREM, AdvicePolicy())
    assert r.kind == "mig" and r.saving_usd_per_month == 4304.91
    assert r.change.startswith("request `nvidia.com/mig-1g.10gb: 1` instead of `nvidia.com/gpu: 1`, nodeSelector "
                               "`nvidia.com/mig-1g.10gb.product: NVIDIA-H100-80GB-HBM3-MIG-1g.10gb`")
    assert dict(r.evidence)["offered (MIG strategy mixed) by"] == "1 node(s) it can land on: mig-1"
    assert r.resize.after == (("nvidia.com/mig-1g.10gb", 1),)
    # Only a larger profile on offer: that one, at its own share (3/7).
    [r] = advise_consumer(notebook(landing=offers(mixed_node("mig-3", profiles={"3g.40gb": 2}))), ONPREM,
                          AdvicePolicy())
    assert "MIG 3g.40gb" in r.summary and r.advised_usd_per_month == 2152.46


def test_under_the_single_strategy_the_profile_is_one_nvidia_com_gpu_pinned_by_the_product():
    [r] = advise_consumer(notebook(landing=offers(single_node("mig-s", H100, "1g.10gb", 56))), ONPREM, AdvicePolicy())
    assert r.kind == "mig" and r.saving_usd_per_month == 4304.91
    assert "`nvidia.com/gpu: 1` (one 1g.10gb instance, MIG strategy single)" in r.change
    assert r.resize.after == (("nvidia.com/gpu", 1),)
    assert r.resize.node_selector == (("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"),)


def test_an_h100_nvl_is_advised_an_h100_nvl_profile_that_a_node_offers():
    nvl = "NVIDIA H100 NVL"
    landing_ = offers(mixed_node("nvl-mig", nvl), mixed_node("h100-mig", H100))
    [r] = advise_consumer(notebook(gpu_model=nvl, landing=landing_), ONPREM, AdvicePolicy())
    assert "MIG 1g.12gb" in r.summary and "nvidia.com/mig-1g.12gb.product: NVIDIA-H100-NVL-MIG-1g.12gb" in r.change
    # Without its own MIG nodes it is told why, naming its own profile, not the 80 GB H100's 1g.10gb.
    [r] = advise_consumer(notebook(gpu_model=nvl, landing=offers(mixed_node("h100-mig", H100))), ONPREM,
                          AdvicePolicy())
    assert r.saving_usd_per_month is None and "`nvidia.com/mig-1g.12gb`" in r.summary
    assert "none of the 1 nodes it can land on has its GPU (NVIDIA H100 NVL)" in r.summary


# --- fewer whole GPUs only where a node has them ------------------------------------------------------


def test_fewer_gpus_only_when_a_node_it_can_land_on_offers_that_many():
    four = notebook(whole_gpus=4, gpus=4.0, gpu_hours=4 * 168.0, peak_fb_mib=70000, peak_engine_pct=99, busy_gpus=2,
                    instance_type="p5.48xlarge")
    [r] = advise_consumer(replace(four, landing=offers(whole_node("h100-2", gpus=2))), BUNDLED, AdvicePolicy())
    assert r.kind == "fewer-gpus" and "2 GPUs instead of 4" in r.summary
    assert advise_consumer(replace(four, landing=offers(whole_node("h100-1", gpus=1))), BUNDLED, AdvicePolicy()) == []
    # Slices under MIG single are no whole GPUs.
    single = offers(single_node("mig-s", H100, "1g.10gb", 56))
    assert advise_consumer(replace(four, landing=single), BUNDLED, AdvicePolicy()) == []
    # One GPU would do and a MIG profile would fit, but no node offers one: one whole GPU, and why not MIG.
    light = replace(four, peak_fb_mib=6144, peak_engine_pct=9.0, busy_gpus=1, instance_type="onprem.h100",
                    landing=offers(whole_node("h100-8")))
    [r] = advise_consumer(light, ONPREM, AdvicePolicy())
    assert r.kind == "fewer-gpus" and "1 GPU instead of 4" in r.summary
    assert r.notes[-1] == ("not MIG 1g.10gb: no node offers `nvidia.com/mig-1g.10gb`: nodes with "
                           "NVIDIA-H100-80GB-HBM3 it can land on run MIG strategy none (1)")


# --- from the cluster: the pods' constraints and the nodes' taints, as the API serves them -----------


def _cluster(pods: list[dict], extra_nodes: list[dict]) -> list:
    items = [_node("h100-1"), *extra_nodes]
    for p in pods:
        name = p["metadata"]["labels"]["notebook-name"]
        items.append({"apiVersion": "kubeflow.org/v1", "kind": "Notebook", "metadata": _meta("ml", name, "Notebook"),
                      "spec": {}})
        items.append(p)
    snapshot = snapshot_from_kubectl_dump(json.dumps({"kind": "List", "apiVersion": "v1", "items": items}).encode(),
                                          ADVISE_AT)
    groups = consumer_pods(snapshot, Policy(), TeamDirectory([]))
    usages = consumer_usages(snapshot, groups, [], {}, Policy(), TeamDirectory([]), 7 * 86400)
    return [replace(u, gpu_hours=168.0, peak_fb_mib=6144, peak_engine_pct=9.0, busy_gpus=1, gpu_model=H100)
            for u in usages]


def _notebook_pod(name: str, **spec) -> dict:
    p = _pod("ml", f"{name}-0", "h100-1", 1, _owner("apps/v1", "StatefulSet", "ml", name),
             labels={"notebook-name": name, "statefulset": name})
    p["spec"].update(spec)
    return p


def test_the_snapshot_carries_selectors_tolerations_taints_and_allocatable_into_the_advice():
    tainted = _mig_node("mig-tainted", profiles=("1g.10gb",))
    tainted["spec"] = {"taints": [{"key": "nvidia.com/mig", "value": "true", "effect": "NoSchedule"}]}
    other_pool = _mig_node("mig-other", profiles=("1g.10gb",))
    other_pool["metadata"]["labels"]["pool"] = "other"
    toleration = [{"key": "nvidia.com/mig", "operator": "Exists", "effect": "NoSchedule"}]
    usages = {u.name: u for u in _cluster([
        _notebook_pod("pinned", nodeSelector={"pool": "research"}),  # neither MIG node
        _notebook_pod("free"),  # the untainted one
        _notebook_pod("tolerant", nodeSelector={"pool": "other"}, tolerations=toleration),
        _notebook_pod("affine", tolerations=toleration, affinity={"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["mig-tainted"]}]}]}}}),
    ], [tainted, other_pool])}
    assert [n.node for n in usages["pinned"].landing] == []  # h100-1 has no pool label either
    assert [n.node for n in usages["free"].landing] == ["h100-1", "mig-other"]
    assert [n.node for n in usages["tolerant"].landing] == ["mig-other"]
    assert [n.node for n in usages["affine"].landing] == ["mig-tainted"]
    [pinned] = advise_consumer(usages["pinned"], BUNDLED, AdvicePolicy())
    assert pinned.kind == "smaller-gpu" and pinned.notes[-1] == (
        "not MIG 1g.10gb: no node offers `nvidia.com/mig-1g.10gb`: no node it can land on was read")
    for name, node in (("free", "mig-other"), ("affine", "mig-tainted")):
        [r] = advise_consumer(usages[name], BUNDLED, AdvicePolicy())
        assert r.kind == "mig" and f"it can land on: {node}" in dict(r.evidence)["offered (MIG strategy mixed) by"]


# --- Kueue: resubmit, never resize ---------------------------------------------------------------------


def test_a_consumer_kueue_manages_is_told_to_resubmit_and_gets_no_resize_action():
    def statefulset(name: str, labels: dict) -> list[dict]:
        sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta("ml", name, "StatefulSet", labels=labels),
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}}}
        p = _pod("ml", f"{name}-0", "h100-1", 4, _owner("apps/v1", "StatefulSet", "ml", name),
                 labels={"app": name, **labels})
        return [sts, p]

    # Kueue's StatefulSet webhook labels the pod template kueue.x-k8s.io/managed and copies the queue.
    queued = {"kueue.x-k8s.io/queue-name": "research", "kueue.x-k8s.io/managed": "true"}
    items = [_node("h100-1"), *statefulset("embed", queued), *statefulset("plain", {})]
    snapshot = snapshot_from_kubectl_dump(json.dumps({"kind": "List", "apiVersion": "v1", "items": items}).encode(),
                                          ADVISE_AT)
    groups = consumer_pods(snapshot, Policy(), TeamDirectory([]))
    usages = {u.name: replace(u, gpu_hours=4 * 168.0, peak_fb_mib=70000, peak_engine_pct=99, busy_gpus=2)
              for u in consumer_usages(snapshot, groups, [], {}, Policy(), TeamDirectory([]), 7 * 86400)}
    assert usages["embed"].kueue == "StatefulSet ml/embed is in Kueue queue research (kueue.x-k8s.io/queue-name)"
    assert usages["plain"].kueue is None
    [queued_rec] = advise_consumer(usages["embed"], BUNDLED, AdvicePolicy())
    assert queued_rec.kind == "fewer-gpus" and queued_rec.action is None and queued_rec.resize is None
    assert queued_rec.change.startswith("resubmit it with 2 GPUs (StatefulSet ml/embed is in Kueue queue research")
    assert "Kueue's webhook forbids changing a managed pod template's resource requests" in queued_rec.change
    [plain] = advise_consumer(usages["plain"], BUNDLED, AdvicePolicy())
    assert plain.action is not None and plain.resize.after == (("nvidia.com/gpu", 2),)


def test_mig_advice_for_a_kueue_workload_names_the_profile_to_resubmit_with():
    u = notebook(landing=offers(mixed_node("mig-1", profiles={"1g.10gb": 7})), kueue="Kueue Workload nb-4f2a1")
    [r] = advise_consumer(u, ONPREM, AdvicePolicy())
    assert r.kind == "mig" and r.action is None
    assert r.change.startswith("resubmit it with `nvidia.com/mig-1g.10gb: 1` instead of `nvidia.com/gpu: 1`")
    assert "(Kueue Workload nb-4f2a1; Kueue's webhook forbids" in r.change


def test_landing_is_what_every_pod_of_the_consumer_can_reach():
    nodes = [whole_node("a", labels={"pool": "x"}), whole_node("b", labels={"pool": "y"})]
    both = landing([pod(), pod(node_selector={"pool": "y"})], nodes)
    assert [n.node for n in both] == ["b"]
