"""Right-sizing advice applied and restored (ActionVerb.RESIZE_GPUS): the real kubernetes client
patching the wire-level fake API server (tests/support/fakes/kube_api.py).

Upstream shapes: the Kubeflow Notebook keeps its pod template at ``spec.template.spec.containers``
(kubeflow/kubeflow components/notebook-controller api/v1 notebook_types.go, NotebookSpec.Template);
a Deployment's at the same path (apps/v1). GPUs are the extended resources ``nvidia.com/gpu`` and,
with the NVIDIA device plugin's MIG strategy ``mixed``, ``nvidia.com/mig-1g.10gb`` (one per MIG
profile), set in ``resources.limits`` and, when listed, equal in ``resources.requests``.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone

import pytest

from actions.advice.model import ConsumerUsage
from actions.advice.recommend import advise_consumer
from actions.advice.round import AdviceResult
from actions.executors.kubernetes import KubernetesWriter
from actions.model.codec import action_from_jsonable, to_jsonable
from actions.model.findings import ActionVerb, AdviceLimits, GpuResize, ProposedAction
from actions.model.kube import CapacityType, ObjectRef
from actions.policy.advice import AdvicePolicy
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.remedy.patches import ExecutorError, check_target, merge_patch, plan_apply, plan_restore
from bot.chat.approvals import Approvals
from bot.chat.proposals import Proposals, settle_outcome
from bot.jobs.advice import AdviceJob
from tests.support.demo_world import APPROVER, CHANNEL, OTHER, buttons, make_runtime
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.fakes.slack_api import FakeSlack
from tests.support.gpu_nodes import h100_cluster
from tests.support.paths import DEMO_CLUSTER

DUMP = json.loads((DEMO_CLUSTER).read_bytes())
NOW = datetime(2026, 11, 20, 12, 5, tzinfo=timezone.utc)

NOTEBOOK = ObjectRef("kubeflow.org/v1", "Notebook", "ml-research", "llm-explore")
CHAT = ObjectRef("apps/v1", "Deployment", "serving", "chat-api")
TRAIN = ObjectRef("apps/v1", "Deployment", "ml-research", "finetune-server")
MIG = GpuResize(before=(("nvidia.com/gpu", 1),), after=(("nvidia.com/mig-1g.10gb", 1),))
FEWER = GpuResize(before=(("nvidia.com/gpu", 4),), after=(("nvidia.com/gpu", 2),), container="trainer")


def four_gpu_deployment() -> dict:
    """Limits only for the GPUs (requests default to them), and a sidecar without GPUs."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "finetune-server", "namespace": "ml-research", "resourceVersion": "500"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "finetune-server"}},
            "template": {
                "metadata": {"labels": {"app": "finetune-server"}},
                "spec": {
                    "containers": [
                        {"name": "trainer", "image": "trainer:1",
                         "resources": {"limits": {"nvidia.com/gpu": "4", "memory": "64Gi"},
                                       "requests": {"cpu": "8"}}},
                        {"name": "log-shipper", "image": "fluent-bit:3", "resources": {"limits": {"memory": "128Mi"}}},
                    ]
                },
            },
        },
    }


def resize(target: ObjectRef, change: GpuResize) -> ProposedAction:
    return ProposedAction(ActionVerb.RESIZE_GPUS, target, f"resize {target}", change)


def containers(fake: FakeKubeApi, kind: str, ns: str, name: str) -> list[dict]:
    return fake.get(kind, ns, name)["spec"]["template"]["spec"]["containers"]


@pytest.fixture
def fake():
    with FakeKubeApi(DUMP["items"] + [four_gpu_deployment()]) as server:
        yield server


@pytest.fixture
def writer(fake):
    return KubernetesWriter(fake.api_client())


