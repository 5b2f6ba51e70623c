"""GPUs that no pod requests: a node's GPUs that sat without a pod for the whole window.

An autoscaler that provisions an 8-GPU node for a 2-GPU pod leaves six GPUs paid for and
invisible to every per-pod view. A node's GPUs count as unrequested when the snapshot shows more
physical GPUs than its pods request (MIG slices and shared replicas as fractions) *and* dcgm-exporter
reported that many GPUs (or MIG instances) of the node without a pod for the whole window.
dcgm-exporter reports every GPU of a node, requested or not; a node it reports fewer GPUs of than the
node has is one whose telemetry is incomplete, and nothing is concluded about it. A GPU no pod
requests may still carry a ``pod`` label: dcgm-exporter's own, from the scrape's target labels
(prometheus-operator puts the scraped pod's ``pod``/``namespace`` on every series; the exporter's
labels win only where it sets them, and its Helm chart's ServiceMonitor, ``honorLabels: false``,
renames those to ``exported_pod``). A series attributed to one of the node's DaemonSet pods that
requests no GPU is therefore counted as a GPU no pod requests.

Such a finding belongs to the cluster's admins (:data:`~actions.policy.teams.ADMIN_TEAM`). On an empty
Karpenter node (no pods but DaemonSets) the proposal is to delete its NodeClaim, which Karpenter
drains and terminates; there is nothing to restore, since Karpenter provisions again for pods that
need GPUs. On a partly used node it is report-only, with the GPUs that bin-packing would free.
Either way the finding says why Karpenter may not have consolidated the node itself. Pure.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from actions.detect.idle import capacity_of, judge_gpu
from actions.model.disruption import DO_NOT_DISRUPT, EMPTY, UNDERUTILIZED, protected_until
from actions.model.findings import ActionVerb, Finding, ProposedAction
from actions.model.kube import KARPENTER_GROUP, GpuPod, Node, ObjectRef
from actions.model.quote import PriceQuote
from actions.model.snapshot import ClusterSnapshot
from actions.model.telemetry import GpuTelemetry, TelemetrySnapshot
from actions.policy.rules import Policy
from actions.policy.teams import ADMIN_TEAM
from actions.pricing.book import PriceBook, PriceNotFound
from actions.text import usd

KIND = "unrequested-gpus"
NODECLAIM_API_VERSION = f"{KARPENTER_GROUP}/v1"


def _requested(node: Node, pods: list[GpuPod]) -> float:
    """Physical-GPU equivalents ``pods`` (those bound to ``node``) request now (Running or
    Pending: a scheduled pod keeps its devices while its images pull)."""
    return sum(node.equivalents(p.requested) for p in pods)


def _podless(
    node: Node, series: list[GpuTelemetry], policy: Policy, gpu_pods: set[tuple[str, str]]
) -> list[GpuTelemetry]:
    """The node's GPUs (or MIG instances; ``series`` its telemetry) dcgm-exporter saw without a
    pod for the whole window:
    series with no pod, or with the pod of one of the node's DaemonSet pods that is not among
    ``gpu_pods`` ((namespace, name) of every pod requesting GPUs): the exporter's own (see the
    module docstring)."""

    def free(g: GpuTelemetry) -> bool:
        return not g.pod or (f"{g.namespace}/{g.pod}" in node.daemonset_pods and (g.namespace, g.pod) not in gpu_pods)

    return [g for g in series if free(g) and g.coverage >= policy.min_coverage]


def _confirmed(node: Node, podless: list[GpuTelemetry]) -> float:
    """Physical GPUs the podless series stand for: a whole GPU once however many series it has,
    a MIG instance as its share of the GPU."""
    whole = {g.gpu for g in podless if not g.mig_profile}
    slices = sum(node.equivalents({f"nvidia.com/mig-{g.mig_profile}": 1}) for g in podless if g.mig_profile)
    return len(whole) + slices


def why_not_consolidated(node: Node, snapshot: ClusterSnapshot, now: datetime) -> list[str]:
    """Why an autoscaler may have left ``node`` up at ``now``, each as a sentence: outside
    Karpenter, a pod or the node asking not to be disrupted, a NodePool that never consolidates,
    or a disruption budget of 0 for the reason Karpenter would have (``Empty`` for a node without
    workload pods, else ``Underutilized``)."""
    reasons = []
    managed = node.nodeclaim or node.labels.get("karpenter.sh/nodepool")
    if not managed:
        reasons.append("the node is not managed by Karpenter (no NodeClaim): no autoscaler consolidates it here")
    if protected_until(node.annotations.get(DO_NOT_DISRUPT), None, on_pod=False):
        reasons.append(f"the node is annotated {DO_NOT_DISRUPT}: \"{node.annotations[DO_NOT_DISRUPT]}\"")
    protecting = node.protected_by(now)
    if protecting:
        shown = ", ".join(protecting[:5]) + (" and more" if len(protecting) > 5 else "")
        reasons.append(f"pod(s) {shown} are annotated {DO_NOT_DISRUPT}")
    pool = snapshot.nodepools.get(node.nodepool or "") if managed else None
    if pool is not None:
        if (pool.consolidate_after or "").strip() == "Never":
            reasons.append(f"NodePool {pool.name} has consolidateAfter: Never")
        budget = pool.forbidding(EMPTY if node.workload_pods == 0 else UNDERUTILIZED, now)
        if budget is not None:
            reasons.append(f"NodePool {pool.name} has a disruption budget of 0 nodes ({budget.describe()})")
        if pool.consolidation_policy == "WhenEmpty" and node.workload_pods:
            reasons.append(f"NodePool {pool.name} consolidates only empty nodes (WhenEmpty), and {node.workload_pods} pod(s) run here")
    return reasons


def _quote(node: Node, model: str | None, prices: PriceBook, policy: Policy) -> PriceQuote:
    capacity = capacity_of(node, policy)
    try:
        return prices.quote(node.instance_type, capacity, model)
    except PriceNotFound as e:
        return PriceQuote(0.0, capacity, f"no price: {e}", "", "none", node.instance_type, model)


def unrequested_gpus(
    snapshot: ClusterSnapshot, telemetry: TelemetrySnapshot, prices: PriceBook, policy: Policy, now: datetime
) -> list[Finding]:
    """One finding per node with GPUs no pod requested for the whole window: ``gpus`` the
    physical GPUs unrequested now and confirmed by telemetry, priced at the node's instance and
    capacity type (USD per hour), ``notes`` why it was not consolidated and, on a partly used
    node, what bin-packing would free. The proposed action is to delete the NodeClaim of an
    empty Karpenter node; None otherwise. Sorted by USD per hour, highest first."""
    findings = []
    gpu_pods = {(p.namespace, p.name) for p in snapshot.pods}
    # By node once: a scan of every pod and series per node is quadratic (20 s at 1,250 nodes).
    pods_on: dict[str | None, list[GpuPod]] = defaultdict(list)
    for p in snapshot.pods:
        pods_on[p.node].append(p)
    series_on: dict[str | None, list[GpuTelemetry]] = defaultdict(list)
    for g in telemetry.gpus:
        series_on[g.node].append(g)
    for node in sorted(snapshot.nodes.values(), key=lambda n: n.name):
        physical = node.physical_gpus
        if physical <= 0:
            continue
        # Series without a pod first: on a busy fleet almost no node has one, and the pods'
        # requests need not be added up for it.
        podless = _podless(node, series_on.get(node.name, []), policy, gpu_pods)
        if not podless:
            continue
        free = physical - _requested(node, pods_on.get(node.name, []))
        reported = {g.gpu.split("/")[0] for g in series_on.get(node.name, [])}
        if free <= 1e-9 or len(reported) < round(physical):
            continue
        gpus = round(min(free, _confirmed(node, podless)), 6)
        if gpus <= 0:
            continue
        model = node.gpu_product or podless[0].model_name
        quote = _quote(node, model, prices, policy)
        starts = [g.first_sample for g in podless if g.first_sample is not None]
        since = max(starts) if starts else now - timedelta(seconds=telemetry.window_seconds)
        empty = node.workload_pods == 0
        notes = why_not_consolidated(node, snapshot, now)
        action = None
        if empty and node.nodeclaim and not node.protected_by(now):
            target = ObjectRef(NODECLAIM_API_VERSION, "NodeClaim", "", node.nodeclaim)
            action = ProposedAction(
                ActionVerb.DELETE_NODECLAIM, target,
                f"delete NodeClaim {node.nodeclaim} (Karpenter drains and terminates node {node.name}; nothing to "
                "restore: Karpenter provisions again for pods that need GPUs)",
            )
        elif not empty:
            notes.append(
                f"{node.workload_pods} pod(s) keep the node: bin-packing them onto other nodes would free "
                f"{gpus:g} GPU(s), {usd(quote.usd_per_gpu_hour * gpus)}/h"
            )
        findings.append(
            Finding(
                kind=KIND,
                key=f"{KIND}/{node.name}",
                namespace="",
                name=node.name,
                team=ADMIN_TEAM,
                consumer_kind="Node",
                pods=(),
                node=node.name,
                gpus=gpus,
                gpu_model=model,
                idle_seconds=max(telemetry.window_seconds, (now - since).total_seconds()),
                usd_per_hour=round(gpus * quote.usd_per_gpu_hour, 4),
                price=quote,
                evidence=tuple(judge_gpu(g, policy) for g in podless),
                detected_at=now,
                window_seconds=telemetry.window_seconds,
                action=action,
                devices=dict(node.gpu_devices),
                notes=tuple(notes),
            )
        )
    findings.sort(key=lambda f: (-f.usd_per_hour, f.key))
    return findings
