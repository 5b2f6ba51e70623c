"""The usage ledger's arithmetic: one finished hour's usage as rows, and rows back into the usage
of a period. Pure: no I/O, no clock reads.

A report from the ledger is the same computation as one from Prometheus: the rows of the hours
in a period are summed into the :class:`~actions.model.usage.UsageData` the cost engine prices
(:func:`actions.cost.engine.compute_cost_report`), with today's prices, so both paths agree to the cent
on the same history. What a row keeps of a pod is what the report shows of it: its namespace and
its consumer (``kind``/``name``/LocalQueue as :func:`actions.cost.engine.consumer_of` names it),
on one node, with the node's pricing facts (instance type, capacity type, GPU product, node pool)
as ``kube_node_labels`` gave them that hour.

Two kinds of rows (``measure``): :data:`~actions.model.ledger.REQUESTED` (stored as ``held``),
GPU-hours pods requested (idle part included), and ``capacity``, the GPU-hours a node had whether
requested or not; a node's unrequested GPU-hours are its capacity minus what its pods requested.
GPU-hours are physical-GPU equivalents. Each row also keeps the energy its GPUs drew (kWh at the
GPU, the part in idle steps, and the GPU-hours it was measured over; a ``capacity`` row: all the
node's GPUs), summed like the GPU-hours; rows written before the ledger kept energy read 0 in all
three, energy not measured.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from datetime import datetime
from typing import Iterable, Mapping, Sequence

from actions.cost.engine import KUEUE_LOCAL_QUEUE_POD_LABEL, consumer_of
from actions.model.kube import CapacityType
from actions.model.ledger import CAPACITY, REQUESTED, LedgerRow
from actions.model.times import floor_hour
from actions.model.usage import DailyUsage, NodeInfo, PodOwner, PodUsage, UsageData
from actions.pricing.book import PriceBook, PriceNotFound


def owner_for(namespace: str, pod: str, kind: str, name: str, queue: str | None) -> PodOwner:
    """A :class:`~actions.model.usage.PodOwner` that :func:`~actions.cost.engine.consumer_of` reads back as
    ``(kind, name, queue)``: how a ledger row's consumer becomes a pod of the cost engine again."""
    labels: dict[str, str] = {}
    if kind == "Notebook":
        labels["notebook-name"] = name
    if queue:
        labels[KUEUE_LOCAL_QUEUE_POD_LABEL] = queue
    return PodOwner(namespace, pod, kind, name, labels)


def _quote(prices: PriceBook | None, node: NodeInfo | None, model: str | None) -> tuple[float | None, str | None]:
    if prices is None:
        return None, None
    capacity = (node.capacity_type if node else None) or CapacityType.UNKNOWN
    try:
        q = prices.quote(node.instance_type if node else None, capacity, model or (node.gpu_model if node else None))
    except PriceNotFound:
        return None, "no price found"
    return q.usd_per_gpu_hour, f"{q.source} (as of {q.as_of})" if q.as_of else q.source


