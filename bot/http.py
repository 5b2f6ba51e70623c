"""The bot's HTTP front end: one WSGI application and the threaded stdlib server that runs it.

Routes::

    POST /slack/events   Slack's Events API, slash commands and button presses (slack_bolt's WSGI
                         adapter, which verifies Slack's request signature: 401 when it is wrong)
    GET  /healthz        200 while the process serves requests (liveness)
    GET  /readyz         200 when the bot can do its work, else 503 with the reason (readiness)
    GET  /metrics        the Prometheus exposition of :class:`~bot.metrics.BotMetrics`

Each route is there only when its part is given: Socket Mode serves no ``/slack/events``.
Every request gets an id, the caller's ``X-Request-Id`` when it sent a sensible one, else a new
one; it is sent back in the ``X-Request-Id`` response header and is in every log line written
while the request is handled (``bot.logs.request_id``), except that inside Bolt Slack's own id for
the request takes over (``bot.logs.slack_request_ids`` logs the two side by side).
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
import uuid
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Callable, Iterable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app
from slack_bolt import App
from slack_bolt.adapter.wsgi import SlackRequestHandler

from bot import logs
from bot.metrics import BotMetrics

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger(__name__)

SLACK_EVENTS_PATH = "/slack/events"
REQUEST_ID_HEADER = "X-Request-Id"
# A caller's id is copied into logs and a response header, so only ids that cannot forge a log
# line or a header are taken as they are.
_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:/+=-]{1,128}$")
# Kubelet and Prometheus call these every few seconds; logging each at INFO buries everything else.
_PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})

Ready = Callable[[], tuple[bool, str]]
"""A readiness check: ``(True, "ok")`` when the bot can work, ``(False, reason)`` otherwise."""


def _always_ready() -> tuple[bool, str]:
    return True, "ok"


def _plain(start_response: "StartResponse", status: str, text: str) -> list[bytes]:
    body = (text + "\n").encode("utf-8")
    start_response(
        status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
    )
    return [body]


def _request_id(environ: "WSGIEnvironment") -> str:
    given = environ.get("HTTP_X_REQUEST_ID", "")
    return given if _SAFE_REQUEST_ID.match(given) else uuid.uuid4().hex


def wsgi_app(
    bolt_app: App | None = None,
    *,
    metrics: BotMetrics | None = None,
    ready: Ready | None = None,
    accepting: Callable[[], bool] | None = None,
) -> "WSGIApplication":
    """The WSGI application: ``/slack/events`` when ``bolt_app`` is given, ``/metrics`` when
    ``metrics`` is, ``/healthz`` always, and ``/readyz`` answering ``ready()`` (200 ``ok``, or
    503 with the reason; a check that raises is a 503 too). Without ``ready`` the bot counts as
    ready whenever it is alive. While ``accepting()`` is False (a shutdown draining),
    ``/slack/events`` answers 503 without reading the request, so Slack retries an event elsewhere
    and the presser sees the press fail rather than half-handled. Unknown paths are 404, a wrong
    method on a known one 405.
    """
    slack = SlackRequestHandler(bolt_app, path=SLACK_EVENTS_PATH) if bolt_app is not None else None
    exposition = make_wsgi_app(metrics.registry) if metrics is not None else None
    check = ready or _always_ready

    def readyz(start_response: "StartResponse") -> list[bytes]:
        try:
            ok, reason = check()
        except Exception as e:  # noqa: BLE001 - a failing check means not ready, never a 500
            ok, reason = False, f"readiness check failed: {e}"
        return _plain(start_response, "200 OK" if ok else "503 Service Unavailable", reason)

    def route(environ: "WSGIEnvironment", start_response: "StartResponse") -> Iterable[bytes]:
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "GET")
        if path == SLACK_EVENTS_PATH and slack is not None:
            if method != "POST":
                return _plain(start_response, "405 Method Not Allowed", "POST only")
            if accepting is not None and not accepting():
                return _plain(start_response, "503 Service Unavailable", "shutting down")
            return slack(environ, start_response)
        handlers = {"/healthz": lambda sr: _plain(sr, "200 OK", "ok"), "/readyz": readyz}
        if path in handlers or (path == "/metrics" and exposition is not None):
            if method not in ("GET", "HEAD"):
                return _plain(start_response, "405 Method Not Allowed", "GET only")
            if path == "/metrics":
                return exposition(environ, start_response)
            return handlers[path](start_response)
        return _plain(start_response, "404 Not Found", "not found")

    def application(environ: "WSGIEnvironment", start_response: "StartResponse") -> Iterable[bytes]:
        rid = _request_id(environ)
        token = logs.request_id.set(rid)
        started = time.perf_counter()
        status = ["500"]

        def start_with_id(code: str, headers: list[tuple[str, str]], exc_info=None):
            status[0] = code.split(" ", 1)[0]
            headers = [(k, v) for k, v in headers if k.lower() != REQUEST_ID_HEADER.lower()]
            return start_response(code, [*headers, (REQUEST_ID_HEADER, rid)], exc_info)

        path = environ.get("PATH_INFO", "")
        try:
            # Materialised here so the whole response is produced inside the request's context.
            return list(route(environ, start_with_id))
        except Exception:
            log.exception("%s %s failed", environ.get("REQUEST_METHOD"), path)
            status[0] = "500"
            # start_response may already have run; with exc_info the server may call it again.
            body = b"internal error\n"
            start_with_id(
                "500 Internal Server Error",
                [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))],
                sys.exc_info(),
            )
            return [body]
        finally:
            # Bolt swaps in Slack's own id for /slack/events (bot.logs.slack_request_ids); the
            # access line keeps the HTTP id, which Bolt's line records next to Slack's.
            logs.request_id.set(rid)
            code = int(status[0]) if status[0].isdigit() else 500
            probe = path in _PROBE_PATHS
            if code >= 500:
                level = logging.INFO if probe else logging.WARNING  # not ready is news, not an error
            else:
                level = logging.DEBUG if probe else logging.INFO
            log.log(
                level,
                "%s %s %s", environ.get("REQUEST_METHOD"), path, code,
                extra={
                    "method": environ.get("REQUEST_METHOD"), "path": path, "status": code,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )
            logs.request_id.reset(token)

    return application


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        log.exception("HTTP connection from %s failed", client_address[0] if client_address else "?")


class _QuietHandler(WSGIRequestHandler):
    # A client that connects and sends nothing would otherwise hold a thread for ever.
    timeout = 30

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        # The application logs every request with its id; the server's own line adds nothing.
        log.debug("http server: " + format, *args)


class HttpServer:
    """A WSGI application served on ``host:port`` by a thread per request, in a background thread.
    ``port`` is the port actually bound (pass 0 to let the OS pick one)."""

    def __init__(self, app: "WSGIApplication", host: str, port: int):
        self._server = make_server(host, port, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)
        self.host = host
        self.port: int = self._server.server_port
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, name=f"http-{self.port}", daemon=True
        )

    @property
    def url(self) -> str:
        """``http://<host>:<port>`` (127.0.0.1 when bound to every interface)."""
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> "HttpServer":
        self._thread.start()
        return self

    def shutdown(self) -> None:
        """Stop accepting requests, wait for the serving loop to end and close the socket.
        Requests being handled finish on their own threads."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def serve_http(app: "WSGIApplication", host: str = "0.0.0.0", port: int = 8080) -> HttpServer:
    """Start serving ``app`` on ``host:port`` in the background; returns the running server (call
    ``shutdown()`` to stop it). Raises OSError when the port cannot be bound."""
    server = HttpServer(app, host, port).start()
    log.info("serving HTTP on %s:%d", host, server.port)
    return server
