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
from typing import Any, Callable, Mapping

from actions.cost.nodes import _names, resolve_nodes
from actions.cost.periods import day_buckets
from actions.cost.priced import Priced, price_of
from actions.cost.report import (
    CAPACITY_ORDER,
    NO_PRICE,
    UNALLOCATED,
    ConsumerLine,
    CostReport,
    DailyCost,
    PriceLine,
    TeamReport,
    UnrequestedLine,
)
from actions.energy.settings import EnergyFactors
from actions.model.energy import EnergyUse
from actions.model.kube import CapacityType, Node
from actions.model.usage import PodOwner, UsageData
from actions.policy.teams import TeamDirectory
from actions.pricing.book import PriceBook

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


def local_queue_of(labels: Mapping[str, str]) -> str | None:
    """The LocalQueue a pod's ``labels`` name: Kueue's ``kueue.x-k8s.io/local-queue-name``, else the
    user's ``kueue.x-k8s.io/queue-name``; None outside Kueue."""
    return labels.get(KUEUE_LOCAL_QUEUE_POD_LABEL) or labels.get("kueue.x-k8s.io/queue-name") or None


def consumer_of(owner: PodOwner | None, namespace: str, pod: str) -> tuple[str, str, str | None]:
    """``(kind, name, queue)`` of the consumer a pod's GPU-hours are attributed to.

    In order: a pod labelled ``notebook-name`` (Kubeflow) is that ``Notebook``; a pod labelled
    ``kueue.x-k8s.io/queue-name`` belongs to a Kueue ``Workload``, named after its Job or
    Deployment (Kueue's own Workload object names are not in the metrics); a ReplicaSet stands
    for its ``Deployment`` (the name without the pod-template-hash suffix); any other controller
    (Job, StatefulSet, ...) is itself; a pod without a controller is the ``Pod``.
    """
    labels = owner.labels if owner else {}
    queue = local_queue_of(labels)
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


# --- the computation -------------------------------------------------------------------------------


@dataclass
class _Acc:
    gpu_hours: float = 0.0
    idle: float = 0.0
    cost: float = 0.0
    idle_cost: float = 0.0
    energy_cost: float = 0.0
    kwh: float = 0.0
    idle_kwh: float = 0.0
    measured: float = 0.0

    def add(self, hours: float, idle: float, rate: float, kwh: float, idle_kwh: float, measured: float,
            usd_per_kwh: float) -> None:
        """Adds GPU-hours at ``rate`` USD per GPU-hour, and kWh at ``usd_per_kwh`` (0 unless billed)."""
        self.gpu_hours += hours
        self.idle += idle
        self.energy_cost += kwh * usd_per_kwh
        self.cost += hours * rate + kwh * usd_per_kwh
        self.idle_cost += idle * rate + idle_kwh * usd_per_kwh
        self.kwh += kwh
        self.idle_kwh += idle_kwh
        self.measured += measured

    def energy(self, factors: EnergyFactors | None) -> EnergyUse:
        return energy_use(self.kwh, self.idle_kwh, self.measured, factors)


def energy_use(kwh: float, idle_kwh: float, measured: float, factors: EnergyFactors | None) -> EnergyUse:
    """The :class:`~actions.model.energy.EnergyUse` of ``kwh`` at the GPU (``idle_kwh`` of it idle,
    measured over ``measured`` GPU-hours) under ``factors`` (PUE 1 and no carbon without)."""
    if factors is None:
        return EnergyUse(kwh, idle_kwh, kwh, None, measured)
    return EnergyUse(kwh, idle_kwh, factors.facility_kwh(kwh), factors.co2e_kg(kwh), measured, factors.co2e_kg(idle_kwh))


def idle_definition(step_seconds: float, threshold_pct: float) -> str:
    """The sentence a report shows to say what its idle GPU-hours are."""
    return (
        f"Idle: GPU-hours in {step_seconds / 60:g}-minute steps whose engine activity peaked at or "
        f"under {threshold_pct:g}% (DCGM_FI_PROF_GR_ENGINE_ACTIVE, else DCGM_FI_DEV_GPU_UTIL); "
        "steps without telemetry count as used"
    )


