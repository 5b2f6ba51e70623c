"""GPU accounting that matches real clusters (issue 11), end to end: the `sweep` and `report`
commands over a real Prometheus backfilled with dcgm-exporter and kube-state-metrics series in
their upstream label sets, and the fake Kubernetes API server holding the cluster as GPU Feature
Discovery, the device plugin and Karpenter shape it (every shape and its source:
tests/support/gpu_shapes.py). MIG slices and time-sliced replicas are priced as the share of a GPU they
are; unrequested GPUs: tests/actions/detect/test_unrequested_gpus.py.

Data: every 60 s from 2026-11-20 06:00 to 12:30 UTC; pods started 05:58. The sweep runs at 12:00
(1 h window); the report covers the 6 h ending 12:00 (72 steps of 5 minutes). Prices per
instance-hour (tests/gpu_shapes.PRICES), so per GPU-hour: p4d.24xlarge $28.00 / 8 = $3.50,
p5.48xlarge $55.04 / 8 = $6.88, p5.4xlarge $8.00 / 1, p6-b200.48xlarge $112.00 / 8 = $14.00.
Activity and power replay the real H100 trace: idle = ``notebook_idle_model_loaded`` (0%, mean
132 W over the window), busy = ``training`` (98-100%), free = ``empty_idle`` (0%, ~100 W).

The nodes (GPU resources as ``status.capacity`` advertises them; GFD's labels; how each node's
dcgm-exporter, and Prometheus's scrape of it, label the series):

| node (instance type) | GPU resources | GFD labels | dcgm-exporter convention |
|---|---|---|---|
| a100-mig-mixed (p4d.24xlarge) | gpu 6, mig-1g.5gb 14 | NVIDIA-A100-SXM4-40GB, count 8, mixed | 4.x: Hostname, pod |
| a100-mig-single (p4d.24xlarge) | gpu 56 | NVIDIA-A100-SXM4-40GB-MIG-1g.5gb, count 56, single | main: hostname (1) |
| h100-od-8 (p5.48xlarge) | gpu 8 | NVIDIA-H100-80GB-HBM3, count 8 | honorLabels false (2) |
| ts-h100-1 (p5.4xlarge) | gpu 4 | NVIDIA-H100-80GB-HBM3-SHARED, replicas 4 | --use-old-namespace (3) |
| ts-h100-2 (p5.4xlarge) | gpu.shared 2 | NVIDIA-H100-80GB-HBM3, replicas 2 (renamed) | 4.x: Hostname, pod |
| h100-empty (p5.4xlarge) | gpu 1 | NVIDIA-H100-80GB-HBM3, count 1 | 4.x: no pod at all |
| b200-od-1 (p6-b200.48xlarge) | gpu 8 | NVIDIA-B200, count 8 | main, POWER_MGMT_LIMIT 1000 W |

(1) honorLabels true behind prometheus-operator: free instances carry the exporter's own pod.
(2) exported_pod/exported_namespace on held GPUs; the exporter's own pod/namespace on all.
(3) pod_name/pod_namespace and a lower-case uuid, behind prometheus-operator's target labels.
Every node is Karpenter's (a NodeClaim each); h100-empty's is gpu-h100-7xk2p.

The pods (DCGM entities: GPU index, and GPU_I_ID for a MIG instance):

| pod (namespace, owner) | node | request | DCGM entities | phase |
|---|---|---|---|---|
| nb-small-0 (ml-research, Notebook) | a100-mig-mixed | mig-1g.5gb 1 | GPU 0 GI 7 | idle |
| embedder-0 (vision, StatefulSet) | a100-mig-mixed | mig-1g.5gb 2 | GPU 1 GI 7, GI 8 | idle |
| train-a100-k8s2m (vision, Job) | a100-mig-mixed | gpu 6 | GPUs 2-7 | busy |
| nb-single-0 (sandbox, Notebook) | a100-mig-single | gpu 1 | GPU 0 GI 7 | idle |
| tiny-0 (sandbox, Notebook) | ts-h100-1 | gpu 1 | GPU 0 | idle |
| tiny-api-5d8f9c7b6-q2w3e (serving, Deployment) | ts-h100-2 | gpu.shared 1 | GPU 0 | idle |
| pretrain-x7k2p (training, Job) | h100-od-8 | gpu 2 | GPUs 0, 1 | busy |
| nb-b200-0 (ml-research, Notebook) | b200-od-1 | gpu 1 | GPU 0 | idle |
| train-b200-q9w8e (training, Job) | b200-od-1 | gpu 7 | GPUs 1-7 | busy |

No pod holds a100-mig-mixed's other 11 instances, a100-mig-single's other 55, h100-od-8's GPUs 2-7
or h100-empty's GPU; each node also runs dcgm-exporter's DaemonSet pod.

By hand, the sweep (USD per hour = GPU equivalents x USD per GPU-hour):

| finding | GPUs | USD/h |
|---|---|---|
| Notebook ml-research/nb-small (1 x mig-1g.5gb on an A100) | 1/7 | 3.50 / 7 = 0.50 |
| Notebook sandbox/nb-single (1 x gpu under MIG single, 1g.5gb) | 1/7 | 0.50 |
| StatefulSet vision/embedder (2 instances of one GPU) | 2/7 | 1.00 |
| Notebook sandbox/tiny (1 of 4 replicas) | 1/4 | 8.00 / 4 = 2.00 |
| Deployment serving/tiny-api (1 of 2 gpu.shared replicas) | 1/2 | 4.00 |
| Notebook ml-research/nb-b200 (idle ceiling 25% x 1000 W = 250 W) | 1 | 14.00 |

The report over 6 h (GPU-hours = equivalents x 6; every idle pod idle in all 72 steps):

| team (namespace) | flavor lines: GPU-hours x USD = cost | total |
|---|---|---|
| ml-research | B200 6 x 14.00 = 84.00; A100 MIG 1g.5gb 6/7 x 3.50 = 3.00 | 87.00 |
| vision | A100 36 x 3.50 = 126.00; A100 MIG 1g.5gb 12/7 x 3.50 = 6.00 | 132.00 |
| sandbox | H100 shared 1/4 1.5 x 8.00 = 12.00; A100 MIG 1g.5gb 6/7 x 3.50 = 3.00 | 15.00 |
| serving | H100 shared 1/2 3 x 8.00 = 24.00 | 24.00 |
| training | B200 42 x 14.00 = 588.00; H100 12 x 6.88 = 82.56 | 670.56 |

Teams: $928.56 over 103.93 GPU-hours (100.5 + 24/7). Unrequested and node totals: tests/actions/detect/test_unrequested_gpus.py.
"""

