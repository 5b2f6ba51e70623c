"""Kueue queue state: who waits for which GPUs, and where the same GPU type sits idle.

Pure: :func:`queue_report` takes a ``ClusterSnapshot``, the idle sweep's findings, the teams and an
explicit ``now`` and returns, per LocalQueue and per ClusterQueue, the pending and admitted
Workloads, the age of the oldest pending one and what it asks for. For each pending Workload it
lists the idle GPUs of the same family other teams' pods request, so a message can say "training waits
3h for 8 H100; research holds 1 idle H100 in notebooks (request #12 awaits approval)".

Where each answer comes from (kueue v0.19.2 apis/kueue/v1beta2):

- A pending Workload has no ``status.admission``, so its ClusterQueue is not on it: it is its
  LocalQueue's ``spec.clusterQueue``. Only a snapshot without LocalQueue objects (an old dump)
  falls back to the ClusterQueue the LocalQueue's admitted Workloads went through.
- Its candidate flavors are the ResourceFlavors its ClusterQueue's ``spec.resourceGroups`` offer
  for GPU resources, and a flavor's GPU model is read from its ``spec.nodeLabels``: the
  ``nvidia.com/gpu.product`` label there, else the GPU product of the nodes those labels select,
  else ``flavor_gpu_models``. When no family is found, nothing is matched as "idle elsewhere": a
  wrong match would send people after the wrong GPUs.
- Its position and what is ahead of it come from Kueue's visibility API (``positions``, see
  :mod:`actions.sources.kube.visibility`); without it they are unknown, never guessed.
- The wait is counted from the Workload's ``metadata.creationTimestamp``: the model carries no
  time of a later requeue, so an evicted and requeued Workload's wait includes its earlier run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable, Mapping, Sequence

from actions.hardware.gpus import gpu_family
from actions.kueue.eta import StartEstimate
from actions.model.findings import Finding
from actions.model.kueue import PendingPosition, Workload
from actions.model.snapshot import ClusterSnapshot
from actions.policy.teams import TeamDirectory
from actions.text import gpu_amount

UNKNOWN_CLUSTER_QUEUE = "(unknown ClusterQueue)"


@dataclass(frozen=True)
class PendingWorkload:
    """A Workload waiting for admission: its ``team``, how long it has waited (seconds), the
    ResourceFlavors it can be admitted to (inferred, see the module notes) and the GPU family
    those flavors give (``None`` when unknown)."""

    workload: Workload
    team: str
    waiting_seconds: float
    cluster_queue: str | None
    flavors: tuple[str, ...] = ()
    gpu_family: str | None = None
    position: PendingPosition | None = None
    ahead: tuple[tuple[str, int], ...] = ()  # ("namespace/name", GPUs) of those Kueue admits first

    @property
    def position_text(self) -> str | None:
        """``"3rd in ClusterQueue gpu-cq, behind 2 Workloads asking 16 GPUs"``; None when unknown."""
        if self.position is None:
            return None
        n = self.position.position_in_cluster_queue + 1
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        text = f"{n}{suffix} in ClusterQueue {self.position.cluster_queue}"
        if self.ahead:
            text += f", behind {len(self.ahead)} Workload{'s' if len(self.ahead) != 1 else ''} asking {sum(g for _, g in self.ahead)} GPUs"
        return text


@dataclass(frozen=True)
class IdleElsewhere:
    """Idle GPUs of one family that one other team's pods request, from the idle sweep's findings.

    ``gpus`` counts GPUs; ``usd_per_hour`` is what they cost together (USD per hour);
    ``where`` names the kinds of consumer (``"notebooks"``, ``"services"``, ``"jobs"``); ``request_ids``
    are the open ActionRequests proposing to free them.
    """

    team: str
    gpu_family: str
    gpus: float
    usd_per_hour: float
    where: tuple[str, ...]
    request_ids: tuple[int, ...] = ()


class _QueueTotals:
    """What a queue's ``pending`` (PendingWorkloads) and ``admitted`` (Workloads) add up to."""

    pending: tuple[PendingWorkload, ...]
    admitted: tuple[Workload, ...]

    @property
    def pending_gpus(self) -> int:
        return sum(p.workload.gpus for p in self.pending)

    @property
    def admitted_gpus(self) -> int:
        return sum(w.gpus for w in self.admitted)

    @property
    def oldest_pending_seconds(self) -> float | None:
        """Seconds the longest-waiting Workload has waited; ``None`` when nothing is pending."""
        return max((p.waiting_seconds for p in self.pending), default=None)


