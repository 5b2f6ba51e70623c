"""A ClusterQueue's GPU quota, read from its object (kueue apis/kueue/v1beta1 and v1beta2
``ClusterQueueSpec``). Pure.

``spec.resourceGroups[].flavors[].resources[]`` holds, per ResourceFlavor and resource, a
``ResourceQuota``: ``nominalQuota`` (what the ClusterQueue's Workloads may use at a time),
``borrowingLimit`` (how much more it may borrow from the unused quota of its cohort,
``spec.cohort`` in v1beta1, ``spec.cohortName`` in v1beta2; null: no limit) and ``lendingLimit``
(how much of its unused quota the cohort may borrow). The start estimate counts the
``nominalQuota`` of GPU resources only: the bot does not model borrowing (what the cohort lends
depends on the other ClusterQueues' use), so an estimate never counts on GPUs that may be gone.
"""

from __future__ import annotations

from typing import Any, Mapping

from actions.hardware.gpus import is_gpu_resource

_SUFFIX = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3}


def quantity(value: Any) -> float:
    """A Kubernetes quantity (``8``, ``"8"``, ``"500m"``, ``"2k"``) as a number; ValueError
    when it is none."""
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * _SUFFIX[suffix]
    return float(text)


def gpu_nominal_quota(spec: Mapping[str, Any], flavors: tuple[str, ...] | None = None) -> float | None:
    """The GPUs a ClusterQueue's ``spec`` gives its Workloads: the ``nominalQuota`` of every GPU
    resource of every flavor (only ``flavors`` when given); None when it names no GPU resource."""
    total, seen = 0.0, False
    for group in spec.get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            if flavors is not None and flavor.get("name") not in flavors:
                continue
            for r in flavor.get("resources") or ():
                if is_gpu_resource(str(r.get("name", ""))) and r.get("nominalQuota") is not None:
                    total += quantity(r["nominalQuota"])
                    seen = True
    return total if seen else None
