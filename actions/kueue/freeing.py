"""Which idle GPUs to free so that a pending Workload can be admitted. Pure.

When a Workload waits for GPUs of a family (H100) that idle consumers request, one proposal that
frees enough of them is worth more than a list: "approve these 2 notebooks (8 idle H100) and
training/train-llm (asks 8 H100) can be admitted". :func:`plan_freeing` picks, among the idle
findings of that family that have an open proposal with an action, the fewest that together request
at least what the Workload asks for: the largest first (fewest approvals), cheapest dollars
left idle as the tie-break. No plan when all of them together are not enough: half a freeing
admits nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from actions.hardware.gpus import gpu_family
from actions.kueue.queues import PendingWorkload
from actions.model.findings import Finding
from actions.text import gpu_amount


@dataclass(frozen=True)
class FreeingPlan:
    """The proposals to approve together (``request_ids``, in the order of ``findings``) so that
    ``pending`` can be admitted; ``gpus`` is what they free (>= what it asks for) and
    ``usd_per_hour`` what they cost idle now (USD per hour)."""

    pending: PendingWorkload
    request_ids: tuple[int, ...]
    findings: tuple[Finding, ...]
    gpus: float
    usd_per_hour: float

    def sentence(self) -> str:
        """``"Approve these 2 notebooks (8 idle H100, $49.16/h) and training/train-llm can be
        admitted"``."""
        kinds = {"idle-notebook": "notebook", "idle-serving": "service", "idle-workload": "job"}
        names = sorted({kinds.get(f.kind, "consumer") for f in self.findings})
        what = names[0] if len(names) == 1 else "consumers"
        n = len(self.findings)
        family = self.pending.gpu_family or "GPU"
        w = self.pending.workload
        return (
            f"Approve {'this' if n == 1 else f'these {n}'} {what}{'' if n == 1 else 's'} ({gpu_amount(self.gpus)} idle {family}, "
            f"${self.usd_per_hour:,.2f}/h) and {w.namespace}/{w.name} (asks {w.gpus} {family}) can be admitted"
        )


def plan_freeing(
    pending: PendingWorkload, findings: Sequence[Finding], open_requests: Mapping[str, int]
) -> FreeingPlan | None:
    """The plan that frees at least ``pending.workload.gpus`` GPUs of ``pending.gpu_family``
    from the idle ``findings`` whose key has an open proposal in ``open_requests`` (finding
    key -> request id) and an action, or ``None`` when the family is unknown or they are not
    enough together."""
    family = pending.gpu_family
    need = pending.workload.gpus
    if family is None or need <= 0:
        return None
    candidates = [
        f for f in findings
        if f.action is not None and f.key in open_requests and f.handling.mode != "report"
        and gpu_family(f.gpu_model) == family
    ]
    candidates.sort(key=lambda f: (-f.gpus, f.usd_per_hour, f.key))
    chosen: list[Finding] = []
    for f in candidates:
        if sum(c.gpus for c in chosen) >= need:
            break
        chosen.append(f)
    gpus = sum(f.gpus for f in chosen)
    if gpus < need:
        return None
    return FreeingPlan(
        pending=pending,
        request_ids=tuple(open_requests[f.key] for f in chosen),
        findings=tuple(chosen),
        gpus=gpus,
        usd_per_hour=round(sum(f.usd_per_hour for f in chosen), 4),
    )
