"""Right-sizing a pod template's GPUs (``ActionVerb.RESIZE_GPUS``) and its exact undo: pure
decisions over an object's JSON.

The target is a Kubeflow Notebook (kubeflow.org/v1) or a Deployment/StatefulSet (apps/v1); all
three keep their pod template at ``spec.template.spec.containers``. The change swaps the
container's ``before`` GPU resources for ``after`` in ``resources.limits`` and, where it lists
them, ``resources.requests`` (extended resources such as ``nvidia.com/gpu`` and
``nvidia.com/mig-1g.10gb`` may not be overcommitted, so the two carry the same count; NVIDIA
device plugin). The patch is an RFC 7386 merge patch, which replaces the containers list whole,
so it carries the ``resourceVersion`` it was computed from: a concurrent edit makes it conflict
(409) and the writer reads and plans again instead of overwriting it.

The container's GPU resources must be what the advice saw (``before``) or already the advised
ones (``after``): anything else means the advice no longer holds and :func:`plan_resize_apply`
raises :class:`StaleAdvice`. The undo record keeps each touched key's value as it was in
``limits`` and ``requests`` (``None`` where absent), so Restore puts back exactly that.

A change may also add labels to the pod template's ``nodeSelector`` (``GpuResize.node_selector``:
a MIG profile is offered only by nodes partitioned with it), in the same merge patch, so the
template is never half changed. The undo record keeps each added key's old value and whether
there was a ``nodeSelector`` at all; Restore puts those back, removing a ``nodeSelector`` that
did not exist.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from actions.model.findings import GpuResize, ProposedAction
from actions.model.kube import ObjectRef

SECTIONS = ("limits", "requests")


class StaleAdvice(ValueError):
    """The target's GPU resources are no longer what the advice was made from."""


