"""A GPU cluster in the exact shapes real components give it, for the GPU accounting tests
(tests/scenarios/test_gpu_accounting.py, tests/actions/detect/test_unrequested_gpus.py): the Kubernetes objects the
fake API server serves, and the dcgm-exporter and kube-state-metrics series a real Prometheus is
backfilled with. The scenario table is in tests/scenarios/test_gpu_accounting.py's docstring.

Every shape names its upstream source, read at these versions:

- dcgm-exporter 4.5.3-4.8.2 and its main branch after it (NVIDIA/dcgm-exporter):
  internal/pkg/rendermetrics/render_metrics.go renders every GPU series as
  ``{gpu, UUID, pci_bus_id, device, modelName[, GPU_I_PROFILE, GPU_I_ID], Hostname}`` (the main
  branch renames ``Hostname`` to ``hostname``, commit "Rename Hostname label to hostname (#655)");
  internal/pkg/collector/gpu_collector.go names the UUID label ``uuid`` under
  ``--use-old-namespace`` and fills GPU_I_PROFILE/GPU_I_ID from the GPU instance of a MIG device,
  whose series keep the parent GPU's UUID, index and device; internal/pkg/transformation
  (const.go, kubernetes.go) adds ``pod``/``namespace``/``container`` of the pod holding the
  device, or ``pod_name``/``pod_namespace``/``container_name`` under ``--use-old-namespace``, and
  maps a time-sliced replica ``<UUID>::<n>`` to its GPU, so one pod of a shared GPU carries its
  series. etc/default-counters.csv exports DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_POWER_USAGE and
  DCGM_FI_PROF_GR_ENGINE_ACTIVE. A MIG-enabled GPU is watched as its GPU instances only
  (internal/pkg/devicemonitoring/device_monitoring.go monitorAllGPUInstances): no GPU_UTIL in
  MIG mode (engine activity only), and a device field such as POWER_USAGE reads the whole GPU's
  value on every instance. DCGM_FI_DEV_POWER_MGMT_LIMIT (field 160, W) is not in the default
  set: a custom counters CSV adds it. deployment/values.yaml: the chart's ServiceMonitor has
  ``honorLabels: false``, so Prometheus renames the exporter's pod labels to ``exported_pod``,
  ``exported_namespace``, ``exported_container`` and puts the exporter's own ``pod``,
  ``namespace`` and ``container`` (prometheus-operator's target labels) on every series; with
  ``honorLabels: true`` the exporter's labels win where it sets them, and a GPU no pod holds still
  carries the exporter's own ``pod``.
- kube-state-metrics v2.20.0 and after (kubernetes/kube-state-metrics internal/store/pod.go, node.go,
  utils.go): ``kube_pod_container_resource_requests{namespace, pod, uid, container, node,
  resource, unit}``, ``kube_node_status_capacity{node, resource, unit}`` with ``resource`` passed
  through SanitizeLabelName (every character outside [a-zA-Z0-9_] becomes ``_``:
  ``nvidia.com/mig-1g.5gb`` -> ``nvidia_com_mig_1g_5gb``, ``nvidia.com/gpu.shared`` ->
  ``nvidia_com_gpu_shared``) and unit ``integer`` for extended resources; ``kube_pod_info``,
  ``kube_pod_status_phase`` (one series per phase, 1 for the current one), ``kube_pod_owner``,
  ``kube_pod_labels``, ``kube_node_labels{node, label_...}`` and ``kube_namespace_labels`` (labels
  as allowed by ``--metric-labels-allowlist``).
- GPU Feature Discovery and the device plugin v0.20.0 (NVIDIA/k8s-device-plugin
  internal/lm/resource.go, mig-strategy.go, README.md, docs/gpu-feature-discovery/README.md):
  ``nvidia.com/gpu.product`` is the sanitized NVML name (``NVIDIA-A100-SXM4-40GB``), with
  ``-MIG-<profile>`` under the MIG ``single`` strategy and ``-SHARED`` when time-sliced without
  ``renameByDefault``; ``nvidia.com/gpu.count`` counts physical GPUs, except under ``single``
  where it counts MIG devices (56 on 8 A100s cut 7 ways); ``nvidia.com/gpu.replicas`` is the
  sharing config's replicas (1 unshared); ``nvidia.com/mig.strategy``; under ``mixed`` each
  profile gets ``nvidia.com/mig-<profile>.count``/``.product``. A time-sliced GPU is advertised as
  R ``nvidia.com/gpu`` (or ``nvidia.com/gpu.shared`` with ``renameByDefault``).
- Karpenter v1 (kubernetes-sigs/karpenter pkg/apis/v1 nodeclaim_status.go, nodepool.go;
  pkg/utils/nodeclaim UpdateNodeOwnerReferences): a NodeClaim's ``status.nodeName``, its node's
  ``karpenter.sh/nodepool`` and ``karpenter.sh/capacity-type`` labels and an owner reference to
  the NodeClaim; NodePool ``spec.disruption`` (consolidationPolicy, consolidateAfter, budgets).
- Kubeflow Notebook controller (StatefulSet named after the Notebook, pod ``<name>-0`` labelled
  ``notebook-name``), batch/v1 Jobs and apps/v1 Deployments as their controllers create them.

Telemetry values come from the real H100 trace (tests/support/fleet.py ``phase_rows``): activity and
power of each phase's rows, cycled one row per 60-second scrape. The B200 and A100 series reuse
those rows (no B200 or A100 trace exists here); only their ``modelName`` differs.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE
from actions.pricing.overrides import PriceOverrides
from tests.support.fleet import model_name, phase_rows
from tests.support.openmetrics import gauge_families

UTC = timezone.utc
DATA_START = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)
DATA_END = datetime(2026, 11, 20, 12, 30, tzinfo=UTC)  # samples after the sweep and the report's end
SWEEP_AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
REPORT_END = SWEEP_AT
STARTED = "2026-11-20T05:58:00Z"  # every pod; the data begins at 06:00
SCRAPE_SECONDS = 60
POWER_MGMT_LIMIT = "DCGM_FI_DEV_POWER_MGMT_LIMIT"

H100 = model_name()  # "NVIDIA H100 80GB HBM3", the traced GPU's NVML name
A100 = "NVIDIA A100-SXM4-40GB"
B200 = "NVIDIA B200"

# USD per instance-hour, so every figure is checked by hand: p4d.24xlarge 8 x A100 -> $3.50 per
# GPU-hour (a 1g.5gb slice, 1/7, $0.50/h); p5.48xlarge 8 x H100 -> $6.88; p5.4xlarge 1 x H100 ->
# $8.00 (a replica of 4, $2.00/h; of 2, $4.00/h); p6-b200.48xlarge 8 x B200 -> $14.00.
PRICES = PriceOverrides.model_validate({
    "instance_types": {
        "p4d.24xlarge": {"on_demand_usd_per_hour": 28.00, "note": "test rate"},
        "p5.48xlarge": {"on_demand_usd_per_hour": 55.04},
        "p5.4xlarge": {"on_demand_usd_per_hour": 8.00},
        "p6-b200.48xlarge": {"on_demand_usd_per_hour": 112.00},
    }
})


def gpu_uuid(node: str, gpu: int) -> str:
    """A GPU's NVML UUID (``GPU-`` and a UUID), fixed per node and index."""
    return f"GPU-{uuid.uuid5(uuid.NAMESPACE_URL, f'{node}/{gpu}')}"


