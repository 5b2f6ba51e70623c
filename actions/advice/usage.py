"""From the cluster and its GPU history to what advice judges: one
:class:`~actions.advice.model.ConsumerUsage` per consumer the sweep would name (same owner walk,
:func:`actions.detect.consumers.classify`) and one :class:`~actions.advice.model.TeamBaseline` per team
and GPU family. Pure.

A consumer restarts cleanly when a Kueue Workload admitted it (Kueue requeues an evicted
Workload), when it is a Job whose ``spec.backoffLimit`` is above 0 (the Job controller makes a
new pod; unset means Kubernetes' default of 6), or when it or its pod carries
``gpu-cost-bot/interruptible: "true"``. Its role: a notebook (Kubeflow Notebook, JupyterHub
server, ``policy.notebook_selector``), serving (:data:`SERVING_KINDS`, under Kueue or not) or a
job (the rest).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping, Sequence

from actions.advice.model import INTERRUPTIBLE_ANNOTATION, ConsumerUsage, ReservedUse, TeamBaseline
from actions.advice.targets import NodeOffer, can_land, node_offer
from actions.detect.consumers import Consumer, running_consumers
from actions.detect.idle import capacity_of, gpu_equivalents_of
from actions.detect.owners import OwnerIndex
from actions.hardware.gpus import GPU_RESOURCE, gpu_family
from actions.model.kube import CapacityType, GpuPod, KubeObject, Node, ObjectRef
from actions.model.snapshot import ClusterSnapshot
from actions.policy.namespaces import PolicyBook
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory

ROLES = {"idle-notebook": "notebook", "idle-serving": "serving", "idle-workload": "job"}
# What has users waiting on it whoever admitted it: Kueue admits a RayService or a Deployment as a
# Workload too (finding kind idle-workload), and an interruption of either is an outage.
SERVING_KINDS = frozenset({"Deployment", "StatefulSet", "LeaderWorkerSet", "RayService", "InferenceService"})
JOB_DEFAULT_BACKOFF_LIMIT = 6  # Kubernetes batch/v1 Job spec.backoffLimit default
# Kueue (kubernetes-sigs/kueue pkg/controller/constants QueueLabel, pkg/constants
# ManagedByKueueLabelKey): the queue an object or its pod template is submitted to, and the label
# Kueue's Deployment/StatefulSet webhooks put on the pods they manage. Releases before the removal
# of the deprecated queue annotation (#7271) read the same key as an annotation too.
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_MANAGED = "kueue.x-k8s.io/managed"


def consumer_pods(
    snapshot: ClusterSnapshot, policy: Policy | PolicyBook, teams: TeamDirectory
) -> dict[str, tuple[Consumer, list[GpuPod]]]:
    """Running GPU pods grouped by the consumer holding them (key -> consumer, its pods), as the
    sweep groups them. Pure."""
    book = policy if isinstance(policy, PolicyBook) else PolicyBook(policy, teams, snapshot.namespace_annotations)
    index = OwnerIndex(snapshot)
    return running_consumers(snapshot.pods, index, book.for_namespace)


def multi_pod_consumers(groups: Mapping[str, tuple[Consumer, list[GpuPod]]]) -> dict[str, tuple[str, list[str]]]:
    """Consumers of more than one pod: key -> (namespace, pod names), for the busy query."""
    return {k: (c.namespace, [p.name for p in pods]) for k, (c, pods) in groups.items() if len(pods) > 1}


def multi_container_pods(groups: Mapping[str, tuple[Consumer, list[GpuPod]]]) -> list[tuple[str, str]]:
    """(namespace, pod) of each one-pod consumer whose pod has several GPU containers, for the
    per-container busy query."""
    return sorted((p.namespace, p.name) for _, pods in groups.values() if len(pods) == 1
                  for p in pods if len(p.containers) > 1)


def team_namespaces(snapshot: ClusterSnapshot, teams: TeamDirectory) -> dict[str, list[str]]:
    """Every configured team's namespaces, and each namespace of a running GPU pod that no team
    names as a team of its own (as the sweep does)."""
    out = {name: list(t.namespaces) for name, t in teams.teams.items()}
    for pod in snapshot.pods:
        team = teams.team_for(pod.namespace)
        out.setdefault(team.name, list(team.namespaces))
    return out


def _role(consumer: Consumer) -> str:
    if consumer.finding_kind != "idle-notebook" and consumer.consumer_kind in SERVING_KINDS:
        return "serving"
    return ROLES.get(consumer.finding_kind, "job")


def _restarts_cleanly(consumer: Consumer, pods: Sequence[GpuPod], snapshot: ClusterSnapshot) -> str | None:
    annotations = dict(consumer.annotations)
    if annotations.get(INTERRUPTIBLE_ANNOTATION) == "true" or any(
        p.annotations.get(INTERRUPTIBLE_ANNOTATION) == "true" for p in pods
    ):
        return f'annotation {INTERRUPTIBLE_ANNOTATION}: "true"'
    if consumer.workload:
        return f"Kueue Workload {consumer.workload}: requeued when evicted"
    if consumer.consumer_kind == "Job":
        job = next(
            (o for o in snapshot.objects if isinstance(o, KubeObject) and o.kind == "Job"
             and o.namespace == consumer.namespace and o.name == consumer.name),
            None,
        )
        if job is not None:
            limit = job.backoff_limit if job.backoff_limit is not None else JOB_DEFAULT_BACKOFF_LIMIT
            if limit > 0:
                return f"Job backoffLimit {limit}: a failed pod is replaced"
    return None


def _owner_of(ref: ObjectRef | None, snapshot: ClusterSnapshot):
    """The snapshot's object ``ref`` names (a StatefulSet, Deployment, Notebook or other owner)."""
    if ref is None:
        return None
    pools = {"StatefulSet": snapshot.statefulsets, "Deployment": snapshot.deployments, "Notebook": snapshot.notebooks}
    for o in pools.get(ref.kind, snapshot.objects):
        if o.namespace == ref.namespace and o.name == ref.name and getattr(o, "kind", ref.kind) == ref.kind:
            return o
    return None