def compute_cost_report(
    usage: UsageData,
    prices: PriceBook,
    teams: TeamDirectory,
    *,
    team_label: str | None = "team",
    top_consumers: int = 5,
    api_nodes: Mapping[str, Node] | None = None,
    energy: EnergyFactors | None = None,
    group_of: Callable[[str, str | None], str] | None = None,
) -> CostReport:
    """Price ``usage`` and split it by team (see the module docstring for every definition).

    ``api_nodes`` (node name -> model ``Node`` from the Kubernetes API) are consulted only for
    nodes whose capacity type the metrics lack, and the report's notes say so. A node that no
    price source covers is counted at $0 with a note naming it and the config that would fix it.
    ``energy`` (PUE, carbon intensity, USD per kWh) turns the measured kWh into facility kWh and
    kg CO2e, and bills the facility kWh of GPUs priced by hardware amortisation
    (``PriceQuote.energy_billed``, on-prem) at its USD per kWh. Every configured team appears,
    with zeros when it used nothing. ``group_of`` (namespace, LocalQueue or None -> line) splits
    it by that key instead of by team (:mod:`actions.cost.queues`), without a daily split: the
    daily rows name no queue. Pure.
    """
    nodes, notes = resolve_nodes(usage, api_nodes)
    notes = list(usage.notes) + notes
    if usage.idle_threshold_pct is not None:
        notes.insert(0, idle_definition(usage.step_seconds, usage.idle_threshold_pct))
    priced_cache: dict[tuple[str, str | None], Priced] = {}

    def priced(node: str, model: str | None) -> Priced:
        key = (node, model)
        if key not in priced_cache:
            priced_cache[key] = price_of(nodes.get(node), model, prices)
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
    line_quote: dict[tuple, Priced] = {}
    consumers: dict[str, dict[tuple, _Acc]] = defaultdict(lambda: defaultdict(_Acc))
    consumer_queue: dict[tuple, str | None] = {}
    spot_hours: dict[str, float] = defaultdict(float)
    team_namespaces: dict[str, set[str]] = defaultdict(set)
    unpriced: set[str] = set()
    billed_kwh: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # team -> energy USD, idle energy USD

    def usd_per_kwh(pr: Priced) -> float:
        # USD per kWh at the GPU: the facility's kWh (x PUE) at the configured price.
        if pr.quote is None or not pr.quote.energy_billed or energy is None or energy.usd_per_kwh is None:
            return 0.0
        return energy.usd_per_kwh * energy.pue

    for p in usage.pods:
        kind, name, queue = consumer_of(usage.owners.get((p.namespace, p.pod)), p.namespace, p.pod)
        t = group_of(p.namespace, queue) if group_of else team(p.namespace)
        team_namespaces[t].add(p.namespace)
        pr = priced(p.node, p.gpu_model or node_model.get(p.node))
        rate = pr.usd_per_gpu_hour
        if pr.quote is None:
            unpriced.add(p.node)
        idle = min(p.idle_gpu_hours, p.gpu_hours)
        shown = f"{pr.gpu_model} {p.sharing}" if p.sharing else pr.gpu_model
        lkey = (shown, pr.capacity_label, rate, pr.quote.source if pr.quote else "")
        line_quote[lkey] = pr
        kwh_rate = usd_per_kwh(pr)
        figures = (p.gpu_hours, idle, rate, p.energy_kwh, p.idle_energy_kwh, p.energy_gpu_hours, kwh_rate)
        lines_by_team[t][lkey].add(*figures)
        if kwh_rate:
            billed = billed_kwh[t]
            billed[0] += p.energy_kwh * kwh_rate
            billed[1] += p.idle_energy_kwh * kwh_rate
        if pr.capacity is CapacityType.SPOT:
            spot_hours[t] += p.gpu_hours
        ckey = (kind, p.namespace, name)
        consumer_queue[ckey] = consumer_queue.get(ckey) or queue
        consumers[t][ckey].add(*figures)

    daily: dict[str, dict[date, dict[str, float]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(float)))
    daily_idle: dict[str, dict[date, float]] = defaultdict(lambda: defaultdict(float))
    # Billed energy has no daily rows of its own: a team's is spread over its days on billed GPUs
    # by GPU-hours, so its days add up to its cost.
    daily_rows = usage.daily if group_of is None else ()
    billed_days = [d for d in daily_rows if usd_per_kwh(priced(d.node, node_model.get(d.node)))]
    billed_hours: dict[str, float] = defaultdict(float)
    for d in billed_days:
        billed_hours[team(d.namespace)] += d.gpu_hours
    for d in daily_rows:
        t = team(d.namespace)
        pr = priced(d.node, node_model.get(d.node))
        rate = pr.usd_per_gpu_hour
        part = d.gpu_hours / billed_hours[t] if usd_per_kwh(pr) and billed_hours[t] else 0.0
        daily[t][d.day][pr.capacity_label] += d.gpu_hours * rate + billed_kwh[t][0] * part
        daily_idle[t][d.day] += min(d.idle_gpu_hours, d.gpu_hours) * rate + billed_kwh[t][1] * part

    unrequested, node_hours, node_cost, node_kwh = _unrequested(usage, priced, node_model, unpriced, usd_per_kwh, energy)
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
                    energy_cost_usd=acc.energy_cost,
                )
            )
        lines.sort(key=lambda f: (-f.cost_usd, -f.gpu_hours, f.gpu_model, f.capacity_type))
        # Only the top few become ConsumerLines: a large fleet's team has 10,000s of owners.
        top = [
            ConsumerLine(kind, ns, name, c.gpu_hours, c.cost, c.idle, c.idle / c.gpu_hours if c.gpu_hours else 0.0,
                     consumer_queue.get((kind, ns, name)), c.kwh)
            for (kind, ns, name), c in heapq.nsmallest(
                top_consumers, consumers.get(t, {}).items(),
                key=lambda kv: (-kv[1].cost, -kv[1].gpu_hours, kv[0][1], kv[0][2]),
            )
        ]
        hours = sum(f.gpu_hours for f in lines)
        idle = sum(f.idle_gpu_hours for f in lines)
        used = lines_by_team.get(t, {}).values()
        team_energy = energy_use(sum(a.kwh for a in used), sum(a.idle_kwh for a in used),
                                 sum(a.measured for a in used), energy)
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
            energy=team_energy,
        )
    if any(p.energy_gpu_hours for p in usage.pods) or usage.node_energy_kwh:
        measured = sum(p.energy_gpu_hours for p in usage.pods)
        notes.append(energy_definition(measured, sum(p.gpu_hours for p in usage.pods), energy))
    elif usage.pods:
        notes.append("GPU energy unknown: no DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION or DCGM_FI_DEV_POWER_USAGE series "
                     "for these pods (add them to dcgm-exporter's counters CSV)")
    if energy is not None and energy.usd_per_kwh is None and any(
        q.quote is not None and q.quote.energy_billed for q in priced_cache.values()
    ):
        notes.append("on-prem GPUs are priced by amortisation alone: set energy.usd_per_kwh to charge their energy")
    return CostReport(
        usage.start, usage.end, reports, tuple(notes), usage.warnings, usage.covered_from,
        unrequested=unrequested, node_gpu_hours=node_hours, node_cost_usd=node_cost,
        gpu_free_teams=frozenset(team(ns) for ns in usage.namespace_labels if ns) - set(reports),
        node_energy_kwh=node_kwh, energy_basis=energy.describe() if energy is not None else "",
    )


