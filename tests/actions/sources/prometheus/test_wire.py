"""Prometheus's answers decoded from their bytes (actions.sources.prometheus.wire) read the same as
the standard library's json.loads of the same bytes, on a real Prometheus's answers.

The envelope is the Prometheus HTTP API's ("HTTP API", "Format overview", docs/querying/api.md in
prometheus/prometheus): ``{"status": "success" | "error", "data": ..., "errorType": ..., "error":
..., "warnings": [...], "infos": [...]}`` (errors come with 400, 422 or 503 from Prometheus, and
some compatible backends word them in a 200),
an instant query's ``data`` ``{"resultType": "vector", "result": [{"metric": {...}, "value":
[t, "v"]}]}`` and a range query's ``{"resultType": "matrix", "result": [{"metric": {...},
"values": [[t, "v"], ...]}]}``.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

from actions.policy.rules import Policy
from actions.sources.prometheus import wire as prometheus_wire
from actions.sources.prometheus.api import TelemetryError
from actions.sources.prometheus.promql import GROUP_LABELS, SOURCE_LABELS
from actions.sources.prometheus.telemetry import PrometheusTelemetry
from actions.sources.prometheus.telemetry_promql import (
    SIGNAL_LABEL,
    assemble_snapshot,
    presence_query,
    telemetry_queries,
)
from tests.support.fleet import SWEEP_AT

pytestmark = pytest.mark.prometheus

POLICY = Policy()


def _raw(url: str, path: str, **params: Any) -> bytes:
    try:
        with urllib.request.urlopen(f"{url}/api/v1/{path}?{urllib.parse.urlencode(params)}", timeout=60) as r:
            return r.read()
    except urllib.error.HTTPError as e:  # Prometheus's error answers come with a 4xx status
        return e.read()


def _as_records(sample: dict) -> SimpleNamespace:
    """A json.loads sample in the decoder's shape, read the way the dict code read it."""
    m = sample["metric"]
    metric = SimpleNamespace(**{label: m.get(label, "") for label in GROUP_LABELS}, engine_signal=m.get(SIGNAL_LABEL))
    return SimpleNamespace(metric=metric, value=(float(sample["value"][0]), sample["value"][1]))


def test_decoded_answers_give_the_snapshot_json_loads_gives(fleet_prometheus: str) -> None:
    answers = {name: _raw(fleet_prometheus, "query", query=q, time=SWEEP_AT.timestamp())
               for name, q in telemetry_queries(POLICY).items()}
    loaded = {name: json.loads(raw) for name, raw in answers.items()}
    decoded = {name: prometheus_wire.result(raw, GROUP_LABELS, (SIGNAL_LABEL,)) for name, raw in answers.items()}
    for name, answer in loaded.items():
        assert answer["status"] == "success" and answer["data"]["resultType"] == "vector"
        assert [(dict((k, getattr(s.metric, k)) for k in GROUP_LABELS if getattr(s.metric, k)), s.value)
                for s in decoded[name]] == \
               [({k: v for k, v in s["metric"].items() if k in GROUP_LABELS}, (float(s["value"][0]), s["value"][1]))
                for s in answer["data"]["result"]], name
    assert sum(len(a["data"]["result"]) for a in loaded.values()) > 0

    by_json = assemble_snapshot(SWEEP_AT, POLICY.window_seconds,
                                {n: [_as_records(s) for s in a["data"]["result"]] for n, a in loaded.items()})
    fetched = PrometheusTelemetry(fleet_prometheus).fetch(SWEEP_AT, POLICY)
    assert fetched == by_json
    assert {g.engine_signal for g in fetched.gpus} >= {"DCGM_FI_PROF_GR_ENGINE_ACTIVE"}


def test_a_range_answer_decodes_as_json_loads_reads_it(fleet_prometheus: str) -> None:
    start = SWEEP_AT.timestamp() - 900
    raw = _raw(fleet_prometheus, "query_range", query=presence_query(), start=start, end=SWEEP_AT.timestamp(), step=60)
    loaded = json.loads(raw)["data"]["result"]
    decoded = prometheus_wire.result(raw, SOURCE_LABELS, matrix=True)
    assert len(loaded) > 0
    assert [(tuple(s["metric"].get(k, "") for k in SOURCE_LABELS), [(float(t), v) for t, v in s["values"]])
            for s in loaded] == [(tuple(getattr(s.metric, k) for k in SOURCE_LABELS), s.values) for s in decoded]


def test_warnings_are_read_past_and_the_result_kept(fleet_prometheus: str) -> None:
    q = telemetry_queries(POLICY)["peak_engine"]
    answer = json.loads(_raw(fleet_prometheus, "query", query=q, time=SWEEP_AT.timestamp()))
    warned = json.dumps({**answer, "warnings": ["partial response: a store did not answer"],
                         "infos": ["PromQL info: metric might not be a counter"]})
    assert prometheus_wire.result(warned.encode(), GROUP_LABELS, (SIGNAL_LABEL,)) == \
        prometheus_wire.result(json.dumps(answer).encode(), GROUP_LABELS, (SIGNAL_LABEL,))


def test_an_error_answer_raises_its_type_and_message(fleet_prometheus: str) -> None:
    raw = _raw(fleet_prometheus, "query", query="sum(", time=SWEEP_AT.timestamp())
    answer = json.loads(raw)
    assert answer["status"] == "error" and answer["errorType"] == "bad_data"
    with pytest.raises(prometheus_wire.ApiError) as err:
        prometheus_wire.result(raw, GROUP_LABELS)
    assert (err.value.error_type, err.value.error) == ("bad_data", answer["error"])


class _Fixed(BaseHTTPRequestHandler):
    """Answers every request 200 with the server's ``body``: a compatible backend that words
    an error in the envelope alone."""

    def do_GET(self) -> None:
        self.server.seen.append((self.path, dict(self.headers)))  # type: ignore[attr-defined]
        body = self.server.body  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def _serving(body: bytes) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Fixed)
    server.body, server.seen = body, []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_every_query_carries_the_configured_headers() -> None:
    server = _serving(b'{"status":"success","data":{"resultType":"vector","result":[]}}')
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        headers = {"Authorization": "Bearer t0ken", "X-Scope-OrgID": "gpu"}
        assert PrometheusTelemetry(url, headers).fetch(SWEEP_AT, POLICY).gpus == ()
        seen = server.seen  # type: ignore[attr-defined]
        assert len(seen) == len(telemetry_queries(POLICY))
        for path, got in seen:
            assert path.startswith("/api/v1/query?")
            assert urllib.parse.parse_qs(path.split("?", 1)[1])["time"] == [str(SWEEP_AT.timestamp())]
            assert (got["Authorization"], got["X-Scope-OrgID"]) == ("Bearer t0ken", "gpu")
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("body, says", [
    (b'{"status":"error","errorType":"execution","error":"query processing would load too many samples"}',
     "answered the peak_engine query with an error (execution: query processing would load too many samples)"),
    (b'{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}',
     "answered the peak_engine query with something that is not Prometheus's JSON API"),
    (b"<html>proxy login</html>", "answered the peak_engine query with something that is not Prometheus's JSON API"),
])
def test_an_error_in_a_200_answer_raises_telemetry_error(body: bytes, says: str) -> None:
    server = _serving(body)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(TelemetryError) as err:
            PrometheusTelemetry(url, attempts=1).fetch(SWEEP_AT, POLICY)
        assert says in str(err.value)
    finally:
        server.shutdown()
        server.server_close()
