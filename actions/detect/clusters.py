"""Several clusters' sweeps as one: each cluster's findings keyed apart and the sweeps of the
clusters that answered joined, naming those that did not.

One cluster's findings keep the keys a bot of one cluster gives them (the store's home cluster,
recorded once: the first of ``clusters:`` when it was recorded, so reordering the list changes no
key); every other cluster's keys start with its name (``gpu-west:idle-notebook/ml/llm-explore``).
Keys are therefore unique across clusters. Pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from actions.detect.detection import Detection
from actions.model.findings import Finding


def cluster_key(key: str, cluster: str, first: bool) -> str:
    """The key of a finding ``key`` made in ``cluster``: unchanged when ``first`` (the home
    cluster, whose keys keep the form of a bot of one), else ``"<cluster>:<key>"``."""
    return key if first else f"{cluster}:{key}"


def in_cluster(detection: Detection, cluster: str, first: bool) -> Detection:
    """``detection`` made in ``cluster``: each finding carries the cluster and its
    :func:`cluster_key`; each warning starts with the cluster's name."""
    return Detection(
        [dataclasses.replace(f, cluster=cluster, key=cluster_key(f.key, cluster, first)) for f in detection.findings],
        tuple(f"{cluster}: {w}" for w in detection.warnings),
    )


@dataclass(frozen=True)
class FleetDetection(Detection):
    """A sweep over several clusters: the findings and warnings of those that answered, and
    ``unreachable`` cluster -> why it could not be swept (its open requests are left as they
    are: nothing is known about them)."""

    unreachable: Mapping[str, str] = field(default_factory=dict)


def join_detections(answered: Mapping[str, Detection], unreachable: Mapping[str, str]) -> FleetDetection:
    """One sweep's answer from each cluster's (already :func:`in_cluster`) detection, highest
    USD per hour first; every unreachable cluster is named in a warning too."""
    findings: list[Finding] = [f for d in answered.values() for f in d.findings]
    findings.sort(key=lambda f: (-f.usd_per_hour, f.key))
    warnings = [w for d in answered.values() for w in d.warnings]
    warnings += [f"{name}: not swept, its API server or telemetry could not be read ({why})" for name, why in unreachable.items()]
    return FleetDetection(findings, tuple(warnings), dict(unreachable))
