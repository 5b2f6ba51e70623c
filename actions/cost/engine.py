"""The cost engine: GPU-hours and USD per team over a period, as a monthly showback report.

Pure: it takes usage already aggregated (:class:`~actions.model.usage.UsageData`, built
server-side by :mod:`actions.sources.prometheus.usage` with a constant number of PromQL queries,
or summed from the ledger), a :class:`~actions.pricing.book.PriceBook` and the teams, and returns
a :class:`~actions.cost.report.CostReport`. No I/O, no clock reads.

Definitions (every figure in a report follows them):

- *Requested GPU-hours*: the sum over evaluation steps (``UsageData.step_seconds``, 300 s by
  default) of the GPUs a running pod requested, times the step in hours, in physical-GPU
  equivalents: ``nvidia.com/gpu`` whole, a MIG slice ``nvidia.com/mig-Ng.*`` N/7 (N/4 on A30), a
  time-sliced replica 1/R of its node's ``nvidia.com/gpu.replicas`` (see :mod:`actions.hardware.gpus`).
- *Idle GPU-hours*: the requested GPU-steps at which the GPU's peak engine activity within the
  step stayed at or under ``Policy.engine_idle_pct`` (``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` where
  exported, else ``DCGM_FI_DEV_GPU_UTIL``). Steps without telemetry are not idle (unknown).
- *Efficiency*: used / requested GPU-hours, used = requested - idle; ratio 0-1.
- *Spot ratio*: spot GPU-hours / all GPU-hours; ratio 0-1.
- *Cost*: GPU-hours x the PriceBook's USD per GPU-hour for the node's instance type, capacity
  type and GPU model. Nodes priced by a flat config price (``prices.gpu_families``) or bought as
  reserved capacity are reported under the capacity type ``reserved/on-prem``.
- *Team*: the configured team listing the namespace, else the value of the namespace label
  ``team_label``, else the namespace itself (the rule the sweep follows too);
  ``"unallocated"`` holds only GPU-hours no namespace can be named for.
- *Unrequested GPU-hours*: a node's GPU-hours (``kube_node_status_capacity`` of its GPU
  resources, as equivalents) that no pod requested, priced at the node's rate. Teams +
  unallocated + unrequested = what the GPU nodes cost (``node_cost_usd``), to the cent.
"""

from __future__ import annotations

import heapq
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from typing import Any, Mapping

from actions.cost.periods import day_buckets
from actions.cost.report import (
    CAPACITY_ORDER,
    NO_PRICE,
    RESERVED_ON_PREM,
    UNALLOCATED,
    ConsumerLine,
    CostReport,
    DailyCost,
    PriceLine,
    TeamReport,
    UnrequestedLine,
)
from actions.hardware.gpus import gpu_family
from actions.model.kube import CapacityType, Node
from actions.model.quote import PriceQuote
from actions.model.usage import NODE_FROM_API, NodeInfo, PodOwner, UsageData
from actions.policy.teams import TeamDirectory
from actions.pricing.book import PriceBook, PriceNotFound

# Set by Kueue on the pods it admits (kueue pkg/controller/constants LocalQueueLabel, feature
# AssignQueueLabelsForPods, on by default): present even where the pod template never
# carried kueue.x-k8s.io/queue-name (JobSet, LeaderWorkerSet children).
KUEUE_LOCAL_QUEUE_POD_LABEL = "kueue.x-k8s.io/local-queue-name"


# --- teams and owners ------------------------------------------------------------------------------


def team_of(
    namespace: str,
    teams: TeamDirectory,
    namespace_labels: Mapping[str, Mapping[str, str]],
    team_label: str | None,
) -> str:
    """The team a namespace's GPU-hours are attributed to: the configured team listing it, else
    the value of its ``team_label`` label, else the namespace itself, as the sweep names it
    (:meth:`~actions.policy.teams.TeamDirectory.team_for`); ``UNALLOCATED`` only without a namespace."""
    for team in teams.teams.values():
        if namespace in team.namespaces:
            return team.name
    if team_label:
        value = namespace_labels.get(namespace, {}).get(team_label)
        if value:
            return value
    return namespace or UNALLOCATED


_TEMPLATE_HASH = re.compile(r"^(?P<name>.+)-[a-z0-9]{6,10}$")


