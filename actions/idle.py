"""The idle-GPU detector: which notebooks and Kueue Workloads hold GPUs that do nothing.

Pure: ``detect_idle`` takes a cluster snapshot, the telemetry over a window, prices, policy, teams
and an explicit ``now``, and returns findings with their evidence, dollars and proposed action.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from actions.model import (
    ENGINE_ACTIVE,
    ActionVerb,
    CapacityType,
    ClusterSnapshot,
    Finding,
    GpuEvidence,
    GpuPod,
    GpuTelemetry,
    ObjectRef,
    PriceQuote,
    ProposedAction,
    ScalableOwner,
    TelemetrySnapshot,
    Workload,
    parse_time,
)
from actions.policy import Policy, TeamDirectory
from actions.prices import PriceBook, PriceNotFound

NOTEBOOK_LABEL = "notebook-name"  # set by the Kubeflow Notebook controller on its pods
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


@dataclass(frozen=True)
class Consumer:
    """Who holds a pod's GPUs, as far as an action is concerned."""

    finding_kind: str  # "idle-notebook" | "idle-workload"
    consumer_kind: str  # "Notebook" | "JupyterHub" | "StatefulSet" | "Deployment" | "Workload" | "Pod"
    namespace: str
    name: str
    action: ProposedAction | None
    annotations: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.finding_kind}/{self.namespace}/{self.name}"


def judge_gpu(g: GpuTelemetry, policy: Policy) -> GpuEvidence:
    """Decide one GPU: ``idle`` only when every signal agrees over the whole window.

    Missing or sparse samples make the verdict ``unknown``, never ``idle``. Engine activity at or
    under ``policy.engine_idle_pct`` alone is not enough: on a real H100, light serving reads
    GPU_UTIL 0% at 190-250 W, so mean power must also sit at or under the model's idle ceiling.
    """
    ceiling = policy.idle_power_ceiling(g.model_name)
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
    if g.mean_power_w is None:
        return verdict("unknown", "no power signal (DCGM_FI_DEV_POWER_USAGE)")
    if ceiling is None:
        return verdict(
            "unknown",
            f"no idle power ceiling known for {g.model_name!r}: set policy.idle_power_watts",
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
        f"(idle ceiling {ceiling:.0f} W)",
    )


class ClusterIndex:
    """Lookups over a snapshot by namespace and name, built once per sweep so that classifying
    every pod stays linear in the size of the cluster."""

    def __init__(self, snapshot: ClusterSnapshot):
        self.notebooks = {(n.namespace, n.name): n for n in snapshot.notebooks}
        self.statefulsets = {(s.namespace, s.name): s for s in snapshot.statefulsets}
        self.deployments = {(d.namespace, d.name): d for d in snapshot.deployments}
        self.workload_by_owner: dict[tuple[str, str, str], Workload] = {}
        for wl in snapshot.workloads:
            for o in wl.owners:
                self.workload_by_owner.setdefault((wl.namespace, o.kind, o.name), wl)

    def scalable_owner(self, pod: GpuPod) -> ScalableOwner | None:
        """The StatefulSet or Deployment that owns ``pod``, or ``None``.

        A Deployment owns its pods through a ReplicaSet named ``<deployment>-<pod-template-hash>``;
        the snapshot holds no ReplicaSets, so the Deployment is found by that naming rule.
        """
        for ref in pod.owners:
            if ref.kind == "StatefulSet":
                return self.statefulsets.get((pod.namespace, ref.name))
            if ref.kind == "ReplicaSet":
                suffix = pod.labels.get("pod-template-hash")
                if suffix and ref.name.endswith("-" + suffix):
                    return self.deployments.get((pod.namespace, ref.name[: -len(suffix) - 1]))
        return None

    def workload_of(self, pod: GpuPod) -> Workload | None:
        """The Kueue Workload that admitted ``pod``: the one owned by the pod's Job (or other
        owner), or by the pod itself (Kueue's pod integration). ``None`` if there is none."""
        for kind, name in [(o.kind, o.name) for o in pod.owners] + [("Pod", pod.name)]:
            wl = self.workload_by_owner.get((pod.namespace, kind, name))
            if wl is not None:
                return wl
        return None


