"""The scale fleet of benchmarks/scale_fleet.py over days, for the memory soak (benchmarks/soak.py):
which pods end and start in each round (:class:`Churn`), the objects a replaced pod leaves and
brings to the fake API server, and the Prometheus history that matches them (DCGM and
kube-state-metrics series for every pod that lived, with its own pod labels).

A GPU slot ``k`` is one GPU (its UUID, its node) that holds one pod at a time: generation 0 is
the scale fleet's pod, and each time the churn picks the slot its pod ends (the pod and its two
owners, StatefulSet + Notebook or Job + Workload, are deleted) and generation ``g`` starts
(``nb-000012r3``, ``job-000013r3``: new names, new uids, created at the round's time). CPU-only
pods churn the same way (``cpu-000001r2``). One GPU pod in :data:`IDLE_EVERY` is idle its whole
life, the others busy.
"""

from __future__ import annotations

import bisect
import copy
import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Iterator

from benchmarks.scale_fleet import MODEL, NOW, gpu_pod_names, gpu_uuid

# The soak's clock starts at 08:00 UTC on a Friday: the first daily digests (09:00, over the day
# before) then have GPU use to chart within the first rounds, so the baseline has drawn charts.
T0 = NOW - timedelta(hours=4)
HISTORY_BEFORE = timedelta(hours=2)  # history before T0: the first sweep's window and more
HISTORY_AFTER = timedelta(hours=1)
CREATED = "2026-11-19T08:00:00Z"  # the scale fleet's creation time of every object
IDLE_EVERY = 12
NODE_LABELS = ('label_karpenter_sh_capacity_type="on-demand",label_node_kubernetes_io_instance_type="p5.48xlarge",'
               'label_nvidia_com_gpu_product="NVIDIA-H100-80GB-HBM3"')


def cpu_indices(gpus: int, pods: int) -> list[int]:
    """The indices ``i`` of the CPU-only pods among the ``pods`` of the scale fleet."""
    return [i for i in range(pods) if not (i % 5 == 0 and i // 5 < gpus)]


@dataclass
class Churn:
    """Which GPU slots and CPU pods are replaced in each round ``1..rounds`` of ``step_seconds``:
    ``gpu_per_hour`` and ``cpu_per_hour`` of them (fractions) an hour, picked at random with
    ``seed`` (the same on every side: the fake API server and the history agree)."""

    gpus: int
    pods: int
    rounds: int
    step_seconds: int
    gpu_per_hour: float = 0.02
    cpu_per_hour: float = 0.01
    seed: int = 26
    gpu: list[list[int]] = field(init=False)
    cpu: list[list[int]] = field(init=False)

    def __post_init__(self) -> None:
        rng = random.Random(self.seed)
        cpus = cpu_indices(self.gpus, self.pods)
        per_round = self.step_seconds / 3600
        n_gpu = round(self.gpus * self.gpu_per_hour * per_round)
        n_cpu = round(len(cpus) * self.cpu_per_hour * per_round)
        self.gpu, self.cpu = [[]], [[]]  # round 0 changes nothing
        for _ in range(self.rounds):
            self.gpu.append(sorted(rng.sample(range(self.gpus), n_gpu)))
            self.cpu.append(sorted(rng.sample(cpus, n_cpu)))

    def at(self, r: int) -> datetime:
        """The clock at round ``r`` (aware UTC)."""
        return T0 + timedelta(seconds=r * self.step_seconds)

    def replaced_rounds(self) -> dict[int, list[int]]:
        """GPU slot -> the rounds its pod was replaced in, in order."""
        out: dict[int, list[int]] = {}
        for r, slots in enumerate(self.gpu):
            for k in slots:
                out.setdefault(k, []).append(r)
        return out


def idle(k: int, g: int) -> bool:
    """Whether generation ``g`` of GPU slot ``k`` leaves its GPU idle (its whole life)."""
    return (k + 7 * g) % IDLE_EVERY == 0


def names(k: int, g: int) -> tuple[str, str, str]:
    """(namespace, pod, owner) of generation ``g`` of GPU slot ``k``."""
    ns, pod, owner = gpu_pod_names(k)
    if g:
        pod, owner = pod.replace(owner, f"{owner}r{g}"), f"{owner}r{g}"
    return ns, pod, owner


def _slot_objects(k: int) -> list[dict]:
    """Generation 0 of GPU slot ``k`` as benchmarks/scale_fleet.cluster_objects serves it: the
    pod, then its owner and the owner's owner (StatefulSet + Notebook, or Job + Workload)."""
    from benchmarks.sweep import make_pod

    pod = make_pod(k, gpu=True)
    pod["spec"]["nodeName"] = f"gpu-node-{k // 8:05d}"
    ns, _, owner = gpu_pod_names(k)
    meta = {"name": owner, "namespace": ns, "uid": f"{k:08x}-0wn3", "creationTimestamp": CREATED}
    if k % 2 == 0:
        return [pod, {"apiVersion": "apps/v1", "kind": "StatefulSet",
                      "metadata": {**meta, "uid": f"{k:08x}-f074-5a77-a2a9-3a5301b1caa7",
                                   "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "Notebook",
                                                        "name": owner, "uid": f"{k:08x}-nb", "controller": True}]},
                      "spec": {"replicas": 1}, "status": {"replicas": 1, "readyReplicas": 1}},
                {"apiVersion": "kubeflow.org/v1", "kind": "Notebook", "metadata": {**meta, "uid": f"{k:08x}-nb"},
                 "spec": {"template": {"spec": {"containers": [{"name": owner, "image": "jupyter/pytorch"}]}}}}]
    uid = f"{k:08x}-710e-540f-ac81-964ffb64d106"
    return [pod, {"apiVersion": "batch/v1", "kind": "Job",
                  "metadata": {**meta, "uid": uid, "labels": {"kueue.x-k8s.io/queue-name": "training-queue"}},
                  "spec": {"suspend": False, "parallelism": 1, "completions": 1}, "status": {"active": 1}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
             "metadata": {"name": f"job-{owner}-1a2b3", "namespace": ns, "uid": f"{k:08x}-wl", "creationTimestamp": CREATED,
                          "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": owner, "uid": uid,
                                               "controller": True}]},
             "spec": {"active": True, "queueName": "training-queue", "podSets": [{"name": "main", "count": 1}]},
             "status": {"admission": {"clusterQueue": "gpu-cluster-queue"},
                        "conditions": [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": CREATED},
                                       {"type": "Admitted", "status": "True", "lastTransitionTime": CREATED}]}}]


