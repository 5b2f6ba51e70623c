"""When a pending Workload likely starts (actions.kueue.eta, starts, quota), worked out by hand,
and the back-test on a generated 30-day history (tests/support/eta_backtest.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from actions.kueue.eta import NOW, RANGE, Queued, Running, RunTimes, estimate_start, hours_range, quantile
from actions.kueue.queues import queue_report
from actions.kueue.quota import gpu_nominal_quota, quantity
from actions.kueue.starts import with_starts
from actions.model.findings import Finding
from actions.model.kube import CapacityType, GpuPod, OwnerRef
from actions.model.kueue import ClusterQueue, LocalQueue, PendingPosition, Workload
from actions.model.quote import PriceQuote
from actions.model.snapshot import ClusterSnapshot
from actions.policy.teams import Team, TeamDirectory
from tests.support.eta_backtest import generate, replay

T = datetime(2026, 11, 20, 12, tzinfo=timezone.utc)
# p50 1 h, p90 2.5 h (11 runs: ranks 5 and 9 of 0..10).
RUNS = RunTimes.of([0.5, 0.5, 0.5, 1, 1, 1, 1, 2, 2, 2.5, 3])


def test_quantiles_and_the_remaining_time_of_a_run_already_under_way():
    assert quantile([1, 2, 3, 4], 0.5) == 2.5 and quantile([7], 0.9) == 7
    assert (RUNS.p50, RUNS.p90) == (1, 2.5)
    # After 1.5 h only the runs of 2, 2, 2.5 and 3 h are still going: 0.5, 0.5, 1, 1.5 h left.
    assert RUNS.remaining(1.5, 0.5) == 0.75
    assert RUNS.remaining(5, 0.9) == 0  # longer than any run: overdue
    assert RunTimes.of([0, -1]) is None


def test_third_behind_two_of_4_gpus_on_a_full_quota_of_8_likely_starts_in_2_to_5_hours():
    # 8 GPUs of quota, 8 running (two Workloads of 4, just started); 2 Workloads of 4 ahead.
    # p50: the running end at 1 h, both ahead start then and end at 2 h: it starts at 2 h.
    # p90: 2.5 h, then 5 h.
    running = [Running(4, 0), Running(4, 0)]
    est = estimate_start(4, [Queued(4), Queued(4)], running, 8, RUNS)
    assert (est.status, est.low_hours, est.high_hours, est.gpus_ahead) == (RANGE, 2, 5, 8)
    assert est.text() == "likely in 2-5 h"
    # The runs under way have run 1.5 h: 0.75 h (p50) and 1.35 h (p90) left, then one run more.
    est = estimate_start(4, [Queued(4), Queued(4)], [Running(4, 1.5), Running(4, 1.5)], 8, RUNS)
    assert (est.low_hours, est.high_hours) == pytest.approx((1.75, 3.85))
    # Position matters: first in line, it starts when the first 4 GPUs free up.
    est = estimate_start(4, [], running, 8, RUNS)
    assert (est.low_hours, est.high_hours) == (1, 2.5)
    # An ahead Workload timed by its own LocalQueue's runs (10 h): it holds 4 GPUs, the other 4 free at 1 h.
    est = estimate_start(8, [Queued(4, RunTimes.of([10]))], running, 8, RUNS)
    assert (est.low_hours, est.high_hours) == (11, 12.5)


def test_now_unknown_and_the_assumed_quota():
    assert estimate_start(2, [], [Running(4, 1)], 8, None).status == NOW  # fits in the free 4: no history needed
    assert estimate_start(2, [], [Running(4, 1)], 8, None).text() == "now"
    est = estimate_start(4, [Queued(4)], [Running(8, 1)], 8, None)
    assert est.text() == "unknown (no finished run of this LocalQueue in the usage ledger)"
    assert estimate_start(16, [], [], 8, RUNS).text() == "unknown (asks 16 GPUs, more than the quota of 8)"
    assert estimate_start(4, None, [], 8, RUNS).reason == "its place in the ClusterQueue is unknown"
    # Quota unknown: the running GPUs stand for it (the queue holds it back, so it is full).
    est = estimate_start(4, [], [Running(8, 0)], None, RUNS)
    assert (est.status, est.capacity, est.capacity_assumed, est.low_hours) == (RANGE, 8, True, 1)
    assert estimate_start(4, [], [], None, RUNS).reason == "the ClusterQueue's GPU quota is unknown"


def test_ranges_as_people_read_them():
    assert hours_range(2, 5) == "2-5 h"
    assert hours_range(0.25, 0.6) == "15-35 min"
    assert hours_range(2.9, 3.1) == "~3 h"
    assert hours_range(0.4, 1.7) == "0.5-1.5 h"
    assert hours_range(9.6, 14.4) == "9.5-14 h"


def test_the_gpu_quota_is_the_nominal_quota_of_the_gpu_resources():
    # kueue apis/kueue/v1beta1 ClusterQueueSpec.resourceGroups[].flavors[] (FlavorQuotas: name,
    # resources[]) and ResourceQuota (name, nominalQuota, borrowingLimit, lendingLimit).
    spec = {"cohort": "all", "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "96"}]}]},
        {"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8", "borrowingLimit": "8", "lendingLimit": "2"}]},
            {"name": "h100-spot", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 4}]},
        ]},
    ]}
    assert gpu_nominal_quota(spec) == 12  # borrowing is not counted on: the cohort's spare may be gone
    assert gpu_nominal_quota(spec, ("h100",)) == 8
    assert gpu_nominal_quota({"resourceGroups": spec["resourceGroups"][:1]}) is None
    assert (quantity("500m"), quantity("2k"), quantity(3)) == (0.5, 2000, 3)


def _wl(name, gpus, *, admitted=False, queue="team-a", ns="ml", owner=None) -> Workload:
    return Workload(ns, name, f"uid-{name}", "kueue.x-k8s.io/v1beta2", queue, True, T - timedelta(hours=5), admitted,
                    cluster_queue="gpu-cq" if admitted else None, gpus=gpus, flavors=("h100",) if admitted else (),
                    owners=(owner,) if owner else ())


def _idle(ns, name, gpus) -> Finding:
    price = PriceQuote(1.0, CapacityType.ON_DEMAND, "test", "2026-11-01", "gpu-model")
    return Finding(kind="idle-notebook", key=f"idle-notebook/{ns}/{name}", namespace=ns, name=name, team="t",
                   consumer_kind="Notebook", pods=(f"{name}-0",), node="n1", gpus=gpus, gpu_model="NVIDIA H100 80GB HBM3",
                   idle_seconds=7200, usd_per_hour=10.0 * gpus, price=price, evidence=(), detected_at=T, window_seconds=3600,
                   action=object())  # type: ignore[arg-type]


def test_with_starts_times_the_running_from_their_pods_and_names_what_would_admit_it_now():
    job = OwnerRef("batch/v1", "Job", "run", controller=True, uid="job-uid")
    pod = GpuPod("ml", "run-0", "uid-p", "n1", "Running", T - timedelta(hours=4), T - timedelta(hours=1.5), 8, owners=(job,))
    snap = ClusterSnapshot(
        taken_at=T, pods=(pod,), workloads=(_wl("run", 8, admitted=True, owner=job), _wl("a", 4), _wl("b", 4), _wl("c", 4)),
        local_queues=(LocalQueue("ml", "team-a", "gpu-cq"), LocalQueue("nb", "notebooks", "nb-cq"),
                      LocalQueue("far", "x", "other-cq")),
        cluster_queues=(ClusterQueue("gpu-cq", "all", ("h100",)), ClusterQueue("nb-cq", "all", ("h100",)),
                        ClusterQueue("other-cq", "elsewhere", ("h100",))),
    )
    positions = {("ml", n): PendingPosition("ml", n, "gpu-cq", "team-a", i, i) for i, n in enumerate("abc")}
    report = queue_report(snap, [], TeamDirectory([Team(name="ml", namespaces=["ml"])]), T, positions=positions)
    findings = [_idle("nb", "explore-a", 4), _idle("nb", "explore-b", 4), _idle("far", "big", 8)]
    open_requests = {"idle-notebook/nb/explore-a": 1, "idle-notebook/nb/explore-b": 2, "idle-notebook/far/big": 3}
    out = with_starts(report, snap, {("ml", "team-a"): RUNS}, quotas={"gpu-cq": 8}, findings=findings,
                      open_requests=open_requests)
    c = out.starts["uid-c"]
    # The pod started 1.5 h ago (the Workload 5 h ago): 0.75 / 1.35 h left, then a and b run 1 / 2.5 h.
    assert (c.status, c.gpus_ahead) == (RANGE, 8)
    assert (c.low_hours, c.high_hours) == pytest.approx((1.75, 3.85))
    # 8 ahead + 4 asked, none free: 12 GPUs; the two notebooks of nb-cq (same cohort) give 8, the
    # 8 idle GPUs of other-cq are in another cohort and free none of gpu-cq's quota.
    assert c.admitting is None
    a = out.starts["uid-a"]
    assert a.admitting is not None and a.admitting.request_ids == (1,)
    assert a.admitting.sentence() == "approving the idle notebook in this cohort frees 4 H100s (request #1)"
    b = out.starts["uid-b"]
    assert b.admitting.sentence() == "approving the 2 idle notebooks in this cohort frees 8 H100s (requests #1, #2)"


def test_backtest_on_a_generated_month_beats_a_bound_an_estimator_blind_to_the_queue_fails():
    jobs = generate(seed=7)
    result, blind = replay(jobs), replay(jobs, ignore_position=True)
    assert result.estimates > 500 and result.unknown == 0
    assert result.median_wait_hours > 2  # a busy queue: the estimate has something to estimate
    assert result.median_abs_error_hours < 2.0 < blind.median_abs_error_hours
    assert result.in_range > 0.5 > blind.in_range
    assert result.now_right == 1.0  # "now" is said only when it fits: it always did start then
