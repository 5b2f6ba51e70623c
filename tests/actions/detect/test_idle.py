"""The idle detector, pure: the recorded fleet (real H100 telemetry) and variations of it."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from actions.detect.idle import judge_gpu
from actions.model.findings import ActionVerb
from actions.model.telemetry import GpuTelemetry
from actions.model.times import format_time
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from tests.support.clock import T0
from tests.support.demo_world import detect


def replace_gpu(telemetry, pod, **changes):
    gpus = tuple(dataclasses.replace(g, **changes) if g.pod == pod else g for g in telemetry.gpus)
    return dataclasses.replace(telemetry, gpus=gpus)


def replace_pod(snapshot, name, **changes):
    pods = tuple(dataclasses.replace(p, **changes) if p.name == name else p for p in snapshot.pods)
    return dataclasses.replace(snapshot, pods=pods)


def test_only_the_idle_notebook_is_found_in_the_fleet(demo_fleet):
    findings = detect(*demo_fleet)
    assert [f.key for f in findings] == ["idle-notebook/ml-research/llm-explore"]
    f = findings[0]
    assert (f.consumer_kind, f.gpus, f.node) == ("Notebook", 1, "gpu-od-1")
    assert f.action.verb is ActionVerb.STOP_NOTEBOOK
    assert (f.action.target.api_version, f.action.target.kind) == ("kubeflow.org/v1", "Notebook")
    # p5.48xlarge on-demand from the bundled catalog (after AWS's 2025-06-01 cut): $55.04 / 8 GPUs
    # = $6.88 per GPU-hour.
    assert f.price.instance_type == "p5.48xlarge"
    assert f.usd_per_hour == pytest.approx(55.04 / 8)
    assert f.price.source and f.price.as_of
    # Telemetry starts at 06:00 and never shows activity: idle for 6 hours, priced.
    assert f.idle_seconds == 6 * 3600
    assert f.usd_so_far == pytest.approx(6 * 55.04 / 8)  # 6 h x $6.88 = $41.28
    ev = f.evidence[0]
    assert ev.verdict == "idle" and ev.peak_engine_pct == 0
    assert 120 < ev.mean_power_w < 135  # real H100 holding a model: 124-127 W


def test_serving_at_zero_utilization_is_busy_by_power(demo_fleet):
    snapshot, telemetry = demo_fleet
    serving = next(g for g in telemetry.gpus if g.pod.startswith("chat-api"))
    ev = judge_gpu(serving, Policy())
    assert serving.peak_engine_pct == 0
    assert ev.verdict == "busy" and "mean power" in ev.reason


def test_the_serving_pod_is_proposed_if_its_power_were_idle(demo_fleet):
    # Proves the Kueue pod-integration path reaches the detector: only power held it back. Kueue
    # gives every Deployment pod its own Workload (kueue site/content/en/docs/tasks/run/deployment.md);
    # deactivating it would only make the ReplicaSet start a new pod, so the Deployment is scaled.
    snapshot, telemetry = demo_fleet
    telemetry = replace_gpu(telemetry, "chat-api-6f7d8b9c4-x2x9z", mean_power_w=110.0)
    keys = {f.key: f for f in detect(snapshot, telemetry)}
    f = keys["idle-serving/serving/Deployment/chat-api"]
    assert f.action.verb is ActionVerb.SCALE_TO_ZERO
    assert (f.action.target.api_version, f.action.target.kind, f.action.target.name) == ("apps/v1", "Deployment", "chat-api")
    assert f.workload is None  # one Workload per pod: none of them is the consumer
    assert f.subject == "Deployment serving/chat-api"


def test_missing_samples_are_unknown_not_idle(demo_fleet):
    snapshot, telemetry = demo_fleet
    sparse = replace_gpu(telemetry, "llm-explore-0", coverage=0.5)
    assert detect(snapshot, sparse) == []
    assert judge_gpu(sparse.for_pod("ml-research", "llm-explore-0")[0], Policy()).verdict == "unknown"
    no_power = replace_gpu(telemetry, "llm-explore-0", mean_power_w=None)
    assert detect(snapshot, no_power) == []
    gone = dataclasses.replace(telemetry, gpus=tuple(g for g in telemetry.gpus if g.pod != "llm-explore-0"))
    assert detect(snapshot, gone) == []


def test_unknown_gpu_model_needs_a_configured_power_ceiling(demo_fleet):
    snapshot, telemetry = demo_fleet
    odd = replace_gpu(telemetry, "llm-explore-0", model_name="Acme Tensor X1")
    assert detect(snapshot, odd) == []
    policy = Policy(idle_power_watts={"Acme Tensor X1": 140})
    assert [f.name for f in detect(snapshot, odd, policy)] == ["llm-explore"]


def test_engine_activity_above_threshold_is_busy(demo_fleet):
    snapshot, telemetry = demo_fleet
    busy = replace_gpu(telemetry, "llm-explore-0", peak_engine_pct=3.0)
    assert detect(snapshot, busy) == []
    assert [f.name for f in detect(snapshot, busy, Policy(engine_idle_pct=5))] == ["llm-explore"]


def test_pods_inside_the_warmup_are_skipped(demo_fleet):
    snapshot, telemetry = demo_fleet
    young = replace_pod(snapshot, "llm-explore-0", started=T0 - timedelta(minutes=10))
    assert detect(young, telemetry) == []


def test_opt_out_annotation_holds_until_its_expiry(demo_fleet):
    snapshot, telemetry = demo_fleet
    until = T0 + timedelta(days=1)
    annotated = replace_pod(
        snapshot, "llm-explore-0", annotations={"gpu-cost-bot/exclude-until": format_time(until)}
    )
    assert detect(annotated, telemetry) == []
    assert [f.name for f in detect(annotated, telemetry, now=until + timedelta(seconds=1))] == ["llm-explore"]
    # A value without an expiry does not opt out: it would hide a GPU forever.
    forever = replace_pod(snapshot, "llm-explore-0", annotations={"gpu-cost-bot/exclude-until": "forever"})
    assert [f.name for f in detect(forever, telemetry)] == ["llm-explore"]


def test_stopped_notebook_is_not_proposed(demo_fleet):
    snapshot, telemetry = demo_fleet
    notebooks = tuple(
        dataclasses.replace(n, annotations={"kubeflow-resource-stopped": "2026-11-20T11:00:00Z"})
        if n.name == "llm-explore" else n
        for n in snapshot.notebooks
    )
    assert detect(dataclasses.replace(snapshot, notebooks=notebooks), telemetry) == []


def test_last_activity_sets_how_long_it_has_been_idle(demo_fleet):
    snapshot, telemetry = demo_fleet
    recent = replace_gpu(telemetry, "llm-explore-0", last_active=T0 - timedelta(hours=2, minutes=30))
    (f,) = detect(snapshot, recent)
    assert f.idle_seconds == 2.5 * 3600


def test_teams_come_from_config(demo_fleet):
    teams = TeamDirectory([Team(name="research", namespaces=["ml-research"], channel="#r")])
    (f,) = detect(*demo_fleet, teams=teams)
    assert f.team == "research"
    (f,) = detect(*demo_fleet)
    assert f.team == "ml-research"  # without config each namespace is its own team


def test_selector_notebook_in_a_statefulset_is_scaled_to_zero(demo_fleet):
    snapshot, telemetry = demo_fleet
    snap = replace_pod(snapshot, "llm-explore-0", labels={"app": "my-notebook"})
    # Without the notebook-name label the owner chain still leads to the Notebook, which is stopped
    # rather than its StatefulSet scaled (the Notebook controller would scale it back).
    (f,) = detect(snap, telemetry, Policy(notebook_selector={"app": "my-notebook"}))
    assert f.action.verb is ActionVerb.STOP_NOTEBOOK
    # A StatefulSet of its own is scaled to zero.
    sts = tuple(dataclasses.replace(s, owners=()) if s.name == "llm-explore" else s for s in snapshot.statefulsets)
    snap = dataclasses.replace(snap, statefulsets=sts)
    (f,) = detect(snap, telemetry, Policy(notebook_selector={"app": "my-notebook"}))
    assert f.action.verb is ActionVerb.SCALE_TO_ZERO
    assert (f.action.target.kind, f.action.target.name) == ("StatefulSet", "llm-explore")


def test_multi_gpu_consumer_is_idle_only_when_every_gpu_is(demo_fleet):
    snapshot, telemetry = demo_fleet
    # pretrain has 2 GPUs; make one idle and the other busy: not idle.
    gpus = list(telemetry.gpus)
    pre = [i for i, g in enumerate(gpus) if g.pod == "pretrain-worker-0"]
    idle = dict(peak_engine_pct=0.0, mean_power_w=120.0, last_active=None)
    gpus[pre[0]] = dataclasses.replace(gpus[pre[0]], **idle)
    half = dataclasses.replace(telemetry, gpus=tuple(gpus))
    assert all(f.name != "pretrain" for f in detect(snapshot, half))
    gpus[pre[1]] = dataclasses.replace(gpus[pre[1]], **idle)
    both = dataclasses.replace(telemetry, gpus=tuple(gpus))
    f = next(f for f in detect(snapshot, both) if f.name == "pretrain")
    assert (f.consumer_kind, f.workload, f.action.target.name) == ("Job", "job-pretrain-1a2b3", "job-pretrain-1a2b3")
    assert f.gpus == 2 and f.usd_per_hour == pytest.approx(2 * 55.04 / 8)  # 2 x $6.88 = $13.76 an hour


def test_gpu_telemetry_judge_reports_both_signals():
    g = GpuTelemetry("ns", "p", "0", "NVIDIA H100 80GB HBM3", "DCGM_FI_DEV_GPU_UTIL", 0.0, 126.0, 1.0)
    ev = judge_gpu(g, Policy())
    assert ev.verdict == "idle" and ev.power_ceiling_w == 150 and "126 W" in ev.reason
