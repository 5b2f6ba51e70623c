"""What advice judges and what it says: one consumer's use of its GPUs (:class:`ConsumerUsage`),
one team's steady baseline (:class:`TeamBaseline`), reserved GPUs' idle share
(:class:`ReservedUse`), and the recommendations. Plain data, no I/O; the settings that judge it
are :class:`actions.policy.advice.AdvicePolicy`, the raw history :mod:`actions.model.history`.

Conventions as in :mod:`actions.model`: money USD, rates USD per GPU-hour, framebuffer MiB (as
``DCGM_FI_DEV_FB_USED``), engine activity percent 0-100, durations seconds. A month is 730 h
(the cloud billing convention, 8,760 h / 12), so a "USD per month" is a run rate: what the last
window's use would cost over 730 h.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Mapping

from actions.advice.targets import NodeOffer
from actions.model.findings import ActionVerb, GpuResize, ProposedAction
from actions.model.kube import CapacityType, ObjectRef
from actions.model.quote import PriceQuote

HOURS_PER_MONTH = 730.0  # 8,760 h / 12, as clouds bill
INTERRUPTIBLE_ANNOTATION = "gpu-cost-bot/interruptible"
CHECKPOINT_ANNOTATION = "gpu-cost-bot/checkpoint-interval"
INTERRUPTION_ANNOTATION = "gpu-cost-bot/interruption-interval"


@dataclass(frozen=True)
class ConsumerUsage:
    """One consumer's GPUs over the advice window, as the sweep names it.

    ``role`` is ``"notebook"``, ``"job"`` or ``"serving"``; ``whole_gpus`` counts
    ``nvidia.com/gpu`` requested (0 for MIG or shared requests) and ``gpus`` the physical-GPU
    equivalents requested; ``restarts_cleanly`` says why the consumer survives an interruption (a
    Kueue Workload, a Job's ``backoffLimit``, the opt-in annotation), ``None`` when nothing
    says it does. History: ``gpu_hours`` of samples in the window (GPU-hours), ``peak_fb_mib``
    (MiB, the most any one of its GPUs held), ``peak_engine_pct`` (percent 0-100 of one GPU),
    ``busy_gpus`` (the ``busy_quantile`` of its GPUs busy at once), ``mean_power_w`` (watts, the
    highest mean of its GPUs) beside ``idle_power_ceiling_w`` (watts, the sweep's idle
    ceiling for its GPU model). Any history figure may be ``None`` when Prometheus had no series.
    ``containers`` lists, for one pod of several GPU containers, each as ``(name, whole GPUs,
    GPUs busy at once)`` (the ``busy_quantile`` over that container's GPUs alone, or ``None``).
    ``landing`` is what each node its pods can land on offers (:mod:`actions.advice.targets`;
    empty: none known, so no size is advised that a node must give); ``kueue`` says why Kueue
    manages it (its Workload, or a ``kueue.x-k8s.io/queue-name`` label), ``None`` when it does not.
    """

    key: str
    team: str
    namespace: str
    consumer_kind: str
    name: str
    role: str
    pods: tuple[str, ...]
    whole_gpus: int
    gpus: float
    gpu_model: str
    instance_type: str | None
    capacity: CapacityType
    window_seconds: float
    gpu_hours: float | None = None
    peak_fb_mib: float | None = None
    peak_engine_pct: float | None = None
    engine_signal: str | None = None
    busy_gpus: float | None = None
    mean_power_w: float | None = None
    idle_power_ceiling_w: float | None = None
    restarts_cleanly: str | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    workload: str | None = None
    target: ObjectRef | None = None
    containers: tuple[tuple[str, int, float | None], ...] = ()
    landing: tuple[NodeOffer, ...] = ()
    kueue: str | None = None

    @property
    def subject(self) -> str:
        """``"Notebook ml/llm-explore"``, with the Kueue Workload when there is one."""
        who = f"{self.consumer_kind} {self.namespace}/{self.name}"
        return f"{who}, Workload {self.workload}" if self.workload else who

    @property
    def gpu_hours_per_month(self) -> float:
        """GPU-hours a month at the window's rate (``gpu_hours`` x 730 h / window hours), or
        every GPU requested all month when the history has no figure."""
        if self.gpu_hours is None:
            return self.gpus * HOURS_PER_MONTH
        return self.gpu_hours * HOURS_PER_MONTH / (self.window_seconds / 3600)


@dataclass(frozen=True)
class TeamBaseline:
    """One team's GPUs of one family over the commitment window: ``baseline_gpus`` is the
    ``baseline_quantile`` of hourly GPUs in use over the hours that had any, ``hours_in_use``
    how many hours had any of ``hours`` in the period. ``instance_type`` and ``capacity`` are
    how the team's GPUs of this family are bought now (from its nodes; ``None``/unknown when
    none run now)."""

    team: str
    gpu_model: str
    baseline_gpus: float
    hours_in_use: float
    hours: float
    instance_type: str | None = None
    capacity: CapacityType = CapacityType.ON_DEMAND
    peak_gpus: float | None = None


@dataclass(frozen=True)
class ReservedUse:
    """Reserved GPUs of one model (on nodes of capacity type ``reserved`` or in
    ``policy.reserved_nodepools``) over the commitment window: ``gpus`` of them, idle in
    ``idle_share`` (ratio 0-1) of their GPU-hours, read at hourly marks; ``instance_type`` the
    most common of their nodes; ``nodes`` their names."""

    gpu_model: str
    gpus: float
    idle_share: float
    hours: float
    instance_type: str | None = None
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recommendation:
    """One piece of advice.

    ``kind``: ``fewer-gpus``, ``mig``, ``smaller-gpu``, ``spot``, ``commitment`` or ``reserved-idle``. ``subject`` names who it is
    about, ``summary`` what to do in a sentence and ``change`` the manifest change or command
    that does it. Money: ``current_usd_per_month`` what the part advised on costs now,
    ``advised_usd_per_month`` after the change, ``saving_usd_per_month`` the difference (USD per
    730-h month at the window's run rate; ``None`` when no price for the advised option is
    known, then ``notes`` say how to set one). ``evidence`` holds the signal values as
    ``(name, value as shown)`` pairs; ``prices`` the quotes used, each with its source and
    as-of date. ``target`` is the object a right-sizing patch would change; ``resize`` the
    change an Apply button makes to its pod template (``None``: advice only, the ``change`` is
    for a person to make); ``cluster`` the cluster of ``clusters:`` it is about (``""``: made
    by a bot of one cluster, whose requests store its ``cluster_name``; never "the first").
    ``energy_saved_kwh_per_month`` is the energy at the GPUs the change saves, kWh per 730-h month
    at the window's run rate (:mod:`actions.advice.energy`): set where GPUs are given back
    (``fewer-gpus``), ``None`` where the same or unmeasured hardware keeps drawing (``mig``,
    ``smaller-gpu``, ``spot``, ``commitment``, ``reserved-idle``). It is not in the
    :attr:`fingerprint`: a power reading that moves posts no advice again.
    """

    kind: str
    key: str
    team: str
    namespace: str
    subject: str
    summary: str
    change: str
    current_usd_per_month: float
    advised_usd_per_month: float | None
    saving_usd_per_month: float | None
    evidence: tuple[tuple[str, str], ...]
    prices: tuple[PriceQuote, ...]
    notes: tuple[str, ...] = ()
    target: ObjectRef | None = None
    resize: GpuResize | None = None
    cluster: str = ""
    energy_saved_kwh_per_month: float | None = None

    @property
    def action(self) -> ProposedAction | None:
        """The ``RESIZE_GPUS`` action an approver's Apply would take, or ``None`` (advice only)."""
        if self.resize is None or self.target is None:
            return None
        return ProposedAction(ActionVerb.RESIZE_GPUS, self.target, self.summary, self.resize)

    @property
    def fingerprint(self) -> str:
        """A short hash of what the advice says: its key, what to do (the summary names the
        advised size, profile or rate) and the saving to 2 significant digits. The same advice on
        unchanged use keeps its fingerprint, so it is not posted again; a saving that moves by
        more than a rounding step, or a different size, is new advice."""
        saving = "none" if self.saving_usd_per_month is None else f"{self.saving_usd_per_month:.2g}"
        text = "|".join((self.kind, self.key, self.summary, saving))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def claim(self) -> str:
        """``"<key>#<fingerprint>"``: what a post of this advice is claimed under."""
        return f"{self.key}#{self.fingerprint}"
