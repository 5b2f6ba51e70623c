"""One query endpoint for several clusters, as Thanos or Mimir show them: OpenMetrics text once per
cluster, each sample labelled with its ``cluster``."""

from __future__ import annotations

from collections.abc import Callable, Mapping


def with_clusters(text: str, clusters: Mapping[str, Callable[[str], bool]]) -> str:
    """The OpenMetrics ``text`` once per cluster: every sample it keeps (``keep(line)``) gains
    ``cluster="<name>"``, as a Thanos/Mimir query endpoint shows each Prometheus's external label.
    Families keep their headers; each cluster's series follow one another inside a family."""
    groups: list[tuple[list[str], list[str]]] = []
    for line in text.splitlines():
        if line == "# EOF":
            continue
        if line.startswith("#"):
            if not groups or groups[-1][1]:
                groups.append(([], []))
            groups[-1][0].append(line)
        else:
            groups[-1][1].append(line)
    out: list[str] = []
    for header, samples in groups:
        out += header
        for name, keep in clusters.items():
            out += [s.replace("{", f'{{cluster="{name}",', 1) for s in samples if keep(s)]
    return "\n".join(out + ["# EOF"]) + "\n"


# West runs only research's notebook (720 GPU-hours, $4,953.60) and vision's A100 job (312 GPU-hours
# at $3.06 = $954.72), as worked out in tests/support/usage_history.py.
WEST_NAMESPACES = ('namespace="vision"', 'namespace="ml-research"')


def west_keeps(line: str) -> bool:
    """Whether cluster ``west`` holds a sample line: only its namespaces' series and the
    cluster-wide ones."""
    return "namespace=" not in line or any(ns in line for ns in WEST_NAMESPACES)
