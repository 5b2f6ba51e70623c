"""A fleet at scale for the one-shot sweep benchmark: Kubernetes objects for a fake API server and
dcgm-exporter history for a real Prometheus.

``gpus`` GPU pods (one ``nvidia.com/gpu`` each, eight to an H100 node; even ones Kubeflow
notebook pods under a StatefulSet and a Notebook, odd ones pods of Kueue-admitted Jobs with their
Job and Workload) among ``pods`` pods in all (the rest CPU-only, as in a shared cluster). One GPU
in :data:`IDLE_EVERY` is idle for the last :data:`IDLE_HOURS` hours, the others busy. The history
is :data:`HISTORY_HOURS` hours of ``DCGM_FI_DEV_GPU_UTIL`` (percent 0-100),
``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (ratio 0-1) and ``DCGM_FI_DEV_POWER_USAGE`` (watts) every
:data:`SCRAPE_SECONDS`, labelled as dcgm-exporter 4.x with pod mapping (``UUID``, ``gpu``,
``device``, ``modelName``, ``Hostname``, ``namespace``, ``pod``, ``container``).
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
HISTORY_HOURS = 4
IDLE_HOURS = 2
SCRAPE_SECONDS = 60
IDLE_EVERY = 12
MODEL = "NVIDIA H100 80GB HBM3"


def gpu_uuid(k: int) -> str:
    return f"GPU-{k:08x}-5e1c-4a3b-9d2f-7c6b5a4e3d2c"


def gpu_pod_names(k: int) -> tuple[str, str, str]:
    """(namespace, pod, owner) of GPU pod ``k``."""
    ns = f"team-{k % 40:02d}"
    if k % 2 == 0:
        return ns, f"nb-{k:06d}-0", f"nb-{k:06d}"
    return ns, f"job-{k:06d}-worker-0", f"job-{k:06d}"


def idle(k: int) -> bool:
    return k % IDLE_EVERY == 0


def cluster_objects(gpus: int, pods: int) -> Iterator[dict]:
    """Every object the fake API server serves: pods, nodes, namespaces, the GPU pods' owners
    (StatefulSet + Notebook, or Job + Workload), the demo's queues."""
    from benchmarks.sweep import _BASE_NODE, _DEMO, make_pod

    for i in range(pods):
        k, gpu = (i // 5, True) if i % 5 == 0 and i // 5 < gpus else (i, False)
        p = make_pod(k if gpu else i, gpu=gpu)
        if gpu:
            p["spec"]["nodeName"] = f"gpu-node-{k // 8:05d}"
        else:
            p["metadata"]["name"] = f"cpu-{i:06d}"
            p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"svc-{i // 10}",
                                                 "uid": f"{i:08x}-rs", "controller": True}]
            p["spec"]["nodeName"] = f"cpu-node-{i // 50:05d}"
        yield p
    for n in range((gpus + 7) // 8):
        node = copy.deepcopy(_BASE_NODE)
        node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = f"gpu-node-{n:05d}"
        yield node
    for t in range(40):
        yield {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{t:02d}", "labels": {"team": f"team-{t:02d}"}}}
    created = "2026-11-19T08:00:00Z"
    for k in range(gpus):
        ns, pod, owner = gpu_pod_names(k)
        meta = {"name": owner, "namespace": ns, "uid": f"{k:08x}-0wn3", "creationTimestamp": created}
        if k % 2 == 0:
            yield {"apiVersion": "apps/v1", "kind": "StatefulSet",
                   "metadata": {**meta, "uid": f"{k:08x}-f074-5a77-a2a9-3a5301b1caa7",
                                "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "Notebook", "name": owner,
                                                     "uid": f"{k:08x}-nb", "controller": True}]},
                   "spec": {"replicas": 1}, "status": {"replicas": 1, "readyReplicas": 1}}
            yield {"apiVersion": "kubeflow.org/v1", "kind": "Notebook", "metadata": {**meta, "uid": f"{k:08x}-nb"},
                   "spec": {"template": {"spec": {"containers": [{"name": owner, "image": "jupyter/pytorch"}]}}}}
        else:
            uid = f"{k:08x}-710e-540f-ac81-964ffb64d106"
            yield {"apiVersion": "batch/v1", "kind": "Job", "metadata": {**meta, "uid": uid,
                   "labels": {"kueue.x-k8s.io/queue-name": "training-queue"}},
                   "spec": {"suspend": False, "parallelism": 1, "completions": 1}, "status": {"active": 1}}
            yield {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                   "metadata": {"name": f"job-{owner}-1a2b3", "namespace": ns, "uid": f"{k:08x}-wl",
                                "creationTimestamp": created,
                                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": owner, "uid": uid,
                                                     "controller": True}]},
                   "spec": {"active": True, "queueName": "training-queue",
                            "podSets": [{"name": "main", "count": 1}]},
                   "status": {"admission": {"clusterQueue": "gpu-cluster-queue"},
                              "conditions": [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": created},
                                             {"type": "Admitted", "status": "True", "lastTransitionTime": created}]}}
    yield from (o for o in _DEMO if o["kind"] not in ("Pod", "Node", "StatefulSet", "Notebook", "Workload", "Deployment"))


def write_openmetrics(path: Path, gpus: int) -> int:
    """Write the fleet's DCGM history to ``path`` (families contiguous, each series in time
    order, ``# EOF`` last, as promtool wants). Returns the number of samples."""
    start = NOW - timedelta(hours=HISTORY_HOURS)
    idle_from = int((NOW - timedelta(hours=IDLE_HOURS)).timestamp())
    stamps = [int(start.timestamp()) + s * SCRAPE_SECONDS for s in range(HISTORY_HOURS * 3600 // SCRAPE_SECONDS + 1)]
    families = (
        ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "0", "85"),
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", "0", "0.85"),
        ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "72.5", "418.25"),
    )
    samples = 0
    with path.open("w") as out:
        for name, help_text, idle_value, busy_value in families:
            out.write(f"# HELP {name} {help_text}\n# TYPE {name} gauge\n")
            for k in range(gpus):
                ns, pod, _ = gpu_pod_names(k)
                labels = (f'Hostname="gpu-node-{k // 8:05d}",UUID="{gpu_uuid(k)}",container="main",device="nvidia{k % 8}",'
                          f'gpu="{k % 8}",modelName="{MODEL}",namespace="{ns}",pod="{pod}"')
                cut = idle_from if idle(k) else stamps[-1] + 1
                out.write("".join(f"{name}{{{labels}}} {busy_value if t < cut else idle_value} {t}\n" for t in stamps))
                samples += len(stamps)
        out.write("# EOF\n")
    return samples


def tsdb(cache: Path, gpus: int) -> Path:
    """A Prometheus data directory holding the fleet's history, built once per ``gpus`` under
    ``cache`` (promtool takes minutes at 10,000 GPUs) and reused."""
    from tests.support.prometheus_server import _binaries

    data = cache / f"tsdb-{gpus}-{HISTORY_HOURS}h-{SCRAPE_SECONDS}s"
    if (data / "done").exists():
        return data
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    text = cache / "series.om"
    write_openmetrics(text, gpus)
    _, promtool = _binaries()
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=800h", str(text),
                    str(data)], check=True, capture_output=True)
    text.unlink()
    (data / "done").write_text(json.dumps({"gpus": gpus}))
    return data
