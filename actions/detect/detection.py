"""Everything a sweep finds, and what the data it found it in lacked.

:func:`detect` runs the detectors over one snapshot of the cluster and one window of telemetry:
idle consumers (:mod:`actions.detect.idle`) and GPUs no pod requests (:mod:`actions.detect.unrequested`).
:func:`telemetry_warnings` says when the answer cannot be trusted as whole (no DCGM series, no
power, pods without series). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from actions.detect.gate import gate_all
from actions.detect.idle import TelemetrySet, detect_idle
from actions.detect.owners import OwnerIndex
from actions.detect.unrequested import unrequested_gpus
from actions.energy.settings import EnergyFactors
from actions.model.findings import Finding
from actions.model.snapshot import ClusterSnapshot
from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE, TelemetrySnapshot
from actions.policy.namespaces import PolicyBook
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory
from actions.pricing.book import PriceBook

MAX_NAMED_PODS = 5


def telemetry_warnings(snapshot: ClusterSnapshot, telemetry: TelemetrySnapshot) -> tuple[str, ...]:
    """Why a sweep over ``snapshot`` and ``telemetry`` cannot be trusted to have found every idle
    GPU: DCGM series missing altogether, power missing, series without pod labels, or running GPU
    pods without any series. Empty when nothing is missing (and when no GPU pod runs). Pure."""
    running = [p for p in snapshot.pods if p.phase == "Running" and p.gpus > 0]
    if not running:
        return ()
    window = f"{telemetry.window_seconds / 3600:g} h"
    if not telemetry.gpus:
        return (
            f"no DCGM series ({ENGINE_ACTIVE} or {GPU_UTIL}) in the last {window}, though {len(running)} GPU "
            "pod(s) run: install NVIDIA's dcgm-exporter and let this Prometheus scrape it; until then no GPU can "
            "be judged idle",
        )
    warnings = []
    if all(g.mean_power_w is None for g in telemetry.gpus):
        warnings.append(
            f"no {POWER_USAGE} series in the last {window}: idle is then never confirmed; enable the field in "
            "dcgm-exporter's counters (it is in the default set)"
        )
    attributed = {(g.namespace, g.pod) for g in telemetry.gpus if g.pod}
    if not attributed:
        warnings.append(
            "the DCGM series carry no pod or namespace labels, so no GPU can be tied to a pod: run dcgm-exporter "
            "with its Kubernetes pod mapping on (the default of its Helm chart)"
        )
        return tuple(warnings)
    unseen = sorted(f"{p.namespace}/{p.name}" for p in running if (p.namespace, p.name) not in attributed)
    if unseen:
        shown = ", ".join(unseen[:MAX_NAMED_PODS]) + (f" and {len(unseen) - MAX_NAMED_PODS} more" if len(unseen) > MAX_NAMED_PODS else "")
        warnings.append(
            f"{len(unseen)} of {len(running)} running GPU pods have no DCGM series ({shown}): is dcgm-exporter "
            "running on their nodes?"
        )
    return tuple(warnings)


@dataclass(frozen=True)
class Detection:
    """One sweep's answer: the idle ``findings`` and the ``warnings`` that say what the data
    lacked (:func:`telemetry_warnings`; empty when the answer is whole)."""

    findings: list[Finding]
    warnings: tuple[str, ...] = ()


def with_energy(detection: Detection, energy: EnergyFactors | None) -> Detection:
    """``detection`` with each finding carrying its cluster's PUE and carbon intensity (g CO2e per
    kWh), so its proposal can say the kg CO2e a day the idle GPUs cause. Pure."""
    if energy is None:
        return detection
    findings = [replace(f, pue=energy.pue, gco2e_per_kwh=energy.gco2e_per_kwh) for f in detection.findings]
    return Detection(findings, detection.warnings)


def detect(
    snapshot: ClusterSnapshot,
    telemetry: TelemetrySnapshot | TelemetrySet,
    prices: PriceBook,
    policy: Policy | PolicyBook,
    teams: TeamDirectory,
    now: datetime,
) -> Detection:
    """Everything one sweep finds: idle consumers (:func:`~actions.detect.idle.detect_idle`, under the
    policy in force in each namespace) and GPUs no pod requests
    (:func:`~actions.detect.unrequested.unrequested_gpus`, under the global policy), highest USD per hour
    first, each through the gate (:func:`~actions.detect.gate.gate_all`: an action the policy,
    an opt-out, do-not-disrupt or a disruption budget forbids is dropped, the finding then
    reported with why), with :func:`telemetry_warnings` and the policy overrides that were
    ignored. Pure."""
    book = policy if isinstance(policy, PolicyBook) else PolicyBook(policy, teams, snapshot.namespace_annotations)
    # One owner index for the detector and the gate: at 10,000 GPUs it is tens of thousands of entries.
    index = OwnerIndex(snapshot)
    findings = detect_idle(snapshot, telemetry, prices, book, teams, now, index)
    snapshots = [telemetry] if isinstance(telemetry, TelemetrySnapshot) else list(telemetry.values())
    # The global policy's window answers for nodes: a node belongs to no team.
    base = (telemetry.get(book.base.telemetry_key()) if not isinstance(telemetry, TelemetrySnapshot) else telemetry) or (
        snapshots[0] if snapshots else None
    )
    if base is not None:
        findings += unrequested_gpus(snapshot, base, prices, book.base, now)
    # Every action passes the one gate before it is offered (actions.detect.gate).
    findings = gate_all(findings, snapshot, book, now, index)
    findings.sort(key=lambda f: (-f.usd_per_hour, f.key))
    warnings: list[str] = list(telemetry_warnings(snapshot, base)) if base is not None else []
    return Detection(findings, tuple(dict.fromkeys([*warnings, *book.warnings])))