def consumer_of(owner: PodOwner | None, namespace: str, pod: str) -> tuple[str, str, str | None]:
    """``(kind, name, queue)`` of the consumer a pod's GPU-hours are attributed to.

    In order: a pod labelled ``notebook-name`` (Kubeflow) is that ``Notebook``; a pod labelled
    ``kueue.x-k8s.io/queue-name`` belongs to a Kueue ``Workload``, named after its Job or
    Deployment (Kueue's own Workload object names are not in the metrics); a ReplicaSet stands
    for its ``Deployment`` (the name without the pod-template-hash suffix); any other controller
    (Job, StatefulSet, ...) is itself; a pod without a controller is the ``Pod``.
    """
    labels = owner.labels if owner else {}
    queue = labels.get(KUEUE_LOCAL_QUEUE_POD_LABEL) or labels.get("kueue.x-k8s.io/queue-name") or None
    notebook = labels.get("notebook-name")
    if notebook:
        return "Notebook", notebook, queue
    kind, name = (owner.owner_kind, owner.owner_name) if owner else (None, None)
    if kind == "ReplicaSet" and name:
        m = _TEMPLATE_HASH.match(name)
        kind, name = "Deployment", (m.group("name") if m else name)
    if not kind or not name or kind == "<none>" or name == "<none>":
        kind, name = "Pod", pod
    if queue:
        return "Workload", name, queue
    return kind, name, None


# --- pricing ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Priced:
    gpu_model: str
    capacity_label: str
    capacity: CapacityType
    quote: PriceQuote | None
    problem: str | None = None


def capacity_label(quote: PriceQuote) -> str:
    """How a quote's capacity is shown: flat config prices (``prices.gpu_families``) and reserved
    capacity are ``reserved/on-prem``; otherwise the capacity type's value."""
    if quote.capacity_type is CapacityType.RESERVED or quote.source.startswith("config flat price"):
        return RESERVED_ON_PREM
    return quote.capacity_type.value


def _price(node: NodeInfo | None, dcgm_model: str | None, prices: PriceBook) -> _Priced:
    capacity = (node.capacity_type if node else None) or CapacityType.UNKNOWN
    instance_type = node.instance_type if node else None
    model = dcgm_model or (node.gpu_model if node else None)
    try:
        quote = prices.quote(instance_type, capacity, model)
    except PriceNotFound as e:
        family = (gpu_family(model) if model else None) or model or "unknown GPU"
        return _Priced(family, capacity.value, capacity, None, str(e))
    family = quote.gpu_model or (gpu_family(model) if model else None) or model or "unknown GPU"
    return _Priced(family, capacity_label(quote), capacity, quote)


# --- the computation -------------------------------------------------------------------------------


@dataclass
class _Acc:
    gpu_hours: float = 0.0
    idle: float = 0.0
    cost: float = 0.0
    idle_cost: float = 0.0


def idle_definition(step_seconds: float, threshold_pct: float) -> str:
    """The sentence a report shows to say what its idle GPU-hours are."""
    return (
        f"Idle: GPU-hours in {step_seconds / 60:g}-minute steps whose engine activity peaked at or "
        f"under {threshold_pct:g}% (DCGM_FI_PROF_GR_ENGINE_ACTIVE, else DCGM_FI_DEV_GPU_UTIL); "
        "steps without telemetry count as used"
    )


def resolve_nodes(
    usage: UsageData, api_nodes: Mapping[str, Node] | None
) -> tuple[dict[str, NodeInfo], list[str]]:
    """The nodes to price with, and notes. Where ``kube_node_labels`` gave no capacity type,
    the Kubernetes API's node labels (``api_nodes``, model ``Node``s) are used instead; a node
    neither knows is priced as capacity type unknown. Both cases are named in the notes."""
    nodes = dict(usage.nodes)
    notes: list[str] = []
    missing = usage.nodes_missing_capacity_type()
    if not missing:
        return nodes, notes
    from_api, unknown = [], []
    for name in missing:
        api = (api_nodes or {}).get(name)
        have = nodes.get(name)
        if api is not None and api.capacity_type is not CapacityType.UNKNOWN:
            nodes[name] = NodeInfo(
                name,
                instance_type=(have.instance_type if have else None) or api.instance_type,
                capacity_type=api.capacity_type,
                gpu_model=(have.gpu_model if have else None) or api.gpu_product,
                source=NODE_FROM_API,
            )
            from_api.append(name)
        else:
            unknown.append(name)
    if from_api:
        notes.append(
            "kube_node_labels has no capacity-type label for "
            f"{_names(from_api)}: capacity type read from the Kubernetes API's node labels instead "
            "(current labels; add karpenter.sh/capacity-type to kube-state-metrics' "
            "--metric-labels-allowlist=nodes=[...] for history)"
        )
    if unknown:
        notes.append(
            f"capacity type unknown for {_names(unknown)} (not in kube_node_labels nor the "
            "Kubernetes API): priced as on-demand"
        )
    return nodes, notes