@dataclass(frozen=True)
class LocalQueueState(_QueueTotals):
    """One LocalQueue (``namespace``/``name``): its Workloads, pending oldest first."""

    namespace: str
    name: str
    team: str
    cluster_queue: str | None
    pending: tuple[PendingWorkload, ...]
    admitted: tuple[Workload, ...]


@dataclass(frozen=True)
class ClusterQueueState(_QueueTotals):
    """One ClusterQueue, summed over the LocalQueues that feed it (``"namespace/name"``)."""

    name: str
    local_queues: tuple[str, ...]
    teams: tuple[str, ...]
    pending: tuple[PendingWorkload, ...]
    admitted: tuple[Workload, ...]
    flavors: tuple[str, ...]


@dataclass(frozen=True)
class QueueReport:
    """The queues at ``at``; ``idle_elsewhere`` maps a pending Workload's uid to the idle GPUs of
    its family other teams' pods request, most GPUs first; ``starts`` a pending Workload's uid to
    when it likely starts (:mod:`actions.kueue.starts`; empty until estimated)."""

    at: datetime
    local_queues: tuple[LocalQueueState, ...]
    cluster_queues: tuple[ClusterQueueState, ...]
    idle_elsewhere: Mapping[str, tuple[IdleElsewhere, ...]] = field(default_factory=dict)
    starts: Mapping[str, StartEstimate] = field(default_factory=dict)

    @property
    def pending(self) -> tuple[PendingWorkload, ...]:
        """Every pending Workload, longest wait first."""
        out = [p for q in self.local_queues for p in q.pending]
        return tuple(sorted(out, key=lambda p: -p.waiting_seconds))


def _family_of_flavor(flavor: str, flavor_gpu_models: Mapping[str, str], snapshot: ClusterSnapshot | None = None) -> str | None:
    """The GPU family a ResourceFlavor's quota lands on: its ``nodeLabels``' GPU product, else
    the one GPU family of the nodes its labels select, else ``flavor_gpu_models``; only a
    snapshot without ResourceFlavor objects falls back to the flavor's name."""
    rf = next((r for r in snapshot.resource_flavors if r.name == flavor), None) if snapshot else None
    if rf is not None:
        product = rf.node_labels.get("nvidia.com/gpu.product")
        if product:
            return gpu_family(product.replace("-", " "))
        if rf.node_labels:
            families = {
                gpu_family(n.gpu_product.replace("-", " "))
                for n in snapshot.nodes.values()
                if n.gpu_product and all(n.labels.get(k) == v for k, v in rf.node_labels.items())
            } - {None}
            if len(families) == 1:
                return families.pop()
    model = flavor_gpu_models.get(flavor)
    if model:
        return gpu_family(model)
    return gpu_family(flavor) if rf is None else None


def _live(workloads: Iterable[Workload]) -> list[Workload]:
    # Finished Workloads hold nothing; deactivated ones (spec.active false) wait for nobody.
    return [w for w in workloads if not w.finished and w.active]