def uid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"uid/{name}"))


# --- dcgm-exporter's label conventions --------------------------------------------------------------


@dataclass(frozen=True)
class Exporter:
    """How one node's dcgm-exporter and Prometheus's scrape of it label the series.

    ``node_label``: ``Hostname`` (releases to 4.5.3-4.8.2) or ``hostname`` (main);
    ``pod_labels``: ``pod`` (the exporter's pod/namespace/container), ``old`` (pod_name/...,
    ``--use-old-namespace``, whose UUID label is ``uuid``) or ``exported`` (honorLabels false);
    ``target_pod``: Prometheus adds prometheus-operator's target labels (the exporter's own
    pod/namespace/container), which the exporter's labels win over only under honorLabels true.
    """

    convention: str
    node_label: str = "Hostname"
    pod_labels: str = "pod"
    target_pod: bool = False
    extra_fields: tuple[tuple[str, float], ...] = ()  # counters added by a custom CSV: name -> value

    @property
    def uuid_label(self) -> str:
        return "uuid" if self.pod_labels == "old" else "UUID"


EXPORTER_NAMESPACE = "gpu-operator"
EXPORTER_CONTAINER = "nvidia-dcgm-exporter"


def exporter_pod(node: str) -> str:
    """The name of the dcgm-exporter DaemonSet's pod on ``node``."""
    return f"nvidia-dcgm-exporter-{uuid.uuid5(uuid.NAMESPACE_URL, node).hex[:5]}"