def kueue_managed(consumer: Consumer, pods: Sequence[GpuPod], snapshot: ClusterSnapshot) -> str | None:
    """Why Kueue manages ``consumer`` (its Workload, or its object's or pods' queue-name label or
    annotation, or the pods' ``kueue.x-k8s.io/managed: "true"``), ``None`` when nothing says it does."""
    if consumer.workload:
        return f"Kueue Workload {consumer.workload}"
    owner = _owner_of(consumer.job, snapshot)
    holders = [(str(consumer.job), owner.labels, owner.annotations)] if owner is not None else []
    holders += [(f"pod {p.namespace}/{p.name}", p.labels, p.annotations) for p in pods]
    for where, labels, notes in holders:
        queue = labels.get(KUEUE_QUEUE) or notes.get(KUEUE_QUEUE)
        if queue:
            return f'{where} is in Kueue queue {queue} ({KUEUE_QUEUE})'
        if labels.get(KUEUE_MANAGED) == "true":
            return f'{where} is managed by Kueue ({KUEUE_MANAGED}: "true")'
    return None


class Landing:
    """What the GPU nodes of a snapshot offer, and which of them a set of pods can land on,
    computed once per node and once per distinct set of scheduling constraints."""

    def __init__(self, nodes: Iterable[Node]):
        self.nodes = sorted((n for n in nodes if n.gpu_allocatable or n.gpu_devices), key=lambda n: n.name)
        self.offers = {n.name: node_offer(n) for n in self.nodes}
        self._seen: dict[tuple, tuple[NodeOffer, ...]] = {}

    def of(self, pods: Sequence[GpuPod]) -> tuple[NodeOffer, ...]:
        """The offers of the nodes every one of ``pods`` can land on, by node name. Pure."""
        key = tuple(sorted({(frozenset(p.node_selector.items()), p.node_affinity, p.tolerations) for p in pods},
                           key=repr))
        if key not in self._seen:
            self._seen[key] = tuple(self.offers[n.name] for n in self.nodes if all(can_land(p, n) for p in pods))
        return self._seen[key]


def consumer_usages(
    snapshot: ClusterSnapshot,
    groups: Mapping[str, tuple[Consumer, list[GpuPod]]],
    pods: Iterable,
    consumer_busy: Mapping[str, float],
    policy: Policy | PolicyBook,
    teams: TeamDirectory,
    window_seconds: float,
    container_busy: Mapping[tuple[str, str, str], float] | None = None,
) -> list[ConsumerUsage]:
    """One ConsumerUsage per consumer in ``groups`` from the per-pod history ``pods``
    (:class:`~actions.model.history.PodHistory`-shaped: namespace, pod, model_name,
    peak_fb_mib, peak_engine_pct, engine_signal, gpu_hours, busy_gpus, mean_power_w) and ``consumer_busy``
    (key -> GPUs busy at once, for consumers of several pods) and ``container_busy``
    ((namespace, pod, container) -> its GPUs busy at once, for a one-pod consumer's pod of
    several GPU containers). A consumer whose pods have no history still gets one, with ``None``
    figures; each carries what the nodes its pods can land on offer and whether Kueue manages
    it. Pure."""
    book = policy if isinstance(policy, PolicyBook) else PolicyBook(policy, teams, snapshot.namespace_annotations)
    history = {(h.namespace, h.pod): h for h in pods}
    where = Landing(snapshot.nodes.values())
    out = []
    for key, (consumer, members) in sorted(groups.items()):
        seen = [history[(p.namespace, p.name)] for p in members if (p.namespace, p.name) in history]
        node = snapshot.nodes.get(members[0].node or "")
        mig_node = node is not None and node.mig_profile() is not None
        whole = 0 if mig_node else sum(p.requested.get(GPU_RESOURCE, 0) for p in members)
        if len(members) > 1:
            busy = consumer_busy.get(key)
        else:
            busy = seen[0].busy_gpus if seen else None

        def most(attr: str) -> float | None:
            values = [getattr(h, attr) for h in seen if getattr(h, attr) is not None]
            return max(values) if values else None

        pol = book.for_namespace(consumer.namespace)
        hours = [h.gpu_hours for h in seen if h.gpu_hours is not None]
        model = next((h.model_name for h in seen if h.model_name), None) or (node.gpu_product if node else None) or ""
        signal = next((h.engine_signal for h in seen if h.engine_signal), None)
        out.append(ConsumerUsage(
            key=key, team=teams.team_for(consumer.namespace).name, namespace=consumer.namespace,
            consumer_kind=consumer.consumer_kind, name=consumer.name, role=_role(consumer),
            pods=tuple(p.name for p in members), whole_gpus=whole,
            gpus=round(sum(gpu_equivalents_of(p, snapshot) for p in members), 6), gpu_model=model,
            instance_type=node.instance_type if node else None,
            capacity=capacity_of(node, pol), window_seconds=window_seconds,
            gpu_hours=sum(hours) if hours else None, peak_fb_mib=most("peak_fb_mib"),
            peak_engine_pct=most("peak_engine_pct"), engine_signal=signal, busy_gpus=busy,
            mean_power_w=most("mean_power_w"), idle_power_ceiling_w=pol.idle_ceiling(model)[0] if model else None,
            restarts_cleanly=_restarts_cleanly(consumer, members, snapshot),
            annotations=dict(consumer.annotations), workload=consumer.workload, target=consumer.job,
            containers=_containers(members, container_busy or {}) if not mig_node else (),
            landing=where.of(members), kueue=kueue_managed(consumer, members, snapshot),
        ))
    return out


