"""What the bot reads as an action's outcome (actions.remedy.verify), for every action kind: pure,
over pods and nodes as a snapshot reads them. The same judged from a cluster on the wire:
tests/bot/chat/test_verify.py (stops and resizes) and tests/actions/detect/test_unrequested_gpus.py
(NodeClaim deletes)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from actions.model.findings import ActionVerb, GpuResize, ProposedAction
from actions.model.kube import JUPYTER_SERVER_API_VERSION, JUPYTER_SERVER_KIND, GpuPod, ObjectRef
from actions.remedy.verify import FAILED, VERIFIED, WAITING, Verdict, observe, verdict
from tests.support.clock import T0

WINDOW = 600.0
# Each stop and the object it is taken on (actions.remedy.patches).
STOPS = [
    (ActionVerb.STOP_NOTEBOOK, ObjectRef("kubeflow.org/v1", "Notebook", "ml", "nb")),
    (ActionVerb.SCALE_TO_ZERO, ObjectRef("apps/v1", "StatefulSet", "ml", "nb")),
    (ActionVerb.DEACTIVATE_WORKLOAD, ObjectRef("kueue.x-k8s.io/v1beta2", "Workload", "ml", "job-nb-1a2b3")),
    (ActionVerb.SUSPEND_RAYCLUSTER, ObjectRef("ray.io/v1", "RayCluster", "ml", "nb")),
    (ActionVerb.STOP_INFERENCE_SERVICE, ObjectRef("serving.kserve.io/v1beta1", "InferenceService", "ml", "nb")),
    (ActionVerb.STOP_JUPYTER_SERVER, ObjectRef(JUPYTER_SERVER_API_VERSION, JUPYTER_SERVER_KIND, "ml", "alice/")),
]
UNSCHEDULABLE = "0/8 nodes are available: 8 Insufficient nvidia.com/mig-1g.10gb."
TO_SLICE = GpuResize(before=(("nvidia.com/gpu", 1),), after=(("nvidia.com/mig-1g.10gb", 1),))
RESIZE = ProposedAction(ActionVerb.RESIZE_GPUS, ObjectRef("apps/v1", "StatefulSet", "ml", "nb"), "resize", TO_SLICE)


def pod(phase="Running", *, ready=True, devices=None, unschedulable=None) -> GpuPod:
    return GpuPod("ml", "nb-0", "uid-nb-0", "gpu-1" if phase == "Running" else None, phase, T0, T0, 1,
                  devices=devices or {"nvidia.com/gpu": 1}, ready=ready, unschedulable=unschedulable)


@pytest.mark.parametrize("verb, target", STOPS, ids=[v.value for v, _ in STOPS])
def test_a_stop_is_done_when_its_pods_are_gone(verb, target):
    stop = ProposedAction(verb, target, f"{verb.value} {target}")
    assert verdict(stop, [], [], T0, T0 + timedelta(seconds=5), WINDOW) == Verdict(VERIFIED, "pods gone")
    left = [pod("Running")]
    assert verdict(stop, left, [], T0, T0 + timedelta(seconds=599), WINDOW).state == WAITING
    failed = verdict(stop, left, [], T0, T0 + timedelta(seconds=600), WINDOW)
    assert failed == Verdict(FAILED, "1 pod still there: nb-0 (Running)")


def test_a_nodeclaim_delete_is_done_when_its_node_is_gone():
    delete = ProposedAction(ActionVerb.DELETE_NODECLAIM, ObjectRef("karpenter.sh/v1", "NodeClaim", "", "gpu-7xk2p"), "d")
    assert observe(delete, [], []) == (True, "node gone")
    assert observe(delete, [], ["h100-empty"]) == (False, "node h100-empty still there")


def test_a_resize_is_done_when_every_pod_runs_ready_with_the_new_request():
    new = {"nvidia.com/mig-1g.10gb": 1}
    assert observe(RESIZE, [pod(devices=new)], []) == (True, "1/1 pods ready with 1 nvidia.com/mig-1g.10gb")
    assert observe(RESIZE, [], []) == (False, f"no pod of {RESIZE.target} yet")
    assert observe(RESIZE, [pod("Pending", ready=False, devices=new, unschedulable=UNSCHEDULABLE)], []) == (
        False, f"0/1 pods ready: {UNSCHEDULABLE}")
    assert observe(RESIZE, [pod()], []) == (False, "0/1 pods ready; still on the old GPU request: nb-0 (Running)")
    assert observe(RESIZE, [pod(ready=False, devices=new)], []) == (False, "0/1 pods ready: nb-0 (Running)")
