"""The fleet report over several clusters' usage sources: each cluster's report is made side by
side with the others (one slow Prometheus costs the fleet report its own wait, not the sum of
every cluster's), and the answer keeps the configured order and names the cluster that failed.

The clusters' Prometheus is the slow wire-level fake of tests/support/fakes/prometheus_api.py
(the real ``prometheus_api_client`` behind :class:`PrometheusUsage` asks it over HTTP); what the
queries compute is tested against a real Prometheus in test_report_prometheus.py and
tests/scenarios/test_clusters.py."""

from __future__ import annotations

import socket
from datetime import datetime, timezone

import pytest

from actions.cost.reporting import CostSetup, build_fleet_report
from actions.policy.rules import Policy
from actions.sources.prometheus.api import TelemetryError
from actions.sources.prometheus.usage import PrometheusUsage
from tests.support.fakes.prometheus_api import FakePrometheus
from tests.support.usage_history import TEAMS, price_book

START, END = datetime(2026, 11, 20, tzinfo=timezone.utc), datetime(2026, 11, 21, tzinfo=timezone.utc)


def _refused_url() -> str:
    # A port nothing listens on: bound, then closed.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _setup(url: str) -> CostSetup:
    return CostSetup(PrometheusUsage(url, timeout_seconds=5, attempts=1, team_label="team"))


def test_the_clusters_reports_are_made_side_by_side_in_configured_order():
    with FakePrometheus(delay_seconds=0.3) as slow:
        clusters = [("east", _setup(slow.url), None), ("north", _setup(_refused_url()), None),
                    ("west", _setup(slow.url), None)]
        report = build_fleet_report(clusters, price_book(), TEAMS, Policy(), START, END)
    # Read one after another, the fake would never hold more than one query at a time.
    assert slow.max_in_flight >= 2
    assert list(report.clusters) == ["east", "west"]
    assert [(t.cluster, t.error is None) for t in report.totals()] == [("east", True), ("west", True), ("north", False)]
    assert report.fleet.warnings[-1].startswith("north: no report, its figures are not in the totals (")


def test_no_cluster_answering_raises_the_first_clusters_error():
    east, west = _refused_url(), _refused_url()
    clusters = [("east", _setup(east), None), ("west", _setup(west), None)]
    with pytest.raises(TelemetryError, match=f"Prometheus at {east} is unreachable"):
        build_fleet_report(clusters, price_book(), TEAMS, Policy(), START, END)