def _containers(members: Sequence[GpuPod], busy: Mapping[tuple[str, str, str], float]) -> tuple:
    """A one-pod consumer's GPU containers when there are several: (name, whole GPUs, GPUs busy
    at once or None)."""
    if len(members) != 1 or len(members[0].containers) < 2:
        return ()
    p = members[0]
    return tuple((name, dict(requested).get(GPU_RESOURCE, 0), busy.get((p.namespace, p.name, name)))
                 for name, requested in p.containers)


def team_baselines(
    snapshot: ClusterSnapshot, teams_history: Iterable, policy: Policy | PolicyBook, teams: TeamDirectory,
    commitment_window_seconds: float,
) -> list[TeamBaseline]:
    """One TeamBaseline per team and GPU model of ``teams_history``
    (:class:`~actions.model.history.TeamHistory`-shaped), bought as the team's
    nodes of that family are now (the most common instance type and its capacity type). Pure."""
    book = policy if isinstance(policy, PolicyBook) else PolicyBook(policy, teams, snapshot.namespace_annotations)
    out = []
    for h in teams_history:
        family = gpu_family(h.model_name)
        bought: Counter = Counter()
        for pod in snapshot.pods:
            node = snapshot.nodes.get(pod.node or "")
            if node is None or teams.team_for(pod.namespace).name != h.team or node.gpu_family != family:
                continue
            bought[(node.instance_type, capacity_of(node, book.for_namespace(pod.namespace)))] += pod.gpus
        (instance_type, capacity), _ = bought.most_common(1)[0] if bought else ((None, CapacityType.ON_DEMAND), 0)
        out.append(TeamBaseline(
            team=h.team, gpu_model=h.model_name, baseline_gpus=h.baseline_gpus,
            hours_in_use=min(h.hours_in_use, commitment_window_seconds / 3600),
            hours=commitment_window_seconds / 3600, instance_type=instance_type, capacity=capacity,
            peak_gpus=h.peak_gpus,
        ))
    return out


def reserved_nodes(snapshot: ClusterSnapshot, policy: Policy | PolicyBook) -> list[str]:
    """GPU nodes of reserved capacity (capacity type ``reserved``, or a node pool in
    ``policy.reserved_nodepools``), by name."""
    base = policy.base if isinstance(policy, PolicyBook) else policy
    return sorted(n.name for n in snapshot.nodes.values()
                  if n.gpu_capacity and capacity_of(n, base) is CapacityType.RESERVED)


def reserved_uses(snapshot: ClusterSnapshot, history: Iterable, policy: Policy | PolicyBook,
                  commitment_window_seconds: float) -> list[ReservedUse]:
    """One ReservedUse per GPU model of ``history``
    (:class:`~actions.model.history.ReservedHistory`-shaped: model_name, gpus,
    idle_share), with the reserved nodes of that family and their most common instance type."""
    names = reserved_nodes(snapshot, policy)
    out = []
    for h in history:
        family = gpu_family(h.model_name)
        nodes = [snapshot.nodes[n] for n in names if snapshot.nodes[n].gpu_family == family]
        types = Counter(n.instance_type for n in nodes if n.instance_type)
        out.append(ReservedUse(
            gpu_model=h.model_name, gpus=h.gpus, idle_share=h.idle_share, hours=commitment_window_seconds / 3600,
            instance_type=types.most_common(1)[0][0] if types else None, nodes=tuple(n.name for n in nodes),
        ))
    return out