def idle_by_family(
    findings: Sequence[Finding], open_requests: Mapping[str, int] | None = None
) -> dict[str, dict[str, IdleElsewhere]]:
    """GPU family -> team -> the idle GPUs that team's pods request, from the sweep's ``findings``.

    ``open_requests`` maps a finding's ``key`` to its open ActionRequest id. Findings whose GPU
    model has no known family are left out.
    """
    open_requests = open_requests or {}
    out: dict[str, dict[str, IdleElsewhere]] = {}
    for f in findings:
        family = gpu_family(f.gpu_model)
        # GPUs no pod requests are free already: what keeps a Workload waiting is its quota.
        if family is None or f.kind not in ("idle-notebook", "idle-workload"):
            continue
        where = {"idle-notebook": "notebooks", "idle-serving": "services"}.get(f.kind, "jobs")
        request = open_requests.get(f.key)
        prev = out.setdefault(family, {}).get(f.team)
        if prev is None:
            prev = IdleElsewhere(team=f.team, gpu_family=family, gpus=0, usd_per_hour=0.0, where=())
        out[family][f.team] = IdleElsewhere(
            team=f.team,
            gpu_family=family,
            gpus=prev.gpus + f.gpus,
            usd_per_hour=prev.usd_per_hour + f.usd_per_hour,
            where=prev.where if where in prev.where else (*prev.where, where),
            request_ids=prev.request_ids + ((request,) if request is not None else ()),
        )
    return out


def queue_report(
    snapshot: ClusterSnapshot,
    findings: Sequence[Finding],
    teams: TeamDirectory,
    now: datetime,
    *,
    open_requests: Mapping[str, int] | None = None,
    local_queue_cluster_queues: Mapping[tuple[str, str], str] | None = None,
    flavor_gpu_models: Mapping[str, str] | None = None,
    team: str | None = None,
    positions: Mapping[tuple[str, str], PendingPosition] | None = None,
) -> QueueReport:
    """The Kueue queues of ``snapshot`` at ``now``.

    ``findings`` are the idle sweep's; ``open_requests`` maps a finding key to its open
    ActionRequest id; ``local_queue_cluster_queues`` maps ``(namespace, LocalQueue)`` to its
    ClusterQueue where known; ``flavor_gpu_models`` maps a ResourceFlavor to a GPU model name.
    With ``team``, only that team's LocalQueues and the ClusterQueues they feed are reported
    (the idle GPUs of other teams are still matched). ``positions`` are the visibility API's,
    by (namespace, Workload name). Only Workloads that request GPUs count. Waits are in
    seconds; a Workload created after ``now`` waits 0 s.
    """
    mapped = dict(local_queue_cluster_queues or {})
    mapped.update({(q.namespace, q.name): q.cluster_queue for q in snapshot.local_queues})
    offered = {c.name: c.gpu_flavors for c in snapshot.cluster_queues}
    positions = positions or {}
    flavor_models = flavor_gpu_models or {}
    workloads = [w for w in _live(snapshot.workloads) if w.gpus > 0]
    gpus_of = {(w.namespace, w.name): w.gpus for w in workloads}

    # What admitted Workloads teach about LocalQueues -> ClusterQueue -> GPU flavors.
    learned: dict[tuple[str, str], str] = {}
    cq_flavors: dict[str, dict[str, None]] = {}
    for w in workloads:
        if w.admitted and w.cluster_queue:
            learned.setdefault((w.namespace, w.queue_name), w.cluster_queue)
            for flavor in w.flavors:
                cq_flavors.setdefault(w.cluster_queue, {})[flavor] = None
    for key, cq in learned.items():
        mapped.setdefault(key, cq)

    idle = idle_by_family(findings, open_requests)
    by_lq: dict[tuple[str, str], list[Workload]] = {}
    for w in workloads:
        by_lq.setdefault((w.namespace, w.queue_name), []).append(w)

    local_states: list[LocalQueueState] = []
    idle_elsewhere: dict[str, tuple[IdleElsewhere, ...]] = {}
    for (namespace, name), members in sorted(by_lq.items()):
        team_name = teams.team_for(namespace).name
        if team is not None and team_name != team:
            continue
        cq = mapped.get((namespace, name))
        pending = []
        for w in members:
            if w.admitted:
                continue
            flavors = (offered.get(cq) or tuple(cq_flavors.get(cq, {}))) if cq else ()
            families = {f for f in (_family_of_flavor(fl, flavor_models, snapshot) for fl in flavors) if f}
            family = families.pop() if len(families) == 1 else None
            position = positions.get((w.namespace, w.name))
            ahead: tuple[tuple[str, int], ...] = ()
            if position is not None:
                ahead = tuple(
                    (f"{q.namespace}/{q.name}", gpus_of.get((q.namespace, q.name), 0))
                    for q in sorted(positions.values(), key=lambda q: q.position_in_cluster_queue)
                    if q.cluster_queue == position.cluster_queue
                    and q.position_in_cluster_queue < position.position_in_cluster_queue
                )
            p = PendingWorkload(
                workload=w,
                team=team_name,
                waiting_seconds=max(0.0, (now - w.created).total_seconds()),
                cluster_queue=cq,
                flavors=flavors,
                gpu_family=family,
                position=position,
                ahead=ahead,
            )
            pending.append(p)
            if family is not None:
                others = [i for t, i in idle.get(family, {}).items() if t != team_name]
                if others:
                    idle_elsewhere[w.uid] = tuple(sorted(others, key=lambda i: (-i.gpus, i.team)))
        pending.sort(key=lambda p: (-p.waiting_seconds, p.workload.name))
        local_states.append(
            LocalQueueState(
                namespace=namespace,
                name=name,
                team=team_name,
                cluster_queue=cq,
                pending=tuple(pending),
                admitted=tuple(sorted((w for w in members if w.admitted), key=lambda w: w.name)),
            )
        )

    by_cq: dict[str, list[LocalQueueState]] = {}
    for q in local_states:
        by_cq.setdefault(q.cluster_queue or UNKNOWN_CLUSTER_QUEUE, []).append(q)
    cluster_states = tuple(
        ClusterQueueState(
            name=cq,
            local_queues=tuple(f"{q.namespace}/{q.name}" for q in qs),
            teams=tuple(dict.fromkeys(q.team for q in qs)),
            pending=tuple(sorted((p for q in qs for p in q.pending), key=lambda p: -p.waiting_seconds)),
            admitted=tuple(w for q in qs for w in q.admitted),
            flavors=offered.get(cq) or tuple(cq_flavors.get(cq, {})),
        )
        for cq, qs in sorted(by_cq.items())
    )
    return QueueReport(
        at=now, local_queues=tuple(local_states), cluster_queues=cluster_states, idle_elsewhere=idle_elsewhere
    )


