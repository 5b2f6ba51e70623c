"""PrometheusTelemetry against a real Prometheus backfilled with the FLEET.md telemetry."""

from __future__ import annotations

import json
import math
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

from actions.model.codec import telemetry_from_jsonable, to_jsonable
from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL, GpuTelemetry, TelemetrySnapshot
from actions.model.times import parse_time
from actions.policy.rules import Policy
from actions.sources.prometheus.api import TelemetryError
from actions.sources.prometheus.telemetry import PrometheusTelemetry
from actions.sources.prometheus.telemetry_promql import telemetry_queries
from tests.support.fleet import (
    DEMO_TELEMETRY_JSON,
    FLEET_GPUS,
    RECHECK_AT,
    SCRAPE_INTERVAL_SECONDS,
    SWEEP_AT,
    TELEMETRY_END,
    TELEMETRY_START,
    FleetGpu,
    fleet_openmetrics,
    fleet_uuid,
    model_name,
    phase_power_range,
    phase_rows,
    record_demo_telemetry,
    row_at,
)
from tests.support.prometheus_server import free_port, running_prometheus

pytestmark = pytest.mark.prometheus

POLICY = Policy()


def _scrapes(g: FleetGpu, start: datetime, end: datetime) -> list[tuple[datetime, Any]]:
    """The (time, trace row) samples ``g`` has in the closed interval [start, end]."""
    out = []
    t, i = TELEMETRY_START, 0
    while t <= min(end, TELEMETRY_END):
        if t >= start and (g.stop_at is None or t < g.stop_at):
            out.append((t, row_at(g, t, i)))
        t += timedelta(seconds=SCRAPE_INTERVAL_SECONDS)
        i += 1
    return out


@pytest.fixture(scope="module")
def sweep(fleet_prometheus: str) -> TelemetrySnapshot:
    return PrometheusTelemetry(fleet_prometheus).fetch(SWEEP_AT, POLICY)


def _one(snapshot: TelemetrySnapshot, uuid: str) -> GpuTelemetry:
    found = [g for g in snapshot.gpus if g.gpu == uuid]
    assert len(found) == 1, f"{uuid}: {found}"
    return found[0]


# --- the fleet at the sweep ------------------------------------------------------------------------


def test_every_fleet_gpu_appears_once_with_its_node_and_model(sweep: TelemetrySnapshot) -> None:
    assert sorted(g.gpu for g in sweep.gpus) == sorted(g.uuid for g in FLEET_GPUS)
    for fg in FLEET_GPUS:
        got = _one(sweep, fg.uuid)
        assert (got.namespace, got.pod, got.node) == (fg.namespace, fg.pod, fg.node)
        assert got.model_name == model_name() == "NVIDIA H100 80GB HBM3"
    assert sweep.at == SWEEP_AT and sweep.window_seconds == POLICY.window_seconds


def test_idle_notebook_reads_zero_activity_and_idle_power(sweep: TelemetrySnapshot) -> None:
    (g,) = sweep.for_pod("ml-research", "llm-explore-0")
    fleet_gpu = FLEET_GPUS[0]
    window = _scrapes(fleet_gpu, SWEEP_AT - timedelta(seconds=POLICY.window_seconds), SWEEP_AT)
    expected_mean = sum(r.power_w for _, r in window) / len(window)
    lo, hi = phase_power_range("notebook_idle_model_loaded")

    assert g.gpu == fleet_uuid(1)
    assert g.engine_signal == GPU_UTIL
    assert g.peak_engine_pct == 0
    assert g.mean_power_w == pytest.approx(expected_mean, abs=1e-6)
    assert lo <= g.mean_power_w <= hi
    assert 124 <= g.mean_power_w <= 128  # the trace's "idle holding a model" draw
    assert g.coverage >= 0.9
    assert g.last_active is None
    assert g.first_sample == TELEMETRY_START


def test_notebook_with_cell_bursts_is_busy_and_last_active_brackets_the_burst(
    sweep: TelemetrySnapshot,
) -> None:
    (g,) = sweep.for_pod("ml-research", "cell-bursts-0")
    assert g.peak_engine_pct >= 98
    # Bursts start 06:10 every 40 min: the last before 12:00 starts 11:30 and lasts its rows.
    last_burst_sample = datetime(2026, 11, 20, 11, 30, tzinfo=timezone.utc) + timedelta(
        seconds=SCRAPE_INTERVAL_SECONDS * (len(phase_rows("notebook_cell_burst")) - 1)
    )
    assert g.last_active is not None
    assert last_burst_sample <= g.last_active <= last_burst_sample + timedelta(seconds=300)