# --- the cluster ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuNode:
    """A GPU node: its instance type, GPU resources (``status.capacity``), GPU Feature Discovery
    labels, DCGM ``modelName`` and how its exporter labels series; Karpenter's NodePool and
    NodeClaim."""

    name: str
    instance_type: str
    capacity: dict[str, int]
    gfd: dict[str, str]
    model: str
    exporter: Exporter
    nodepool: str
    nodeclaim: str
    ip: str


@dataclass(frozen=True)
class Device:
    """One DCGM entity: a whole GPU, or a MIG GPU instance (``gi``, ``profile``) of GPU ``gpu``.
    ``phase`` is the trace phase its activity follows; ``power_phase`` the phase of its GPU's
    power (a MIG instance reports its whole GPU's)."""

    node: str
    gpu: int
    phase: str
    holder: tuple[str, str, str] | None = None  # (namespace, pod, container)
    gi: int | None = None
    profile: str | None = None
    power_phase: str | None = None


@dataclass(frozen=True)
class Pod:
    """A GPU pod: what it requests (resource -> count) on which node, its owner chain as
    objects, its labels."""

    namespace: str
    name: str
    node: str
    requests: dict[str, int]
    owner: dict | None
    labels: dict[str, str] = field(default_factory=dict)
    container: str = "main"


