"""OpenMetrics sample lines for backfilling a test Prometheus."""

from __future__ import annotations


def samples(name: str, labels: dict[str, str], values: list[tuple[int, float]]) -> list[str]:
    """One line per ``(unix seconds, value)`` of the series ``name{labels}``, labels sorted."""
    lab = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return [f"{name}{{{lab}}} {v:g} {ts}" for ts, v in values]


def gauge_families(families: dict[str, list[str]]) -> str:
    """OpenMetrics text of sample lines grouped by family name, each family a gauge, ending in
    ``# EOF``."""
    out = []
    for name, lines in families.items():
        out.append(f"# TYPE {name} gauge")
        out.extend(lines)
    out.append("# EOF")
    return "\n".join(out) + "\n"