def rows_from_usage(
    usage: UsageData, hour: datetime, cluster: str, team_label: str | None, prices: PriceBook | None = None
) -> list[LedgerRow]:
    """The ledger rows of one hour's ``usage`` (``usage.start`` = ``hour``, one hour long, as
    :class:`~actions.sources.prometheus.usage.PrometheusUsage` reads it): pods summed per
    (namespace, consumer, node, GPU model, sharing), and each node's capacity. ``prices`` (optional)
    records the price in force. Raises ValueError when ``hour`` is not the start of an hour."""
    if hour != floor_hour(hour):
        raise ValueError(f"{hour.isoformat()} is not the start of an hour; e.g. 2026-11-20T06:00:00Z")
    # Per key: GPU-hours, idle GPU-hours, kWh, idle kWh, GPU-hours whose energy was measured.
    requested: dict[tuple, list[float]] = defaultdict(lambda: [0.0] * 5)
    for p in usage.pods:
        kind, name, queue = consumer_of(usage.owners.get((p.namespace, p.pod)), p.namespace, p.pod)
        acc = requested[(p.namespace, kind, name, queue, p.node, p.gpu_model, p.sharing)]
        acc[0] += p.gpu_hours
        acc[1] += min(p.idle_gpu_hours, p.gpu_hours)
        acc[2] += p.energy_kwh
        acc[3] += p.idle_energy_kwh  # as measured (not capped like the idle GPU-hours)
        acc[4] += p.energy_gpu_hours

    def team(ns: str) -> str | None:
        return usage.namespace_labels.get(ns, {}).get(team_label) if team_label else None

    def node_facts(node: str, model: str | None) -> dict:
        info = usage.nodes.get(node)
        usd, source = _quote(prices, info, model)
        return dict(
            instance_type=info.instance_type if info else None,
            capacity_type=info.capacity_type.value if info and info.capacity_type else None,
            gpu_product=info.gpu_model if info else None,
            replicas=info.replicas if info else 1,
            node_pool=info.node_pool if info else None,
            usd_per_gpu_hour=usd,
            price_source=source,
        )

    hour = floor_hour(hour)
    rows = [
        LedgerRow(hour, cluster, REQUESTED, ns, kind, name, node, hours, idle, queue, team(ns), model, sharing,
                  **node_facts(node, model), energy_kwh=kwh, idle_energy_kwh=idle_kwh, energy_gpu_hours=measured)
        for (ns, kind, name, queue, node, model, sharing), (hours, idle, kwh, idle_kwh, measured)
        in sorted(requested.items(), key=_key)
    ]
    # A node's capacity row also carries the kWh all its GPUs drew, measured over all its GPU-hours
    # (node_energy_kwh is per node, not per GPU). A node whose GPUs drew energy in an hour its
    # capacity series lacked still gets a capacity row, of 0 GPU-hours, so its energy is kept;
    # usage_from_rows reads such a row back as energy only (no capacity), as Prometheus gave it.
    # Its energy_gpu_hours is 0 too: the GPU-hours it was measured over are not known.
    energy = usage.node_energy_kwh
    capacity = {n: h for n, h in usage.node_gpu_hours.items() if h > 0}
    capacity.update({n: 0.0 for n, kwh in energy.items() if kwh > 0 and n not in capacity})
    rows += [
        LedgerRow(hour, cluster, CAPACITY, "", "", "", node, hours, **node_facts(node, None),
                  energy_kwh=energy.get(node, 0.0), energy_gpu_hours=hours if node in energy else 0.0)
        for node, hours in sorted(capacity.items())
    ]
    return rows


def _key(item: tuple) -> tuple:
    return tuple("" if v is None else str(v) for v in item[0])


def usage_from_rows(
    rows: Iterable[LedgerRow],
    days: Iterable[DailyUsage],
    start: datetime,
    end: datetime,
    *,
    team_label: str | None,
    step_seconds: float,
    idle_threshold_pct: float | None = None,
    warnings: Sequence[str] = (),
) -> UsageData:
    """The :class:`~actions.model.usage.UsageData` of ``[start, end]`` from the ledger's sums for it
    (``rows``: one per key, ``hour`` the latest hour the key was seen; ``days``: per UTC day,
    namespace and node, idle at most the GPU-hours). A node's and a namespace's labels are those of the latest hour, as
    ``last_over_time`` gives them in a report from Prometheus. Energy comes back in each pod's
    fields and, from the capacity rows, in ``node_energy_kwh`` (only the nodes whose energy was
    measured: rows written before the ledger kept energy add none). Pure."""
    pods: dict[tuple, list] = {}
    owners: dict[tuple[str, str], PodOwner] = {}
    latest: dict[str, LedgerRow] = {}
    teams: dict[str, tuple[datetime, str | None]] = {}
    capacity: dict[str, float] = defaultdict(float)
    energy: dict[str, float] = defaultdict(float)
    for r in rows:
        if r.node not in latest or latest[r.node].hour < r.hour:
            latest[r.node] = r
        if r.measure == CAPACITY:
            capacity[r.node] += r.gpu_hours
            # A node's energy when measured (rows written before the ledger kept energy: unknown).
            if r.energy_kwh > 0 or r.energy_gpu_hours > 0:
                energy[r.node] += r.energy_kwh
            continue
        if r.namespace not in teams or teams[r.namespace][0] < r.hour:
            teams[r.namespace] = (r.hour, r.namespace_team)
        # A pod name cannot hold "/", so these never meet a real pod's name.
        pod = f"{r.consumer_kind}/{r.consumer_name}/{r.queue or ''}"
        if (r.namespace, pod) not in owners:
            owners[(r.namespace, pod)] = owner_for(r.namespace, pod, r.consumer_kind, r.consumer_name, r.queue)
        acc = pods.setdefault((r.namespace, pod, r.node, r.gpu_model, r.sharing), [0.0] * 5)
        acc[0] += r.gpu_hours
        acc[1] += r.idle_gpu_hours
        acc[2] += r.energy_kwh
        acc[3] += r.idle_energy_kwh
        acc[4] += r.energy_gpu_hours
    # As a report from Prometheus orders them (by namespace, pod, node): the first pod on a node
    # to name its GPU model names it for the node's daily rows.
    pod_rows = tuple(
        PodUsage(ns, pod, node, hours, idle, model, sharing, kwh, idle_kwh, measured)
        for (ns, pod, node, model, sharing), (hours, idle, kwh, idle_kwh, measured)
        in sorted(pods.items(), key=lambda kv: kv[0][:3])
    )
    nodes = {
        n: NodeInfo(n, instance_type=r.instance_type, gpu_model=r.gpu_product, replicas=r.replicas,
                    capacity_type=CapacityType(r.capacity_type) if r.capacity_type else None, node_pool=r.node_pool)
        for n, r in latest.items()
    }
    daily = tuple(d for d in days if d.gpu_hours > 0)
    labels = {ns: ({team_label: v} if team_label and v else {}) for ns, (_, v) in teams.items()}
    return UsageData(
        start=start,
        end=end,
        step_seconds=step_seconds,
        pods=pod_rows,
        daily=daily,
        nodes=nodes,
        owners=owners,
        namespace_labels=labels,
        idle_threshold_pct=idle_threshold_pct,
        warnings=tuple(warnings),
        # Only nodes that had GPUs, as Prometheus gives them: a capacity row of 0 GPU-hours holds energy only.
        node_gpu_hours={n: x for n, x in capacity.items() if x > 0},
        node_energy_kwh=dict(energy),
    )