from __future__ import annotations

import json

import pytest

from actions.model.telemetry import ENGINE_ACTIVE
from actions.policy.rules import Policy
from actions.sources.prometheus.api import PrometheusApi
from actions.sources.prometheus.telemetry import PrometheusTelemetry
from actions.sources.prometheus.usage import PrometheusUsage
from tests.support import gpu_shapes as shapes
from tests.support.accounting import SWEEP_AT, cents, cli, flavors

pytestmark = pytest.mark.prometheus

NAMESPACES = {"ml-research", "sandbox", "serving", "training", "vision"}


# --- the series as Prometheus holds them --------------------------------------------------------------


def test_every_dcgm_exporter_label_convention_names_the_pod_node_and_gpu(accounting_prometheus):
    """One node per convention: 4.x (Hostname, pod/namespace), main (hostname), honorLabels false
    (exported_pod/exported_namespace beside the exporter's own pod), --use-old-namespace
    (pod_name/pod_namespace and a lower-case uuid)."""
    api = PrometheusApi(accounting_prometheus)

    def series_with(label: str) -> int:
        rows = api.instant(label, f'count({{__name__=~"DCGM_.*", {label}!=""}})', shapes.SWEEP_AT)
        return int(float(rows[0]["value"][1])) if rows else 0

    # The shapes are in the data as the exporters and Prometheus write them.
    for label in ("Hostname", "hostname", "pod", "exported_pod", "exported_namespace", "pod_name", "pod_namespace",
                  "uuid", "UUID", "GPU_I_ID", "GPU_I_PROFILE"):
        assert series_with(label) > 0, label

    telemetry = PrometheusTelemetry(accounting_prometheus).fetch(shapes.SWEEP_AT, Policy())
    mixed, single, ts4, b200 = shapes.MIG_MIXED.name, shapes.MIG_SINGLE.name, shapes.TS_4.name, shapes.B200_8.name

    (nb,) = telemetry.for_pod("ml-research", "nb-small-0")  # 4.x, pod/namespace, a MIG instance
    assert (nb.node, nb.gpu, nb.mig_profile) == (mixed, f"{shapes.gpu_uuid(mixed, 0)}/7", "1g.5gb")
    assert nb.engine_signal == ENGINE_ACTIVE  # a MIG instance exports no GPU_UTIL
    (nb,) = telemetry.for_pod("sandbox", "nb-single-0")  # main: hostname
    assert (nb.node, nb.gpu, nb.mig_profile) == (single, f"{shapes.gpu_uuid(single, 0)}/7", "1g.5gb")
    pretrain = telemetry.for_pod("training", "pretrain-x7k2p")  # honorLabels false
    assert sorted(g.gpu for g in pretrain) == sorted(shapes.gpu_uuid(shapes.H100_8.name, i) for i in (0, 1))
    (tiny,) = telemetry.for_pod("sandbox", "tiny-0")  # --use-old-namespace, behind target labels
    assert (tiny.node, tiny.gpu, tiny.engine_signal) == (ts4, shapes.gpu_uuid(ts4, 0), ENGINE_ACTIVE)
    (nb,) = telemetry.for_pod("ml-research", "nb-b200-0")  # main, custom counters
    assert (nb.node, nb.gpu, nb.power_limit_w) == (b200, shapes.gpu_uuid(b200, 0), 1000.0)
    # Every GPU pod is found under its own name, none under the exporter's.
    held = {(g.namespace, g.pod) for g in telemetry.gpus if g.namespace != shapes.EXPORTER_NAMESPACE and g.pod}
    assert held == {(p.namespace, p.name) for p in shapes.PODS}
    # 95 DCGM entities: 6 whole GPUs and 14 instances, 56 instances, 8 + 1 + 1 + 1 + 8 GPUs.
    assert len(telemetry.gpus) == 95 and {g.node for g in telemetry.gpus} == {n.name for n in shapes.NODES}


