"""The model's JSON round-trip: findings, actions and telemetry to JSON-able values and back, so a
snapshot or a finding can be stored, dumped and replayed through the same decision code
(``gpu-cost-bot sweep --cluster-state``, the demo, the store's ``finding_json``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from actions.model.findings import ActionVerb, AdviceLimits, Finding, GpuEvidence, GpuResize, Handling, ProposedAction
from actions.model.kube import CapacityType, ObjectRef
from actions.model.quote import PriceQuote
from actions.model.telemetry import GpuTelemetry, TelemetrySnapshot
from actions.model.times import format_time, parse_time

# --- JSON round-trip -------------------------------------------------------------------------------


# A dataclass's field names by its type: dataclasses.fields() is most of a finding's conversion.
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def to_jsonable(obj: Any) -> Any:
    """Turn model objects into JSON-compatible values (datetimes as RFC 3339, enums as values)."""
    # Most values are plain: answer them before the dataclass and ABC checks, which cost a sweep
    # of 800 findings about a second. Enum members that are str or int are caught below first.
    kind = type(obj)
    if obj is None or kind in (str, int, float, bool):
        return obj
    if kind is dict:
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    names = _FIELD_NAMES.get(kind)
    if names is None and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(obj))
    if names is not None:
        out = {name: to_jsonable(getattr(obj, name)) for name in names}
        if isinstance(obj, Finding):
            out["usd_per_day"] = obj.usd_per_day
            out["usd_so_far"] = obj.usd_so_far
        return out
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, datetime):
        return format_time(obj)
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj


def telemetry_from_jsonable(data: Mapping[str, Any]) -> TelemetrySnapshot:
    """Inverse of ``to_jsonable`` for a TelemetrySnapshot. Raises KeyError/ValueError on bad input."""
    gpus = []
    for g in data.get("gpus", []):
        g = dict(g)
        for k in ("last_active", "first_sample"):
            g[k] = parse_time(g[k]) if g.get(k) else None
        gpus.append(GpuTelemetry(**g))
    return TelemetrySnapshot(
        at=parse_time(data["at"]), window_seconds=float(data["window_seconds"]), gpus=tuple(gpus)
    )


def action_from_jsonable(a: Mapping[str, Any]) -> ProposedAction:
    """Inverse of ``to_jsonable`` for a ProposedAction. Raises KeyError/ValueError on bad input."""
    resize = a.get("resize")
    return ProposedAction(
        ActionVerb(a["verb"]),
        ObjectRef(**a["target"]),
        a["summary"],
        GpuResize(
            before=tuple((str(k), int(v)) for k, v in resize["before"]),
            after=tuple((str(k), int(v)) for k, v in resize["after"]),
            container=resize.get("container"),
            node_selector=tuple((str(k), str(v)) for k, v in resize.get("node_selector") or ()),
            limits=AdviceLimits(**resize["limits"]) if resize.get("limits") else None,
        ) if resize else None,
    )


def finding_from_jsonable(data: Mapping[str, Any]) -> Finding:
    """Inverse of ``to_jsonable`` for a Finding (derived keys such as ``usd_per_day`` are ignored).

    Raises KeyError or ValueError on malformed input.
    """
    d = {k: v for k, v in data.items() if k not in ("usd_per_day", "usd_so_far")}
    price = dict(d["price"])
    price["capacity_type"] = CapacityType(price["capacity_type"])
    d["price"] = PriceQuote(**price)
    d["evidence"] = tuple(GpuEvidence(**e) for e in d["evidence"])
    d["pods"] = tuple(d["pods"])
    d["notes"] = tuple(d.get("notes", ()))
    d["detected_at"] = parse_time(d["detected_at"])
    if d.get("action"):
        a = d["action"]
        d["action"] = action_from_jsonable(a)
    if d.get("job"):
        d["job"] = ObjectRef(**d["job"])
    # Findings stored before policies per team carry no handling: they were made under "ask".
    d["handling"] = Handling(**d["handling"]) if d.get("handling") else Handling()
    return Finding(**d)
