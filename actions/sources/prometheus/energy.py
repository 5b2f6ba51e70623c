"""GPU energy per pod and node from the answers of :func:`~actions.sources.prometheus.energy_promql.energy_queries`,
shared as cost is: a whole GPU's energy is its pod's; a MIG instance's is its profile's share of its
GPU's (:func:`actions.hardware.gpus.mig_fraction`, the fraction its GPU-hours count as); on a
time-sliced node (GFD ``nvidia.com/gpu.replicas`` R > 1) dcgm-exporter gives a GPU's series to one of
the pods sharing it, so the node's GPU energy is split over its pods by their GPU-hours there, as
their cost is (each replica 1/R of a GPU). What no pod's share holds is the node's unrequested energy
(:func:`actions.cost.engine.compute_cost_report`). kWh at the GPU; GPU-hours physical-GPU
equivalents. Pure.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Mapping

Rows = Mapping[str, list[Mapping[str, Any]]]


@dataclass
class PodEnergy:
    """One pod's energy on one node: kWh, idle kWh, and the GPU-hours of it that were measured."""

    kwh: float = 0.0
    idle_kwh: float = 0.0
    measured_gpu_hours: float = 0.0


def _value(sample: Mapping[str, Any]) -> float:
    v = float(sample["value"][1])
    return 0.0 if math.isnan(v) else v


def attribute_energy(
    results: Rows,
    held: Mapping[tuple[str, str], Mapping[str, float]],
    capacity: Mapping[str, float],
    *,
    share: Callable[[str, str], float],
    replicas: Callable[[str], int],
    hours_per_step: float,
) -> tuple[dict[tuple[str, str, str], PodEnergy], dict[str, float]]:
    """``(per (namespace, pod, node) energy, node -> kWh of its GPUs)``.

    ``results``: the answers keyed by the energy query names; ``held``: (namespace, pod) -> node ->
    GPU-hours requested; ``capacity``: node -> GPU-hours it had; ``share(host, profile)`` the
    fraction of a GPU one device series stands for (1, or the MIG profile's); ``replicas(host)``
    the node's time-slicing replicas. Raises KeyError/ValueError on a malformed answer."""
    per_series: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # kWh, idle kWh, steps
    for i, name in enumerate(("energy", "idle_energy", "energy_steps")):
        for s in results.get(name, []):
            m = s["metric"]
            key = (m.get("namespace", ""), m.get("pod", ""), m.get("Hostname", ""), m.get("GPU_I_PROFILE", ""),
                   m.get("UUID", ""), m.get("GPU_I_ID", ""))
            per_series[key][i] += _value(s)
    node_energy = {s["metric"].get("Hostname", ""): _value(s) for s in results.get("node_energy", [])}

    # (namespace, pod) -> host -> [kWh, idle kWh, measured GPU-hours], whole GPUs and MIG instances.
    by_pod: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0, 0.0]))
    sliced: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # host -> whole GPUs' kWh, idle, hours
    for (ns, pod, host, profile, _, _), (kwh, idle, steps) in per_series.items():
        if replicas(host) > 1:
            acc = sliced[host]
            acc[0] += kwh
            acc[1] += idle
            acc[2] += steps * hours_per_step
        elif pod:
            f = share(host, profile)
            acc = by_pod[(ns, pod)][host]
            acc[0] += kwh * f
            acc[1] += idle * f
            acc[2] += steps * hours_per_step * f

    out: dict[tuple[str, str, str], PodEnergy] = {}
    on_node: dict[str, float] = defaultdict(float)
    for (ns, pod), nodes in held.items():
        for node, hours in nodes.items():
            on_node[node] += hours
    for (ns, pod), nodes in held.items():
        total = sum(nodes.values())
        hosts = by_pod.get((ns, pod), {})
        # Series whose Hostname names none of the pod's nodes are spread over them pro rata.
        unmatched = [sum(v[i] for h, v in hosts.items() if h not in nodes) for i in range(3)]
        for node, hours in nodes.items():
            if replicas(node) > 1:
                kwh, idle, measured = sliced.get(node, (0.0, 0.0, 0.0))
                whole = max(capacity.get(node, 0.0), on_node[node])
                part = hours / whole if whole else 0.0
                e = PodEnergy(kwh * part, idle * part, hours * min(1.0, measured / whole) if whole else 0.0)
            else:
                mine = hosts.get(node, (0.0, 0.0, 0.0))
                part = hours / total if total else 0.0
                e = PodEnergy(*(mine[i] + unmatched[i] * part for i in range(3)))
                e.measured_gpu_hours = min(e.measured_gpu_hours, hours)
            if e.kwh or e.measured_gpu_hours:
                out[(ns, pod, node)] = e
    return out, node_energy