MIG_MIXED = GpuNode(
    "a100-mig-mixed", "p4d.24xlarge", {"nvidia.com/gpu": 6, "nvidia.com/mig-1g.5gb": 14},
    {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "1",
     "nvidia.com/mig.strategy": "mixed", "nvidia.com/mig-1g.5gb.count": "14",
     "nvidia.com/mig-1g.5gb.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"},
    A100, Exporter("dcgm-exporter 4.5.3-4.8.2: Hostname, pod/namespace; no target pod labels"),
    "gpu-a100", "gpu-a100-m2x7q", "10.0.1.11",
)
MIG_SINGLE = GpuNode(
    "a100-mig-single", "p4d.24xlarge", {"nvidia.com/gpu": 56},
    {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/gpu.count": "56",
     "nvidia.com/gpu.replicas": "1", "nvidia.com/mig.strategy": "single"},
    A100, Exporter("dcgm-exporter main: hostname, pod/namespace; honorLabels true behind prometheus-operator",
                   node_label="hostname", target_pod=True),
    "gpu-a100", "gpu-a100-s9k4w", "10.0.1.12",
)
H100_8 = GpuNode(
    "h100-od-8", "p5.48xlarge", {"nvidia.com/gpu": 8},
    {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "1"},
    H100, Exporter("Helm chart default honorLabels false: exported_pod/exported_namespace, the exporter's pod on all",
                   pod_labels="exported", target_pod=True),
    "gpu-h100-8", "gpu-h100-8-p5r2t", "10.0.2.21",
)
TS_4 = GpuNode(
    "ts-h100-1", "p5.4xlarge", {"nvidia.com/gpu": 4},
    {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED", "nvidia.com/gpu.count": "1",
     "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"},
    H100, Exporter("--use-old-namespace: pod_name/pod_namespace, uuid; prometheus-operator target labels",
                   pod_labels="old", target_pod=True),
    "gpu-h100", "gpu-h100-t4v8n", "10.0.3.31",
)
TS_2 = GpuNode(
    "ts-h100-2", "p5.4xlarge", {"nvidia.com/gpu.shared": 2},
    {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "1",
     "nvidia.com/gpu.replicas": "2", "nvidia.com/gpu.sharing-strategy": "time-slicing"},
    H100, Exporter("dcgm-exporter 4.5.3-4.8.2: Hostname, pod/namespace"),
    "gpu-h100", "gpu-h100-r2c6d", "10.0.3.32",
)
EMPTY = GpuNode(
    "h100-empty", "p5.4xlarge", {"nvidia.com/gpu": 1},
    {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "1"},
    H100, Exporter("dcgm-exporter 4.5.3-4.8.2: Hostname, no pod labels (no pod holds the GPU)"),
    "gpu-h100", "gpu-h100-7xk2p", "10.0.3.33",
)
B200_8 = GpuNode(
    "b200-od-1", "p6-b200.48xlarge", {"nvidia.com/gpu": 8},
    {"nvidia.com/gpu.product": "NVIDIA-B200", "nvidia.com/gpu.count": "8", "nvidia.com/gpu.replicas": "1"},
    B200, Exporter("dcgm-exporter main: hostname, pod/namespace; custom CSV adds DCGM_FI_DEV_POWER_MGMT_LIMIT",
                   node_label="hostname", extra_fields=((POWER_MGMT_LIMIT, 1000.0),)),
    "gpu-b200", "gpu-b200-h3j9z", "10.0.4.41",
)
NODES = (MIG_MIXED, MIG_SINGLE, H100_8, TS_4, TS_2, EMPTY, B200_8)
NODE = {n.name: n for n in NODES}

# Karpenter v1 NodePools: why each would (not) consolidate its nodes.
def _disruption(policy: str, after: str, budget: str) -> dict:
    return {"consolidationPolicy": policy, "consolidateAfter": after, "budgets": [{"nodes": budget}]}


NODEPOOLS = {
    "gpu-a100": _disruption("WhenEmptyOrUnderutilized", "1h", "10%"),
    "gpu-h100-8": _disruption("WhenEmpty", "30m", "10%"),
    "gpu-h100": _disruption("WhenEmptyOrUnderutilized", "Never", "10%"),
    "gpu-b200": _disruption("WhenEmptyOrUnderutilized", "1h", "0"),
}

IDLE, BUSY, EMPTY_IDLE = "notebook_idle_model_loaded", "training", "empty_idle"
MIG_PROFILE = "1g.5gb"


def _ref(api_version: str, kind: str, name: str, *, controller: bool = True) -> dict:
    out = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid(f"{kind}/{name}")}
    if controller:
        out.update(controller=True, blockOwnerDeletion=True)
    return out


def _meta(kind: str, name: str, namespace: str | None, *, owner: dict | None = None, labels=None,
          annotations=None) -> dict:
    meta = {"name": name, "uid": uid(f"{kind}/{name}"), "creationTimestamp": STARTED,
            "labels": dict(labels or {}), "annotations": dict(annotations or {})}
    if namespace is not None:
        meta["namespace"] = namespace
    if owner:
        meta["ownerReferences"] = [owner]
    return meta