def classify(pod: GpuPod, index: ClusterIndex, policy: Policy) -> Consumer | None:
    """The consumer a GPU pod belongs to, or ``None`` when the bot has no business with it
    (serving, plain Jobs outside Kueue, ...). Notebooks win over Kueue when both apply."""
    ns = pod.namespace
    nb_name = pod.labels.get(NOTEBOOK_LABEL)
    nb = index.notebooks.get((ns, nb_name)) if nb_name else None
    if nb is not None:
        if nb.stopped:
            return None
        target = ObjectRef("kubeflow.org/v1", "Notebook", ns, nb.name)
        return Consumer(
            "idle-notebook",
            "Notebook",
            ns,
            nb.name,
            ProposedAction(ActionVerb.STOP_NOTEBOOK, target, f"stop Notebook {ns}/{nb.name}"),
            tuple(nb.annotations.items()),
        )
    if pod.labels.get("component") == "singleuser-server":
        user = pod.labels.get("hub.jupyter.org/username", pod.name)
        # KubeSpawner pods have no owner to scale; only the Hub can stop them, so report only.
        return Consumer("idle-notebook", "JupyterHub", ns, user, None)
    if policy.notebook_selector and all(
        pod.labels.get(k) == v for k, v in policy.notebook_selector.items()
    ):
        owner = index.scalable_owner(pod)
        if owner is None:
            return Consumer("idle-notebook", "Pod", ns, pod.name, None)
        target = ObjectRef("apps/v1", owner.kind, ns, owner.name)
        return Consumer(
            "idle-notebook",
            owner.kind,
            ns,
            owner.name,
            ProposedAction(
                ActionVerb.SCALE_TO_ZERO,
                target,
                f"scale {owner.kind} {ns}/{owner.name} from {owner.replicas} to 0 replicas",
            ),
            tuple(owner.annotations.items()),
        )
    wl = index.workload_of(pod)
    if wl is not None and wl.admitted and wl.active and not wl.finished:
        target = ObjectRef(wl.api_version, "Workload", ns, wl.name)
        return Consumer(
            "idle-workload",
            "Workload",
            ns,
            wl.name,
            ProposedAction(
                ActionVerb.DEACTIVATE_WORKLOAD,
                target,
                f"deactivate Kueue Workload {ns}/{wl.name} (spec.active=false; its pods are evicted)",
            ),
            tuple(wl.annotations.items()),
        )
    return None


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


def price_for(pod: GpuPod, gpu_model: str, snapshot: ClusterSnapshot, prices: PriceBook) -> PriceQuote:
    """What one of ``pod``'s GPUs costs per hour, from its node's instance and capacity type."""
    node = snapshot.nodes.get(pod.node or "")
    instance_type = node.instance_type if node else None
    capacity = node.capacity_type if node else CapacityType.UNKNOWN
    try:
        return prices.quote(instance_type, capacity, gpu_model)
    except PriceNotFound as e:
        return PriceQuote(0.0, capacity, f"no price: {e}", "", "none", instance_type, gpu_model)


def detect_idle(
    snapshot: ClusterSnapshot,
    telemetry: TelemetrySnapshot,
    prices: PriceBook,
    policy: Policy,
    teams: TeamDirectory,
    now: datetime,
) -> list[Finding]:
    """Find notebooks and Kueue-admitted Workloads whose every GPU was idle for the whole window.

    A consumer with several pods (a multi-pod Workload) is idle only when all its pods are. Pods
    that are not Running, younger than ``policy.warmup_seconds``, or opted out (on the pod or on
    the owning object) are skipped; a pod whose GPUs lack telemetry is "unknown" and skipped.
    Returns findings sorted by USD per hour, highest first.
    """
    index = ClusterIndex(snapshot)
    by_pod: dict[tuple[str, str], list[GpuTelemetry]] = {}
    for g in telemetry.gpus:
        by_pod.setdefault((g.namespace, g.pod), []).append(g)
    groups: dict[str, tuple[Consumer, list[GpuPod]]] = {}
    for pod in snapshot.pods:
        if pod.phase != "Running" or pod.gpus <= 0:
            continue
        consumer = classify(pod, index, policy)
        if consumer is not None:
            groups.setdefault(consumer.key, (consumer, []))[1].append(pod)

    findings = []
    warmup = timedelta(seconds=policy.warmup_seconds)
    for consumer, pods in groups.values():
        if opted_out(dict(consumer.annotations), policy, now) or any(
            opted_out(dict(p.annotations), policy, now) for p in pods
        ):
            continue
        if any(now - (p.started or p.created) < warmup for p in pods):
            continue
        evidence: list[GpuEvidence] = []
        idle_since: list[datetime] = []
        complete = True
        for p in pods:
            gpus = by_pod.get((p.namespace, p.name), [])
            if len(gpus) < p.gpus:
                complete = False  # a GPU without telemetry is unknown, so the pod is too
                break
            for g in gpus:
                evidence.append(judge_gpu(g, policy))
                since = max(
                    t for t in (g.last_active, g.first_sample, p.started or p.created) if t is not None
                )
                idle_since.append(since)
        if not complete or not evidence or any(e.verdict != "idle" for e in evidence):
            continue
        first = pods[0]
        gpu_model = evidence[0].model_name
        quote = price_for(first, gpu_model, snapshot, prices)
        gpus = sum(p.gpus for p in pods)
        idle_seconds = max(
            telemetry.window_seconds, (now - max(idle_since)).total_seconds()
        )
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
                gpus=gpus,
                gpu_model=gpu_model,
                idle_seconds=idle_seconds,
                usd_per_hour=round(gpus * quote.usd_per_gpu_hour, 4),
                price=quote,
                evidence=tuple(evidence),
                detected_at=now,
                window_seconds=telemetry.window_seconds,
                action=consumer.action,
            )
        )
    findings.sort(key=lambda f: (-f.usd_per_hour, f.key))
    return findings
