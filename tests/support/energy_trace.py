"""Two hours of the real H100 capture (tests/support/data/h100_nvml_trace.csv, one NVML reading a
second, see :func:`trace`) as dcgm-exporter would export it for a few GPUs, with the kube-state-metrics of
the pods holding them, and the energy those samples hold worked out by hand.

dcgm-exporter's names and units (NVIDIA/dcgm-exporter etc/default-counters.csv):
``DCGM_FI_DEV_POWER_USAGE`` gauge, W (field 155); ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` counter,
mJ since the driver loaded (field 156). Under MIG every GPU instance's series carries the whole
GPU's power (NVIDIA/dcgm-exporter#257, #317); on a time-sliced node the GPU's series names one of
the pods sharing it.

| node | GPU | series | held by |
|---|---|---|---|
| h100-a | GPU-a0 | power + util | pod power-only (1 GPU) |
| h100-a | GPU-a1 | energy counter (reset to 0 at T0+62 min) + util | pod counter-only (1 GPU) |
| h100-a | GPU-a2 | power + util | no pod (unrequested) |
| h100-mig | GPU-m0, MIG 3g.40gb x2 + 1g.10gb | power + engine activity, per instance | mig-a, mig-b; the 1g.10gb no pod |
| h100-ts | GPU-t0, time-sliced 4 replicas | power + util, labelled ts-0 | ts-0 .. ts-3, one replica each |
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE, TOTAL_ENERGY
from tests.support.fleet import TRACE_CSV
from tests.support.openmetrics import gauge_families

UTC = timezone.utc
T0 = datetime(2026, 11, 2, tzinfo=UTC)
SECONDS = 2 * 3600
START, END = T0 + timedelta(minutes=30), T0 + timedelta(minutes=90)  # the report's period
RESET_AT = 62 * 60  # seconds after T0 the counter GPU's driver reloads
COUNTER_BASE_MJ = 4.2e12  # what the counter held at T0: energy since the driver loaded long before
H100 = "NVIDIA H100 80GB HBM3"


@dataclass(frozen=True)
class Sample:
    util_pct: float
    power_w: float


def trace() -> list[Sample]:
    """Two hours, one sample a second: quarters of an hour of the capture's idle readings (a
    notebook holding a model, 0% at 120-240 W) taking turns with quarters of the whole capture
    (cell bursts, training, serving), each cycled."""
    with TRACE_CSV.open() as f:
        rows = [(r["phase"], Sample(float(r["util_gpu_pct"]), float(r["power_w"]))) for r in csv.DictReader(f)]
    idle = [s for phase, s in rows if phase == "notebook_idle_model_loaded"]
    every = [s for _, s in rows]
    return [(idle if (i // 900) % 2 == 0 else every)[i % len(idle if (i // 900) % 2 == 0 else every)]
            for i in range(SECONDS)]


def hand_kwh(samples: list[Sample], start: datetime = START, end: datetime = END) -> float:
    """The time integral of power over the samples in [start, end] (trapezoids, one a second), kWh."""
    a, b = int((start - T0).total_seconds()), int((end - T0).total_seconds())
    joules = sum((samples[i].power_w + samples[i + 1].power_w) / 2 for i in range(a, b))
    return joules / 3.6e6


def hand_idle_kwh(samples: list[Sample], idle_pct: float, step: int = 300) -> float:
    """The kWh of the 5-minute steps of the period whose peak utilisation was at or under ``idle_pct``."""
    a, b = int((START - T0).total_seconds()), int((END - T0).total_seconds())
    total = 0.0
    for t in range(a + step, b + 1, step):
        window = samples[t - step + 1 : t + 1]
        if max(s.util_pct for s in window) <= idle_pct:
            total += sum(s.power_w for s in window)
    return total / 3.6e6


def _labels(**kv: str) -> str:
    return ",".join(f'{k}="{v}"' for k, v in sorted(kv.items()))


def openmetrics() -> str:
    fam: dict[str, list[str]] = {}

    def add(name: str, labels: str, value: float, ts: int) -> None:
        fam.setdefault(name, []).append(f"{name}{{{labels}}} {value:.6f} {ts}")

    samples = trace()
    t0 = int(T0.timestamp())

    def gpu(labels: str, *, power: bool = True, counter: bool = False, engine: bool = False) -> None:
        energy = 0.0
        for i, s in enumerate(samples):
            ts = t0 + i
            if counter and i == RESET_AT:
                energy = -COUNTER_BASE_MJ  # the driver reloaded: the counter starts again from 0
            energy += s.power_w * 1000  # W x 1 s = J; mJ
            if power:
                add(POWER_USAGE, labels, s.power_w, ts)
            if counter:
                add(TOTAL_ENERGY, labels, COUNTER_BASE_MJ + energy, ts)
            if engine:
                add(ENGINE_ACTIVE, labels, s.util_pct / 100, ts)
            else:
                add(GPU_UTIL, labels, s.util_pct, ts)

    def dcgm(node: str, uuid: str, pod: str = "", ns: str = "", **extra: str) -> str:
        kv = dict(gpu="0", UUID=uuid, device="nvidia0", modelName=H100, Hostname=node, **extra)
        if pod:
            kv.update(pod=pod, namespace=ns, container="main")
        return _labels(**kv)

    gpu(dcgm("h100-a", "GPU-a0", "power-only", "research"))
    gpu(dcgm("h100-a", "GPU-a1", "counter-only", "research"), power=False, counter=True)
    gpu(dcgm("h100-a", "GPU-a2"))
    for gi, profile, pod in (("1", "3g.40gb", "mig-a"), ("2", "3g.40gb", "mig-b"), ("3", "1g.10gb", "")):
        gpu(dcgm("h100-mig", "GPU-m0", pod, "vision" if pod else "", GPU_I_ID=gi, GPU_I_PROFILE=profile), engine=True)
    gpu(dcgm("h100-ts", "GPU-t0", "ts-0", "serving"))

    pods = [("research", "power-only", "h100-a", "nvidia_com_gpu"), ("research", "counter-only", "h100-a", "nvidia_com_gpu"),
            ("vision", "mig-a", "h100-mig", "nvidia_com_mig_3g_40gb"), ("vision", "mig-b", "h100-mig", "nvidia_com_mig_3g_40gb")]
    pods += [("serving", f"ts-{i}", "h100-ts", "nvidia_com_gpu") for i in range(4)]
    capacity = [("h100-a", "nvidia_com_gpu", 3), ("h100-mig", "nvidia_com_mig_3g_40gb", 2),
                ("h100-mig", "nvidia_com_mig_1g_10gb", 1), ("h100-ts", "nvidia_com_gpu", 4)]
    node_labels = {"h100-a": {}, "h100-mig": {"label_nvidia_com_mig_strategy": "mixed"},
                   "h100-ts": {"label_nvidia_com_gpu_replicas": "4"}}
    for ts in range(t0, t0 + SECONDS, 30):
        for ns, pod, node, resource in pods:
            add("kube_pod_container_resource_requests",
                _labels(namespace=ns, pod=pod, container="main", node=node, resource=resource, unit="integer"), 1, ts)
            add("kube_pod_info", _labels(namespace=ns, pod=pod, node=node, uid=f"uid-{pod}"), 1, ts)
            add("kube_pod_status_phase", _labels(namespace=ns, pod=pod, phase="Running", uid=f"uid-{pod}"), 1, ts)
        for node, resource, n in capacity:
            add("kube_node_status_capacity", _labels(node=node, resource=resource, unit="integer"), n, ts)
        for node, labels in node_labels.items():
            add("kube_node_labels", _labels(node=node, label_node_kubernetes_io_instance_type="p5.48xlarge",
                                            label_karpenter_sh_capacity_type="on-demand", **labels), 1, ts)
    return gauge_families(fam)
