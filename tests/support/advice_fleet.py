"""The advice tests' cluster and its 30 days of DCGM history, built from the real H100 trace.

Every GPU replays rows of one phase of ``h100_nvml_trace.csv`` (tests/support/fleet.py), cycled, one row
per scrape, with the changes each consumer's story needs (said at each one):

- ``research/explore`` (Kubeflow Notebook, 1 H100): the trace's idle-with-a-model rows, every 3 h
  its 12 cell-burst rows; utilization scaled by 0.09 and framebuffer by 6144/21970, so the peak
  is 9% and 6 GiB (6,144 MiB) exactly. Annotated interruptible, which a notebook must not heed.
- ``research/sweep`` (batch/v1 Job, ``backoffLimit: 0``, one pod of 8 H100s): GPUs 0-1 training
  rows, GPUs 2-7 idle-with-a-model rows: 2 busy at once, always.
- ``research/pretrain`` (batch/v1 Job under Kueue, 8 H100s): training rows, every 3 h the 12
  checkpoint-pause rows: 8 busy at once 99% of the time and more.
- ``serving/chat-api`` (Deployment, 1 H100): the trace's light-serving rows (GPU_UTIL 0% at
  190-250 W), annotated interruptible; its series carry the ``exported_pod`` label convention.
- ``steady/llm-serve`` (Deployment, 2 pods of 8 H100s): training rows for all 30 days.
- ``platform/embed-0`` (a bare pod of 4 H100s on ``rs-1``, a reserved node): training rows for
  30 days; the node's other 4 GPUs the trace's empty-GPU rows, held by no pod: idle half the time.
- ``swing/batch-{0,1}`` (8 H100s each, no pods left at ``ADVISE_AT``): training rows 09:00-19:00
  UTC on weekdays, no series otherwise.

Consumers' series start 7 days before ``ADVISE_AT`` (plus a minute, so every 5-minute step of
the window but the first has a sample: 2,016 steps, 168 h) and are scraped every 120 s; the
teams' series cover 30 days at 300 s.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Callable, Iterator

from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE
from actions.policy.advice import AdvicePolicy, CommitmentRate
from actions.policy.teams import Team, TeamDirectory
from tests.support.fleet import FB_USED, TraceRow, model_name, phase_rows

ADVISE_AT = datetime(2026, 11, 30, 0, 30, tzinfo=timezone.utc)  # a Monday, 00:30 UTC
WEEK_START = ADVISE_AT - timedelta(days=7) + timedelta(seconds=60)
MONTH_START = ADVISE_AT - timedelta(days=30) + timedelta(seconds=60)
CONSUMER_SCRAPE = 120
TEAM_SCRAPE = 300
STARTED = "2026-10-30T00:00:00Z"
H100_PRODUCT = "NVIDIA-H100-80GB-HBM3"
FB_SCALE = 6144 / 21970  # the trace's largest framebuffer reading becomes 6 GiB
UTIL_SCALE = 0.09  # the trace's 100% bursts become 9%

Rows = Callable[[int, datetime], TraceRow]


def cycled(phase: str) -> Rows:
    rows = phase_rows(phase)
    return lambda i, t: rows[i % len(rows)]


def with_interlude(base: str, interlude: str, every_seconds: float, start: datetime) -> Rows:
    """``base`` rows cycled, and every ``every_seconds`` all ``interlude`` rows once."""
    rows, extra = phase_rows(base), phase_rows(interlude)

    def row(i: int, t: datetime) -> TraceRow:
        offset = (t - start).total_seconds() % every_seconds
        k = int(offset // CONSUMER_SCRAPE)
        return extra[k] if k < len(extra) else rows[i % len(rows)]

    return row


def office_hours(t: datetime) -> bool:
    return t.weekday() < 5 and 9 <= t.hour < 19


class Gpu:
    """One GPU's series: labels as dcgm-exporter with pod mapping, rows per scrape time."""

    def __init__(self, ns: str, pod: str, node: str, index: int, rows: Rows, *, start: datetime, scrape: int,
                 fb_scale: float = 1.0, util_scale: float = 1.0, when: Callable[[datetime], bool] = lambda t: True,
                 exported: bool = False):
        # exported: Prometheus scraped dcgm-exporter with honor_labels off, so the workload's pod
        # labels arrive as exported_* and pod/namespace name the exporter (as gpu-pruner reads them).
        held = ({"exported_namespace": ns, "exported_pod": pod, "namespace": "gpu-operator", "pod": "dcgm-exporter-x7k2p"}
                if exported else {"namespace": ns, "pod": pod}) if pod else {}
        self.labels = {
            "gpu": str(index), "UUID": f"GPU-{node}-{index}", "modelName": model_name(), "Hostname": node, **held,
        }
        self.rows, self.start, self.scrape = rows, start, scrape
        self.fb_scale, self.util_scale, self.when = fb_scale, util_scale, when
        self.utilization_only = scrape == TEAM_SCRAPE

    def samples(self) -> Iterator[tuple[int, TraceRow]]:
        n = int((ADVISE_AT - self.start).total_seconds() // self.scrape) + 1
        for i in range(n):
            t = self.start + timedelta(seconds=i * self.scrape)
            if self.when(t):
                yield int(t.timestamp()), self.rows(i, t)


def gpus() -> list[Gpu]:
    week = dict(start=WEEK_START, scrape=CONSUMER_SCRAPE)
    month = dict(start=MONTH_START, scrape=TEAM_SCRAPE)
    out = [
        Gpu("research", "explore-0", "nb-1", 0,
            with_interlude("notebook_idle_model_loaded", "notebook_cell_burst", 3 * 3600, WEEK_START),
            fb_scale=FB_SCALE, util_scale=UTIL_SCALE, **week),
        Gpu("serving", "chat-api-7d4f9c8b6-q2w3e", "nb-1", 1, cycled("inference_bursty"), exported=True, **week),
    ]
    out += [Gpu("research", "sweep-k8v2n", "sw-1", i, cycled("training" if i < 2 else "notebook_idle_model_loaded"), **week)
            for i in range(8)]
    out += [Gpu("research", "pretrain-0-x7k2p", "pt-1", i,
                with_interlude("training", "training_checkpoint_pause", 3 * 3600, WEEK_START), **week) for i in range(8)]
    for p, node in (("llm-serve-5b6c7d8e9-aaaaa", "st-1"), ("llm-serve-5b6c7d8e9-bbbbb", "st-2")):
        out += [Gpu("steady", p, node, i, cycled("training"), **month) for i in range(8)]
    out += [Gpu("platform", "embed-0", "rs-1", i, cycled("training"), **month) for i in range(4)]
    out += [Gpu("", "", "rs-1", i, cycled("empty_idle"), **month) for i in range(4, 8)]
    for p, node in (("batch-0", "sg-1"), ("batch-1", "sg-2")):
        out += [Gpu("swing", p, node, i, cycled("training"), when=office_hours, **month) for i in range(8)]
    return out


def openmetrics(of: list[Gpu] | None = None) -> str:
    """OpenMetrics text of every GPU's (``of``, default :func:`gpus`) GPU_UTIL (percent), FB_USED
    (MiB) and POWER_USAGE (W)."""
    fleet = [(g, ",".join(f'{k}="{v}"' for k, v in sorted(g.labels.items())), list(g.samples()))
             for g in (gpus() if of is None else of)]
    families = (
        (GPU_UTIL, lambda g, r: round(r.util_gpu_pct * g.util_scale, 2)),
        (FB_USED, lambda g, r: round(r.fb_used_mib * g.fb_scale)),
        (POWER_USAGE, lambda g, r: r.power_w),
    )
    out: list[str] = []
    for name, value in families:
        out += [f"# HELP {name} {name}", f"# TYPE {name} gauge"]
        for g, labels, samples in fleet:
            if name == GPU_UTIL or not g.utilization_only:
                out.extend(f"{name}{{{labels}}} {value(g, r):g} {ts}" for ts, r in samples)
    out.append("# EOF")
    assert ENGINE_ACTIVE not in out[0]  # the trace's GPU exports no profiling fields
    return "\n".join(out) + "\n"


# --- the cluster at ADVISE_AT, as `kubectl get ... -o json` lists it ----------------------------


def _meta(ns: str, name: str, kind: str, *, owner: dict | None = None, labels=None, annotations=None) -> dict:
    meta = {"name": name, "namespace": ns, "uid": f"uid-{kind}-{ns}-{name}", "creationTimestamp": STARTED,
            "labels": labels or {}, "annotations": annotations or {}}
    if owner:
        meta["ownerReferences"] = [dict(owner, controller=True)]
    return meta


def _owner(api: str, kind: str, ns: str, name: str) -> dict:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": f"uid-{kind}-{ns}-{name}"}


def _node(name: str, instance_type: str = "p5.48xlarge", product: str = H100_PRODUCT, gpus: int = 8) -> dict:
    capacity = "reserved" if name.startswith("rs-") else "on-demand"
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
        "node.kubernetes.io/instance-type": instance_type, "karpenter.sh/capacity-type": capacity,
        "nvidia.com/gpu.product": product}},
        "status": {"capacity": {"nvidia.com/gpu": str(gpus)}, "allocatable": {"nvidia.com/gpu": str(gpus)}}}