def test_kube_state_metrics_mig_and_shared_resources_are_read_as_shares_of_a_gpu(accounting_prometheus):
    """``kube_pod_container_resource_requests{resource="nvidia_com_mig_1g_5gb"}`` is 1/7 of an A100,
    ``nvidia_com_gpu`` under the single strategy too, ``nvidia_com_gpu`` on a node labelled
    replicas 4 a quarter and ``nvidia_com_gpu_shared`` with replicas 2 a half; the nodes'
    ``kube_node_status_capacity`` the physical GPUs behind them."""
    api = PrometheusApi(accounting_prometheus)
    rows = api.instant("mig", 'kube_pod_container_resource_requests{resource=~"nvidia_com_mig_.*"}', shapes.SWEEP_AT)
    assert {(r["metric"]["pod"], r["metric"]["resource"], r["metric"]["unit"], r["value"][1]) for r in rows} == {
        ("nb-small-0", "nvidia_com_mig_1g_5gb", "integer", "1"),
        ("embedder-0", "nvidia_com_mig_1g_5gb", "integer", "2"),
    }

    usage = PrometheusUsage(accounting_prometheus).fetch(shapes.DATA_START, shapes.REPORT_END, Policy())
    pods = {p.pod: p for p in usage.pods}
    assert {name: (round(p.gpu_hours, 6), p.sharing) for name, p in pods.items()} == {
        "nb-small-0": (round(6 / 7, 6), "MIG 1g.5gb"),
        "embedder-0": (round(12 / 7, 6), "MIG 1g.5gb"),
        "train-a100-k8s2m": (36.0, None),
        "nb-single-0": (round(6 / 7, 6), "MIG 1g.5gb"),
        "tiny-0": (1.5, "shared 1/4"),
        "tiny-api-5d8f9c7b6-q2w3e": (3.0, "shared 1/2"),
        "pretrain-x7k2p": (12.0, None),
        "nb-b200-0": (6.0, None),
        "train-b200-q9w8e": (42.0, None),
    }
    # Idle in every step: as many idle GPU-hours as held, in the same shares.
    assert all(p.idle_gpu_hours == pytest.approx(p.gpu_hours) for p in usage.pods if p.pod in shapes.IDLE_PODS)
    assert all(p.idle_gpu_hours == 0 for p in usage.pods if p.pod not in shapes.IDLE_PODS)
    # 8 physical GPUs whether cut mixed (6 + 14/7) or single (56/7); 4 replicas of 1; 2 of 1.
    assert {n: round(h, 6) for n, h in usage.node_gpu_hours.items()} == {
        "a100-mig-mixed": 48.0, "a100-mig-single": 48.0, "h100-od-8": 48.0, "ts-h100-1": 6.0, "ts-h100-2": 6.0,
        "h100-empty": 6.0, "b200-od-1": 48.0}


