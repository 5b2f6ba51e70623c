"""Alerts on how GPUs are bought: on-demand GPUs idle for over an hour, and a team's spot ratio
(ratio 0-1) under its target. Pure.
"""

from __future__ import annotations

from datetime import datetime
from typing import Mapping, Sequence

from actions.alerts.alert import IDLE_ON_DEMAND, SPOT_RATIO, Alert, day_key, gpus_text
from actions.model.findings import Finding
from actions.model.kube import CapacityType, Node
from actions.text import duration, gpu_amount, plain, usd

# --- idle on-demand GPUs -----------------------------------------------------------------------


def _capacity(f: Finding, nodes: Mapping[str, Mapping[str, Node]]) -> CapacityType:
    # Two clusters may each have a node of the same name: look in the finding's own cluster.
    node = nodes.get(f.cluster, {}).get(f.node or "")
    if node is not None and node.capacity_type is not CapacityType.UNKNOWN:
        return node.capacity_type
    return f.price.capacity_type


def idle_on_demand_alerts(
    findings: Sequence[Finding], nodes: Mapping[str, Mapping[str, Node]], threshold_seconds: float, now: datetime
) -> list[Alert]:
    """One alert per team holding on-demand GPUs idle for longer than ``threshold_seconds``
    (the node's capacity type, else the price's), priced in USD per hour, at most once a day,
    however many clusters they are in (each GPU's line names its cluster). ``nodes`` maps a
    cluster (:attr:`Finding.cluster`, empty for a bot of one) -> node name -> Node."""
    by_team: dict[str, list[Finding]] = {}
    for f in findings:
        if f.idle_seconds > threshold_seconds and _capacity(f, nodes) is CapacityType.ON_DEMAND:
            by_team.setdefault(f.team, []).append(f)
    alerts = []
    for team, fs in sorted(by_team.items()):
        fs.sort(key=lambda f: -f.usd_per_hour)
        gpus = sum(f.gpus for f in fs)
        usd_per_hour = sum(f.usd_per_hour for f in fs)
        lines = [
            f"• {plain(f.namespace) + '/' if f.namespace else ''}{plain(f.name)}"
            f"{' in cluster ' + plain(f.cluster) if f.cluster else ''}: {gpu_amount(f.gpus, dict(f.devices))} × "
            f"{plain(f.gpu_model)} idle {duration(f.idle_seconds)}, "
            f"{usd(f.usd_per_hour)}/h ({plain(f.price.source)})"
            for f in fs[:10]
        ]
        if len(fs) > 10:
            lines.append(f"• … and {len(fs) - 10} more")
        alerts.append(
            Alert(
                team=team,
                kind=IDLE_ON_DEMAND,
                period_key=day_key(now),
                title=f"{team}: {gpus_text(gpus).replace(' GPU', ' on-demand GPU')} idle, {usd(usd_per_hour)}/h",
                text=f"On-demand GPUs idle for over {duration(threshold_seconds)}:\n" + "\n".join(lines),
                fields=(("GPUs", gpu_amount(gpus)), ("Cost", f"{usd(usd_per_hour)}/h · {usd(usd_per_hour * 24)}/day")),
                usd=usd_per_hour,
            )
        )
    return alerts


# --- spot ratio --------------------------------------------------------------------------------


def spot_ratio_alerts(
    max_ratio_by_team: Mapping[str, float], target: float, window_seconds: float, now: datetime
) -> list[Alert]:
    """Alerts for teams whose spot ratio (ratio 0-1 of their requested GPUs that run on spot
    nodes) stayed below ``target`` for the whole window: ``max_ratio_by_team`` holds the highest
    ratio each team reached in the last ``window_seconds``, so below target means below it
    throughout. At most once a day per team."""
    alerts = []
    for team, ratio in sorted(max_ratio_by_team.items()):
        if ratio >= target:
            continue
        alerts.append(
            Alert(
                team=team,
                kind=SPOT_RATIO,
                period_key=day_key(now),
                title=f"{team}: spot ratio {ratio:.0%}, below the {target:.0%} target",
                text=(
                    f"For the last {duration(window_seconds)} at most {ratio:.0%} of *{plain(team)}*'s GPUs ran "
                    f"on spot "
                    f"capacity (target {target:.0%}). Fault-tolerant jobs (checkpointed training, batch "
                    f"inference) can run on spot for a fraction of the on-demand price."
                ),
                fields=(("Spot ratio (max over window)", f"{ratio:.0%}"), ("Target", f"{target:.0%}")),
            )
        )
    return alerts
