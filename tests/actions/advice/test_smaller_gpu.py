"""A smaller GPU model instead of the one held: on a real Prometheus (two Kubeflow notebooks'
week of DCGM series, built from the real H100 trace as tests/support/advice_fleet.py builds its own), and
as a pure decision where the figures are easier to vary.

Every figure is worked by hand from the bundled catalog (AWS Price List via Karpenter's price
table, 2026-07-20: g6e.xlarge 1 L40S $1.861/h, g6.xlarge 1 L4 $0.8048/h, p5.48xlarge 8 H100
$55.04/h = $6.88 per GPU-hour) and NVIDIA's datasheets (actions/gpu_specs.py): H100 SXM 989.5
dense BF16 TFLOPS and 3,350 GB/s; L40S 362.05 TFLOPS, 864 GB/s, 48 GB; L4 121 TFLOPS (242 with
sparsity), 300 GB/s, 24 GB. The DCGM ``modelName`` values are what NVML reports for these GPUs
("NVIDIA L40S", "NVIDIA H100 80GB HBM3"; dcgm-exporter copies it into the ``modelName`` label)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from actions.advice.model import ConsumerUsage
from actions.advice.recommend import advise_consumer
from actions.advice.round import AdviceResult, gather_advice
from actions.hardware.specs import gpu_spec
from actions.model.kube import CapacityType
from actions.policy.advice import AdvicePolicy
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.kube.dump import snapshot_from_kubectl_dump
from actions.sources.prometheus.api import PrometheusApi
from actions.sources.prometheus.history import AdviceHistorySource
from tests.support.advice_fleet import (
    ADVISE_AT,
    CONSUMER_SCRAPE,
    WEEK_START,
    Gpu,
    _meta,
    _mig_node,
    _node,
    _owner,
    _pod,
    openmetrics,
    with_interlude,
)
from tests.support.gpu_nodes import h100_cluster
from tests.support.prometheus_server import running_prometheus

BUNDLED = PriceBook(PriceCatalog.bundled())
TEAMS = TeamDirectory([Team(name="vision", namespaces=["vision"])])
TRACE_PEAK_FB = 21970  # the trace's largest notebook framebuffer reading, MiB


def _notebook_gpu(pod: str, node: str, model: str, peak_fb_mib: int, peak_pct: float) -> Gpu:
    g = Gpu("vision", pod, node, 0,
            with_interlude("notebook_idle_model_loaded", "notebook_cell_burst", 3 * 3600, WEEK_START),
            start=WEEK_START, scrape=CONSUMER_SCRAPE, fb_scale=peak_fb_mib / TRACE_PEAK_FB, util_scale=peak_pct / 100)
    g.labels["modelName"] = model
    return g


def fleet() -> list[Gpu]:
    return [
        _notebook_gpu("label-0", "l40s-1", "NVIDIA L40S", 10240, 20.0),
        _notebook_gpu("tune-0", "h100-1", "NVIDIA H100 80GB HBM3", 30720, 12.0),
    ]


def cluster() -> bytes:
    items = [_node("l40s-1", "g6e.xlarge", "NVIDIA-L40S", 1), _node("h100-1"), _mig_node("h100-mig-1")]
    for name, node in (("label", "l40s-1"), ("tune", "h100-1")):
        items.append({"apiVersion": "kubeflow.org/v1", "kind": "Notebook",
                      "metadata": _meta("vision", name, "Notebook"), "spec": {}})
        items.append(_pod("vision", f"{name}-0", node, 1, _owner("apps/v1", "StatefulSet", "vision", name),
                          labels={"notebook-name": name, "statefulset": name}))
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}).encode()


@pytest.fixture(scope="module")
def smaller_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_prometheus(openmetrics(fleet()), tmp_path_factory.mktemp("advice-smaller-gpu")) as url:
        yield url


@pytest.fixture(scope="module")
def result(smaller_prometheus: str) -> AdviceResult:
    snapshot = snapshot_from_kubectl_dump(cluster(), ADVISE_AT)
    source = AdviceHistorySource(PrometheusApi(smaller_prometheus))
    return gather_advice(snapshot, source, BUNDLED, Policy(), AdvicePolicy(), TEAMS, ADVISE_AT)


def _only(result: AdviceResult, name: str):
    found = [r for r in result.recommendations if f"vision/{name}" in r.subject]
    assert len(found) == 1, [(r.kind, r.subject) for r in result.recommendations]  # one advice per consumer
    return found[0]


@pytest.mark.prometheus
def test_an_l40s_notebook_at_10_gib_and_20_percent_is_advised_an_l4(result):
    u = next(u for u in result.usages if u.name == "label")
    assert (u.peak_fb_mib, u.peak_engine_pct, u.gpu_model, u.instance_type) == (10240, 20.0, "NVIDIA L40S", "g6e.xlarge")
    assert u.gpu_hours == pytest.approx(168.0)
    r = _only(result, "label")
    assert r.kind == "smaller-gpu" and "an L4 (g6.xlarge) instead of 1 NVIDIA L40S" in r.summary
    assert "node.kubernetes.io/instance-type: g6.xlarge" in r.change and r.action is None  # advice only
    # By hand: 168 GPU-hours in 168 h -> 730 a month. L40S $1.861 x 730 = $1,358.53; L4 $0.8048 x 730
    # = $587.50; saved $771.03. L40S is not MIG-capable, so no MIG alternative.
    assert (r.current_usd_per_month, r.advised_usd_per_month, r.saving_usd_per_month) == (1358.53, 587.50, 771.03)
    evidence = dict(r.evidence)
    # 10,240 MiB x 1.1 = 11,264 MiB; an L4's 24 GB read as decimal is 22,888 MiB.
    assert evidence["needed with 10% headroom"] == "11.0 GiB (11,264 MiB)"
    assert evidence["L4 24GB memory"].startswith("22.4 GiB (22,888 MiB) (NVIDIA L4 Tensor Core GPU datasheet")
    # 362.05 / 121 = 2.99 (TFLOPS) beats 864 / 300 = 2.88 (bandwidth): 20% x 2.992 = 59.8% <= 80%.
    assert "(x2.99)" in evidence["compute assumed"] and "(x2.88)" in evidence["compute assumed"]
    assert "20.0% x 2.99 = 59.8% of the L4, at most 80%" in evidence["compute assumed"]
    assert evidence["cheapest L4 on aws"] == "g6.xlarge at $0.8048/GPU-hour"
    assert [p.instance_type for p in r.prices] == ["g6e.xlarge", "g6.xlarge"]
    assert all(p.as_of == "2026-07-20" for p in r.prices)


@pytest.mark.prometheus
def test_an_h100_notebook_at_30_gib_and_12_percent_is_advised_an_l40s_not_mig_3g_40gb(result):
    r = _only(result, "tune")
    # MIG: 30,720 x 1.1 = 33,792 MiB needs 3g.40gb (38,147 MiB), 3/7 of $5,022.40 = $2,152.46 a month.
    # L40S: 48 GB holds it; 12% x 3.88 (3,350 / 864 GB/s, above 989.5 / 362.05 = 2.73) = 46.5% <= 80%;
    # $1.861 x 730 = $1,358.53 a month. L4 (22,888 MiB) is too small. The L40S costs less: it is advised.
    assert r.kind == "smaller-gpu" and "an L40S (g6e.xlarge)" in r.summary
    assert (r.current_usd_per_month, r.advised_usd_per_month, r.saving_usd_per_month) == (5022.40, 1358.53, 3663.87)
    assert "12.0% x 3.88 = 46.5% of the L40S" in dict(r.evidence)["compute assumed"]
    assert r.notes[-1] == ("also fits: MIG 3g.40gb instead of 1 whole NVIDIA H100 80GB HBM3 at $2,152.46 a month, "
                           "saving less")
    assert result.could_save_usd_per_month == pytest.approx(771.03 + 3663.87)


# --- the decision alone ------------------------------------------------------------------------------


def notebook(**changes) -> ConsumerUsage:
    base = dict(
        key="idle-notebook/vision/nb", team="vision", namespace="vision", consumer_kind="Notebook", name="nb",
        role="notebook", pods=("nb-0",), whole_gpus=1, gpus=1.0, gpu_model="NVIDIA H100 80GB HBM3",
        instance_type="p5.48xlarge", capacity=CapacityType.ON_DEMAND, window_seconds=7 * 86400, gpu_hours=168.0,
        peak_fb_mib=6144, peak_engine_pct=9.0, busy_gpus=1,
    )
    base.update(changes)
    base.setdefault("landing", h100_cluster(base["gpu_model"]))  # its GPU's nodes, whole and MIG mixed
    return ConsumerUsage(**base)


def test_mig_is_advised_when_it_costs_less_and_the_smaller_gpu_is_named_beside_it():
    [r] = advise_consumer(notebook(), BUNDLED, AdvicePolicy())
    # MIG 1g.10gb: $5,022.40 / 7 = $717.49. L40S also fits (9% x 3.88 = 34.9%) at $1,358.53. L4 does
    # not: 9% x 11.17 (3,350 / 300 GB/s) = 100.5% > 80%.
    assert r.kind == "mig" and r.advised_usd_per_month == 717.49
    assert r.notes[-1].startswith("also fits: an L40S (g6e.xlarge)") and "$1,358.53" in r.notes[-1]


def test_too_busy_for_any_smaller_gpu_or_a_raised_ceiling():
    busy = notebook(gpu_model="NVIDIA L40S", instance_type="g6e.xlarge", peak_fb_mib=10240, peak_engine_pct=30.0)
    # 30% x 2.99 = 89.8% > 80%: nothing smaller, and the L40S has no MIG.
    assert advise_consumer(busy, BUNDLED, AdvicePolicy()) == []
    [r] = advise_consumer(busy, BUNDLED, AdvicePolicy(smaller_gpu_max_pct=90))
    assert r.kind == "smaller-gpu" and "89.8% of the L4, at most 90%" in dict(r.evidence)["compute assumed"]


def test_no_smaller_gpu_off_the_catalog_on_another_cloud_or_for_a_gpu_without_datasheet_figures():
    # An instance type the catalog does not list: its cloud is unknown, so nothing to compare with.
    unknown = notebook(gpu_model="NVIDIA L40S", instance_type="on-prem-l40s", peak_fb_mib=10240, peak_engine_pct=20.0)
    assert [r.kind for r in advise_consumer(unknown, BUNDLED, AdvicePolicy())] == []
    # Azure lists no L4; its A10 (24 GB, 125 TFLOPS, 600 GB/s) on Standard_NV36ads_A10_v5 at $3.20 fits an
    # A100 80GB PCIe ($3.673) notebook at 20%: x max(312 / 125, 1,935 / 600) = x3.23, 64.5%. MIG 2g.20gb
    # (1g profiles have 14.3% of the compute) costs 2/7 of $3.673: $1.0494 an hour, less: MIG is advised.
    azure = notebook(gpu_model="NVIDIA A100 80GB PCIe", instance_type="Standard_NC24ads_A100_v4",
                     peak_fb_mib=10240, peak_engine_pct=20.0)
    [r] = advise_consumer(azure, BUNDLED, AdvicePolicy())
    assert r.kind == "mig" and "2g.20gb" in r.summary
    assert r.notes[-1].startswith("also fits: an A10 (Standard_NV36ads_A10_v5)")
    # AWS's A10G has no NVIDIA datasheet: never a candidate, and no advice away from it either.
    assert gpu_spec("NVIDIA A10G") is None and gpu_spec("Tesla T4") is None


def test_datasheet_variants_are_told_apart():
    assert gpu_spec("NVIDIA H100 80GB HBM3").name == "H100 SXM 80GB"
    assert gpu_spec("NVIDIA H100 PCIe").tflops == 756.5  # 1,513 with sparsity
    assert gpu_spec("NVIDIA H100 NVL").memory_gb == 94
    assert gpu_spec("A100", "80GB HBM2e (PCIe)").bandwidth_gbs == 1935
    assert gpu_spec("NVIDIA A100-SXM4-40GB").bandwidth_gbs == 1555