def price_groups(usage: UsageData) -> dict[str, str]:
    """Node -> the node whose daily rows it is summed under, for the nodes that
    :func:`~actions.cost.engine.compute_cost_report` prices alike: the same :class:`NodeInfo` but the
    name, and the same GPU model named by its first pod (what the engine prices a daily row
    with). Each group stands under its first node by name; nodes standing for themselves are
    left out. A node without a capacity type is always its own: the report may read that per
    node from the Kubernetes API. Pure."""
    node_model: dict[str, str] = {}
    for p in usage.pods:
        if p.gpu_model:
            node_model.setdefault(p.node, p.gpu_model)
    first: dict[tuple, str] = {}
    out: dict[str, str] = {}
    for name in sorted(usage.nodes):
        info = usage.nodes[name]
        if info.capacity_type is None:
            continue
        group = first.setdefault((replace(info, name=""), node_model.get(name)), name)
        if group != name:
            out[name] = group
    return out


def merge_usage(parts: Sequence[UsageData], start: datetime, end: datetime) -> UsageData:
    """One :class:`~actions.model.usage.UsageData` for ``[start, end]`` from the usage of pieces of it
    (ledger hours, a current hour read from Prometheus). Rows add up; node and namespace labels
    come from the latest piece that has them. Raises ValueError without parts."""
    if not parts:
        raise ValueError("no usage to merge")
    ordered = sorted(parts, key=lambda u: u.start)
    nodes: dict[str, NodeInfo] = {}
    owners: dict[tuple[str, str], PodOwner] = {}
    labels: dict[str, Mapping[str, str]] = {}
    capacity: dict[str, float] = defaultdict(float)
    energy: dict[str, float] = defaultdict(float)
    for u in ordered:
        nodes.update(u.nodes)
        owners.update(u.owners)
        labels.update(u.namespace_labels)
        for node, hours in u.node_gpu_hours.items():
            capacity[node] += hours
        for node, kwh in u.node_energy_kwh.items():
            energy[node] += kwh
    threshold = next((u.idle_threshold_pct for u in ordered if u.idle_threshold_pct is not None), None)
    return replace(
        ordered[0],
        start=start,
        end=end,
        pods=tuple(p for u in ordered for p in u.pods),
        daily=tuple(d for u in ordered for d in u.daily),
        nodes=nodes,
        owners=owners,
        namespace_labels=labels,
        idle_threshold_pct=threshold,
        notes=tuple(dict.fromkeys(n for u in ordered for n in u.notes)),
        warnings=tuple(dict.fromkeys(w for u in ordered for w in u.warnings)),
        covered_from=None,
        node_gpu_hours=dict(capacity),
        node_energy_kwh=dict(energy),
    )