def _cpu_pod(i: int) -> dict:
    """CPU-only pod ``i`` as benchmarks/scale_fleet.cluster_objects serves it."""
    from benchmarks.sweep import make_pod

    p = make_pod(i, gpu=False)
    p["metadata"]["name"] = f"cpu-{i:06d}"
    p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"svc-{i // 10}",
                                         "uid": f"{i:08x}-rs", "controller": True}]
    p["spec"]["nodeName"] = f"cpu-node-{i // 50:05d}"
    return p


def _renamed(objs: list[dict], old: str, new: str, uid: str, g: int, at: datetime) -> list[dict]:
    """``objs`` as generation ``g``: ``old`` names as ``new``, uids starting ``uid-`` made
    unique, every creation and start time at ``at``."""
    text = json.dumps(objs).replace(f'"{uid}-', f'"{uid}-r{g}-').replace(old, new)
    return json.loads(text.replace(CREATED, at.strftime("%Y-%m-%dT%H:%M:%SZ")))


def identities(obj: dict) -> tuple[str, str, str, str]:
    """(kind, namespace, name, group) of ``obj``, as :meth:`FakeKubeApi.delete` takes them."""
    api = obj["apiVersion"]
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"], api.split("/")[0] if "/" in api else ""


class Generations:
    """What the fake API server holds of each churned GPU slot and CPU pod now, and the objects
    of the next generation (kept in the fake's process)."""

    def __init__(self) -> None:
        self.gpu: dict[int, int] = {}
        self.cpu: dict[int, int] = {}
        self._templates: dict[tuple[str, int], list[dict]] = {}

    def _of(self, kind: str, k: int) -> list[dict]:
        if (kind, k) not in self._templates:
            self._templates[(kind, k)] = _slot_objects(k) if kind == "gpu" else [_cpu_pod(k)]
        return self._templates[(kind, k)]

    def replace(self, kind: str, k: int, at: datetime) -> tuple[list[tuple[str, str, str, str]], list[dict]]:
        """(identities to delete, objects to add) when the pod of ``kind`` (``gpu`` slot or
        ``cpu`` pod) ``k`` ends and its next generation starts at ``at``."""
        gens = self.gpu if kind == "gpu" else self.cpu
        g = gens.get(k, 0)
        base = self._of(kind, k)
        old_name = gpu_pod_names(k)[2] if kind == "gpu" else f"cpu-{k:06d}"
        current = base if g == 0 else _renamed(base, old_name, f"{old_name}r{g}", f"{k:08x}", g, at)
        gens[k] = g + 1
        new = _renamed(base, old_name, f"{old_name}r{g + 1}", f"{k:08x}", g + 1, at)
        return [identities(o) for o in current], [copy.deepcopy(o) for o in new]


# --- the Prometheus history --------------------------------------------------------------------------


