"""The budgets in force and what they have spent, read for the budget job and for the re-check of a
hold right before acting: the config's ``budgets:`` overlaid by those set in chat (the store's
``budget_rule``), each one's period (:mod:`actions.budgets.periods`) and spend over it, from its
cluster's usage source (the ledger and the hour in progress, or Prometheus) and LocalQueues.
"""

from __future__ import annotations

from datetime import datetime

from actions.budgets.holds import BudgetState, release_reason
from actions.budgets.model import LOCALQUEUE, TEAM, Budget
from actions.budgets.periods import period_of
from actions.budgets.spend import spent
from actions.model.findings import Finding
from actions.model.snapshot import ClusterSnapshot
from actions.policy.teams import ADMIN_TEAM


def budgets_in_force(rt) -> list[Budget]:  # noqa: ANN001 - a Runtime
    """Every budget: the config's, with those set in chat over them (same cluster, scope and name)."""
    by_key = {(b.cluster, b.key): b for b in rt.configured_budgets}
    by_key.update({(r.cluster, f"{r.scope}:{r.name}"): r.budget() for r in rt.store.rules()})
    return sorted(by_key.values(), key=lambda b: (b.cluster, b.scope, b.name))


def budget_of_key(rt, key: str, cluster: str) -> Budget | None:  # noqa: ANN001 - a Runtime
    """The budget a hold's request ``key`` (``budget:<scope>:<name>@<period>:<ns>/<lq>``) was made
    for, as in force now in ``cluster`` (a request's: the bot of one's name counts as ``""``)."""
    wanted = key.removeprefix("budget:").split("@", 1)[0]
    for b in budgets_in_force(rt):
        if b.key == wanted and (b.cluster or rt.cluster_name) in (cluster, ""):
            return b
    return None


def team_of_budget(rt, budget: Budget) -> str:  # noqa: ANN001 - a Runtime
    """The team whose channel and approvers a budget's alerts and holds go to: the team's own, a
    LocalQueue's namespace's team, or the cluster admins for a ClusterQueue (it serves several)."""
    if budget.scope == TEAM:
        return budget.name
    if budget.scope == LOCALQUEUE:
        return rt.teams.team_for(budget.name.split("/", 1)[0]).name
    return ADMIN_TEAM


def budget_state(rt, budget: Budget, now: datetime, snapshot: ClusterSnapshot,  # noqa: ANN001 - a Runtime
                 usages: dict | None = None) -> BudgetState:
    """``budget``'s spend over its period up to ``now`` in its cluster (``snapshot``: the
    cluster's LocalQueues, for a queue's). ``usages`` keeps the usage read for each cluster and
    period start across calls, so budgets of one cluster and period read it once. Raises
    ValueError when its cluster has no usage source, and what the usage source raises."""
    setup = rt.parts(budget.cluster).costs if rt.clusters and budget.cluster else rt.costs
    if setup is None:
        raise ValueError(f"budget {budget.key}: its cluster has no usage source (Prometheus or the ledger)")
    period = period_of(budget, now, setup.timezone)
    if now <= period.start:
        return BudgetState(budget, period, 0.0, now)
    key = (budget.cluster if rt.clusters else "", period.start)
    usage = usages.get(key) if usages is not None else None
    if usage is None:
        usage = setup.usage.fetch(period.start, now, rt.policy)
        if usages is not None:
            usages[key] = usage
    return BudgetState(budget, period, spent(budget, usage, rt.prices, snapshot.local_queues, rt.teams,
                                             setup.team_label), now)


def hold_refusal(rt, finding: Finding, cluster: str, now: datetime) -> tuple[str, ...]:  # noqa: ANN001
    """Why a budget's hold may not be taken at ``now``: its budget no longer asks for it (a new
    period, a raised or removed budget), or the one gate refuses it. Empty when it may go.
    Raises what the sources raise."""
    snapshot = rt.snapshot_of(cluster, now)
    budget = budget_of_key(rt, finding.key, cluster)
    state = budget_state(rt, budget, now, snapshot) if budget is not None else None
    why = release_reason(finding.key, state)
    if why is not None:
        return (f"the hold is no longer asked for: {why}",)
    return rt.gate(finding, cluster, now, snapshot)
