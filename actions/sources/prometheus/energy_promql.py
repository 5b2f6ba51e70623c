"""The PromQL of the GPU energy a report counts: per DCGM device series (a GPU, or a MIG instance)
the kWh drawn in each evaluation step, summed over the period, in all and in idle steps, the steps
it was measured at, and per node the kWh of its physical GPUs.

Energy in a step is ``increase(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION)`` over the step (mJ; a counter
since the driver loaded, so ``increase`` handles a reset) where exported, else the step's mean
``DCGM_FI_DEV_POWER_USAGE`` (W) times its length: the time integral of power over the samples,
sampled like every other figure of a report (:mod:`actions.sources.prometheus.usage`). A step
without either sample is unmeasured: unknown, never zero (``energy_steps`` counts the measured ones).
Under MIG, dcgm-exporter gives every GPU instance's series the whole GPU's power and energy
(NVIDIA/dcgm-exporter#257, #317): ``node_energy`` therefore takes one value per GPU (``UUID``) a step.
"""

from __future__ import annotations

from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE, TOTAL_ENERGY
from actions.policy.rules import Policy
from actions.sources.prometheus.promql import by_series, duration, number, pod_labels

ENERGY_QUERY_NAMES = ("energy", "idle_energy", "energy_steps", "node_energy")
MJ_PER_KWH = 3.6e9
JOULES_PER_KWH = 3.6e6
# A device series as the energy queries return it: the pod's, the node's and the GPU's labels.
SERIES_LABELS = "namespace, pod, Hostname, modelName, UUID, GPU_I_ID, GPU_I_PROFILE"


def energy_per_step(step_seconds: float) -> str:
    """kWh per device series drawn in the step ``(t - step, t]``: the counter's increase where
    exported, else mean power x the step. Grouped by the series' own labels (:func:`by_series`):
    the label conventions are read as one once, on the summed result, not at every step. Pure."""
    window = duration(step_seconds - 0.001)
    counter = by_series("max", f"increase({TOTAL_ENERGY}[{window}])")
    power = by_series("max", f"avg_over_time({POWER_USAGE}[{window}])")
    return f"(({counter}) / {number(MJ_PER_KWH)}) or (({power}) * {number(step_seconds / JOULES_PER_KWH)})"


def _idle(policy: Policy, step_seconds: float) -> str:
    window = duration(step_seconds - 0.001)
    engine = by_series("max", f"max_over_time({ENGINE_ACTIVE}[{window}])")
    util = by_series("max", f"max_over_time({GPU_UTIL}[{window}])")
    activity = f"(100 * {engine}) or {util}"
    return f"(({energy_per_step(step_seconds)}) and (({activity}) <= {number(policy.engine_idle_pct)}))"


def energy_queries(policy: Policy, range_seconds: float, step_seconds: float) -> dict[str, str]:
    """The instant queries of a report's energy over the ``range_seconds`` ending at the
    evaluation time, by name (:data:`ENERGY_QUERY_NAMES`):

    - ``energy``: kWh per device series (:data:`SERIES_LABELS`; namespace/pod empty for a GPU no
      pod held), the whole GPU's under MIG;
    - ``idle_energy``: the kWh of the steps whose peak activity was at or under
      ``policy.engine_idle_pct`` (the idle rule of GPU-hours);
    - ``energy_steps``: the steps at which the series was measured;
    - ``node_energy``: kWh per ``Hostname`` of its physical GPUs, one value per GPU a step.

    Pure; the count does not depend on the fleet."""
    rng, step = duration(range_seconds - 1), duration(step_seconds)

    def steps(expr: str, fn: str = "sum_over_time") -> str:
        return f"sum by ({SERIES_LABELS}) ({pod_labels(f'{fn}(({expr})[{rng}:{step}])')})"

    per_step = energy_per_step(step_seconds)
    # One value per GPU a step: under every convention a GPU is its node and UUID labels.
    per_gpu = f"max by (Hostname, hostname, UUID, uuid) ({per_step})"
    return {
        "energy": steps(per_step),
        "idle_energy": steps(_idle(policy, step_seconds)),
        "energy_steps": steps(per_step, "count_over_time"),
        "node_energy": f"sum by (Hostname) ({pod_labels(f'sum_over_time(({per_gpu})[{rng}:{step}])')})",
    }
