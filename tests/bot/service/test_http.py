"""The HTTP front end over real HTTP: the real Bolt app behind bot.http's WSGI app, a real store
(SQLite and PostgreSQL), a real APScheduler, Slack at the wire (FakeSlack)."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from prometheus_client.parser import text_string_to_metric_families

from actions.store.database import Store
from bot.chat.slack.app import build_app
from bot.chat.slack.front import events_route
from bot.chat.slack.web import web_client
from bot.service.http import HttpOptions, serve_http, wsgi_app
from bot.service.metrics import BotMetrics
from bot.service.process import Readiness
from tests.support.demo_world import make_runtime
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import post_to_app, slash_command_body

SECRET = "test-signing-secret"


def get(url: str, headers: dict[str, str] | None = None, method: str = "GET") -> tuple[int, str, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


@pytest.fixture
def slack():
    with FakeSlack() as fake:
        yield fake


@pytest.fixture
def scheduler():
    s = BackgroundScheduler(timezone="UTC")
    s.start()
    yield s
    if s.running:
        s.shutdown(wait=False)


@pytest.fixture
def front(database_url, slack, scheduler):
    """(base url, readiness, runtime, metrics) of the full front end, Slack HTTP mode."""
    rt = make_runtime(database_url, slack)
    metrics = BotMetrics()
    rt.metrics = metrics
    readiness = Readiness(rt.store)
    readiness.scheduler = scheduler
    bolt = build_app(rt, web_client("xoxb-test", slack.base_url), SECRET)
    app = wsgi_app(events_route(bolt, SECRET), metrics=metrics, ready=readiness, accepting=lambda: not readiness.stopping.is_set())
    server = serve_http(app, "127.0.0.1", 0)
    try:
        yield server.url, readiness, rt, metrics
    finally:
        server.shutdown()


def test_healthz_answers_and_echoes_a_sane_request_id(front):
    url, *_ = front
    status, body, headers = get(f"{url}/healthz", {"X-Request-Id": "probe-42"})
    assert (status, body, headers["X-Request-Id"]) == (200, "ok\n", "probe-42")
    # An id that could forge a log line is replaced by a fresh one.
    status, _, headers = get(f"{url}/healthz", {"X-Request-Id": "x" * 200})
    assert status == 200 and len(headers["X-Request-Id"]) == 32 and headers["X-Request-Id"] != "x" * 200


def test_readyz_is_200_when_the_store_and_the_scheduler_are_up(front):
    url, *_ = front
    assert get(f"{url}/readyz")[:2] == (200, "ok\n")


def test_readyz_is_503_with_the_reason(front, scheduler):
    url, readiness, *_ = front
    scheduler.shutdown(wait=True)
    assert get(f"{url}/readyz")[:2] == (503, "scheduler not running\n")
    readiness.stopping.set()
    assert get(f"{url}/readyz")[:2] == (503, "shutting down\n")


def test_readyz_is_503_when_the_database_does_not_answer(tmp_path, scheduler):
    store = Store(f"sqlite:///{tmp_path}/no-such-dir/bot.db")
    readiness = Readiness(store)
    readiness.scheduler = scheduler
    server = serve_http(wsgi_app(None, ready=readiness), "127.0.0.1", 0)
    try:
        status, body, _ = get(f"{server.url}/readyz")
    finally:
        server.shutdown()
    assert status == 503 and body.startswith("database not reachable:") and "unable to open database file" in body


def test_socket_mode_readiness_follows_the_slack_connection(database_url):
    store = Store(database_url)
    store.migrate()
    connected = [False]
    readiness = Readiness(store, lambda: connected[0], "Slack (Socket Mode)")
    readiness.scheduler = object()  # a scheduler without ``running`` counts as running
    assert readiness() == (False, "not connected to Slack (Socket Mode)")
    connected[0] = True
    assert readiness() == (True, "ok")


def test_slack_events_verify_the_signature(front, slack):
    url, *_ = front
    body = slash_command_body(text="help", user_id="U0SOMEONE", response_url=slack.response_url("help"))
    assert post_to_app(f"{url}/slack/events", "not-the-secret", body)[0] == 401
    assert post_to_app(f"{url}/slack/events", SECRET, body, timestamp=1_000_000_000)[0] == 401  # replayed
    assert post_to_app(f"{url}/slack/events", SECRET, body)[0] == 200
    assert get(f"{url}/slack/events")[0] == 405


def test_slack_events_are_refused_while_draining(front, slack):
    url, readiness, *_ = front
    readiness.stopping.set()
    body = slash_command_body(text="help", user_id="U0SOMEONE", response_url=slack.response_url("late"))
    status, text = post_to_app(f"{url}/slack/events", SECRET, body)
    assert (status, text) == (503, "shutting down\n")
    assert slack.responses_to("late") == []


def test_metrics_are_served_in_the_prometheus_format(front):
    url, *_ = front
    status, body, headers = get(f"{url}/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    names = {f.name for f in text_string_to_metric_families(body)}
    assert {
        "gpu_cost_bot_sweeps", "gpu_cost_bot_sweep_duration_seconds", "gpu_cost_bot_findings",
        "gpu_cost_bot_requests", "gpu_cost_bot_actions_applied", "gpu_cost_bot_actions_failed",
        "gpu_cost_bot_slack_api_errors", "gpu_cost_bot_kubernetes_api_errors",
        "gpu_cost_bot_reclaimed_usd_per_hour",
    } <= names
    assert "process_cpu_seconds" in names  # the process collector is registered too


def test_probe_only_app_has_no_slack_route_and_unknown_paths_are_404(scheduler, database_url):
    store = Store(database_url)
    store.migrate()
    readiness = Readiness(store)
    readiness.scheduler = scheduler
    server = serve_http(wsgi_app(None, metrics=BotMetrics(), ready=readiness), "127.0.0.1", 0)
    try:
        assert get(f"{server.url}/slack/events", method="POST")[0] == 404
        assert get(f"{server.url}/nope")[0] == 404
        assert get(f"{server.url}/metrics", method="POST")[0] == 405
        assert get(f"{server.url}/readyz")[0] == 200
    finally:
        server.shutdown()


def test_a_request_that_trickles_in_is_closed_at_the_read_deadline():
    # Issue 22, item 1: a client that sends a header line every half second is never idle; it
    # would hold a connection slot for as long as it likes. Its request must arrive in 2 s.
    app = wsgi_app({}, ready=lambda: (True, "ok"))
    server = serve_http(app, "127.0.0.1", 0, HttpOptions(read_deadline_seconds=2, idle_timeout_seconds=30))
    try:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        sock.sendall(b"POST /slack/events HTTP/1.1\r\nHost: bot\r\n")
        started, closed_at = time.monotonic(), None
        for i in range(40):
            time.sleep(0.5)
            try:
                sock.sendall(f"X-Trickle-{i}: {i}\r\n".encode())
                sock.setblocking(False)
                if sock.recv(1) == b"":
                    closed_at = time.monotonic()
                    break
            except BlockingIOError:
                pass
            except OSError:
                closed_at = time.monotonic()
                break
            finally:
                sock.setblocking(True)
        sock.close()
        assert closed_at is not None and closed_at - started < 5, "the trickling request was never closed"
        # A well-behaved request is answered meanwhile and after.
        assert urllib.request.urlopen(f"{server.url}/healthz", timeout=5).status == 200
    finally:
        server.shutdown()
