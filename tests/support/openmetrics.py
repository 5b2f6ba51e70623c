"""OpenMetrics sample lines for backfilling a test Prometheus."""

from __future__ import annotations


def samples(name: str, labels: dict[str, str], values: list[tuple[int, float]]) -> list[str]:
    """One line per ``(unix seconds, value)`` of the series ``name{labels}``, labels sorted."""
    lab = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return [f"{name}{{{lab}}} {v:g} {ts}" for ts, v in values]
