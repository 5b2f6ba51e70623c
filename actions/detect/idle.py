"""The idle-GPU detector: which notebooks, jobs and services request GPUs that do nothing.

Pure: ``detect_idle`` takes a cluster snapshot, the telemetry over a window, prices, policies,
teams and an explicit ``now``, and returns findings with their evidence, dollars and proposed
action. Who holds a pod, and what the bot would do about it, is :mod:`actions.detect.consumers`'s
decision; which policy holds in a namespace, :mod:`actions.policy.namespaces`'s.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Mapping

from actions.detect.consumers import running_consumers
from actions.detect.owners import OwnerIndex
from actions.model.findings import Finding, GpuEvidence
from actions.model.kube import CapacityType, GpuPod, Node
from actions.model.quote import PriceQuote
from actions.model.snapshot import ClusterSnapshot
from actions.model.telemetry import ENGINE_ACTIVE, GpuTelemetry, TelemetrySnapshot
from actions.model.times import parse_time
from actions.policy.namespaces import PolicyBook
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory
from actions.pricing.book import PriceBook, PriceNotFound

# Telemetry per query: Policy.telemetry_key() -> the snapshot that query gave.
TelemetrySet = Mapping[tuple, TelemetrySnapshot]


def judge_gpu(g: GpuTelemetry, policy: Policy) -> GpuEvidence:
    """Decide one GPU: ``idle`` only when every signal agrees over the whole window.

    Missing or sparse samples make the verdict ``unknown``, never ``idle``. Engine activity at or
    under ``policy.engine_idle_pct`` alone is not enough: on a real H100, light serving reads
    GPU_UTIL 0% at 190-250 W, so mean power must also sit at or under the model's idle ceiling
    (:meth:`~actions.policy.rules.Policy.idle_ceiling`: known for the model, else a share of its power
    limit). A MIG instance is the exception: dcgm-exporter reports the whole GPU's power on every
    instance, so its engine activity alone decides, and the evidence says so.
    """
    ceiling, ceiling_source = (None, None) if g.mig_profile else policy.idle_ceiling(g.model_name, g.power_limit_w)
    signal = "engine activity" if g.engine_signal == ENGINE_ACTIVE else "GPU utilization"

    def verdict(v: str, reason: str) -> GpuEvidence:
        return GpuEvidence(
            gpu=g.gpu,
            model_name=g.model_name,
            engine_signal=g.engine_signal,
            peak_engine_pct=g.peak_engine_pct,
            engine_threshold_pct=policy.engine_idle_pct,
            mean_power_w=g.mean_power_w,
            power_ceiling_w=ceiling,
            coverage=g.coverage,
            verdict=v,
            reason=reason,
            ceiling_source=ceiling_source,
        )

    if g.coverage < policy.min_coverage:
        return verdict(
            "unknown",
            f"samples cover {g.coverage:.0%} of the window (need {policy.min_coverage:.0%})",
        )
    if g.peak_engine_pct is None:
        return verdict("unknown", "no activity signal (DCGM_FI_PROF_GR_ENGINE_ACTIVE or DCGM_FI_DEV_GPU_UTIL)")
    if g.peak_engine_pct > policy.engine_idle_pct:
        return verdict(
            "busy", f"peak {signal} {g.peak_engine_pct:.0f}% > {policy.engine_idle_pct:g}%"
        )
    if g.mig_profile:
        return verdict(
            "idle",
            f"MIG {g.mig_profile} instance: peak {signal} {g.peak_engine_pct:.0f}%; power is the whole GPU's on "
            "every instance, so engine activity alone decides",
        )
    if g.mean_power_w is None:
        return verdict("unknown", "no power signal (DCGM_FI_DEV_POWER_USAGE)")
    if ceiling is None:
        return verdict(
            "unknown",
            f"no idle power ceiling known for {g.model_name!r} and no power limit exported "
            "(DCGM_FI_DEV_ENFORCED_POWER_LIMIT): set policy.idle_power_watts",
        )
    if g.mean_power_w > ceiling:
        return verdict(
            "busy",
            f"mean power {g.mean_power_w:.0f} W > idle ceiling {ceiling:.0f} W "
            f"(work that {signal} does not show)",
        )
    return verdict(
        "idle",
        f"peak {signal} {g.peak_engine_pct:.0f}% and mean power {g.mean_power_w:.0f} W "
        f"(idle ceiling {ceiling:.0f} W: {ceiling_source})",
    )


def _not_idle(g: GpuTelemetry, policy: Policy) -> bool:
    """True when :func:`judge_gpu` would not say ``idle`` on its first checks alone (too few
    samples, no activity signal, activity over the threshold), without building its evidence."""
    return g.coverage < policy.min_coverage or g.peak_engine_pct is None or g.peak_engine_pct > policy.engine_idle_pct


def opted_out(annotations: dict[str, str], policy: Policy, now: datetime) -> bool:
    """True when the opt-out annotation holds an RFC 3339 time later than ``now``.

    A value that is not RFC 3339 with a time zone does not opt out: an opt-out must say when it
    ends, so a forgotten one cannot hide a GPU forever.
    """
    value = annotations.get(policy.opt_out_annotation)
    if not value:
        return False
    try:
        return parse_time(value) > now
    except ValueError:
        return False


def gpu_equivalents_of(pod: GpuPod, snapshot: ClusterSnapshot) -> float:
    """Physical-GPU equivalents ``pod`` requests (MIG slices and shared replicas as fractions, see
    :mod:`actions.hardware.gpus`), judged by its node's GPUs; its device count when the node is unknown."""
    node = snapshot.nodes.get(pod.node or "")
    if node is None:
        return float(pod.gpus)
    return node.equivalents(pod.requested)


