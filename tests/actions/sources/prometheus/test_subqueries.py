"""The coverage, last-active and first-sample queries give, on a real Prometheus, the same values
as the forms they replaced (which read the label conventions as one at every subquery step), on
the FLEET.md telemetry and on series written in every dcgm-exporter label convention, with gaps,
MIG instances, an exporter restart and a GPU whose ENGINE_ACTIVE stops while GPU_UTIL goes on.

Label conventions as dcgm-exporter writes them (NVIDIA/dcgm-exporter
internal/pkg/collector/gpu_collector.go and pkg/appconfig: ``--use-old-namespace`` gives
``pod_name``/``pod_namespace`` and ``uuid``; Prometheus with honor_labels off prefixes
``exported_``; the main branch renamed ``Hostname`` to ``hostname``)."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone

import pytest

from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL
from actions.policy.rules import Policy
from actions.sources.prometheus.promql import by_gpu, duration, number
from actions.sources.prometheus.telemetry_promql import LOOKBACK_STEP_SECONDS, telemetry_queries
from tests.support.fleet import SWEEP_AT, TELEMETRY_END, TELEMETRY_START
from tests.support.openmetrics import gauge_families, samples
from tests.support.prometheus_server import running_prometheus

pytestmark = pytest.mark.prometheus

START = datetime(2026, 11, 20, 6, 0, tzinfo=timezone.utc)
END = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
POLICIES = (Policy(), Policy(window_seconds=1800, sample_step_seconds=30, engine_idle_pct=5,
                             activity_lookback_seconds=3 * 3600))


def old_queries(policy: Policy) -> dict[str, str]:
    """The subqueries as they were: activity per GPU, its labels read as one, at every step."""
    window = duration(policy.window_seconds)
    step = duration(policy.sample_step_seconds)
    lookback = duration(policy.activity_lookback_seconds)
    bucket = duration(LOOKBACK_STEP_SECONDS)

    def activity(engine: str, util: str) -> str:
        return f"(100 * {by_gpu('max', engine)}) or {by_gpu('max', util)}"

    present = activity(ENGINE_ACTIVE, GPU_UTIL)
    busy = (
        f"({activity(f'max_over_time({ENGINE_ACTIVE}[{bucket}])', f'max_over_time({GPU_UTIL}[{bucket}])')})"
        f" > {number(policy.engine_idle_pct)}"
    )
    return {
        "coverage": f"clamp_max(count_over_time(({present})[{window}:{step}]) / "
                    f"{number(policy.window_seconds / policy.sample_step_seconds)}, 1)",
        "last_active": f"max_over_time(timestamp({busy})[{lookback}:{bucket}])",
        "first_sample": f"min_over_time(timestamp({present})[{lookback}:{bucket}])",
    }


def _query(url: str, promql: str, at: datetime) -> dict[tuple, float]:
    params = urllib.parse.urlencode({"query": promql, "time": at.timestamp()})
    with urllib.request.urlopen(f"{url}/api/v1/query?{params}", timeout=60) as r:
        body = json.loads(r.read())
    assert body["status"] == "success", body
    return {tuple(sorted(s["metric"].items())): float(s["value"][1]) for s in body["data"]["result"]}


def conventions_openmetrics() -> str:
    """Six GPUs over START..END every 60 s, one per case (see the module docstring)."""
    times = [int((START + timedelta(seconds=60 * i)).timestamp()) for i in range(6 * 60 + 1)]
    last_hour = int((END - timedelta(hours=1)).timestamp())
    busy_until = int((END - timedelta(minutes=95)).timestamp())

    def activity(ts: int) -> float:
        return 80.0 if ts < busy_until else 0.0

    model = {"modelName": "NVIDIA H100 80GB HBM3"}
    fam: dict[str, list[str]] = {ENGINE_ACTIVE: [], GPU_UTIL: []}
    # Honor_labels on, with a 12-minute scrape gap in the last hour.
    gap = [t for t in times if not last_hour + 600 <= t < last_hour + 1320]
    fam[GPU_UTIL] += samples(GPU_UTIL, {**model, "UUID": "GPU-a", "gpu": "0", "Hostname": "n1", "namespace": "ns",
                                        "pod": "a-0"}, [(t, activity(t)) for t in gap])
    # --use-old-namespace: pod_name/pod_namespace and uuid; busy till the end.
    fam[GPU_UTIL] += samples(GPU_UTIL, {**model, "uuid": "GPU-b", "gpu": "1", "Hostname": "n1", "pod_namespace": "ns",
                                        "pod_name": "b-0"}, [(t, 50.0) for t in times])
    # Honor_labels off (the exporter's own pod/namespace beside exported_*), main-branch hostname.
    fam[ENGINE_ACTIVE] += samples(ENGINE_ACTIVE, {**model, "UUID": "GPU-c", "gpu": "2", "hostname": "n2",
                                                  "namespace": "gpu-operator", "pod": "dcgm-exporter-x1",
                                                  "exported_namespace": "ns", "exported_pod": "c-0"},
                                  [(t, activity(t) / 100) for t in times])
    # MIG: two GPU instances of one GPU, one busy, one idle.
    for gi, value in (("1", 0.6), ("2", 0.0)):
        fam[ENGINE_ACTIVE] += samples(ENGINE_ACTIVE, {**model, "UUID": "GPU-d", "gpu": "3", "Hostname": "n2",
                                                      "GPU_I_ID": gi, "GPU_I_PROFILE": "3g.40gb", "namespace": "ns",
                                                      "pod": f"d{gi}-0"}, [(t, value) for t in times])
    # The exporter restarted half-way: a new instance label, the same GPU and pod.
    for instance, part in (("10.0.0.1:9400", times[:200]), ("10.0.0.9:9400", times[210:])):
        fam[GPU_UTIL] += samples(GPU_UTIL, {**model, "UUID": "GPU-e", "gpu": "4", "Hostname": "n3", "namespace": "ns",
                                            "pod": "e-0", "instance": instance}, [(t, activity(t)) for t in part])
    # ENGINE_ACTIVE stops 2 h before the end; GPU_UTIL goes on, busy.
    labels_f = {**model, "UUID": "GPU-f", "gpu": "5", "Hostname": "n3", "namespace": "ns", "pod": "f-0"}
    fam[ENGINE_ACTIVE] += samples(ENGINE_ACTIVE, labels_f, [(t, 0.0) for t in times if t < busy_until - 1500])
    fam[GPU_UTIL] += samples(GPU_UTIL, labels_f, [(t, 90.0) for t in times])
    return gauge_families(fam)


@pytest.fixture(scope="module")
def conventions_prometheus(tmp_path_factory: pytest.TempPathFactory):
    with running_prometheus(conventions_openmetrics(), tmp_path_factory.mktemp("conventions")) as url:
        yield url


def _assert_same(url: str, at: datetime) -> int:
    compared = 0
    for policy in POLICIES:
        new = telemetry_queries(policy)
        for name, promql in old_queries(policy).items():
            before, after = _query(url, promql, at), _query(url, new[name], at)
            assert after == before, (name, policy, at)
            compared += len(before)
    return compared


@pytest.mark.parametrize("minutes", [0, 30, 95, 150, 240, 360])
def test_new_subqueries_equal_the_old_on_every_label_convention(conventions_prometheus: str, minutes: int) -> None:
    compared = _assert_same(conventions_prometheus, START + timedelta(minutes=minutes))
    assert minutes == 0 or compared > 0


def test_new_subqueries_equal_the_old_on_the_fleet(fleet_prometheus: str) -> None:
    hours = (TELEMETRY_END - TELEMETRY_START).total_seconds() / 3600
    times = [SWEEP_AT, TELEMETRY_END, TELEMETRY_START + timedelta(hours=hours / 2)]
    assert sum(_assert_same(fleet_prometheus, at) for at in times) > 50


def test_the_cases_are_there_to_compare(conventions_prometheus: str) -> None:
    """The comparison above is not of empty answers: every GPU has a value, and the cases differ."""
    q = telemetry_queries(Policy())
    at = END
    coverage = {dict(k)["UUID"] + dict(k).get("GPU_I_ID", ""): v for k, v in _query(conventions_prometheus, q["coverage"], at).items()}
    assert set(coverage) == {"GPU-a", "GPU-b", "GPU-c", "GPU-d1", "GPU-d2", "GPU-e", "GPU-f"}
    assert coverage["GPU-b"] == 1 and coverage["GPU-a"] < 1  # the 12-minute gap
    last = {dict(k)["UUID"]: v for k, v in _query(conventions_prometheus, q["last_active"], at).items()}
    assert last["GPU-b"] == at.timestamp() and last["GPU-a"] < at.timestamp() - 3600
    pods = {dict(k)["pod"] for k in _query(conventions_prometheus, q["first_sample"], at)}
    assert pods == {"a-0", "b-0", "c-0", "d1-0", "d2-0", "e-0", "f-0"}