def write_history(path: Path, churn: Churn, scrape_seconds: int) -> int:
    """Write the fleet's history over the soak to ``path`` as OpenMetrics (families contiguous,
    each series in time order, ``# EOF`` last, as promtool wants): every ``scrape_seconds``, 60 s
    after each step, per pod that lived its DCGM engine activity (ratio 0-1) and power (watts)
    on its GPU, and its kube-state-metrics series (GPU request, info, phase, owner, labels); per
    node its GPU capacity and labels; per namespace its ``team`` label. Returns the samples."""
    start, end = T0 - HISTORY_BEFORE, churn.at(churn.rounds) + HISTORY_AFTER
    grid = list(range(int(start.timestamp()) + 60, int(end.timestamp()), scrape_seconds))
    stamps = [f" {t}\n" for t in grid]
    replaced = churn.replaced_rounds()
    segments: list[list[tuple[int, int, int]]] = []  # per slot: (generation, first, past-last grid index)
    for k in range(churn.gpus):
        cuts = [bisect.bisect_left(grid, int(churn.at(r).timestamp())) for r in replaced.get(k, [])]
        bounds = [0, *cuts, len(grid)]
        segments.append([(g, bounds[g], bounds[g + 1]) for g in range(len(bounds) - 1)])

    def labels(k: int, g: int) -> dict[str, str]:
        ns, pod, owner = names(k, g)
        return {"ns": ns, "pod": pod, "owner": owner, "node": f"gpu-node-{k // 8:05d}"}

    def dcgm(k: int, g: int) -> str:
        v = labels(k, g)
        return (f'Hostname="{v["node"]}",UUID="{gpu_uuid(k)}",container="main",device="nvidia{k % 8}",gpu="{k % 8}",'
                f'modelName="{MODEL}",namespace="{v["ns"]}",pod="{v["pod"]}"')

    def ksm(name: str, k: int, g: int) -> str:
        v = labels(k, g)
        pod = f'namespace="{v["ns"]}",pod="{v["pod"]}"'
        uid = f'uid="{k:08x}-r{g}"'
        if name == "kube_pod_container_resource_requests":
            return f'container="main",{pod},node="{v["node"]}",resource="nvidia_com_gpu",unit="integer"'
        if name == "kube_pod_info":
            return f'host_ip="10.0.{k // 8 % 256}.41",{pod},node="{v["node"]}",{uid}'
        if name == "kube_pod_status_phase":
            return f'{pod},phase="Running",{uid}'
        if name == "kube_pod_owner":
            kind = "StatefulSet" if k % 2 == 0 else "Job"
            return f'{pod},owner_is_controller="true",owner_kind="{kind}",owner_name="{v["owner"]}"'
        label = "label_notebook_name" if k % 2 == 0 else "label_kueue_x_k8s_io_queue_name"
        value = v["owner"] if k % 2 == 0 else "training-queue"
        return f'{label}="{value}",{pod}'

    samples = 0
    with path.open("w") as out:
        def series(name: str, lab: str, value: str, i: int, j: int) -> None:
            nonlocal samples
            head = f"{name}{{{lab}}} {value}"
            out.write("".join([head + s for s in stamps[i:j]]))
            samples += j - i

        for name, busy, idle_value in (("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0.85", "0"),
                                       ("DCGM_FI_DEV_POWER_USAGE", "418.25", "72.5")):
            out.write(f"# TYPE {name} gauge\n")
            for k in range(churn.gpus):
                for g, i, j in segments[k]:
                    series(name, dcgm(k, g), idle_value if idle(k, g) else busy, i, j)
        for name in ("kube_pod_container_resource_requests", "kube_pod_info", "kube_pod_status_phase",
                     "kube_pod_owner", "kube_pod_labels"):
            out.write(f"# TYPE {name} gauge\n")
            for k in range(churn.gpus):
                for g, i, j in segments[k]:
                    series(name, ksm(name, k, g), "1", i, j)
        nodes = range((churn.gpus + 7) // 8)
        out.write("# TYPE kube_node_status_capacity gauge\n")
        for n in nodes:
            series("kube_node_status_capacity", f'node="gpu-node-{n:05d}",resource="nvidia_com_gpu",unit="integer"',
                   "8", 0, len(grid))
        out.write("# TYPE kube_node_labels gauge\n")
        for n in nodes:
            series("kube_node_labels", f'{NODE_LABELS},node="gpu-node-{n:05d}"', "1", 0, len(grid))
        out.write("# TYPE kube_namespace_labels gauge\n")
        for t in range(40):
            series("kube_namespace_labels", f'label_team="team-{t:02d}",namespace="team-{t:02d}"', "1", 0, len(grid))
        out.write("# EOF\n")
    return samples


def pod_objects(churn: Churn) -> Iterator[dict]:
    """The fake API server's objects at round 0: the scale fleet's."""
    from benchmarks.scale_fleet import cluster_objects

    return cluster_objects(churn.gpus, churn.pods)