def capacity_of(node: Node | None, policy: Policy) -> CapacityType:
    """How ``node`` is bought: its capacity type, or reserved when its node pool is listed in
    ``policy.reserved_nodepools``."""
    if node is None:
        return CapacityType.UNKNOWN
    if node.nodepool and node.nodepool in policy.reserved_nodepools:
        return CapacityType.RESERVED
    return node.capacity_type


def price_for(
    pod: GpuPod, gpu_model: str, snapshot: ClusterSnapshot, prices: PriceBook, policy: Policy | None = None
) -> PriceQuote:
    """What one physical GPU of ``pod``'s costs per hour (USD per GPU-hour), from its node's
    instance and capacity type."""
    node = snapshot.nodes.get(pod.node or "")
    instance_type = node.instance_type if node else None
    capacity = capacity_of(node, policy or Policy())
    try:
        return prices.quote(instance_type, capacity, gpu_model)
    except PriceNotFound as e:
        return PriceQuote(0.0, capacity, f"no price: {e}", "", "none", instance_type, gpu_model)


def _as_book(policy: Policy | PolicyBook, teams: TeamDirectory, snapshot: ClusterSnapshot) -> PolicyBook:
    if isinstance(policy, PolicyBook):
        return policy
    return PolicyBook(policy, teams, snapshot.namespace_annotations)


def _lookup(telemetry: TelemetrySnapshot | TelemetrySet):
    """``telemetry_key -> TelemetrySnapshot | None``: one snapshot answers for every policy."""
    if isinstance(telemetry, TelemetrySnapshot):
        return lambda key: telemetry
    return telemetry.get