# Owners, as their controllers create them.
def _notebook(ns: str, name: str) -> list[dict]:
    """Kubeflow Notebook -> StatefulSet ``name`` (1 replica) -> pod ``name-0``."""
    return [
        {"apiVersion": "kubeflow.org/v1", "kind": "Notebook", "metadata": _meta("Notebook", name, ns), "spec": {}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet",
         "metadata": _meta("StatefulSet", name, ns, owner=_ref("kubeflow.org/v1", "Notebook", name)),
         "spec": {"replicas": 1, "selector": {"matchLabels": {"statefulset": name}}}},
    ]


def _job(ns: str, name: str) -> list[dict]:
    return [{"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("Job", name, ns), "spec": {}}]


def _statefulset(ns: str, name: str) -> list[dict]:
    return [{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta("StatefulSet", name, ns),
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}}}]


def _deployment(ns: str, name: str, rs: str) -> list[dict]:
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta("Deployment", name, ns),
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}}},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet",
         "metadata": _meta("ReplicaSet", rs, ns, owner=_ref("apps/v1", "Deployment", name)), "spec": {"replicas": 1}},
    ]


OWNERS = [
    *_notebook("ml-research", "nb-small"),
    *_notebook("ml-research", "nb-b200"),
    *_notebook("sandbox", "nb-single"),
    *_notebook("sandbox", "tiny"),
    *_statefulset("vision", "embedder"),
    *_deployment("serving", "tiny-api", "tiny-api-5d8f9c7b6"),
    *_job("vision", "train-a100"),
    *_job("training", "pretrain"),
    *_job("training", "train-b200"),
]


def _nb(name: str) -> dict[str, str]:
    return {"notebook-name": name, "statefulset": name}


def _job_labels(name: str) -> dict[str, str]:
    return {"batch.kubernetes.io/job-name": name, "job-name": name}


PODS = (
    Pod("ml-research", "nb-small-0", MIG_MIXED.name, {"nvidia.com/mig-1g.5gb": 1},
        _ref("apps/v1", "StatefulSet", "nb-small"), _nb("nb-small"), container="nb-small"),
    Pod("vision", "embedder-0", MIG_MIXED.name, {"nvidia.com/mig-1g.5gb": 2},
        _ref("apps/v1", "StatefulSet", "embedder"), {"app": "embedder"}),
    Pod("vision", "train-a100-k8s2m", MIG_MIXED.name, {"nvidia.com/gpu": 6},
        _ref("batch/v1", "Job", "train-a100"), _job_labels("train-a100")),
    Pod("sandbox", "nb-single-0", MIG_SINGLE.name, {"nvidia.com/gpu": 1},
        _ref("apps/v1", "StatefulSet", "nb-single"), _nb("nb-single"), container="nb-single"),
    Pod("sandbox", "tiny-0", TS_4.name, {"nvidia.com/gpu": 1},
        _ref("apps/v1", "StatefulSet", "tiny"), _nb("tiny"), container="tiny"),
    Pod("serving", "tiny-api-5d8f9c7b6-q2w3e", TS_2.name, {"nvidia.com/gpu.shared": 1},
        _ref("apps/v1", "ReplicaSet", "tiny-api-5d8f9c7b6"), {"app": "tiny-api", "pod-template-hash": "5d8f9c7b6"}),
    Pod("training", "pretrain-x7k2p", H100_8.name, {"nvidia.com/gpu": 2},
        _ref("batch/v1", "Job", "pretrain"), _job_labels("pretrain")),
    Pod("ml-research", "nb-b200-0", B200_8.name, {"nvidia.com/gpu": 1},
        _ref("apps/v1", "StatefulSet", "nb-b200"), _nb("nb-b200"), container="nb-b200"),
    Pod("training", "train-b200-q9w8e", B200_8.name, {"nvidia.com/gpu": 7},
        _ref("batch/v1", "Job", "train-b200"), _job_labels("train-b200")),
)
POD = {p.name: p for p in PODS}
NAMESPACES = ("ml-research", "vision", "sandbox", "serving", "training", EXPORTER_NAMESPACE)