H100_MIG_PROFILES = ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb")


def _mig_node(name: str, product: str = H100_PRODUCT, profiles: tuple[str, ...] = H100_MIG_PROFILES) -> dict:
    """A p5.48xlarge whose H100s are partitioned under the MIG ``mixed`` strategy, as GPU Feature
    Discovery labels it and the device plugin advertises it (k8s-device-plugin v0.20.0
    internal/lm/mig-strategy.go: ``nvidia.com/mig.strategy``, ``nvidia.com/mig-<profile>.product``
    = ``<GPU>-MIG-<profile>``; internal/rm/rm.go: one ``nvidia.com/mig-<profile>`` resource per
    profile). No pod of the fleet runs on it: it is where MIG advice can send one."""
    gpus = {f"nvidia.com/mig-{p}": "1" for p in profiles}
    labels = {"node.kubernetes.io/instance-type": "p5.48xlarge", "karpenter.sh/capacity-type": "on-demand",
              "nvidia.com/gpu.product": product, "nvidia.com/mig.strategy": "mixed",
              **{f"nvidia.com/mig-{p}.product": f"{product}-MIG-{p}" for p in profiles}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": gpus, "allocatable": dict(gpus)}}


def _pod(ns: str, name: str, node: str, gpus: int, owner: dict | None, labels=None, annotations=None) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(ns, name, "Pod", owner=owner, labels=labels,
                                                                  annotations=annotations),
            "spec": {"nodeName": node, "containers": [{"name": "main", "resources": {
                "requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}}]},
            "status": {"phase": "Running", "startTime": STARTED}}


def cluster_items() -> list[dict]:
    """The objects of the cluster at ADVISE_AT, in the shapes their controllers write (Kueue
    v0.19.2 Workload with ``kueue.x-k8s.io/job-uid``; Kubeflow Notebook pods labelled
    ``notebook-name``; a Deployment's pods owned by ``<deployment>-<pod-template-hash>``), and
    an H100 node partitioned under the MIG ``mixed`` strategy (``mg-1``)."""
    interruptible = {"gpu-cost-bot/interruptible": "true"}
    items = [_node(n) for n in ("nb-1", "sw-1", "pt-1", "st-1", "st-2", "rs-1")] + [_mig_node("mg-1")]
    items.append(_pod("platform", "embed-0", "rs-1", 4, None))
    items.append({"apiVersion": "kubeflow.org/v1", "kind": "Notebook",
                  "metadata": _meta("research", "explore", "Notebook", annotations=interruptible), "spec": {}})
    items.append(_pod("research", "explore-0", "nb-1", 1, _owner("apps/v1", "StatefulSet", "research", "explore"),
                      labels={"notebook-name": "explore", "statefulset": "explore"}))
    items.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("research", "sweep", "Job"),
                  "spec": {"backoffLimit": 0, "parallelism": 1}})
    items.append(_pod("research", "sweep-k8v2n", "sw-1", 8, _owner("batch/v1", "Job", "research", "sweep"),
                      labels={"batch.kubernetes.io/job-name": "sweep"}))
    job = _owner("batch/v1", "Job", "research", "pretrain")
    items.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(
        "research", "pretrain", "Job", labels={"kueue.x-k8s.io/queue-name": "research"}), "spec": {"suspend": False}})
    items.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                  "metadata": _meta("research", "job-pretrain-3c1f2", "Workload", owner=job,
                                    labels={"kueue.x-k8s.io/job-uid": job["uid"]}),
                  "spec": {"queueName": "research", "active": True, "podSets": [{"name": "main", "count": 1, "template": {
                      "spec": {"containers": [{"name": "main", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}}]},
                  "status": {"admission": {"clusterQueue": "gpu-cq", "podSetAssignments": [
                      {"name": "main", "count": 1, "flavors": {"nvidia.com/gpu": "h100-on-demand"}}]},
                      "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]}})
    items.append(_pod("research", "pretrain-0-x7k2p", "pt-1", 8, job,
                      labels={"batch.kubernetes.io/job-name": "pretrain", "kueue.x-k8s.io/queue-name": "research"}))
    for ns, name, replicas, pods, gpus_each, notes in (
        ("serving", "chat-api", 1, [("chat-api-7d4f9c8b6-q2w3e", "nb-1")], 1, interruptible),
        ("steady", "llm-serve", 2, [("llm-serve-5b6c7d8e9-aaaaa", "st-1"), ("llm-serve-5b6c7d8e9-bbbbb", "st-2")], 8, interruptible),
    ):
        items.append({"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": _meta(ns, name, "Deployment", annotations=notes),
                      "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}}})
        rs = pods[0][0].rsplit("-", 1)[0]
        for pod_name, node in pods:
            items.append(_pod(ns, pod_name, node, gpus_each, _owner("apps/v1", "ReplicaSet", ns, rs),
                              labels={"app": name, "pod-template-hash": rs.rsplit("-", 1)[1]}))
    return items


def cluster_json() -> bytes:
    """The cluster as one ``kubectl get ... -o json`` List."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": cluster_items()}).encode()


# A committed rate for the test: 40% under the on-demand list price, as a 1-year plan might be.
COMMITTED = CommitmentRate(usd_per_gpu_hour=4.128, term="1 year, no upfront",
                           source="test figure: 40% under p5.48xlarge on-demand", as_of="2026-11-23")
POLICY = AdvicePolicy(commitment_rates={"H100": COMMITTED})
LEAD = "U0LEAD"  # each team's approver: a change nobody could approve is advice only
TEAMS = TeamDirectory([
    Team(name="research", namespaces=["research"], approvers=[LEAD]),
    Team(name="serving", namespaces=["serving"], approvers=[LEAD]),
    Team(name="steady", namespaces=["steady"], approvers=[LEAD]),
    Team(name="swing", namespaces=["swing"], approvers=[LEAD]),
])
