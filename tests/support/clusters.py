"""One query endpoint for several clusters, as Thanos or Mimir show them: OpenMetrics text once per
cluster, each sample labelled with its ``cluster``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path


def _families(lines: Iterable[str]) -> list[tuple[list[str], list[str]]]:
    """OpenMetrics ``lines`` as (header lines, sample lines) per metric family, ``# EOF`` left out."""
    groups: list[tuple[list[str], list[str]]] = []
    for line in lines:
        if line.startswith("# EOF"):
            continue
        if line.startswith("#"):
            if not groups or groups[-1][1]:
                groups.append(([], []))
            groups[-1][0].append(line)
        else:
            groups[-1][1].append(line)
    return groups


def with_clusters(text: str, clusters: Mapping[str, Callable[[str], bool]]) -> str:
    """The OpenMetrics ``text`` once per cluster: every sample it keeps (``keep(line)``) gains
    ``cluster="<name>"``, as a Thanos/Mimir query endpoint shows each Prometheus's external label.
    Families keep their headers; each cluster's series follow one another inside a family."""
    out: list[str] = []
    for header, samples in _families(text.splitlines()):
        out += header
        for name, keep in clusters.items():
            out += [s.replace("{", f'{{cluster="{name}",', 1) for s in samples if keep(s)]
    return "\n".join(out + ["# EOF"]) + "\n"


def with_clusters_file(src: Path, dst: Path, clusters: Iterable[str]) -> None:
    """:func:`with_clusters` from file to file, for text too large to hold twice: the
    OpenMetrics text of ``src`` written to ``dst`` once per cluster of ``clusters``, every sample
    labelled with its ``cluster``, families kept contiguous."""
    names = list(clusters)
    with src.open() as f:
        groups = _families(f)
    with dst.open("w", buffering=1 << 22) as out:
        for header, samples in groups:
            out.writelines(header)
            for name in names:
                prefix = f'{{cluster="{name}",'
                out.writelines(s.replace("{", prefix, 1) for s in samples)
        out.write("# EOF\n")


# West runs only research's notebook (720 GPU-hours, $4,953.60) and vision's A100 job (312 GPU-hours
# at $3.06 = $954.72), as worked out in tests/support/usage_history.py.
WEST_NAMESPACES = ('namespace="vision"', 'namespace="ml-research"')


def west_keeps(line: str) -> bool:
    """Whether cluster ``west`` holds a sample line: only its namespaces' series and the
    cluster-wide ones."""
    return "namespace=" not in line or any(ns in line for ns in WEST_NAMESPACES)