def _held(pod: str) -> tuple[str, str, str]:
    p = POD[pod]
    return (p.namespace, p.name, p.container)


def _mig_gpu(node: str, gpu: int, held: dict[int, tuple[str, str]]) -> list[Device]:
    """A GPU cut into seven 1g.5gb instances (GPU_I_ID 7-13, as NVML numbers them on an A100),
    ``held`` GPU_I_ID -> (pod, phase); the others idle without a pod."""
    out = []
    for gi in range(7, 14):
        pod, phase = held.get(gi, (None, EMPTY_IDLE))
        out.append(Device(node, gpu, phase, _held(pod) if pod else None, gi, MIG_PROFILE, power_phase=IDLE))
    return out


DEVICES: tuple[Device, ...] = (
    # a100-mig-mixed: GPUs 0 and 1 MIG-enabled (mixed strategy), 2-7 whole.
    *_mig_gpu(MIG_MIXED.name, 0, {7: ("nb-small-0", IDLE)}),
    *_mig_gpu(MIG_MIXED.name, 1, {7: ("embedder-0", IDLE), 8: ("embedder-0", IDLE)}),
    *(Device(MIG_MIXED.name, g, BUSY, _held("train-a100-k8s2m")) for g in range(2, 8)),
    # a100-mig-single: eight GPUs cut into 1g.5gb (single strategy); one instance held.
    *_mig_gpu(MIG_SINGLE.name, 0, {7: ("nb-single-0", IDLE)}),
    *(d for g in range(1, 8) for d in _mig_gpu(MIG_SINGLE.name, g, {})),
    # h100-od-8: 2 GPUs held, 6 requested by no pod.
    *(Device(H100_8.name, g, BUSY, _held("pretrain-x7k2p")) for g in range(2)),
    *(Device(H100_8.name, g, EMPTY_IDLE) for g in range(2, 8)),
    Device(TS_4.name, 0, IDLE, _held("tiny-0")),
    Device(TS_2.name, 0, IDLE, _held("tiny-api-5d8f9c7b6-q2w3e")),
    Device(EMPTY.name, 0, EMPTY_IDLE),
    Device(B200_8.name, 0, IDLE, _held("nb-b200-0")),
    *(Device(B200_8.name, g, BUSY, _held("train-b200-q9w8e")) for g in range(1, 8)),
)
IDLE_PODS = frozenset(d.holder[1] for d in DEVICES if d.holder and d.phase == IDLE)


# --- Kubernetes objects for the fake API server --------------------------------------------------------


def node_object(n: GpuNode) -> dict:
    """A v1 Node as Karpenter registers it and GFD labels it."""
    labels = {
        "kubernetes.io/hostname": n.name, "node.kubernetes.io/instance-type": n.instance_type,
        "karpenter.sh/capacity-type": "on-demand", "karpenter.sh/nodepool": n.nodepool,
        "karpenter.sh/registered": "true", "karpenter.sh/initialized": "true", **n.gfd,
    }
    owner = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": n.nodeclaim,
             "uid": uid(f"NodeClaim/{n.nodeclaim}"), "blockOwnerDeletion": True}
    capacity = {"cpu": "96", "memory": "1056742Mi", "pods": "110", **{r: str(c) for r, c in n.capacity.items()}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": _meta("Node", n.name, None, owner=owner, labels=labels),
            "status": {"capacity": capacity, "allocatable": dict(capacity)}}


def nodeclaim_object(n: GpuNode) -> dict:
    meta = _meta("NodeClaim", n.nodeclaim, None, labels={"karpenter.sh/nodepool": n.nodepool,
                                             "node.kubernetes.io/instance-type": n.instance_type,
                                             "karpenter.sh/capacity-type": "on-demand"})
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": meta,
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}},
            "status": {"nodeName": n.name, "providerID": f"aws:///us-east-1a/i-0{uid(n.name).replace('-', '')[:16]}"}}