def test_exported_pod_labels_attribute_both_training_gpus(sweep: TelemetrySnapshot) -> None:
    gpus = sweep.for_pod("training", "pretrain-worker-0")
    assert sorted(g.gpu for g in gpus) == [fleet_uuid(3), fleet_uuid(4)]
    assert all(g.peak_engine_pct >= 98 for g in gpus)
    assert all(g.last_active is not None and g.last_active > SWEEP_AT - timedelta(minutes=10) for g in gpus)
    # The exporter's own pod/namespace must not leak through as the owner.
    assert not [g for g in sweep.gpus if g.pod.startswith("dcgm-exporter") or g.namespace == "gpu-operator"]


def test_light_serving_reads_zero_util_but_draws_power(sweep: TelemetrySnapshot) -> None:
    (g,) = sweep.for_pod("serving", "chat-api-6f7d8b9c4-x2x9z")
    assert g.peak_engine_pct == 0
    assert g.mean_power_w > 180
    assert g.last_active is None


def test_engine_active_is_preferred_and_scaled_to_percent(sweep: TelemetrySnapshot) -> None:
    (g,) = sweep.for_pod("training", "finetune-spot-worker-0")
    assert g.engine_signal == ENGINE_ACTIVE
    assert 98 <= g.peak_engine_pct <= 100
    assert g.mean_power_w > 600


def test_unallocated_gpu_appears_without_a_pod(sweep: TelemetrySnapshot) -> None:
    (g,) = sweep.for_pod("", "")
    assert (g.gpu, g.node) == (fleet_uuid(7), "gpu-od-1")
    assert g.peak_engine_pct == 0
    assert g.mean_power_w < 110


def test_snapshot_survives_the_json_round_trip(sweep: TelemetrySnapshot) -> None:
    assert telemetry_from_jsonable(json.loads(json.dumps(to_jsonable(sweep)))) == sweep


def test_window_moves_with_at_not_the_wall_clock(fleet_prometheus: str) -> None:
    source = PrometheusTelemetry(fleet_prometheus)
    early = source.fetch(datetime(2026, 11, 20, 7, 0, tzinfo=timezone.utc), POLICY)
    (g,) = early.for_pod("ml-research", "llm-explore-0")
    window = _scrapes(FLEET_GPUS[0], datetime(2026, 11, 20, 6, 0, tzinfo=timezone.utc), early.at)
    assert g.mean_power_w == pytest.approx(sum(r.power_w for _, r in window) / len(window), abs=1e-6)
    # Before the telemetry begins there is nothing to report.
    assert PrometheusTelemetry(fleet_prometheus).fetch(TELEMETRY_START - timedelta(hours=2), POLICY).gpus == ()


# --- the queries -----------------------------------------------------------------------------------


def test_queries_follow_the_policy_and_their_number_does_not() -> None:
    default = telemetry_queries(Policy())
    other = telemetry_queries(
        Policy(window_seconds=1800, sample_step_seconds=30, engine_idle_pct=5, activity_lookback_seconds=86400)
    )
    assert default.keys() == other.keys() and len(default) == 6  # one more than before: the power limit, for GPUs without an idle ceiling
    assert "[3600s:60s]" in default["coverage"] and "[1800s:30s]" in other["coverage"]
    assert "> 5" in other["last_active"] and "[86400s:300s]" in other["last_active"]
    assert all("exported_pod" in q for q in default.values())