# --- the sweep ---------------------------------------------------------------------------------------


def test_a_1g_5gb_notebook_is_priced_at_a_seventh_of_its_gpu(accounting_sweep, accounting_report):
    nb = accounting_sweep["idle-notebook/ml-research/nb-small"]
    assert (nb["gpus"], nb["usd_per_hour"], nb["devices"]) == (round(1 / 7, 6), 0.5, {"nvidia.com/mig-1g.5gb": 1})
    assert nb["price"]["usd_per_gpu_hour"] == 3.5 and nb["price"]["instance_type"] == "p4d.24xlarge"
    assert nb["action"]["verb"] == "stop-notebook"
    (ev,) = nb["evidence"]
    assert (ev["gpu"], ev["verdict"]) == (f"{shapes.gpu_uuid(shapes.MIG_MIXED.name, 0)}/7", "idle")
    assert "MIG 1g.5gb instance" in ev["reason"] and ev["power_ceiling_w"] is None
    # Under the single strategy the slice is requested as nvidia.com/gpu; GFD's product names it.
    single = accounting_sweep["idle-notebook/sandbox/nb-single"]
    assert (single["gpus"], single["usd_per_hour"], single["devices"]) == (round(1 / 7, 6), 0.5, {"nvidia.com/gpu": 1})

    research = accounting_report["teams"]["ml-research"]
    assert flavors(research)["A100 MIG 1g.5gb"] == (round(6 / 7, 6), 3.00)  # 6/7 GPU-h x $3.50
    line = next(f for f in research["by_flavor"] if f["gpu_model"] == "A100 MIG 1g.5gb")
    assert line["usd_per_gpu_hour"] == 3.5 and cents(line["idle_cost_usd"]) == 3.00
    assert flavors(accounting_report["teams"]["sandbox"])["A100 MIG 1g.5gb"] == (round(6 / 7, 6), 3.00)


def test_two_slices_of_one_gpu_held_by_one_pod_are_idle_not_unknown(accounting_sweep, accounting_report):
    f = accounting_sweep["idle-serving/vision/StatefulSet/embedder"]
    gpu = shapes.gpu_uuid(shapes.MIG_MIXED.name, 1)
    assert sorted(e["gpu"] for e in f["evidence"]) == [f"{gpu}/7", f"{gpu}/8"]  # one UUID, two GPU_I_IDs
    assert {e["verdict"] for e in f["evidence"]} == {"idle"}
    assert (f["gpus"], f["usd_per_hour"], f["devices"]) == (round(2 / 7, 6), 1.0, {"nvidia.com/mig-1g.5gb": 2})
    assert (f["action"]["verb"], f["action"]["target"]["name"]) == ("scale-to-zero", "embedder")
    assert flavors(accounting_report["teams"]["vision"]) == {"A100": (36.0, 126.00), "A100 MIG 1g.5gb": (round(12 / 7, 6), 6.00)}


