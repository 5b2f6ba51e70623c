"""When each pending Workload of a queue report likely starts, and what would admit it now. Pure.

:func:`with_starts` takes the :class:`~actions.kueue.queues.QueueReport`, the snapshot it was made
from, the run times per LocalQueue (from the usage ledger, :mod:`actions.store.ledger_runs`) and
the ClusterQueues' GPU quotas where known (:func:`actions.kueue.quota.gpu_nominal_quota`), and
fills the report's ``starts`` with :func:`actions.kueue.eta.estimate_start`'s answer for each
pending Workload:

- ahead of it: the Workloads before it in the visibility API's order (``PendingWorkload.ahead``),
  each timed by its own LocalQueue's runs; its place unknown without the visibility API;
- running: the ClusterQueue's admitted Workloads (all teams', whatever the report shows), each
  having run since its pods' earliest start (the Workload's creation when no pod of it is seen);
- what would admit it now: the fewest idle consumers with a proposal awaiting approval whose GPUs
  cover what it and the Workloads ahead ask beyond the free quota
  (:func:`actions.kueue.freeing.plan_freeing`), among those in a namespace whose LocalQueues feed
  its ClusterQueue or another of its cohort: only there does freeing GPUs free its quota.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime
from typing import Mapping, Sequence

from actions.kueue.eta import NOW, Admitting, Queued, Running, RunTimes, StartEstimate, estimate_start
from actions.kueue.freeing import plan_freeing
from actions.kueue.queues import PendingWorkload, QueueReport
from actions.model.findings import Finding
from actions.model.kueue import Workload
from actions.model.snapshot import ClusterSnapshot

_KINDS = {"idle-notebook": "notebook", "idle-serving": "service", "idle-workload": "job"}


def started_at(w: Workload, snapshot: ClusterSnapshot) -> datetime:
    """When an admitted Workload began running: the earliest start of the pods its owners own,
    else its creation (which counts its wait too)."""
    uids = {o.uid for o in w.owners if o.uid}
    starts = [
        p.started or p.created for p in snapshot.pods
        if p.namespace == w.namespace and any(o.uid in uids for o in p.owners)
    ]
    return min(starts, default=w.created)


def running_in(cluster_queue: str, snapshot: ClusterSnapshot, now: datetime,
               run_times: Mapping[tuple[str, str], RunTimes]) -> list[Running]:
    """The admitted GPU Workloads of ``cluster_queue`` at ``now``, as the estimator takes them."""
    return [
        Running(w.gpus, max(0.0, (now - started_at(w, snapshot)).total_seconds() / 3600),
                run_times.get((w.namespace, w.queue_name)))
        for w in snapshot.workloads
        if w.admitted and w.active and not w.finished and w.gpus > 0 and w.cluster_queue == cluster_queue
    ]


def _cohort_queues(cluster_queue: str, snapshot: ClusterSnapshot) -> tuple[set[str], str]:
    cohorts = {c.name: c.cohort for c in snapshot.cluster_queues}
    cohort = cohorts.get(cluster_queue)
    if cohort is None:
        return {cluster_queue}, "this ClusterQueue"
    return {cq for cq, c in cohorts.items() if c == cohort} | {cluster_queue}, "this cohort"


def admitting(
    p: PendingWorkload, estimate: StartEstimate, snapshot: ClusterSnapshot,
    findings: Sequence[Finding], open_requests: Mapping[str, int],
) -> Admitting | None:
    """The idle consumers in ``p``'s cohort whose approval frees enough quota to admit it now,
    or None (it starts now anyway, nothing is known to be enough, its ClusterQueue is unknown)."""
    if estimate.status == NOW or p.cluster_queue is None or estimate.capacity is None:
        return None
    queues, scope = _cohort_queues(p.cluster_queue, snapshot)
    feeding = {q.namespace for q in snapshot.local_queues if q.cluster_queue in queues}
    used = sum(r.gpus for r in running_in(p.cluster_queue, snapshot, snapshot.taken_at, {}))
    free = 0.0 if estimate.capacity_assumed else max(0.0, estimate.capacity - used)
    need = math.ceil(estimate.gpus_ahead + p.workload.gpus - free)
    if need <= 0:
        return None
    # plan_freeing frees what its Workload asks: here what it and those ahead ask beyond the free quota.
    asking = dataclasses.replace(p, workload=dataclasses.replace(p.workload, gpus=need))
    plan = plan_freeing(asking, [f for f in findings if f.namespace in feeding], open_requests)
    if plan is None:
        return None
    kinds = {_KINDS.get(f.kind, "consumer") for f in plan.findings}
    return Admitting(
        request_ids=plan.request_ids, consumers=len(plan.findings),
        what=kinds.pop() if len(kinds) == 1 else "consumer", gpus=plan.gpus,
        family=p.gpu_family or "GPU", scope=scope,
    )


def with_starts(
    report: QueueReport,
    snapshot: ClusterSnapshot,
    run_times: Mapping[tuple[str, str], RunTimes],
    *,
    quotas: Mapping[str, float] | None = None,
    findings: Sequence[Finding] = (),
    open_requests: Mapping[str, int] | None = None,
) -> QueueReport:
    """``report`` with ``starts`` filled for every pending Workload: ``run_times`` by
    (namespace, LocalQueue), ``quotas`` ClusterQueue -> GPUs (a ClusterQueue missing: unknown),
    ``findings`` the idle sweep's and ``open_requests`` finding key -> request id awaiting
    approval (for what would admit it now). Times are counted to ``report.at``."""
    quotas = quotas or {}
    by_name = {(w.namespace, w.name): w for w in snapshot.workloads}
    starts: dict[str, StartEstimate] = {}
    for p in report.pending:
        w = p.workload
        runs = run_times.get((w.namespace, w.queue_name))
        ahead = None
        if p.position is not None:
            ahead = []
            for name, gpus in p.ahead:
                other = by_name.get(tuple(name.split("/", 1)))  # type: ignore[arg-type]
                ahead.append(Queued(gpus, run_times.get((other.namespace, other.queue_name)) if other else None))
        cq = p.cluster_queue
        running = running_in(cq, snapshot, report.at, run_times) if cq else []
        estimate = estimate_start(w.gpus, ahead, running, quotas.get(cq) if cq else None, runs)
        if cq is None:
            estimate = dataclasses.replace(estimate, status="unknown", reason="its ClusterQueue is unknown")
        plan = admitting(p, estimate, snapshot, findings, open_requests or {})
        starts[w.uid] = dataclasses.replace(estimate, admitting=plan) if plan else estimate
    return dataclasses.replace(report, starts=starts)
