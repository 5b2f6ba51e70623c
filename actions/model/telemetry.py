"""Per-GPU telemetry over a window, as the detectors judge it: peak engine activity, mean power,
coverage and the labels that tie a GPU to its pod (dcgm-exporter's), and the DCGM field names
the bot reads. Plain immutable data.

Units: engine activity percent 0-100, power watts, coverage ratio 0-1, times aware UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"  # field 155, watts, a gauge
# Field 156, millijoules since the driver loaded, a counter (dcgm-exporter etc/default-counters.csv).
TOTAL_ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"


@dataclass(frozen=True)
class GpuTelemetry:
    """One GPU's signals over a window, as computed server-side in PromQL.

    ``engine_signal`` names the DCGM field used for activity (``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` when
    exported, else ``DCGM_FI_DEV_GPU_UTIL``); ``peak_engine_pct`` is its maximum over the window as
    percent 0-100; ``mean_power_w`` the mean of ``DCGM_FI_DEV_POWER_USAGE`` in watts; ``coverage``
    the ratio 0-1 of evaluation steps in the window at which the activity signal had a sample;
    ``last_active`` the last time within the lookback that activity was above the idle threshold
    (``None`` if never, or unknown) and ``first_sample`` the earliest sample within the lookback,
    so the GPU has been idle since ``last_active or first_sample``. Any field may be ``None`` when
    its series is missing. ``gpu`` is the UUID, ``<UUID>/<GPU_I_ID>`` for a MIG instance, whose
    ``mig_profile`` is dcgm-exporter's ``GPU_I_PROFILE`` (``"1g.10gb"``); ``power_limit_w`` is
    the GPU's enforced power limit in watts, when exported.
    """

    namespace: str
    pod: str
    gpu: str
    model_name: str
    engine_signal: str | None
    peak_engine_pct: float | None
    mean_power_w: float | None
    coverage: float
    node: str | None = None
    last_active: datetime | None = None
    first_sample: datetime | None = None
    mig_profile: str | None = None
    power_limit_w: float | None = None


@dataclass(frozen=True)
class TelemetrySnapshot:
    """Per-GPU telemetry for a window ending at ``at`` (``window_seconds`` long)."""

    at: datetime
    window_seconds: float
    gpus: tuple[GpuTelemetry, ...] = ()

    def for_pod(self, namespace: str, pod: str) -> tuple[GpuTelemetry, ...]:
        """The GPUs attributed to one pod (empty if none)."""
        return tuple(g for g in self.gpus if g.namespace == namespace and g.pod == pod)