def _hours(seconds: float) -> str:
    if seconds >= 3600:
        h, m = divmod(int(seconds // 60), 60)
        return f"{h}h" if m == 0 or h >= 10 else f"{h}h {m}m"
    return f"{int(seconds // 60)}m"


def _requests_phrase(ids: tuple[int, ...]) -> str:
    if not ids:
        return ""
    if len(ids) == 1:
        return f" (request #{ids[0]} awaits approval)"
    return " (requests " + ", ".join(f"#{i}" for i in ids) + " await approval)"


def wait_sentence(p: PendingWorkload, idle: Sequence[IdleElsewhere]) -> str:
    """One line of context for a pending Workload, e.g. ``"training waits 3h for 8 H100; research
    holds 1 idle H100 in notebooks (request #12 awaits approval)"``. The GPU family reads "GPUs"
    when unknown."""
    what = p.gpu_family or ("GPU" if p.workload.gpus == 1 else "GPUs")
    line = f"{p.team} waits {_hours(p.waiting_seconds)} for {p.workload.gpus} {what}"
    if p.position_text:
        line += f" ({p.position_text})"
    for i in idle:
        line += (
            f"; {i.team} holds {gpu_amount(i.gpus)} idle {i.gpu_family} in {' and '.join(i.where)}"
            f"{_requests_phrase(i.request_ids)}"
        )
    return line