def detect_idle(
    snapshot: ClusterSnapshot,
    telemetry: TelemetrySnapshot | TelemetrySet,
    prices: PriceBook,
    policy: Policy | PolicyBook,
    teams: TeamDirectory,
    now: datetime,
    index: OwnerIndex | None = None,
) -> list[Finding]:
    """Find the consumers (:mod:`actions.detect.consumers`) whose every GPU was idle for the whole
    window of the policy in force in their namespace (``index``: the snapshot's, when the caller
    has built it).

    ``policy`` is one Policy for every namespace, or a :class:`~actions.policy.namespaces.PolicyBook`
    (per team and namespace); a plain Policy is combined with the teams' overrides and the
    snapshot's namespace annotations. ``telemetry`` is one snapshot, or a mapping from
    :meth:`Policy.telemetry_key` to the snapshot of that query (one per distinct window); a key
    missing from it makes that namespace's pods "unknown". A consumer with several pods (a
    multi-pod Workload) is idle only when all its pods are. Pods that are not Running, younger
    than the warm-up, or opted out (on the pod or on the owning object) are skipped; a pod whose
    GPUs lack telemetry is "unknown" and skipped. Returns findings sorted by USD per hour,
    highest first.
    """
    book = _as_book(policy, teams, snapshot)
    snapshot_for = _lookup(telemetry)
    index = index or OwnerIndex(snapshot)
    by_pod_cache: dict[tuple, dict[tuple[str, str], list[GpuTelemetry]]] = {}

    def gpus_of(p: Policy, namespace: str, pod: str) -> list[GpuTelemetry] | None:
        key = p.telemetry_key()
        if key not in by_pod_cache:
            snap = snapshot_for(key)
            if snap is None:
                return None
            table: dict[tuple[str, str], list[GpuTelemetry]] = {}
            for g in snap.gpus:
                table.setdefault((g.namespace, g.pod), []).append(g)
            by_pod_cache[key] = table
        return by_pod_cache[key].get((namespace, pod), [])

    groups = running_consumers(snapshot.pods, index, book.for_namespace)

    findings = []
    for consumer, pods in groups.values():
        pol = book.for_namespace(consumer.namespace)
        if opted_out(dict(consumer.annotations), pol, now) or any(
            opted_out(dict(p.annotations), pol, now) for p in pods
        ):
            continue
        warmup = timedelta(seconds=pol.warmup_seconds)
        if any(now - (p.started or p.created) < warmup for p in pods):
            continue
        evidence: list[GpuEvidence] = []
        idle_since: list[datetime] = []
        complete = True
        for p in pods:
            gpus = gpus_of(pol, p.namespace, p.name)
            if gpus is None or len(gpus) < p.gpus:
                complete = False  # a GPU without telemetry is unknown, so the pod is too
                break
            if any(_not_idle(g, pol) for g in gpus):
                complete = False  # most GPUs are busy: judged without building their evidence
                break
            for g in gpus:
                evidence.append(judge_gpu(g, pol))
                since = max(
                    t for t in (g.last_active, g.first_sample, p.started or p.created) if t is not None
                )
                idle_since.append(since)
        if not complete or not evidence or any(e.verdict != "idle" for e in evidence):
            continue
        window = snapshot_for(pol.telemetry_key()).window_seconds
        first = pods[0]
        gpu_model = evidence[0].model_name
        quote = price_for(first, gpu_model, snapshot, prices, pol)
        gpus = sum(gpu_equivalents_of(p, snapshot) for p in pods)
        devices: dict[str, int] = {}
        for p in pods:
            for resource, count in p.requested.items():
                devices[resource] = devices.get(resource, 0) + count
        idle_seconds = max(window, (now - max(idle_since)).total_seconds())
        findings.append(
            Finding(
                kind=consumer.finding_kind,
                key=consumer.key,
                namespace=consumer.namespace,
                name=consumer.name,
                team=teams.team_for(consumer.namespace).name,
                consumer_kind=consumer.consumer_kind,
                pods=tuple(p.name for p in pods),
                node=first.node,
                gpus=round(gpus, 6),
                gpu_model=gpu_model,
                idle_seconds=idle_seconds,
                usd_per_hour=round(gpus * quote.usd_per_gpu_hour, 4),
                price=quote,
                evidence=tuple(evidence),
                detected_at=now,
                window_seconds=window,
                action=consumer.action,
                job=consumer.job,
                workload=consumer.workload,
                handling=book.handling(consumer.namespace),
                report_reason=consumer.report_reason,
                devices=devices,
            )
        )
    findings.sort(key=lambda f: (-f.usd_per_hour, f.key))
    return findings
