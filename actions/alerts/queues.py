"""Queue-wait alerts: a Workload pending longer than the threshold (with its position and, where
idle consumers request enough GPUs of its model, the proposal that frees them), and a ClusterQueue
whose admission-wait p90 is over it. Pure.
"""

from __future__ import annotations

from datetime import datetime
from typing import Mapping

from actions.alerts.alert import QUEUE_WAIT, Alert, day_key, gpus_text
from actions.kueue.freeing import FreeingPlan
from actions.kueue.queues import QueueReport, wait_sentence
from actions.text import duration, gpu_amount, plain, usd


def asks_text(gpus: float, family: str | None, flavors) -> str:  # noqa: ANN001 - a sequence of names
    return f"{gpu_amount(gpus)} × {family or 'GPU'}" + (f" ({', '.join(flavors)})" if flavors else "")


# --- queues ------------------------------------------------------------------------------------


def queue_wait_alerts(
    report: QueueReport, threshold_seconds: float, plans: Mapping[str, FreeingPlan] | None = None
) -> list[Alert]:
    """One alert per pending Workload that has waited longer than ``threshold_seconds``, to the
    waiting team, keyed by the Workload's uid, with its position in its ClusterQueue, when it
    likely starts (``report.starts``, when estimated) and what would admit it now, the idle
    GPUs of the same family elsewhere and, when ``plans`` (Workload uid -> plan) has one, the one
    proposal that frees enough of them, approvable with one button."""
    plans = plans or {}
    alerts = []
    for p in report.pending:
        if p.waiting_seconds <= threshold_seconds:
            continue
        w = p.workload
        idle = report.idle_elsewhere.get(w.uid, ())
        fields = [
            ("Workload", plain(f"{w.namespace}/{w.name}")),
            ("LocalQueue", plain(w.queue_name or "?")),
            ("ClusterQueue", plain(p.cluster_queue or "unknown")),
            ("Asks for", plain(asks_text(w.gpus, p.gpu_family, p.flavors))),
            ("Waiting", duration(p.waiting_seconds)),
        ]
        if p.position_text:
            fields.append(("Position", plain(p.position_text)))
        start = report.starts.get(w.uid)
        if start is not None:
            fields.append(("Likely start", plain(start.text())))
        idle_usd = sum(i.usd_per_hour for i in idle)
        if idle:
            fields.append(("Idle elsewhere", f"{gpus_text(sum(i.gpus for i in idle))}, {usd(idle_usd)}/h"))
        text = plain(wait_sentence(p, idle))
        if start is not None:
            text += f"\nIt starts {plain(start.text())}" + (f"; {plain(start.admitting.sentence())}" if start.admitting else "") + "."
        plan = plans.get(w.uid)
        if plan is not None:
            text += "\n*" + plan.sentence() + ":*\n" + "\n".join(
                f"• #{rid} {plain(f.subject)}: {gpu_amount(f.gpus, dict(f.devices))} × {plain(f.gpu_model)}, "
                f"idle {duration(f.idle_seconds)} (team {plain(f.team)})"
                for rid, f in zip(plan.request_ids, plan.findings)
            )
        alerts.append(
            Alert(
                team=p.team,
                kind=QUEUE_WAIT,
                period_key=w.uid,
                title=f"Workload {w.namespace}/{w.name} has waited {duration(p.waiting_seconds)} for admission",
                text=text,
                fields=tuple(fields),
                usd=idle_usd if idle else None,
                approve_all=plan.request_ids if plan else (),
            )
        )
    return alerts


def cluster_queue_wait_alerts(
    p90_seconds: Mapping[str, float], report: QueueReport, threshold_seconds: float, now: datetime
) -> list[Alert]:
    """Alerts for ClusterQueues whose admission-wait p90 (seconds, from the
    ``kueue_admission_wait_time_seconds`` histogram) is above ``threshold_seconds``: one per team
    whose LocalQueues feed the ClusterQueue (the ClusterQueue's name as the team when none is
    known), at most once a day."""
    alerts = []
    states = {c.name: c for c in report.cluster_queues}
    for cq, p90 in sorted(p90_seconds.items()):
        if p90 <= threshold_seconds:
            continue
        state = states.get(cq)
        teams = state.teams if state and state.teams else (cq,)
        context = [wait_sentence(p, report.idle_elsewhere.get(p.workload.uid, ())) for p in (state.pending if state else ())]
        text = (
            f"In ClusterQueue *{plain(cq)}*, 90% of admitted Workloads waited up to {duration(p90)} "
            f"(p90 of admission wait; threshold {duration(threshold_seconds)})."
        )
        if context:
            text += "\n" + "\n".join(f"• {plain(line)}" for line in context[:10])
        fields = (
            ("Admission wait p90", duration(p90)),
            ("Pending now", str(len(state.pending)) if state else "unknown"),
            ("LocalQueues", plain(", ".join(state.local_queues)) if state else "unknown"),
        )
        for team in teams:
            alerts.append(
                Alert(
                    team=team,
                    kind=QUEUE_WAIT,
                    period_key=f"clusterqueue/{cq}/{day_key(now)}",
                    title=f"ClusterQueue {cq}: admission wait p90 is {duration(p90)}",
                    text=text,
                    fields=fields,
                )
            )
    return alerts
