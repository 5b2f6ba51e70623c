"""The owner walk at fleet scale, against the fake API server: past LIST_ABOVE owners of one kind it
lists the kind instead of sending a GET each, finds exactly what the GETs find, and falls back to
the GETs when the RBAC refuses the list (403, as the API server answers a missing verb)."""

from __future__ import annotations

from datetime import datetime, timezone

from actions.sources.kube.owners import LIST_ABOVE
from actions.sources.kube.reader import KubernetesSource
from tests.support.fakes.kube_api import FakeKubeApi

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
JOBS = LIST_ABOVE + 20


def _objects() -> list[dict]:
    out: list[dict] = []
    for i in range(JOBS):
        ns, job = f"team-{i % 3}", f"train-{i:04d}"
        uid = f"{i:08d}-0000-4000-8000-000000000000"
        # A Job of a JobSet (kubernetes-sigs/jobset: Job -> JobSet), so the walk has two levels.
        out.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": job, "namespace": ns, "uid": uid, "labels": {"kueue.x-k8s.io/queue-name": "q"},
            "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": f"js-{i // 2:04d}",
                                 "uid": f"js-{i // 2}", "controller": True}]},
            "spec": {"suspend": False}})
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"{job}-0", "namespace": ns, "uid": f"pod-{i}",
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": uid, "controller": True}]},
            "spec": {"nodeName": "gpu-1", "containers": [{"name": "main", "resources": {
                "requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Running"}})
    for k in range((JOBS + 1) // 2):
        out.append({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {
            "name": f"js-{k:04d}", "namespace": f"team-{(2 * k) % 3}", "uid": f"js-{k}"}, "spec": {"suspend": False}})
    return out


def _walked(fake: FakeKubeApi) -> list:
    fake.clear_requests()
    snapshot = KubernetesSource(fake.api_client(), page_size=50).snapshot(NOW)
    return sorted(((o.namespace, o.kind, o.name, o.owners) for o in snapshot.objects if o.kind in ("Job", "JobSet")))


def test_many_owners_of_a_kind_are_listed_and_found_as_the_gets_find_them():
    with FakeKubeApi(_objects()) as fake:
        listed = _walked(fake)
        job_gets = [r for r in fake.requests if r.method == "GET" and r.path.startswith("/apis/batch/v1/namespaces/")]
        job_lists = [r for r in fake.requests if r.method == "GET" and r.path == "/apis/batch/v1/jobs"]
        assert job_gets == [] and len(job_lists) == -(-JOBS // 500)
        # The JobSets, fewer than LIST_ABOVE, are read one GET each.
        assert sum(1 for o in listed if o[1] == "Job") == JOBS
        assert sum(1 for o in listed if o[1] == "JobSet") == (JOBS + 1) // 2

        fake.fail("GET", "/apis/batch/v1/jobs", 403, "Forbidden", 'jobs.batch is forbidden: cannot list resource "jobs"')
        by_get = _walked(fake)
        assert len([r for r in fake.requests if r.path.startswith("/apis/batch/v1/namespaces/")]) == JOBS
        assert by_get == listed