def test_a_time_sliced_replica_costs_its_share_of_the_gpu(accounting_sweep, accounting_report):
    tiny = accounting_sweep["idle-notebook/sandbox/tiny"]  # nvidia.com/gpu: 1 on a node labelled replicas 4
    assert (tiny["gpus"], tiny["usd_per_hour"], tiny["devices"]) == (0.25, 2.0, {"nvidia.com/gpu": 1})
    assert tiny["evidence"][0]["gpu"] == shapes.gpu_uuid(shapes.TS_4.name, 0)
    api = accounting_sweep["idle-serving/serving/Deployment/tiny-api"]  # nvidia.com/gpu.shared: 1, replicas 2
    assert (api["gpus"], api["usd_per_hour"], api["devices"]) == (0.5, 4.0, {"nvidia.com/gpu.shared": 1})

    assert flavors(accounting_report["teams"]["sandbox"])["H100 shared 1/4"] == (1.5, 12.00)
    assert flavors(accounting_report["teams"]["serving"]) == {"H100 shared 1/2": (3.0, 24.00)}
    assert cents(accounting_report["teams"]["serving"]["idle_cost_usd"]) == 24.00


def test_an_idle_b200_is_judged_against_a_share_of_its_power_limit(accounting_sweep):
    f = accounting_sweep["idle-notebook/ml-research/nb-b200"]
    (ev,) = f["evidence"]
    # No idle ceiling is built in for B200: 25% of DCGM_FI_DEV_POWER_MGMT_LIMIT (1000 W) = 250 W.
    assert ev["ceiling_source"] == "25% of its 1000 W power limit (no idle ceiling known for B200)"
    assert ev["power_ceiling_w"] == 250.0 and ev["verdict"] == "idle"
    assert 120 < ev["mean_power_w"] < 150 and "25% of its 1000 W power limit" in ev["reason"]
    assert (f["gpus"], f["usd_per_hour"], f["gpu_model"]) == (1, 14.0, shapes.B200)


def test_only_the_idle_consumers_are_proposed(accounting_sweep):
    idle = {k: f["usd_per_hour"] for k, f in accounting_sweep.items() if f["kind"] != "unrequested-gpus"}
    assert idle == {
        "idle-notebook/ml-research/nb-b200": 14.0,
        "idle-serving/serving/Deployment/tiny-api": 4.0,
        "idle-notebook/sandbox/tiny": 2.0,
        "idle-serving/vision/StatefulSet/embedder": 1.0,
        "idle-notebook/ml-research/nb-small": 0.5,
        "idle-notebook/sandbox/nb-single": 0.5,
    }
    # Each team is its namespace: no config names one.
    teams = {f["team"] for f in accounting_sweep.values() if f["kind"] != "unrequested-gpus"}
    assert teams == {"ml-research", "sandbox", "serving", "vision"}


# --- the report --------------------------------------------------------------------------------------


def test_the_report_prices_every_share_as_computed_by_hand(accounting_report):
    teams = accounting_report["teams"]
    assert {t: cents(r["cost_usd"]) for t, r in teams.items()} == {
        "ml-research": 87.00, "vision": 132.00, "sandbox": 15.00, "serving": 24.00, "training": 670.56}
    assert flavors(teams["ml-research"]) == {"B200": (6.0, 84.00), "A100 MIG 1g.5gb": (round(6 / 7, 6), 3.00)}
    assert flavors(teams["training"]) == {"B200": (42.0, 588.00), "H100": (12.0, 82.56)}
    assert cents(sum(r["cost_usd"] for r in teams.values())) == 928.56
    assert sum(r["gpu_hours"] for r in teams.values()) == pytest.approx(100.5 + 24 / 7)  # whole + sevenths


def test_report_with_no_config_has_one_team_per_namespace(accounting_prometheus):
    result = cli("report", "--prometheus-url", accounting_prometheus, "--period", "6h", "--at", SWEEP_AT, "--json")
    r = json.loads(result.stdout)
    assert set(r["teams"]) == NAMESPACES and "unallocated" not in r["teams"]
    assert r["reconciles"] is True  # at the bundled catalog's prices, whatever they are
    assert {t: set(x["namespaces"]) for t, x in r["teams"].items()} == {ns: {ns} for ns in NAMESPACES}
    text = cli("report", "--prometheus-url", accounting_prometheus, "--period", "6h", "--at", SWEEP_AT).stdout
    first = [line.split()[0] for line in text.splitlines() if line.split()]
    assert sorted(w for w in first if w in NAMESPACES | {"unallocated"}) == sorted(NAMESPACES)