def nodepool_object(name: str) -> dict:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": _meta("NodePool", name, None),
            "spec": {"disruption": NODEPOOLS[name], "template": {"spec": {}}}}


def pod_object(p: Pod) -> dict:
    quantities = {r: str(c) for r, c in p.requests.items()}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": _meta("Pod", p.name, p.namespace, owner=p.owner, labels=p.labels),
        "spec": {"nodeName": p.node, "containers": [
            {"name": p.container, "resources": {"limits": quantities, "requests": dict(quantities)}}]},
        "status": {"phase": "Running", "startTime": STARTED},
    }


def exporter_pod_object(n: GpuNode) -> dict:
    """dcgm-exporter's DaemonSet pod on ``n``: no GPU request, and it keeps no node."""
    meta = _meta("Pod", exporter_pod(n.name), EXPORTER_NAMESPACE,
                 owner=_ref("apps/v1", "DaemonSet", "nvidia-dcgm-exporter"), labels={"app": "nvidia-dcgm-exporter"})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": n.name, "containers": [{"name": EXPORTER_CONTAINER, "resources": {}}]},
            "status": {"phase": "Running", "startTime": STARTED}}


def cluster_objects() -> list[dict]:
    """Everything the fake API server holds: namespaces, Karpenter's NodePools and NodeClaims, the
    nodes, the GPU pods' owners and pods, and one dcgm-exporter DaemonSet pod per node."""
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("Namespace", ns, None)} for ns in NAMESPACES]
    objects += [nodepool_object(name) for name in NODEPOOLS]
    for n in NODES:
        objects += [nodeclaim_object(n), node_object(n), exporter_pod_object(n)]
    objects += OWNERS
    objects += [pod_object(p) for p in PODS]
    return objects


# --- the series ---------------------------------------------------------------------------------------


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def ksm_sanitize(name: str) -> str:
    """kube-state-metrics' SanitizeLabelName (internal/store/utils.go): every character outside
    [a-zA-Z0-9_] becomes ``_`` (``nvidia.com/mig-1g.5gb`` -> ``nvidia_com_mig_1g_5gb``)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def _labels(d: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in sorted(d.items()))


def dcgm_labels(d: Device) -> dict[str, str]:
    """The labels of ``d``'s series as Prometheus stores them (see the module docstring)."""
    n = NODE[d.node]
    e = n.exporter
    labels = {
        "gpu": str(d.gpu), e.uuid_label: gpu_uuid(d.node, d.gpu), "pci_bus_id": f"00000000:{0x10 + d.gpu:02X}:00.0",
        "device": f"nvidia{d.gpu}", "modelName": n.model, e.node_label: n.name,
        "job": "nvidia-dcgm-exporter", "instance": f"{n.ip}:9400",
    }
    if d.profile:
        labels.update(GPU_I_PROFILE=d.profile, GPU_I_ID=str(d.gi))
    if e.target_pod:
        labels.update(pod=exporter_pod(n.name), namespace=EXPORTER_NAMESPACE, container=EXPORTER_CONTAINER,
                      service="nvidia-dcgm-exporter", endpoint="gpu-metrics")
    if d.holder:
        ns, pod, container = d.holder
        names = {"pod": ("pod", "namespace", "container"), "old": ("pod_name", "pod_namespace", "container_name"),
                 "exported": ("exported_pod", "exported_namespace", "exported_container")}[e.pod_labels]
        labels.update(dict(zip(names, (pod, ns, container))))
    return labels


