"""Kueue and kube-state-metrics series shaped as they export them, for the admission-wait p90 and
the spot ratio; every expected figure worked out by hand in the comments."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

START = datetime(2026, 11, 23, 8, 0, tzinfo=timezone.utc)


AT = datetime(2026, 11, 23, 10, 0, tzinfo=timezone.utc)


STEP = 30


WINDOW = 1800


# Admissions per 30 minutes into each bucket (not cumulative), for ClusterQueue gpu-cq:
# 2 waited <= 60 s, 3 in (60, 300], 3 in (300, 900], 1 in (900, 1800], 3 in (1800, 3600].
# Cumulative 2, 5, 8, 9, 12, 12, 12. Rank of the 0.9 quantile: 0.9 x 12 = 10.8, in the
# (1800, 3600] bucket, which holds ranks 9..12: 1800 + 1800 x (10.8 - 9) / 3 = 2880 s.
BUCKETS = ("60", "300", "900", "1800", "3600", "7200", "+Inf")


PER_HALF_HOUR = {"60": 2, "300": 5, "900": 8, "1800": 9, "3600": 12, "7200": 12, "+Inf": 12}


GPU_CQ_P90 = 2880.0


SPOT_AT = START + timedelta(minutes=105)  # 09:45: a spot pod of ml-a starts


def _times(start=START, end=AT):
    t = start
    while t <= end:
        yield t
        t += timedelta(seconds=STEP)


def _samples(name: str, labels: dict[str, str], value, start=START, end=AT) -> list[str]:
    lab = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return [f"{name}{{{lab}}} {value(t)} {int(t.timestamp())}" for t in _times(start, end)]


def kueue_openmetrics() -> str:
    """The OpenMetrics text: Kueue's admission-wait histogram for ClusterQueues gpu-cq and cpu-cq,
    kube-state-metrics node labels of three capacity types and the GPU requests of seven pods in
    namespaces ml-a, ml-b and ml-c, every :data:`STEP` seconds from :data:`START` to :data:`AT`."""
    out = ["# TYPE kueue_admission_wait_time_seconds histogram"]
    for le in BUCKETS:
        # A counter growing at a steady rate: the rate over any window is exact.
        out += _samples(
            "kueue_admission_wait_time_seconds_bucket",
            {"cluster_queue": "gpu-cq", "le": le},
            lambda t, le=le: round(PER_HALF_HOUR[le] * (t - START).total_seconds() / 1800, 6),
        )
        # cpu-cq admitted 4 Workloads long ago and nothing since: no rate, no p90.
        out += _samples(
            "kueue_admission_wait_time_seconds_bucket", {"cluster_queue": "cpu-cq", "le": le}, lambda t: 4
        )
    out += _samples("kueue_admission_wait_time_seconds_count", {"cluster_queue": "gpu-cq"},
                   lambda t: round(12 * (t - START).total_seconds() / 1800, 6))
    out += _samples("kueue_admission_wait_time_seconds_count", {"cluster_queue": "cpu-cq"}, lambda t: 4)
    out += _samples("kueue_admission_wait_time_seconds_sum", {"cluster_queue": "gpu-cq"},
                   lambda t: round(12000 * (t - START).total_seconds() / 1800, 6))
    out += _samples("kueue_admission_wait_time_seconds_sum", {"cluster_queue": "cpu-cq"}, lambda t: 400)

    out.append("# TYPE kube_node_labels gauge")
    out += _samples("kube_node_labels", {"node": "spot-1", "label_karpenter_sh_capacity_type": "spot"}, lambda t: 1)
    out += _samples("kube_node_labels", {"node": "od-1", "label_karpenter_sh_capacity_type": "on-demand"}, lambda t: 1)
    out += _samples("kube_node_labels", {"node": "gke-spot-1", "label_cloud_google_com_gke_spot": "true"}, lambda t: 1)

    # (namespace, pod, node, GPUs, phase, from)
    pods = [
        ("ml-a", "a1", "od-1", 8, "Running", START),
        ("ml-a", "a2", "spot-1", 4, "Running", SPOT_AT),
        ("ml-a", "a3", "", 8, "Pending", START),  # not scheduled: holds nothing
        ("ml-b", "b1", "gke-spot-1", 2, "Running", START),
        ("ml-b", "b2", "od-1", 2, "Running", START),
        ("ml-b", "b3", "spot-1", 6, "Succeeded", START),  # finished: holds nothing
        ("ml-c", "c1", "od-1", 6, "Running", START),
    ]
    out.append("# TYPE kube_pod_container_resource_requests gauge")
    for ns, pod, node, gpus, phase, since in pods:
        labels = {"namespace": ns, "pod": pod, "container": "main", "resource": "nvidia_com_gpu", "unit": "integer"}
        if node:
            labels["node"] = node
        out += _samples("kube_pod_container_resource_requests", labels, lambda t, g=gpus: g, start=since)
        out += _samples(
            "kube_pod_container_resource_requests", {**labels, "resource": "cpu", "unit": "core"}, lambda t: 16,
            start=since,
        )
    out.append("# TYPE kube_pod_info gauge")
    for ns, pod, node, gpus, phase, since in pods:
        out += _samples("kube_pod_info", {"namespace": ns, "pod": pod, "node": node, "uid": f"uid-{pod}"},
                       lambda t: 1, start=since)
    out.append("# TYPE kube_pod_status_phase gauge")
    for ns, pod, node, gpus, phase, since in pods:
        for p in ("Running", "Pending", "Succeeded"):
            out += _samples("kube_pod_status_phase", {"namespace": ns, "pod": pod, "phase": p, "uid": f"uid-{pod}"},
                           lambda t, on=(p == phase): 1 if on else 0, start=since)
    out.append("# EOF")
    return "\n".join(out) + "\n"
