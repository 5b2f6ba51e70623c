"""Several GPU clusters in one bot: ``clusters:`` lists them, each with its Kubernetes access and
its telemetry.

A cluster's telemetry is either its own Prometheus (``prometheus.url``) or its share of one query
endpoint in front of many (Thanos, Mimir, VictoriaMetrics: the top-level ``prometheus.url``),
where every query then matches the cluster's external label (``cluster="gpu-east"``; the label is
``prometheus.cluster_label``, ``cluster`` by default, and its value the cluster's name unless
``prometheus.cluster_value`` says otherwise). Without ``clusters:`` the bot watches one cluster,
called ``cluster_name``, through the top-level ``kubernetes`` and ``prometheus`` settings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from actions.energy.settings import EnergyFactors, EnergySettings, merge

# A cluster's name goes into request keys, metric labels and Slack text: a DNS label keeps it
# readable everywhere (Kubernetes object names follow the same rule, RFC 1123).
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_PROM_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
EXAMPLE = (
    "clusters:\n"
    "  - name: gpu-east\n"
    "    kubernetes: {in_cluster: true}\n"
    "  - name: gpu-west\n"
    "    kubernetes: {context: gpu-west}\n"
    "    prometheus: {url: http://prometheus.gpu-west.example:9090}"
)


class ClusterKubernetes(BaseModel):
    """How to reach one cluster's API server: ``in_cluster`` (the service account of the pod the
    bot runs in; one cluster at most), or a ``context`` of the kubeconfig at ``kubeconfig``
    (default ``$KUBECONFIG`` or ``~/.kube/config``)."""

    model_config = ConfigDict(extra="forbid")

    in_cluster: bool = False
    kubeconfig: str | None = None
    context: str | None = None

    @model_validator(mode="after")
    def _one_way(self) -> "ClusterKubernetes":
        if self.in_cluster and (self.context or self.kubeconfig):
            raise ValueError(
                "in_cluster and kubeconfig/context exclude each other: write kubernetes: {in_cluster: true} "
                "or kubernetes: {context: gpu-west}"
            )
        if not self.in_cluster and not self.context:
            raise ValueError(
                "say how to reach this cluster's API server: kubernetes: {context: gpu-west} (a kubeconfig "
                "context) or kubernetes: {in_cluster: true} (the cluster the bot runs in)"
            )
        return self


class ClusterPrometheus(BaseModel):
    """Where one cluster's telemetry is. ``url``: its own Prometheus (headers, TLS and timeout as
    the top-level ``prometheus``); without it, the top-level ``prometheus.url`` is a shared query
    endpoint whose series carry ``cluster_label`` (default ``cluster``) with the value
    ``cluster_value`` (default: the cluster's name). With ``url``, a ``cluster_label`` given is
    still matched (a Prometheus that holds several clusters)."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    cluster_label: str | None = None
    cluster_value: str | None = Field(None, min_length=1)

    @field_validator("url")
    @classmethod
    def _http(cls, v: str | None) -> str | None:
        if v is not None:
            parts = urlsplit(v)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"{v!r} is not an http(s) URL; write it like http://prometheus.gpu-west.example:9090")
        return v

    @field_validator("cluster_label")
    @classmethod
    def _label(cls, v: str | None) -> str | None:
        if v is not None and not _PROM_LABEL.match(v):
            raise ValueError(f"{v!r} is not a Prometheus label name (letters, digits and _); write cluster_label: cluster")
        return v


class ClusterSettings(BaseModel):
    """One GPU cluster the bot watches: its ``name`` (a DNS label such as ``gpu-east``; shown in
    messages, reports and metrics), its ``kubernetes`` access and its ``prometheus`` telemetry;
    ``energy``, when given, overrides the top-level ``energy`` section for this cluster (its PUE,
    grid region or intensity, electricity price; see :func:`cluster_energy`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, max_length=63)
    kubernetes: ClusterKubernetes
    prometheus: ClusterPrometheus = Field(default_factory=ClusterPrometheus)
    energy: EnergySettings | None = None


def check_clusters(clusters: list[ClusterSettings]) -> list[ClusterSettings]:
    """``clusters`` when their names are unique and at most one is ``in_cluster``; else ValueError
    naming the culprits, with an example."""
    names = [c.name for c in clusters]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"cluster name(s) {twice} are listed more than once; give each cluster its own name:\n{EXAMPLE}")
    inside = [c.name for c in clusters if c.kubernetes.in_cluster]
    if len(inside) > 1:
        raise ValueError(
            f"clusters {inside} all say in_cluster: true, but the bot runs in one cluster; reach the others "
            f"through a kubeconfig context:\n{EXAMPLE}"
        )
    return clusters


def cluster_name_ok(value: str) -> str:
    """``value`` when it is a DNS label (``gpu-east``); else ValueError with an example."""
    if not re.match(NAME_PATTERN, value) or len(value) > 63:
        raise ValueError(f"{value!r} is not a cluster name: lower-case letters, digits and '-', e.g. gpu-east")
    return value


@dataclass(frozen=True)
class ClusterTarget:
    """One cluster as the wiring builds it: ``name``; the API server through ``kubeconfig`` and
    ``context`` (both None: in-cluster when running in a pod, else the kubeconfig's current
    context); telemetry at ``prometheus_url`` with ``headers``, narrowed to ``scope`` ``(label,
    value)`` when set (None: every series at that URL is this cluster's)."""

    name: str
    kubeconfig: str | None
    context: str | None
    prometheus_url: str
    headers: dict[str, str] = field(default_factory=dict)
    scope: tuple[str, str] | None = None


def targets(
    clusters: list[ClusterSettings], *, single_name: str, kubeconfig: str | None, context: str | None,
    prometheus_url: str, headers: dict[str, str],
) -> list[ClusterTarget]:
    """The clusters to watch, first one first: ``clusters`` as configured, or, when empty, the one
    cluster ``single_name`` reached through the top-level ``kubeconfig``/``context`` and
    ``prometheus_url`` with no label matcher (so a bot of one cluster queries as it always did).
    ``headers`` are the top-level Prometheus headers (bearer token included). Pure."""
    if not clusters:
        return [ClusterTarget(single_name, kubeconfig, context, prometheus_url, dict(headers))]
    out = []
    for c in clusters:
        p = c.prometheus
        label = p.cluster_label or (None if p.url else "cluster")
        out.append(ClusterTarget(
            name=c.name,
            kubeconfig=None if c.kubernetes.in_cluster else c.kubernetes.kubeconfig,
            context=None if c.kubernetes.in_cluster else c.kubernetes.context,
            prometheus_url=p.url or prometheus_url,
            headers=dict(headers),
            scope=(label, p.cluster_value or c.name) if label else None,
        ))
    return out


def cluster_energy(
    clusters: list[ClusterSettings], name: str | None, *, base: EnergySettings, single_name: str,
) -> EnergyFactors:
    """The energy figures of cluster ``name`` (None: the first cluster, or the one cluster
    ``single_name`` when ``clusters`` is empty): ``base`` (the top-level ``energy``) with that
    cluster's own ``energy`` over it, field by field (:func:`actions.energy.settings.merge`).
    ValueError naming the clusters there are when ``name`` is none of them. Pure."""
    if not clusters:
        if name is not None and name != single_name:
            raise ValueError(f"no cluster {name!r}: the bot watches one cluster, {single_name!r}")
        return base.factors()
    found = clusters[0] if name is None else next((c for c in clusters if c.name == name), None)
    if found is None:
        raise ValueError(f"no cluster {name!r}; the clusters are {', '.join(c.name for c in clusters)}")
    return merge(base, found.energy).factors()
