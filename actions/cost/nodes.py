"""Which node facts a report prices with: ``kube_node_labels`` as the usage gave them, or the
Kubernetes API's node labels where the metrics lack a capacity type. Pure.
"""

from __future__ import annotations

from typing import Mapping

from actions.model.kube import CapacityType, Node
from actions.model.usage import NODE_FROM_API, NodeInfo, UsageData


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