def energy_definition(measured_gpu_hours: float, gpu_hours: float, energy: EnergyFactors | None) -> str:
    """The sentence a report shows to say what its energy figures are and how much was measured."""
    share = f"{min(1.0, measured_gpu_hours / gpu_hours):.0%} of the requested GPU-hours" if gpu_hours else "no GPU-hours"
    basis = energy.describe() if energy is not None else "PUE 1.0 (default: facility overhead not counted); no carbon intensity set"
    return (
        "Energy: kWh at the GPU, measured by DCGM (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION where exported, else "
        f"DCGM_FI_DEV_POWER_USAGE over time) for {share}; unmeasured steps are unknown, not counted. {basis}"
    )


def _unrequested(
    usage: UsageData, priced: Any, node_model: Mapping[str, str], unpriced: set[str], usd_per_kwh: Any,
    energy: EnergyFactors | None,
) -> tuple[UnrequestedLine | None, float, float, float]:
    """The GPU-hours and kWh of each node no pod requested, and every GPU node's GPU-hours, cost
    and kWh. A node whose pods show more GPU-hours (or kWh) than the node (the series are sampled
    apart) is counted at its pods', so teams + unrequested never exceed the total."""
    if not usage.node_gpu_hours and not usage.node_energy_kwh:
        return None, 0.0, 0.0, 0.0
    requested: dict[str, float] = defaultdict(float)
    drawn: dict[str, float] = defaultdict(float)
    for p in usage.pods:
        requested[p.node] += p.gpu_hours
        drawn[p.node] += p.energy_kwh
    by_node: dict[str, tuple[float, float]] = {}
    free_kwh: dict[str, float] = {}
    total_hours = total_cost = total_kwh = 0.0
    for node in sorted(set(usage.node_gpu_hours) | set(requested) | set(usage.node_energy_kwh)):
        pr = priced(node, node_model.get(node))
        rate, kwh_rate = pr.usd_per_gpu_hour, usd_per_kwh(pr)
        if pr.quote is None and usage.node_gpu_hours.get(node):
            unpriced.add(node)
        capacity = max(usage.node_gpu_hours.get(node, 0.0), requested[node])
        kwh = max(usage.node_energy_kwh.get(node, 0.0), drawn[node])
        total_hours += capacity
        total_kwh += kwh
        total_cost += capacity * rate + kwh * kwh_rate
        free, spare = capacity - requested[node], kwh - drawn[node]
        if free > 1e-9 or spare > 1e-9:
            by_node[node] = (max(free, 0.0), max(free, 0.0) * rate + max(spare, 0.0) * kwh_rate)
            free_kwh[node] = max(spare, 0.0)
    line = UnrequestedLine(
        gpu_hours=sum(h for h, _ in by_node.values()),
        cost_usd=sum(c for _, c in by_node.values()),
        by_node=dict(sorted(by_node.items(), key=lambda kv: (-kv[1][1], kv[0]))),
        energy=energy_use(sum(free_kwh.values()), 0.0, 0.0, energy),
    )
    return line, total_hours, total_cost, total_kwh