def test_mig_on_a_notebook_swaps_the_whole_gpu_for_a_slice_and_restore_puts_it_back(fake, writer):
    before = copy.deepcopy(fake.get("Notebook", "ml-research", "llm-explore"))
    undo = writer.apply(resize(NOTEBOOK, MIG), NOW)
    resources = containers(fake, "Notebook", "ml-research", "llm-explore")[0]["resources"]
    assert resources == {
        "limits": {"memory": "32Gi", "nvidia.com/mig-1g.10gb": "1"},
        "requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/mig-1g.10gb": "1"},
    }
    patch = [r for r in fake.requests if r.method == "PATCH"][-1]
    assert patch.content_type == "application/merge-patch+json"
    assert patch.body["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    writer.restore(resize(NOTEBOOK, MIG), undo, NOW)
    after = fake.get("Notebook", "ml-research", "llm-explore")
    assert after["spec"] == before["spec"]


def test_mig_on_a_deployment_and_back(fake, writer):
    before = copy.deepcopy(fake.get("Deployment", "serving", "chat-api")["spec"])
    undo = writer.apply(resize(CHAT, MIG), NOW)
    limits = containers(fake, "Deployment", "serving", "chat-api")[0]["resources"]["limits"]
    assert limits["nvidia.com/mig-1g.10gb"] == "1" and "nvidia.com/gpu" not in limits
    writer.restore(resize(CHAT, MIG), undo, NOW)
    assert fake.get("Deployment", "serving", "chat-api")["spec"] == before


def test_fewer_gpus_keeps_requests_absent_and_other_containers_untouched(fake, writer):
    before = copy.deepcopy(fake.get("Deployment", "ml-research", "finetune-server")["spec"])
    undo = writer.apply(resize(TRAIN, FEWER), NOW)
    trainer, shipper = containers(fake, "Deployment", "ml-research", "finetune-server")
    assert trainer["resources"] == {"limits": {"nvidia.com/gpu": "2", "memory": "64Gi"}, "requests": {"cpu": "8"}}
    assert shipper == before["template"]["spec"]["containers"][1]
    assert undo == {
        "verb": "resize-gpus",
        "target": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ml-research", "name": "finetune-server"},
        "container": "trainer",
        "before": {"limits": {"nvidia.com/gpu": "4"}, "requests": {"nvidia.com/gpu": None}},
    }
    writer.restore(resize(TRAIN, FEWER), undo, NOW)
    assert fake.get("Deployment", "ml-research", "finetune-server")["spec"] == before


def test_applying_twice_is_idempotent_and_restoring_twice_is_a_no_op(fake, writer):
    first = writer.apply(resize(TRAIN, FEWER), NOW)
    second = writer.apply(resize(TRAIN, FEWER), NOW)
    assert first == second
    writer.restore(resize(TRAIN, FEWER), first, NOW)
    fake.clear_requests()
    writer.restore(resize(TRAIN, FEWER), first, NOW)
    assert {r.method for r in fake.requests} == {"GET"}


def test_apply_refuses_when_the_request_is_no_longer_what_the_advice_saw(fake, writer):
    stale = GpuResize(before=(("nvidia.com/gpu", 8),), after=(("nvidia.com/gpu", 2),), container="trainer")
    with pytest.raises(ExecutorError, match=r"now requests nvidia.com/gpu: 4, not the nvidia.com/gpu: 8 .*no longer holds"):
        writer.apply(resize(TRAIN, stale), NOW)
    assert not [r for r in fake.requests if r.method == "PATCH"]


def test_restore_keeps_a_size_someone_set_since(fake, writer):
    undo = writer.apply(resize(TRAIN, FEWER), NOW)
    obj = fake.get("Deployment", "ml-research", "finetune-server")
    obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "3"
    fake.add(obj)
    fake.clear_requests()
    writer.restore(resize(TRAIN, FEWER), undo, NOW)
    assert not [r for r in fake.requests if r.method == "PATCH"]
    trainer = containers(fake, "Deployment", "ml-research", "finetune-server")[0]
    assert trainer["resources"]["limits"]["nvidia.com/gpu"] == "3"


def test_the_patch_carries_the_resource_version_it_was_planned_from():
    obj = four_gpu_deployment()
    assert plan_apply(resize(TRAIN, FEWER), obj, NOW)[0]["metadata"] == {"resourceVersion": "500"}


def test_resize_needs_a_change_and_a_pod_template_kind():
    with pytest.raises(ExecutorError, match="cannot resize-gpus"):
        check_target(ProposedAction(ActionVerb.RESIZE_GPUS, TRAIN, "no change"))
    with pytest.raises(ExecutorError, match="cannot resize-gpus"):
        check_target(resize(ObjectRef("ray.io/v1", "RayCluster", "ml", "rc"), MIG))


def test_two_gpu_containers_without_a_name_is_refused():
    obj = four_gpu_deployment()
    second = copy.deepcopy(obj["spec"]["template"]["spec"]["containers"][0])
    second["name"] = "trainer-2"
    obj["spec"]["template"]["spec"]["containers"].append(second)
    unnamed = GpuResize(before=FEWER.before, after=FEWER.after)
    with pytest.raises(ExecutorError, match="2 containers of its pod template request GPUs"):
        plan_apply(resize(TRAIN, unnamed), obj, NOW)


def test_an_undo_record_without_the_resources_is_a_clear_error():
    obj = four_gpu_deployment()
    with pytest.raises(ExecutorError, match="has no container and GPU resources to put back"):
        plan_restore(resize(TRAIN, FEWER), {"verb": "resize-gpus"}, obj)


def test_the_action_round_trips_through_json():
    action = resize(NOTEBOOK, MIG)
    assert action_from_jsonable(json.loads(json.dumps(to_jsonable(action)))) == action


# --- from advice to the action -----------------------------------------------------------------------

H100 = "NVIDIA H100 80GB HBM3"
BUNDLED = PriceBook(PriceCatalog.bundled())


def usage(**changes) -> ConsumerUsage:
    base = dict(
        key="idle-notebook/ml-research/llm-explore", team="research", namespace="ml-research",
        consumer_kind="Notebook", name="llm-explore", role="notebook", pods=("llm-explore-0",), whole_gpus=1,
        gpus=1.0, gpu_model=H100, instance_type="p5.48xlarge", capacity=CapacityType.ON_DEMAND,
        window_seconds=7 * 86400, gpu_hours=168.0, peak_fb_mib=6000, peak_engine_pct=9, busy_gpus=1,
        target=NOTEBOOK, landing=h100_cluster(),
    )
    base.update(changes)
    return ConsumerUsage(**base)


# GPU Feature Discovery under mig.strategy mixed labels a node offering a MIG profile with
# nvidia.com/mig-<profile>.product = <parent GPU name, spaces as dashes>-MIG-<profile>, beside .count
# and .memory (NVIDIA/gpu-feature-discovery internal/lm/mig-strategy.go newMigStrategyMixedLabeler:
# resource "nvidia.com/mig-" + name; internal/lm/resource.go NewMIGResourceLabeler: baseLabeler(count,
# model, "MIG", migProfile), productLabel joins the parts with "-" after replacing spaces). The
# product's value does not change with the count, so it is what a nodeSelector can name exactly.
MIG_NODE = ("nvidia.com/mig-1g.10gb.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb")
# What the 1g.10gb advice relies on, re-checked before acting: the slice's 10 GB (9,536.7 MiB) less
# the 10% headroom, one of its seven compute slices, one GPU busy at once.
SLICE_LIMITS = AdviceLimits(fb_mib=10e9 / 2**20 / 1.1, engine_pct=100 * (1 / 7), busy_gpus=1)


def test_mig_advice_on_a_notebook_carries_the_action_that_applies_it(fake, writer):
    [r] = [r for r in advise_consumer(usage(), BUNDLED, AdvicePolicy()) if r.kind == "mig"]
    assert r.action == ProposedAction(
        ActionVerb.RESIZE_GPUS, NOTEBOOK, r.summary,
        GpuResize(before=(("nvidia.com/gpu", 1),), after=(("nvidia.com/mig-1g.10gb", 1),), node_selector=(MIG_NODE,),
                  limits=SLICE_LIMITS),
    )
    assert "nodeSelector `nvidia.com/mig-1g.10gb.product: NVIDIA-H100-80GB-HBM3-MIG-1g.10gb`" in r.change
    before = copy.deepcopy(fake.get("Notebook", "ml-research", "llm-explore"))
    assert "nodeSelector" not in before["spec"]["template"]["spec"]
    undo = writer.apply(r.action, NOW)
    pod = fake.get("Notebook", "ml-research", "llm-explore")["spec"]["template"]["spec"]
    limits = pod["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/mig-1g.10gb"] == "1" and "nvidia.com/gpu" not in limits
    assert pod["nodeSelector"] == {"nvidia.com/mig-1g.10gb.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"}
    # One merge patch carries both, so the template is never half changed.
    assert len([q for q in fake.requests if q.method == "PATCH"]) == 1
    assert undo["node_selector"] == {"had": False, "before": {MIG_NODE[0]: None}}
    assert writer.apply(r.action, NOW) == undo  # applied twice: the same record, read back
    writer.restore(r.action, undo, NOW)
    # There was no nodeSelector: Restore removes it, not leaves {}.
    assert fake.get("Notebook", "ml-research", "llm-explore")["spec"] == before["spec"]


def test_the_mig_node_selector_is_merged_into_one_there_was_and_restored_exactly(fake, writer):
    obj = fake.get("Notebook", "ml-research", "llm-explore")
    obj["spec"]["template"]["spec"]["nodeSelector"] = {
        "karpenter.sh/nodepool": "gpu", MIG_NODE[0]: "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"}
    fake.add(obj)
    before = copy.deepcopy(fake.get("Notebook", "ml-research", "llm-explore"))
    [r] = [r for r in advise_consumer(usage(), BUNDLED, AdvicePolicy()) if r.kind == "mig"]
    undo = writer.apply(r.action, NOW)
    assert fake.get("Notebook", "ml-research", "llm-explore")["spec"]["template"]["spec"]["nodeSelector"] == {
        "karpenter.sh/nodepool": "gpu", MIG_NODE[0]: MIG_NODE[1]}
    assert undo["node_selector"] == {"had": True, "before": {MIG_NODE[0]: "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"}}
    writer.restore(r.action, undo, NOW)
    assert fake.get("Notebook", "ml-research", "llm-explore")["spec"] == before["spec"]


def test_restore_keeps_a_node_label_someone_set_since():
    obj = four_gpu_deployment()
    change = GpuResize(before=(("nvidia.com/gpu", 4),), after=(("nvidia.com/mig-3g.40gb", 1),), container="trainer",
                       node_selector=(("nvidia.com/mig-3g.40gb.product", "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb"),))
    patch, undo = plan_apply(resize(TRAIN, change), obj, NOW)
    applied = merge_patch(obj, patch)
    applied["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/mig-3g.40gb.product"] = "theirs"
    back = merge_patch(applied, plan_restore(resize(TRAIN, change), undo, applied))
    assert back["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/mig-3g.40gb.product": "theirs"}
    assert back["spec"]["template"]["spec"]["containers"] == obj["spec"]["template"]["spec"]["containers"]


def test_the_mig_node_label_names_the_parent_gpu_as_nvml_does():
    from actions.advice.recommend import mig_node_selector

    # NVML names an A100 "NVIDIA A100-SXM4-40GB"; GFD replaces spaces with dashes.
    assert mig_node_selector("NVIDIA A100-SXM4-40GB", "1g.5gb") == (
        ("nvidia.com/mig-1g.5gb.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"),)
    assert mig_node_selector(" ", "1g.5gb") == ()  # unknown model: no label, so no Apply


def test_fewer_gpus_advice_on_a_one_pod_deployment_is_applicable_and_on_replicas_is_advice_only():
    one_pod = usage(consumer_kind="Deployment", name="finetune-server", role="serving", pods=("finetune-server-7c9-x",),
                    whole_gpus=4, gpus=4.0, peak_fb_mib=70000, peak_engine_pct=99, busy_gpus=2, target=TRAIN)
    [r] = [r for r in advise_consumer(one_pod, BUNDLED, AdvicePolicy()) if r.kind == "fewer-gpus"]
    assert r.action.resize == GpuResize(before=(("nvidia.com/gpu", 4),), after=(("nvidia.com/gpu", 2),),
                                        limits=AdviceLimits(busy_gpus=2))
    spread = usage(consumer_kind="Deployment", name="finetune-server", role="serving", pods=("a", "b"),
                   whole_gpus=4, gpus=4.0, peak_fb_mib=70000, peak_engine_pct=99, busy_gpus=2, target=TRAIN)
    [r] = [r for r in advise_consumer(spread, BUNDLED, AdvicePolicy()) if r.kind == "fewer-gpus"]
    assert r.action is None and "fewer pods or fewer GPUs each" in r.change


def test_advice_on_a_kind_without_a_pod_template_patch_is_advice_only():
    job_target = ObjectRef("batch/v1", "Job", "ml-research", "train")
    recs = advise_consumer(usage(consumer_kind="Job", role="job", target=job_target), BUNDLED, AdvicePolicy())
    assert [r.kind for r in recs if r.kind == "mig"] == ["mig"]
    assert all(r.action is None for r in recs)


# --- the request, its buttons and the re-check: real stores, Slack at the wire, the demo cluster ----

WEEK = 7 * 86400


@pytest.fixture
def slack():
    with FakeSlack() as server:
        yield server


@pytest.mark.prometheus
def test_mig_advice_becomes_a_request_that_an_approver_applies_and_restores(database_url, slack, resize_prometheus):
    rt = make_runtime(database_url, slack, history=resize_prometheus)
    [rec] = [r for r in advise_consumer(usage(), BUNDLED, AdvicePolicy()) if r.kind == "mig"]
    [request_id] = Proposals(rt).propose_advice([rec], rt.clock(), WEEK)
    assert Proposals(rt).propose_advice([rec], rt.clock(), WEEK) == []  # one open request per advice
    req = rt.store.get(request_id)
    assert (req.kind, req.verb, req.team) == ("right-size", "resize-gpus", "research")
    message = slack.messages(CHANNEL)[req.message_ts]
    assert buttons(message) == ["gpu_approve", "gpu_snooze", "gpu_exempt", "gpu_deny"]
    assert "Right-size GPUs: Notebook ml-research/llm-explore" in message["text"]
    assert "nvidia.com/mig-1g.10gb" in json.dumps(message["blocks"])

    approvals = Approvals(rt)
    assert not approvals.approve(request_id, OTHER).ok  # only the team's approvers
    assert approvals.approve(request_id, APPROVER).ok
    nb = rt.cluster.get("Notebook", "ml-research", "llm-explore")
    limits = nb["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"memory": "32Gi", "nvidia.com/mig-1g.10gb": "1"}
    assert nb["spec"]["template"]["spec"]["nodeSelector"] == dict([MIG_NODE])
    assert rt.store.get(request_id).state == "done"
    assert buttons(slack.messages(CHANNEL)[req.message_ts]) == ["gpu_restore"]

    assert approvals.restore(request_id, APPROVER).ok
    nb = rt.cluster.get("Notebook", "ml-research", "llm-explore")
    assert nb["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"memory": "32Gi", "nvidia.com/gpu": "1"},
        "requests": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"},
    }
    assert "nodeSelector" not in nb["spec"]["template"]["spec"]  # the MIG node's label went with it
    assert rt.store.get(request_id).state == "restored"


def test_a_sweep_leaves_a_right_sizing_request_open(database_url, slack):
    rt = make_runtime(database_url, slack)
    [rec] = [r for r in advise_consumer(usage(), BUNDLED, AdvicePolicy()) if r.kind == "mig"]
    [request_id] = Proposals(rt).propose_advice([rec], rt.clock(), WEEK)
    Proposals(rt).reconcile([], rt.clock())
    assert rt.store.get(request_id).state == "proposed"
    assert Approvals(rt).deny(request_id, APPROVER).ok
    rt.clock.now += timedelta(days=2)  # past the deny cooldown: closed, so changed advice can ask again
    Proposals(rt).reconcile([], rt.clock())
    req = rt.store.get(request_id)
    assert req.state == "superseded" and req.note == "Asked again when the advice changes."
    assert Proposals(rt).propose_advice([rec], rt.clock(), WEEK) != []


@pytest.mark.prometheus
def test_approve_of_advice_made_from_another_gpu_request_changes_nothing(database_url, slack, resize_prometheus):
    rt = make_runtime(database_url, slack, history=resize_prometheus)
    # Advice made when the Notebook held 4 GPUs (2 to spare); it holds 1 now.
    four = usage(whole_gpus=4, gpus=4.0, peak_fb_mib=70000, peak_engine_pct=99, busy_gpus=2)
    [rec] = [r for r in advise_consumer(four, BUNDLED, AdvicePolicy()) if r.kind == "fewer-gpus"]
    [request_id] = Proposals(rt).propose_advice([rec], rt.clock(), WEEK)
    before = copy.deepcopy(rt.cluster.get("Notebook", "ml-research", "llm-explore"))
    outcome = Approvals(rt).approve(request_id, APPROVER)
    assert not outcome.ok and "no longer holds" in outcome.message
    req = rt.store.get(request_id)
    assert req.state == "superseded" and "nvidia.com/gpu: 1, not the nvidia.com/gpu: 4" in req.note
    assert rt.cluster.get("Notebook", "ml-research", "llm-explore")["spec"] == before["spec"]
    shown = json.dumps(slack.messages(CHANNEL)[req.message_ts]["blocks"])
    assert "Closed: the advice no longer holds" in shown and buttons(slack.messages(CHANNEL)[req.message_ts]) == []


def test_the_advice_job_posts_the_advice_and_a_request_only_for_what_a_patch_can_apply(database_url, slack):
    rt = make_runtime(database_url, slack)
    [mig] = [r for r in advise_consumer(usage(), BUNDLED, AdvicePolicy()) if r.kind == "mig"]
    job_target = ObjectRef("batch/v1", "Job", "ml-research", "train")
    other = usage(key="idle-workload/ml-research/Job/train", consumer_kind="Job", name="train", role="job",
                  target=job_target)
    [advice_only] = [r for r in advise_consumer(other, BUNDLED, AdvicePolicy()) if r.kind == "mig"]
    result = AdviceResult(rt.clock(), (mig, advice_only), (), (), 0.0)
    job = AdviceJob(rt.store, rt.chat, rt.teams, lambda at, team: result,
                    propose=Proposals(rt).propose_advice, window_seconds=WEEK)
    assert job.run(rt.clock()) == {"posted": 2, "repeated": 0, "held": 0, "no-channel": 0, "requests": 1, "silenced": 0}
    [req] = rt.store.list_requests()
    assert req.key == mig.key and req.target_kind == "Notebook"
    posted = [m["text"] for m in slack.messages(CHANNEL).values()]
    assert any(t.startswith("GPU advice for team research") for t in posted)
    [advice] = [m for m in slack.messages(CHANNEL).values() if m["text"].startswith("GPU advice")]
    assert json.dumps(advice["blocks"]).count("Apply: the team's approvers get a request") == 1
    assert job.run(rt.clock())["requests"] == 0  # unchanged advice: neither posted nor proposed again


def test_an_interrupted_right_sizing_is_settled_from_what_the_target_shows(database_url, slack):
    rt = make_runtime(database_url, slack)
    four = usage(whole_gpus=4, gpus=4.0, peak_fb_mib=70000, peak_engine_pct=99, busy_gpus=2)
    [stale] = [r for r in advise_consumer(four, BUNDLED, AdvicePolicy()) if r.kind == "fewer-gpus"]
    [fits] = [r for r in advise_consumer(usage(), BUNDLED, AdvicePolicy()) if r.kind == "mig"]
    notebook = rt.cluster.get("Notebook", "ml-research", "llm-explore")
    for rec, state in ((stale, "failed"), (fits, "failed")):
        [request_id] = Proposals(rt).propose_advice([rec], rt.clock(), WEEK)
        req = rt.store.transition(request_id, from_states=["proposed"], to_state="approved", now=rt.clock(),
                                  actor=APPROVER, event="approved")
        assert settle_outcome(req, notebook, rt.clock(), "The bot restarted")[0] == state
    # The MIG change landed before the restart: done, with the undo record read back for Restore.
    applied = merge_patch(notebook, plan_apply(fits.action, notebook, NOW)[0])
    state, _, detail = settle_outcome(req, applied, rt.clock(), "The bot restarted")
    assert state == "done" and detail["undo"]["before"]["limits"]["nvidia.com/gpu"] == "1"


# --- Snooze and Exempt on a right-sizing request -------------------------------------------------


def _job(rt, recs):
    return AdviceJob(rt.store, rt.chat, rt.teams, lambda at, team: AdviceResult(at, tuple(recs), (), (), 0.0),
                     propose=Proposals(rt).propose_advice, window_seconds=WEEK)


def _other_consumer():
    other = usage(key="idle-notebook/ml-research/cell-bursts", name="cell-bursts", pods=("cell-bursts-0",),
                  target=ObjectRef("kubeflow.org/v1", "Notebook", "ml-research", "cell-bursts"))
    [r] = [r for r in advise_consumer(other, BUNDLED, AdvicePolicy()) if r.kind == "mig"]
    return r


def test_snooze_keeps_one_piece_of_advice_quiet_until_it_ends_then_asks_again(database_url, slack):
    from dataclasses import replace

    rt = make_runtime(database_url, slack)
    [mig] = [r for r in advise_consumer(usage(), BUNDLED, AdvicePolicy()) if r.kind == "mig"]
    other = _other_consumer()
    assert _job(rt, [mig, other]).run(rt.clock()) == {
        "posted": 2, "repeated": 0, "held": 0, "no-channel": 0, "requests": 2, "silenced": 0}
    req = next(r for r in rt.store.list_requests() if r.key == mig.key)
    message = slack.messages(CHANNEL)[req.message_ts]
    assert buttons(message) == ["gpu_approve", "gpu_snooze", "gpu_exempt", "gpu_deny"]
    assert "Snooze: not this advice until the snooze ends" in json.dumps(message["blocks"])

    assert Approvals(rt).snooze(req.id, OTHER).ok  # anyone may snooze, as on idle proposals
    assert rt.store.get(req.id).state == "snoozed"
    # The notebook's use moved: new advice, but snoozed, so neither posted nor claimed.
    moved = replace(mig, saving_usd_per_month=mig.saving_usd_per_month - 500)
    assert _job(rt, [moved, other]).run(rt.clock()) == {
        "posted": 0, "repeated": 1, "held": 0, "no-channel": 0, "requests": 0, "silenced": 1}

    rt.clock.now += timedelta(hours=4, minutes=1)  # the policy's snooze_seconds: 4 h
    Proposals(rt).reconcile([], rt.clock())
    woken = rt.store.get(req.id)
    assert woken.state == "proposed" and woken.note == "Snooze over: asking again."
    assert buttons(slack.messages(CHANNEL)[req.message_ts])[0] == "gpu_approve"
    counts = _job(rt, [moved, other]).run(rt.clock())
    assert (counts["posted"], counts["silenced"], counts["requests"]) == (1, 0, 0)  # the open request holds it


def test_exempt_keeps_every_piece_of_advice_on_the_consumer_quiet_until_it_ends(database_url, slack):
    from dataclasses import replace

    rt = make_runtime(database_url, slack)
    [mig] = [r for r in advise_consumer(usage(), BUNDLED, AdvicePolicy()) if r.kind == "mig"]
    # Advice only on the same consumer (as spot advice would be): no request, but silenced with it.
    consumer = mig.key.split("/", 1)[1]
    spot = replace(mig, kind="spot", key=f"spot/{consumer}", summary="run it on spot", resize=None)
    other = _other_consumer()
    [request_id] = Proposals(rt).propose_advice([mig], rt.clock(), WEEK)

    refused = Approvals(rt).exempt(request_id, OTHER)
    assert not refused.ok and "Only approvers of team research" in refused.message
    assert Approvals(rt).exempt(request_id, APPROVER).ok
    assert rt.store.get(request_id).state == "exempt"
    assert _job(rt, [mig, spot, other]).run(rt.clock()) == {
        "posted": 1, "repeated": 0, "held": 0, "no-channel": 0, "requests": 1, "silenced": 2}
    posted = "\n".join(m["text"] + json.dumps(m["blocks"]) for m in slack.messages(CHANNEL).values()
                       if m["text"].startswith("GPU advice"))
    assert "cell-bursts" in posted and "run it on spot" not in posted

    rt.clock.now += timedelta(days=7, minutes=1)  # the policy's exempt_seconds: 7 d
    Proposals(rt).reconcile([], rt.clock())
    assert rt.store.get(request_id).state == "superseded"
    # Exemption over: the consumer's advice is posted again, and its right-sizing asked again.
    assert _job(rt, [mig, spot, other]).run(rt.clock()) == {
        "posted": 2, "repeated": 1, "held": 0, "no-channel": 0, "requests": 1, "silenced": 0}


def test_mig_under_the_single_strategy_keeps_one_gpu_and_pins_the_product_then_restores(fake, writer):
    from tests.support.gpu_nodes import offers, single_node

    # One nvidia.com/gpu is one 1g.10gb instance on a node GFD labels
    # nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-MIG-1g.10gb (k8s-device-plugin v0.20.0
    # internal/lm/mig-strategy.go newMigStrategySingleLabeler): the request stays 1 GPU, and only
    # the nodeSelector moves the notebook there.
    single = usage(landing=offers(single_node("h100-mig-single", H100, "1g.10gb", 56)))
    [r] = [r for r in advise_consumer(single, BUNDLED, AdvicePolicy()) if r.kind == "mig"]
    product = ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb")
    assert r.action.resize == GpuResize(before=(("nvidia.com/gpu", 1),), after=(("nvidia.com/gpu", 1),),
                                        node_selector=(product,), limits=SLICE_LIMITS)
    before = copy.deepcopy(fake.get("Notebook", "ml-research", "llm-explore"))
    undo = writer.apply(r.action, NOW)
    spec = fake.get("Notebook", "ml-research", "llm-explore")["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == dict([product])
    assert spec["containers"][0]["resources"] == before["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert writer.apply(r.action, NOW) == undo  # applied: the selector is there
    writer.restore(r.action, undo, NOW)
    assert fake.get("Notebook", "ml-research", "llm-explore")["spec"] == before["spec"]
