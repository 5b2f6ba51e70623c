"""Right-sizing advice as an ActionRequest's finding: what an approver's Apply acts on. Pure.

The request machinery (store, messages, Approve/Restore) is keyed and rendered by a
:class:`~actions.model.findings.Finding`; advice that carries a ``RESIZE_GPUS`` action becomes one of kind
``right-size``, with the advised change as its action, the monthly saving as its dollars and the
advice's evidence as notes. Its re-check at Approve is the executor's own read of the target:
the change is planned only while the container's GPU request is what the advice saw.

A team silences advice from the request's buttons: Snooze keeps that one piece of advice out
of the advice posts until the snooze ends (then the request is asked again), Exempt keeps every
piece of advice on the consumer out until the exemption ends (:func:`silenced`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterable, Protocol, Sequence

from actions.advice.model import Recommendation
from actions.model.findings import Finding
from actions.model.times import HOURS_PER_MONTH

RIGHT_SIZE = "right-size"


class HeldRequest(Protocol):
    """What :func:`silenced` reads of a request (an :class:`~actions.store.requests.ActionRequest`)."""

    key: str
    kind: str
    state: str
    until: datetime | None


def consumer_key_of(key: str) -> str:
    """The key of the consumer a recommendation's key is about: ``"mig/idle-notebook/ml/nb"`` ->
    ``"idle-notebook/ml/nb"`` (every advice kind of one consumer shares it)."""
    return key.split("/", 1)[1] if "/" in key else key


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def silenced(recs: Sequence[Recommendation], held: Iterable[HeldRequest], now: datetime) -> set[str]:
    """The keys of ``recs`` a team silenced from its right-sizing requests (``held``), as of
    ``now``: every piece of advice on a consumer one of whose requests is ``exempt`` until after
    ``now`` (Exempt: leave this consumer alone), and the one piece whose own request is
    ``snoozed`` until after ``now`` (Snooze: not this one, for now). Pure."""
    live = [r for r in held if r.kind == RIGHT_SIZE and r.until is not None and _aware(r.until) > now]
    exempt = {consumer_key_of(r.key) for r in live if r.state == "exempt"}
    snoozed = {r.key for r in live if r.state == "snoozed"}
    return {r.key for r in recs if r.key in snoozed or consumer_key_of(r.key) in exempt}


def advice_finding(rec: Recommendation, now: datetime, window_seconds: float, cluster: str) -> Finding:
    """The finding a right-sizing request of ``rec`` carries, made at ``now`` over the advice
    window (``window_seconds``, seconds), in ``cluster`` (``rec.cluster``: its name, ``""`` for
    a bot of one cluster). ``usd_per_hour`` is the saving per hour (USD, the
    monthly saving / 730 h); ``gpus`` the whole GPUs the pod template requests now. Raises
    ValueError when ``rec`` has no action (advice only) or no price."""
    action = rec.action
    if action is None or rec.resize is None or not rec.prices:
        raise ValueError(f"{rec.key}: advice only, no change an Apply button can make")
    gpus = float(sum(n for k, n in rec.resize.before if k == "nvidia.com/gpu"))
    saving = rec.saving_usd_per_month or 0.0
    return Finding(
        kind=RIGHT_SIZE,
        key=rec.key,
        namespace=rec.namespace,
        name=action.target.name,
        team=rec.team,
        consumer_kind=action.target.kind,
        pods=(),
        node=None,
        gpus=gpus,
        gpu_model="",
        idle_seconds=0.0,
        usd_per_hour=saving / HOURS_PER_MONTH,
        price=rec.prices[0],
        evidence=(),
        detected_at=now,
        window_seconds=window_seconds,
        action=action,
        notes=(f"Change: {rec.change}", *(f"{name}: {value}" for name, value in rec.evidence), *rec.notes),
        cluster=cluster,
    )
