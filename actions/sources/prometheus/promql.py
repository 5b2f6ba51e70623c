"""PromQL building blocks every query of the bot's uses: durations and numbers as PromQL writes
them, and dcgm-exporter's label conventions read as one, per GPU (:func:`by_gpu`) or per series
(:func:`by_series`):

- the pod: ``pod``/``namespace`` (honor_labels on), ``exported_pod``/``exported_namespace``
  (honor_labels off, where ``pod``/``namespace`` name the exporter itself), and
  ``pod_name``/``pod_namespace`` (``--use-old-namespace``);
- the GPU: ``UUID``, or ``uuid`` under ``--use-old-namespace`` (dcgm-exporter
  internal/pkg/collector/gpu_collector.go);
- the node: ``Hostname`` (releases to 4.x) and ``hostname`` (its main branch);
- MIG: one series per GPU instance, told apart by ``GPU_I_ID`` and named by ``GPU_I_PROFILE``.
"""

from __future__ import annotations

# Labels one GPU-per-pod result is grouped by. modelName and Hostname are constant per GPU; they
# ride along so one query returns them without a separate metadata lookup.
GROUP_LABELS = ("UUID", "gpu", "GPU_I_ID", "GPU_I_PROFILE", "Hostname", "modelName", "namespace", "pod")


def duration(seconds: float) -> str:
    """A PromQL duration; PromQL 2.x rejects fractional units, so fall back to milliseconds."""
    if float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000)}ms"


def open_window(seconds: float) -> str:
    """A PromQL range of ``seconds`` less a millisecond: ``(t - seconds, t]`` under both
    Prometheus 2's closed ranges and 3's left-open ones, so hours read one by one add up to the
    whole window, no sample or subquery step at a boundary counted twice."""
    return f"{round(seconds * 1000) - 1}ms"


def number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# (label to fill, label that carries the value under another convention), applied in order.
LABEL_ALIASES = (
    ("pod", "pod_name"),
    ("namespace", "pod_namespace"),
    ("pod", "exported_pod"),
    ("namespace", "exported_namespace"),
    ("Hostname", "hostname"),
    ("UUID", "uuid"),
)


def pod_labels(expr: str) -> str:
    """Copy the other conventions' pod, namespace, node and GPU labels onto ``pod``,
    ``namespace``, ``Hostname`` and ``UUID`` where present (see this module's docstring)."""
    for target, source in LABEL_ALIASES:
        expr = f'label_replace({expr}, "{target}", "$1", "{source}", "(.+)")'
    return expr


def by_gpu(agg: str, expr: str) -> str:
    return f"{agg} by ({', '.join(GROUP_LABELS)}) ({pod_labels(expr)})"


# Every label one of GROUP_LABELS is read from, under any convention (LABEL_ALIASES): grouping by
# these keeps one GPU's series apart from another's without rewriting a label.
SOURCE_LABELS = tuple(dict.fromkeys([*GROUP_LABELS, *(source for _, source in LABEL_ALIASES)]))


def by_series(agg: str, expr: str) -> str:
    """``agg`` of ``expr`` per GPU and pod as the series name them, before the conventions are
    read as one: what a subquery evaluates at each of its steps, where six ``label_replace``
    per series per step cost Prometheus seconds at 10,000 GPUs."""
    return f"{agg} by ({', '.join(SOURCE_LABELS)}) ({expr})"


def activity_pct(engine_expr: str, util_expr: str) -> str:
    """Activity in percent 0-100 per GPU: ENGINE_ACTIVE (ratio, x100) where exported, else
    GPU_UTIL. ``engine_expr``/``util_expr`` are per-series expressions of the two metrics."""
    return f"(100 * {by_gpu('max', engine_expr)}) or {by_gpu('max', util_expr)}"