def _names(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    more = len(names) - limit
    return f"node{'s' if len(names) > 1 else ''} {shown}" + (f" and {more} more" if more > 0 else "")


def compute_cost_report(
    usage: UsageData,
    prices: PriceBook,
    teams: TeamDirectory,
    *,
    team_label: str | None = "team",
    top_consumers: int = 5,
    api_nodes: Mapping[str, Node] | None = None,
) -> CostReport:
    """Price ``usage`` and split it by team (see the module docstring for every definition).

    ``api_nodes`` (node name -> model ``Node`` from the Kubernetes API) are consulted only for
    nodes whose capacity type the metrics lack, and the report's notes say so. A node that no
    price source covers is counted at $0 with a note naming it and the config that would fix it.
    Every configured team appears, with zeros when it used nothing. Pure.
    """
    nodes, notes = resolve_nodes(usage, api_nodes)
    notes = list(usage.notes) + notes
    if usage.idle_threshold_pct is not None:
        notes.insert(0, idle_definition(usage.step_seconds, usage.idle_threshold_pct))
    priced_cache: dict[tuple[str, str | None], _Priced] = {}

    def priced(node: str, model: str | None) -> _Priced:
        key = (node, model)
        if key not in priced_cache:
            priced_cache[key] = _price(nodes.get(node), model, prices)
        return priced_cache[key]

    # A node's GPU model for daily rows, which carry no modelName: the one its pods reported.
    node_model: dict[str, str] = {}
    for p in usage.pods:
        if p.gpu_model:
            node_model.setdefault(p.node, p.gpu_model)

    team_by_ns: dict[str, str] = {}

    def team(ns: str) -> str:
        if ns not in team_by_ns:
            team_by_ns[ns] = team_of(ns, teams, usage.namespace_labels, team_label)
        return team_by_ns[ns]

    lines_by_team: dict[str, dict[tuple, _Acc]] = defaultdict(lambda: defaultdict(_Acc))
    line_quote: dict[tuple, _Priced] = {}
    consumers: dict[str, dict[tuple, _Acc]] = defaultdict(lambda: defaultdict(_Acc))
    consumer_queue: dict[tuple, str | None] = {}
    spot_hours: dict[str, float] = defaultdict(float)
    team_namespaces: dict[str, set[str]] = defaultdict(set)
    unpriced: set[str] = set()

    for p in usage.pods:
        t = team(p.namespace)
        team_namespaces[t].add(p.namespace)
        pr = priced(p.node, p.gpu_model or node_model.get(p.node))
        rate = pr.quote.usd_per_gpu_hour if pr.quote else 0.0
        if pr.quote is None:
            unpriced.add(p.node)
        idle = min(p.idle_gpu_hours, p.gpu_hours)
        shown = f"{pr.gpu_model} {p.sharing}" if p.sharing else pr.gpu_model
        lkey = (shown, pr.capacity_label, rate, pr.quote.source if pr.quote else "")
        line_quote[lkey] = pr
        acc = lines_by_team[t][lkey]
        acc.gpu_hours += p.gpu_hours
        acc.idle += idle
        acc.cost += p.gpu_hours * rate
        acc.idle_cost += idle * rate
        if pr.capacity is CapacityType.SPOT:
            spot_hours[t] += p.gpu_hours
        kind, name, queue = consumer_of(usage.owners.get((p.namespace, p.pod)), p.namespace, p.pod)
        ckey = (kind, p.namespace, name)
        consumer_queue[ckey] = consumer_queue.get(ckey) or queue
        c = consumers[t][ckey]
        c.gpu_hours += p.gpu_hours
        c.idle += idle
        c.cost += p.gpu_hours * rate
        c.idle_cost += idle * rate

    daily: dict[str, dict[date, dict[str, float]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(float)))
    daily_idle: dict[str, dict[date, float]] = defaultdict(lambda: defaultdict(float))
    for d in usage.daily:
        t = team(d.namespace)
        pr = priced(d.node, node_model.get(d.node))
        rate = pr.quote.usd_per_gpu_hour if pr.quote else 0.0
        daily[t][d.day][pr.capacity_label] += d.gpu_hours * rate
        daily_idle[t][d.day] += min(d.idle_gpu_hours, d.gpu_hours) * rate

    unrequested, node_hours, node_cost = _unrequested(usage, priced, node_model, unpriced)
    if unpriced:
        problems = sorted({priced_cache[k].problem or "" for k in priced_cache if k[0] in unpriced})
        models = sorted({priced_cache[k].gpu_model for k in priced_cache if k[0] in unpriced})
        notes.append(
            f"no price for {', '.join(models)} on {_names(sorted(unpriced))}: its GPU-hours are left out of every USD "
            "figure. " + " ".join(problems)
        )

    days = [d for d, _, _ in day_buckets(usage.start, usage.end)]
    names = set(lines_by_team) | set(teams.teams)
    reports: dict[str, TeamReport] = {}
    for t in sorted(names, key=lambda n: (n == UNALLOCATED, n)):
        lines = []
        for (model, cap, rate, source), acc in lines_by_team.get(t, {}).items():
            quote = line_quote[(model, cap, rate, source)].quote
            lines.append(
                PriceLine(
                    gpu_model=model,
                    capacity_type=cap,
                    gpu_hours=acc.gpu_hours,
                    usd_per_gpu_hour=rate,
                    cost_usd=acc.cost,
                    idle_gpu_hours=acc.idle,
                    idle_cost_usd=acc.idle_cost,
                    price_source=source or NO_PRICE,
                    price_as_of=quote.as_of if quote else "",
                    instance_type=quote.instance_type if quote else None,
                )
            )
        lines.sort(key=lambda f: (-f.cost_usd, -f.gpu_hours, f.gpu_model, f.capacity_type))
        # Only the top few become ConsumerLines: a large fleet's team has 10,000s of owners.
        top = [
            ConsumerLine(kind, ns, name, c.gpu_hours, c.cost, c.idle, c.idle / c.gpu_hours if c.gpu_hours else 0.0,
                     consumer_queue.get((kind, ns, name)))
            for (kind, ns, name), c in heapq.nsmallest(
                top_consumers, consumers.get(t, {}).items(),
                key=lambda kv: (-kv[1].cost, -kv[1].gpu_hours, kv[0][1], kv[0][2]),
            )
        ]
        hours = sum(f.gpu_hours for f in lines)
        idle = sum(f.idle_gpu_hours for f in lines)
        team_daily = tuple(
            DailyCost(
                day,
                {cap: daily[t][day][cap] for cap in CAPACITY_ORDER if daily[t][day].get(cap)},
                daily_idle[t][day],
            )
            for day in days
        )
        team_notes = []
        if t not in teams.teams and team_label and not any(
            usage.namespace_labels.get(ns, {}).get(team_label) for ns in team_namespaces[t]
        ):
            team_notes.append(
                f"namespace {t} is in no configured team and has no {team_label!r} label: reported as its own team"
            )
        reports[t] = TeamReport(
            team=t,
            period_start=usage.start,
            period_end=usage.end,
            gpu_hours=hours,
            cost_usd=sum(f.cost_usd for f in lines),
            idle_gpu_hours=idle,
            idle_cost_usd=sum(f.idle_cost_usd for f in lines),
            efficiency=(hours - idle) / hours if hours else None,
            spot_ratio=spot_hours[t] / hours if hours else None,
            price_lines=tuple(lines),
            top_consumers=tuple(top),
            daily=team_daily,
            notes=tuple(team_notes),
            namespaces=tuple(sorted(team_namespaces[t] | set(teams.teams[t].namespaces if t in teams.teams else ()))),
        )
    return CostReport(
        usage.start, usage.end, reports, tuple(notes), usage.warnings, usage.covered_from,
        unrequested=unrequested, node_gpu_hours=node_hours, node_cost_usd=node_cost,
        gpu_free_teams=frozenset(team(ns) for ns in usage.namespace_labels if ns) - set(reports),
    )


def _unrequested(
    usage: UsageData, priced: Any, node_model: Mapping[str, str], unpriced: set[str]
) -> tuple[UnrequestedLine | None, float, float]:
    """The GPU-hours of each node no pod requested, and every GPU node's GPU-hours and cost. A
    node whose pods show more GPU-hours than its capacity (the two series are sampled apart) is
    counted at its pods', so teams + unrequested never exceed the total."""
    if not usage.node_gpu_hours:
        return None, 0.0, 0.0
    requested: dict[str, float] = defaultdict(float)
    for p in usage.pods:
        requested[p.node] += p.gpu_hours
    by_node: dict[str, tuple[float, float]] = {}
    total_hours = total_cost = 0.0
    for node in sorted(set(usage.node_gpu_hours) | set(requested)):
        pr = priced(node, node_model.get(node))
        rate = pr.quote.usd_per_gpu_hour if pr.quote else 0.0
        if pr.quote is None and usage.node_gpu_hours.get(node):
            unpriced.add(node)
        capacity = max(usage.node_gpu_hours.get(node, 0.0), requested[node])
        total_hours += capacity
        total_cost += capacity * rate
        free = capacity - requested[node]
        if free > 1e-9:
            by_node[node] = (free, free * rate)
    line = UnrequestedLine(
        gpu_hours=sum(h for h, _ in by_node.values()),
        cost_usd=sum(c for _, c in by_node.values()),
        by_node=dict(sorted(by_node.items(), key=lambda kv: (-kv[1][1], kv[0]))),
    )
    return line, total_hours, total_cost