class _CountingProxy(ThreadingHTTPServer):
    """A real HTTP hop in front of Prometheus that records each query's parameters."""

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.queries: list[dict[str, list[str]]] = []
        super().__init__(("127.0.0.1", 0), _ProxyHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ProxyHandler(BaseHTTPRequestHandler):
    server: _CountingProxy

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        parsed = urllib.parse.urlsplit(self.path)
        if parsed.path == "/api/v1/query":
            self.server.queries.append(urllib.parse.parse_qs(parsed.query))
        try:
            with urllib.request.urlopen(self.server.upstream + self.path) as r:
                status, body = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, body = e.code, e.read()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def proxy_factory() -> Iterator[Any]:
    started: list[_CountingProxy] = []

    def start(upstream: str) -> _CountingProxy:
        proxy = _CountingProxy(upstream)
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.shutdown()
        proxy.server_close()


GAP_STOP = SWEEP_AT - timedelta(minutes=20)
SMALL_FLEET = (replace(FLEET_GPUS[0], stop_at=GAP_STOP), FLEET_GPUS[6])


@pytest.fixture(scope="module")
def small_fleet_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two GPUs: llm-explore's series stops 20 minutes before the sweep, the empty GPU goes on."""
    text = fleet_openmetrics(TELEMETRY_START, TELEMETRY_END, gpus=SMALL_FLEET)
    with running_prometheus(text, tmp_path_factory.mktemp("small-fleet")) as url:
        yield url


def test_queries_per_fetch_do_not_grow_with_the_fleet(
    fleet_prometheus: str, small_fleet_prometheus: str, proxy_factory: Any
) -> None:
    counts = {}
    for name, upstream, size in (("small", small_fleet_prometheus, 2), ("full", fleet_prometheus, 7)):
        proxy = proxy_factory(upstream)
        snapshot = PrometheusTelemetry(proxy.url).fetch(SWEEP_AT, POLICY)
        assert len(snapshot.gpus) == size
        counts[name] = len(proxy.queries)
        assert sorted(q["query"][0] for q in proxy.queries) == sorted(telemetry_queries(POLICY).values())
        assert {float(q["time"][0]) for q in proxy.queries} == {SWEEP_AT.timestamp()}
    assert counts["small"] == counts["full"] == len(telemetry_queries(POLICY))


def test_a_series_that_stopped_20_minutes_ago_has_too_little_coverage(small_fleet_prometheus: str) -> None:
    snapshot = PrometheusTelemetry(small_fleet_prometheus).fetch(SWEEP_AT, POLICY)
    (stopped,) = snapshot.for_pod("ml-research", "llm-explore-0")
    (steady,) = snapshot.for_pod("", "")
    assert stopped.coverage < POLICY.min_coverage
    assert 0.5 < stopped.coverage  # the first 40 minutes of the window were sampled
    assert steady.coverage >= POLICY.min_coverage


# --- failures --------------------------------------------------------------------------------------


def test_unreachable_prometheus_raises_telemetry_error_naming_url_and_cause() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(TelemetryError) as err:
        PrometheusTelemetry(url, attempts=2, timeout_seconds=5).fetch(SWEEP_AT, POLICY)
    message = str(err.value)
    assert message == f"Prometheus at {url} is unreachable (Connection refused; tried 2 times): check prometheus.url"
    # The PromQL is kept for the log, not put in front of a person.
    assert "DCGM_FI_DEV_GPU_UTIL" in err.value.promql and err.value.status is None


class _SlowQueries(BaseHTTPRequestHandler):
    """Answers every query after 3 s, as a Prometheus chewing on a heavy query would."""

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        self.server.hits += 1  # type: ignore[attr-defined]
        threading.Event().wait(3)
        body = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def test_a_query_that_times_out_is_not_sent_again() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowQueries)
    server.hits = 0  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        with pytest.raises(TelemetryError, match=r"did not answer the \w+ query within 0.5 s"):
            PrometheusTelemetry(url, attempts=3, timeout_seconds=0.5).fetch(SWEEP_AT, POLICY)
        # Retrying would only triple the wait: connection failures are retried, slow answers not.
        assert server.hits == 1  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def test_prometheus_error_status_raises_telemetry_error(fleet_prometheus: str) -> None:
    url = f"{fleet_prometheus}/no-such-prefix"
    with pytest.raises(TelemetryError) as err:
        PrometheusTelemetry(url).fetch(SWEEP_AT, POLICY)
    assert str(err.value) == (
        f"Prometheus at {url} answered HTTP 404 to the peak_engine query: "
        "no Prometheus API there (prometheus.url should end before /api/v1)"
    )
    assert err.value.status == 404


def test_naive_at_is_refused() -> None:
    with pytest.raises(ValueError):
        PrometheusTelemetry("http://127.0.0.1:9").fetch(datetime(2026, 11, 20, 12, 0), POLICY)


# --- the recorded demo telemetry -------------------------------------------------------------------


def _close(a: Any, b: Any, path: str = "") -> None:
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)), path
        assert math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6), f"{path}: {a} != {b}"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def test_bundled_demo_telemetry_matches_a_fresh_fetch(fleet_prometheus: str) -> None:
    bundled = json.loads(DEMO_TELEMETRY_JSON.read_text())
    _close(bundled, record_demo_telemetry(fleet_prometheus))
    assert parse_time(bundled["sweep"]["at"]) == SWEEP_AT
    assert parse_time(bundled["recheck"]["at"]) == RECHECK_AT
    assert telemetry_from_jsonable(bundled["sweep"]).for_pod("ml-research", "llm-explore-0")