def _times(start: datetime = DATA_START, end: datetime = DATA_END) -> list[int]:
    n = int((end - start).total_seconds() // SCRAPE_SECONDS) + 1
    return [int((start + timedelta(seconds=i * SCRAPE_SECONDS)).timestamp()) for i in range(n)]


def openmetrics() -> str:
    """The scenario's OpenMetrics text: dcgm-exporter and kube-state-metrics every 60 s from
    DATA_START to DATA_END (families contiguous, ``# EOF`` last)."""
    fam: dict[str, list[str]] = {}

    def add(name: str, labels: dict[str, str], values) -> None:
        lab = _labels(labels)
        fam.setdefault(name, []).extend(f"{name}{{{lab}}} {_fmt(v)} {ts}" for ts, v in values)

    times = _times()
    for d in DEVICES:
        rows, power = phase_rows(d.phase), phase_rows(d.power_phase or d.phase)
        labels = dcgm_labels(d)
        util = [(ts, rows[i % len(rows)].util_gpu_pct) for i, ts in enumerate(times)]
        if d.profile is None:  # a MIG instance has engine activity only
            add(GPU_UTIL, labels, util)
        add(ENGINE_ACTIVE, labels, [(ts, u / 100) for ts, u in util])
        add(POWER_USAGE, labels, [(ts, power[i % len(power)].power_w) for i, ts in enumerate(times)])
        for name, value in NODE[d.node].exporter.extra_fields:
            add(name, labels, [(ts, value) for ts in times])

    ksm = {"job": "kube-state-metrics", "instance": "10.0.0.5:8080"}
    for p in PODS:
        pod_uid = uid(f"Pod/{p.name}")
        for resource, count in p.requests.items():
            add("kube_pod_container_resource_requests",
                {**ksm, "namespace": p.namespace, "pod": p.name, "uid": pod_uid, "container": p.container,
                 "node": p.node, "resource": ksm_sanitize(resource), "unit": "integer"}, [(ts, count) for ts in times])
        owner = p.owner or {}
        add("kube_pod_info", {**ksm, "namespace": p.namespace, "pod": p.name, "uid": pod_uid, "node": p.node,
                              "host_ip": NODE[p.node].ip, "pod_ip": "10.1.0.7", "priority_class": "",
                              "created_by_kind": owner.get("kind", ""), "created_by_name": owner.get("name", ""),
                              "host_network": "false"}, [(ts, 1) for ts in times])
        for phase in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
            add("kube_pod_status_phase",
                {**ksm, "namespace": p.namespace, "pod": p.name, "uid": pod_uid, "phase": phase},
                [(ts, int(phase == "Running")) for ts in times])
        add("kube_pod_owner", {**ksm, "namespace": p.namespace, "pod": p.name, "uid": pod_uid,
                               "owner_kind": owner.get("kind", "<none>"), "owner_name": owner.get("name", "<none>"),
                               "owner_is_controller": "true" if owner else "<none>"}, [(ts, 1) for ts in times])
        pod_labels = {"label_notebook_name": p.labels["notebook-name"]} if "notebook-name" in p.labels else {}
        add("kube_pod_labels", {**ksm, "namespace": p.namespace, "pod": p.name, "uid": pod_uid, **pod_labels},
            [(ts, 1) for ts in times])
    for n in NODES:
        node_labels = {"label_karpenter_sh_capacity_type": "on-demand",
                       "label_node_kubernetes_io_instance_type": n.instance_type,
                       **{ksm_sanitize("label_" + k): v
                          for k, v in n.gfd.items() if k in ("nvidia.com/gpu.product", "nvidia.com/gpu.replicas",
                                                             "nvidia.com/gpu.count", "nvidia.com/mig.strategy")}}
        add("kube_node_labels", {**ksm, "node": n.name, **node_labels}, [(ts, 1) for ts in times])
        for resource, count in n.capacity.items():
            add("kube_node_status_capacity",
                {**ksm, "node": n.name, "resource": ksm_sanitize(resource), "unit": "integer"},
                [(ts, count) for ts in times])
    for ns in NAMESPACES:
        add("kube_namespace_labels", {**ksm, "namespace": ns}, [(ts, 1) for ts in times])

    return gauge_families(fam)
