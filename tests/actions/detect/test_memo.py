"""What a sweep keeps on the immutable objects it reads (actions.detect.memo): kept while the object is
the same, never given back for a changed one. Inside ``run`` the watch caches hand every sweep the
same objects until the cluster changes one (a change decodes a new object)."""

from __future__ import annotations

from datetime import datetime, timezone

from actions.detect.consumers import running_consumers
from actions.detect.owners import OwnerIndex
from actions.model.kube import GpuPod, KubeObject, Notebook, OwnerRef
from actions.model.kueue import Workload
from actions.model.snapshot import ClusterSnapshot
from actions.policy.rules import Policy

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)


def _pod(name: str, **kw) -> GpuPod:
    return GpuPod("ml", name, f"uid-{name}", "node-1", "Running", NOW, NOW, 1, **kw)


def _consumers(snapshot: ClusterSnapshot) -> dict:
    policy = Policy()
    return running_consumers(snapshot.pods, OwnerIndex(snapshot), lambda ns: policy)


def test_a_notebook_consumer_is_kept_while_the_notebook_is_the_same_object_and_follows_a_change():
    pod = _pod("nb-0", labels={"notebook-name": "nb"})  # the Kubeflow Notebook controller's pod label
    notebook = Notebook("ml", "nb")
    first = _consumers(ClusterSnapshot(NOW, pods=(pod,), notebooks=(notebook,)))
    again = _consumers(ClusterSnapshot(NOW, pods=(pod,), notebooks=(notebook,)))
    assert again["idle-notebook/ml/nb"][0] is first["idle-notebook/ml/nb"][0]
    # Stopped since (a new object, as the watch cache decodes it): no consumer, not the kept one.
    stopped = Notebook("ml", "nb", annotations={"kubeflow-resource-stopped": "2026-11-20T11:00:00Z"})
    assert _consumers(ClusterSnapshot(NOW, pods=(pod,), notebooks=(stopped,))) == {}


def test_a_kueue_job_consumer_follows_its_job_object_though_the_workload_is_the_same():
    # Kueue makes the Job the Workload's controller owner (jobframework reconciler.go).
    job_ref = OwnerRef("batch/v1", "Job", "train", True, "uid-job")
    pod = _pod("train-0", owners=(job_ref,))
    wl = Workload("ml", "job-train-1a2b", "uid-wl", "kueue.x-k8s.io/v1beta1", "team-q", True, NOW, True,
                  owners=(job_ref,))
    job = KubeObject("batch/v1", "Job", "ml", "train", "uid-job")
    first = _consumers(ClusterSnapshot(NOW, pods=(pod,), workloads=(wl,), objects=(job,)))
    (consumer, pods), = first.values()
    assert consumer.action.target.kind == "Workload" and consumer.annotations == ()
    opted = KubeObject("batch/v1", "Job", "ml", "train", "uid-job", annotations={"gpu-cost-bot/opt-out-until": "x"})
    (changed, _), = _consumers(ClusterSnapshot(NOW, pods=(pod,), workloads=(wl,), objects=(opted,))).values()
    assert changed.annotations == (("gpu-cost-bot/opt-out-until", "x"),)
    (back, _), = _consumers(ClusterSnapshot(NOW, pods=(pod,), workloads=(wl,), objects=(opted,))).values()
    assert back is changed
