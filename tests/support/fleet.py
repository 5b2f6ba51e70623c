"""The test and demo fleet's DCGM telemetry (tests/support/data/FLEET.md), built from the real H100 trace.

Each fleet GPU replays the rows of a base phase of ``h100_nvml_trace.csv`` in trace order, cycled,
one row per scrape; an ``Interlude`` plays all rows of another phase once at a fixed period. The
result is OpenMetrics text that ``promtool tsdb create-blocks-from openmetrics`` backfills, so the
tests query a real Prometheus holding exactly the series a dcgm-exporter would have produced.

``python -m tests.support.fleet --write-demo`` re-records ``bot/demo_data/telemetry.json`` from a real
backfilled Prometheus (see ``record_demo_telemetry``).
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE
from tests.support.paths import DEMO

DATA_DIR = Path(__file__).parent / "data"
TRACE_CSV = DATA_DIR / "h100_nvml_trace.csv"
IDENTITY_JSON = DATA_DIR / "h100_identity.json"
DEMO_TELEMETRY_JSON = DEMO / "telemetry.json"

FB_USED = "DCGM_FI_DEV_FB_USED"

TELEMETRY_START = datetime(2026, 11, 20, 6, 0, tzinfo=timezone.utc)
TELEMETRY_END = datetime(2026, 11, 20, 12, 30, tzinfo=timezone.utc)
SWEEP_AT = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
RECHECK_AT = datetime(2026, 11, 20, 12, 5, tzinfo=timezone.utc)
PODS_CREATED = datetime(2026, 11, 19, 8, 0, tzinfo=timezone.utc)
SCRAPE_INTERVAL_SECONDS = 30

# The DCGM pod-mapping conventions: the exporter's own labels, or Prometheus renaming them to
# exported_* because honor_labels is off and the target's pod/namespace win.
DIRECT_LABELS = "pod"
EXPORTED_LABELS = "exported_pod"


@dataclass(frozen=True)
class TraceRow:
    """One row of the NVML trace: utilization percent 0-100, power watts, framebuffer MiB."""

    phase: str
    util_gpu_pct: float
    power_w: float
    fb_used_mib: float


@dataclass(frozen=True)
class Interlude:
    """All rows of ``phase`` played once every ``every_seconds``, the first play at ``first``."""

    phase: str
    first: datetime
    every_seconds: float


@dataclass(frozen=True)
class FleetGpu:
    """One GPU of a test fleet and the dcgm-exporter series it produces.

    ``namespace``/``pod``/``container`` are empty for a GPU no pod holds. ``label_convention`` is
    ``DIRECT_LABELS`` (pod/namespace/container) or ``EXPORTED_LABELS`` (exported_pod/... with
    pod/namespace/container holding the exporter's own). ``engine_active`` adds
    DCGM_FI_PROF_GR_ENGINE_ACTIVE (ratio 0-1, util/100). ``stop_at`` ends the series early.
    """

    namespace: str
    pod: str
    container: str
    node: str
    uuid: str
    gpu: str
    base_phase: str
    interludes: tuple[Interlude, ...] = ()
    label_convention: str = DIRECT_LABELS
    engine_active: bool = False
    stop_at: datetime | None = None
    exporter_pod: str = "dcgm-exporter-abcde"
    exporter_namespace: str = "gpu-operator"


def fleet_uuid(n: int) -> str:
    """The UUID of fleet GPU number ``n`` (1-7 in FLEET.md)."""
    return f"GPU-00000000-0000-0000-0000-{n:012d}"


FLEET_GPUS: tuple[FleetGpu, ...] = (
    FleetGpu("ml-research", "llm-explore-0", "llm-explore", "gpu-od-1", fleet_uuid(1), "0",
             "notebook_idle_model_loaded"),
    FleetGpu("ml-research", "cell-bursts-0", "cell-bursts", "gpu-od-1", fleet_uuid(2), "1",
             "notebook_idle_model_loaded",
             (Interlude("notebook_cell_burst", datetime(2026, 11, 20, 6, 10, tzinfo=timezone.utc), 40 * 60),)),
    FleetGpu("training", "pretrain-worker-0", "pretrain", "gpu-od-2", fleet_uuid(3), "0", "training",
             (Interlude("training_checkpoint_pause", datetime(2026, 11, 20, 6, 20, tzinfo=timezone.utc), 30 * 60),),
             label_convention=EXPORTED_LABELS),
    FleetGpu("training", "pretrain-worker-0", "pretrain", "gpu-od-2", fleet_uuid(4), "1", "training",
             (Interlude("training_checkpoint_pause", datetime(2026, 11, 20, 6, 20, tzinfo=timezone.utc), 30 * 60),),
             label_convention=EXPORTED_LABELS),
    FleetGpu("serving", "chat-api-6f7d8b9c4-x2x9z", "chat-api", "gpu-od-2", fleet_uuid(5), "2",
             "inference_bursty", label_convention=EXPORTED_LABELS),
    FleetGpu("training", "finetune-spot-worker-0", "finetune", "gpu-spot-1", fleet_uuid(6), "0", "training",
             engine_active=True),
    FleetGpu("", "", "", "gpu-od-1", fleet_uuid(7), "7", "empty_idle"),
)


@lru_cache(maxsize=1)
def trace_rows() -> tuple[TraceRow, ...]:
    """The trace's rows in order. Raises FileNotFoundError when tests/data lacks the trace."""
    with TRACE_CSV.open(newline="") as f:
        return tuple(
            TraceRow(r["phase"], float(r["util_gpu_pct"]), float(r["power_w"]), float(r["fb_used_mib"]))
            for r in csv.DictReader(f)
        )


def phase_rows(phase: str) -> tuple[TraceRow, ...]:
    """All rows of one phase, in trace order. Raises ValueError for a phase the trace lacks."""
    rows = tuple(r for r in trace_rows() if r.phase == phase)
    if not rows:
        raise ValueError(f"phase {phase!r} is not in {TRACE_CSV.name}")
    return rows


def model_name() -> str:
    """The traced GPU's NVML name, used as every fleet GPU's ``modelName``."""
    return json.loads(IDENTITY_JSON.read_text())["name"]


def row_at(g: FleetGpu, t: datetime, index: int) -> TraceRow:
    """The trace row ``g`` reports at scrape ``index`` (time ``t``): an interlude row while one is
    playing, else the base phase cycled by scrape index."""
    for il in g.interludes:
        rows = phase_rows(il.phase)
        since = (t - il.first).total_seconds()
        if since >= 0:
            offset = since % il.every_seconds
            k = int(offset // SCRAPE_INTERVAL_SECONDS)
            if k < len(rows):
                return rows[k]
    base = phase_rows(g.base_phase)
    return base[index % len(base)]


def _labels(g: FleetGpu, model: str) -> dict[str, str]:
    labels = {
        "gpu": g.gpu,
        "UUID": g.uuid,
        "device": f"nvidia{g.gpu}",
        "modelName": model,
        "Hostname": g.node,
        "job": "gpu-metrics",
        "instance": f"{g.node}:9400",
    }
    if g.label_convention == EXPORTED_LABELS:
        labels.update(pod=g.exporter_pod, namespace=g.exporter_namespace, container="nvidia-dcgm-exporter")
        if g.pod:
            labels.update(exported_pod=g.pod, exported_namespace=g.namespace, exported_container=g.container)
    elif g.label_convention == DIRECT_LABELS:
        if g.pod:
            labels.update(pod=g.pod, namespace=g.namespace, container=g.container)
    else:
        raise ValueError(f"unknown label convention {g.label_convention!r}")
    return labels


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _fmt_labels(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))


def _fmt_value(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


def fleet_openmetrics(
    start: datetime,
    end: datetime,
    step_seconds: int = SCRAPE_INTERVAL_SECONDS,
    gpus: Sequence[FleetGpu] = FLEET_GPUS,
) -> str:
    """OpenMetrics text of every GPU's DCGM gauges, scraped every ``step_seconds`` from ``start``
    to ``end`` inclusive (aware datetimes). Families are contiguous, each series' samples in time
    order, ``# EOF`` last. Units as dcgm-exporter: GPU_UTIL percent 0-100, ENGINE_ACTIVE ratio
    0-1, POWER_USAGE watts, FB_USED MiB. Raises ValueError when ``end`` precedes ``start``.
    """
    if end < start:
        raise ValueError(f"end {end} precedes start {start}")
    model = model_name()
    n = int((end - start).total_seconds() // step_seconds) + 1
    times = [start + timedelta(seconds=i * step_seconds) for i in range(n)]
    per_gpu = []
    for g in gpus:
        samples = [
            (int(t.timestamp()), row_at(g, t, i))
            for i, t in enumerate(times)
            if g.stop_at is None or t < g.stop_at
        ]
        per_gpu.append((g, _fmt_labels(_labels(g, model)), samples))

    families: list[tuple[str, str, Any]] = [
        (GPU_UTIL, "GPU utilization (in %).", lambda g, r: r.util_gpu_pct),
        (POWER_USAGE, "Power draw (in W).", lambda g, r: r.power_w),
        (FB_USED, "Framebuffer memory used (in MiB).", lambda g, r: r.fb_used_mib),
        (ENGINE_ACTIVE, "Ratio of time the graphics engine is active.", lambda g, r: r.util_gpu_pct / 100),
    ]
    out: list[str] = []
    for name, help_text, value in families:
        members = [(g, lab, s) for g, lab, s in per_gpu if name != ENGINE_ACTIVE or g.engine_active]
        if not members:
            continue
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} gauge")
        for g, lab, samples in members:
            out.extend(f"{name}{{{lab}}} {_fmt_value(value(g, r))} {ts}" for ts, r in samples)
    out.append("# EOF")
    return "\n".join(out) + "\n"


def phase_power_range(phase: str) -> tuple[float, float]:
    """(min, max) power in watts over one phase's trace rows."""
    watts = [r.power_w for r in phase_rows(phase)]
    return min(watts), max(watts)


def record_demo_telemetry(base_url: str) -> dict[str, Any]:
    """Fetch the fleet at SWEEP_AT and RECHECK_AT with the default Policy from a Prometheus
    backfilled with ``fleet_openmetrics``; returns ``{"sweep": ..., "recheck": ...}`` as JSON
    values. Raises TelemetryError when Prometheus fails."""
    from actions.model.codec import to_jsonable
    from actions.policy.rules import Policy
    from actions.sources.prometheus.telemetry import PrometheusTelemetry

    source = PrometheusTelemetry(base_url)
    policy = Policy()
    return {
        "sweep": to_jsonable(source.fetch(SWEEP_AT, policy)),
        "recheck": to_jsonable(source.fetch(RECHECK_AT, policy)),
    }


def write_demo_telemetry(path: Path = DEMO_TELEMETRY_JSON) -> Path:
    """Backfill a throwaway Prometheus with the fleet and write the recorded demo telemetry."""
    from tests.support.prometheus_server import running_prometheus

    with tempfile.TemporaryDirectory(prefix="fleet-prometheus-") as tmp:
        with running_prometheus(fleet_openmetrics(TELEMETRY_START, TELEMETRY_END), Path(tmp)) as url:
            recorded = record_demo_telemetry(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n")
    return path


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.support.fleet", description=__doc__.splitlines()[0])
    parser.add_argument("--write-demo", action="store_true", help="re-record bot/demo_data/telemetry.json")
    parser.add_argument("--openmetrics", type=Path, help="write the fleet's OpenMetrics text to this file")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.openmetrics:
        args.openmetrics.write_text(fleet_openmetrics(TELEMETRY_START, TELEMETRY_END))
    if args.write_demo:
        print(write_demo_telemetry())
    if not (args.write_demo or args.openmetrics):
        parser.print_help()


if __name__ == "__main__":
    main()