def _containers(current: Mapping[str, Any]) -> list[dict]:
    return list((((current.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [])


def _count(value: Any, where: str) -> int:
    try:
        count = int(str(value))
    except ValueError:
        raise ValueError(f"{where}={value!r} is not a whole number of devices (write it like \"1\")") from None
    return count


def gpu_resources(container: Mapping[str, Any]) -> dict[str, int]:
    """The container's GPU resources (``nvidia.com/gpu`` and ``nvidia.com/mig-*``) as counts per
    pod, from ``limits`` (where Kubernetes requires extended resources), else ``requests``.
    Raises ValueError for a count that is not a whole number."""
    resources = container.get("resources") or {}
    out: dict[str, int] = {}
    for section in ("requests", "limits"):  # limits win: they are what the scheduler enforces
        for key, value in (resources.get(section) or {}).items():
            if key == "nvidia.com/gpu" or key.startswith("nvidia.com/mig-"):
                out[key] = _count(value, f"{container.get('name')}.resources.{section}[{key}]")
    return out


def _pick(containers: list[dict], resize: GpuResize, target: ObjectRef) -> int:
    if resize.container is not None:
        for i, c in enumerate(containers):
            if c.get("name") == resize.container:
                return i
        raise StaleAdvice(f"{target} has no container {resize.container!r} in its pod template")
    wanted = ({k for k, _ in resize.before}, {k for k, _ in resize.after})
    gpu = [i for i, c in enumerate(containers) if set(gpu_resources(c)) in wanted]
    if len(gpu) != 1:
        raise StaleAdvice(
            f"{target}: {len(gpu)} containers of its pod template request GPUs; the change names one"
        )
    return gpu[0]


def _swap(resources: Mapping[str, Any], old: Mapping[str, int], new: Mapping[str, int]) -> dict:
    out = copy.deepcopy(dict(resources))
    for section in SECTIONS:
        values = out.get(section)
        if not values or not any(k in values for k in old):
            continue
        for k in old:
            values.pop(k, None)
        values.update({k: str(v) for k, v in new.items()})
    return out


def _pod_spec(current: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((current.get("spec") or {}).get("template") or {}).get("spec") or {}


def _selector_record(held: Mapping[str, str] | None, wanted: Mapping[str, str], applied: bool) -> dict:
    """What Restore needs to put the pod template's ``nodeSelector`` back: ``had`` (whether it
    held other keys, so an emptied one is removed, not left as ``{}``) and ``before`` (each
    advised key's value, ``None`` where absent). Read back from an applied object, a key holding
    the advised value is taken as added by the change (one merge patch wrote it with the GPUs)."""
    held = dict(held or {})
    if applied:
        return {"had": bool(set(held) - set(wanted)),
                "before": {k: None if held.get(k) == v else held.get(k) for k, v in wanted.items()}}
    return {"had": bool(held), "before": {k: held.get(k) for k in wanted}}


def _patch(current: Mapping[str, Any], containers: list[dict], **pod_fields: Any) -> dict:
    patch: dict[str, Any] = {"spec": {"template": {"spec": {"containers": containers, **pod_fields}}}}
    resource_version = (current.get("metadata") or {}).get("resourceVersion")
    if resource_version:
        patch["metadata"] = {"resourceVersion": resource_version}
    return patch


def plan_resize_apply(action: ProposedAction, current: Mapping[str, Any], undo: dict) -> dict | None:
    """The merge patch that makes ``action.resize`` on ``current`` (the target's JSON as read),
    or ``None`` when its container already has the ``after`` resources. Fills ``undo`` with
    ``container`` and ``before`` (``{"limits": {key: value or None}, "requests": {...}}``
    over the touched keys), read back from the object when already applied so applying twice
    gives the same record. Raises StaleAdvice when the container's GPU resources are neither
    ``before`` nor ``after`` (the advice no longer holds), ValueError for unreadable counts."""
    resize = action.resize
    assert resize is not None  # check_target refuses RESIZE_GPUS without one
    before, after = dict(resize.before), dict(resize.after)
    containers = copy.deepcopy(_containers(current))
    i = _pick(containers, resize, action.target)
    c = containers[i]
    now = gpu_resources(c)
    touched = sorted(set(before) | set(after))
    undo["container"] = c.get("name")
    selector = dict(resize.node_selector)
    held = _pod_spec(current).get("nodeSelector")
    pinned = all((held or {}).get(k) == v for k, v in selector.items())
    # A change that keeps the GPU request (one nvidia.com/gpu onto a MIG single-strategy node)
    # is applied only once its nodeSelector is.
    if now == after and (before != after or pinned):
        # Already applied: what was there is the advice's ``before`` in the sections that hold it.
        restored = _swap(c.get("resources") or {}, after, before)
        undo["before"] = {s: {k: (restored.get(s) or {}).get(k) for k in touched} for s in SECTIONS}
        if selector:
            undo["node_selector"] = _selector_record(held, selector, applied=True)
        return None
    if now != before:
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(now.items())) or "no GPUs"
        was = ", ".join(f"{k}: {v}" for k, v in sorted(before.items()))
        raise StaleAdvice(
            f"{action.target} container {c.get('name')!r} now requests {shown}, not the {was} the advice was "
            f"made from: the advice no longer holds (run /gpu advise again)"
        )
    resources = c.get("resources") or {}
    undo["before"] = {s: {k: (resources.get(s) or {}).get(k) for k in touched} for s in SECTIONS}
    c["resources"] = _swap(resources, before, after)
    if not selector:
        return _patch(current, containers)
    undo["node_selector"] = _selector_record(held, selector, applied=False)
    return _patch(current, containers, nodeSelector=selector)  # a merge: the other keys stay


def plan_resize_restore(action: ProposedAction, undo: Mapping[str, Any], current: Mapping[str, Any]) -> dict | None:
    """The merge patch that puts back the container's GPU resources recorded in ``undo`` (what
    :func:`plan_resize_apply` filled), or ``None`` when it no longer has the ``after`` resources
    (already restored, or changed by someone since: their change is kept). Raises ValueError
    when ``undo`` lacks the record or a count is unreadable."""
    resize = action.resize
    assert resize is not None
    if not isinstance(undo.get("before"), Mapping) or not undo.get("container"):
        raise ValueError(f"the undo record {dict(undo)!r} has no container and GPU resources to put back")
    containers = copy.deepcopy(_containers(current))
    for c in containers:
        if c.get("name") == undo["container"]:
            break
    else:
        return None
    if gpu_resources(c) != dict(resize.after):
        return None
    resources = copy.deepcopy(c.get("resources") or {})
    for section in SECTIONS:
        recorded = undo["before"].get(section) or {}
        values = resources.get(section)
        if values is None:
            continue  # the change never wrote a section that was not there
        for k in {k for k, _ in resize.after} | set(recorded):
            values.pop(k, None)
        values.update({k: v for k, v in recorded.items() if v is not None})
    c["resources"] = resources
    record = undo.get("node_selector")
    if not resize.node_selector or not isinstance(record, Mapping):
        return _patch(current, containers)
    held = dict(_pod_spec(current).get("nodeSelector") or {})
    # Only keys still holding the advised value are put back: a label someone set since stays.
    back = {k: record["before"].get(k) for k, v in resize.node_selector if held.get(k) == v}
    if back and not record.get("had") and set(held) == set(back) and all(v is None for v in back.values()):
        return _patch(current, containers, nodeSelector=None)  # there was none: remove it, not leave {}
    return _patch(current, containers, nodeSelector=back) if back else _patch(current, containers)
