"""The Kueue admission-wait p90 and the spot ratio, queried from a real Prometheus.

The series (tests/support/kueue_metrics.py) are shaped as Kueue and kube-state-metrics export
them; every expected figure is worked out by hand in the comments there and here.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from actions.policy.teams import Team, TeamDirectory
from actions.sources.prometheus.kueue import KueueMetrics, admission_wait_p90_query, spot_ratio_query
from tests.support.kueue_metrics import AT, GPU_CQ_P90, SPOT_AT, WINDOW, kueue_openmetrics
from tests.support.prometheus_server import running_prometheus

pytestmark = pytest.mark.prometheus


@pytest.fixture(scope="module")
def kueue_prometheus(tmp_path_factory):
    with running_prometheus(kueue_openmetrics(), tmp_path_factory.mktemp("kueue")) as url:
        yield url


def test_admission_wait_p90_per_cluster_queue(kueue_prometheus):
    p90 = KueueMetrics(kueue_prometheus).admission_wait_p90(AT, WINDOW)
    assert p90.keys() == {"gpu-cq"}  # cpu-cq admitted nothing in the window: no figure, not 0
    assert p90["gpu-cq"] == pytest.approx(GPU_CQ_P90, rel=1e-6)


def test_spot_ratio_by_namespace_is_the_max_over_the_window(kueue_prometheus):
    ratios = KueueMetrics(kueue_prometheus).spot_ratio_by_namespace(AT, WINDOW)
    # ml-a: 0/8 until 09:45, then 4 spot of 12 running = 1/3 (the pending a3 does not count).
    # ml-b: 2 of 4 on spot (the finished b3 does not count). ml-c: nothing on spot.
    assert ratios == pytest.approx({"ml-a": 4 / 12, "ml-b": 0.5, "ml-c": 0.0})


def test_spot_ratio_before_the_spot_pod_started(kueue_prometheus):
    ratios = KueueMetrics(kueue_prometheus).spot_ratio_by_namespace(SPOT_AT - timedelta(minutes=1), WINDOW)
    assert ratios["ml-a"] == 0.0


def test_spot_ratio_by_team_sums_namespaces_before_dividing(kueue_prometheus):
    teams = TeamDirectory([Team(name="team-a", namespaces=["ml-a"]), Team(name="bc", namespaces=["ml-b", "ml-c"])])
    ratios = KueueMetrics(kueue_prometheus).spot_ratio_by_team(AT, WINDOW, lambda ns: teams.team_for(ns).name)
    # bc: 2 spot GPUs of 2 + 2 + 6 = 10, not the mean of 0.5 and 0.
    assert ratios == pytest.approx({"team-a": 4 / 12, "bc": 0.2})


def test_queries_name_the_series_and_reject_bad_namespaces():
    assert "kueue_admission_wait_time_seconds_bucket[30m]" not in admission_wait_p90_query(1800)
    assert "kueue_admission_wait_time_seconds_bucket[1800s]" in admission_wait_p90_query(1800)
    assert "[1800s:60s]" in spot_ratio_query(1800, 60)
    with pytest.raises(ValueError, match="namespace"):
        spot_ratio_query(1800, 60, ['ml-a"} or vector(1) or {x="'])
