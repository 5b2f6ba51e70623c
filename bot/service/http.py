"""The bot's HTTP front end: one WSGI application and the waitress server that runs it.

Routes::

    POST <mounted path>  a webhook receiver handed in by the chat layer (in Slack's HTTP mode,
                         ``/slack/events``: Bolt's WSGI adapter, which checks Slack's signature)
    GET  /healthz        200 while the process serves requests (liveness)
    GET  /readyz         200 when the bot can do its work, else 503 with the reason (readiness)
    GET  /metrics        the Prometheus exposition of :class:`~bot.service.metrics.BotMetrics`

Each route is there only when its part is given: Socket Mode mounts nothing.
Every request gets an id, the caller's ``X-Request-Id`` when it sent a sensible one, else a new
one; it is sent back in the ``X-Request-Id`` response header and is in every log line written
while the request is handled (:data:`bot.service.logs.request_id`), except that inside a mounted
receiver the chat's own id for the request may take over (Slack's, logged beside this one).
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

from prometheus_client import make_wsgi_app
from waitress import wasyncore
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import create_server
from waitress.task import ErrorTask, WSGITask

from bot.service import logs
from bot.service.metrics import BotMetrics

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger(__name__)

REQUEST_ID_HEADER = "X-Request-Id"
# A caller's id is copied into logs and a response header, so only ids that cannot forge a log
# line or a header are taken as they are.
_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:/+=-]{1,128}$")
# Kubelet and Prometheus call these every few seconds; logging each at INFO buries everything else.
_PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
# How long a shutdown lets answers already produced reach their clients.
_FLUSH_SECONDS = 1.0

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
    mounted: Mapping[str, "WSGIApplication"] | None = None,
    *,
    metrics: BotMetrics | None = None,
    ready: Ready | None = None,
    accepting: Callable[[], bool] | None = None,
) -> "WSGIApplication":
    """The WSGI application: each of ``mounted`` (path -> WSGI app, POST only), ``/metrics``
    when ``metrics`` is given, ``/healthz`` always, and ``/readyz`` answering ``ready()`` (200
    ``ok``, or 503 with the reason; a check that raises is a 503 too). Without ``ready`` the bot
    counts as ready whenever it is alive. While ``accepting()`` is False (a shutdown draining), a
    mounted path answers 503 without reading the request, so Slack retries an event elsewhere and
    the presser sees the press fail rather than half-handled. Unknown paths are 404, a wrong
    method on a known one 405.
    """
    receivers = dict(mounted or {})
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
        receiver = receivers.get(path)
        if receiver is not None:
            if method != "POST":
                return _plain(start_response, "405 Method Not Allowed", "POST only")
            if accepting is not None and not accepting():
                return _plain(start_response, "503 Service Unavailable", "shutting down")
            return receiver(environ, start_response)
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
            # A receiver may swap in its chat's own id (Slack's, in bot.chat.slack.request_ids);
            # the access line keeps the HTTP id, which that receiver's line records next to its own.
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


RECEIVED_AT = "gpu_cost_bot.received_at"
"""WSGI environ key: ``time.monotonic()`` when the request's first bytes arrived, so a receiver can
tell a request that waited too long to be answered in time (Slack gives up after 3 s)."""


@dataclass(frozen=True)
class HttpOptions:
    """How the server takes requests: ``threads`` run the application, ``backlog`` connections
    may wait to be accepted, a body over ``max_body_bytes`` is refused with 413 before it is
    read, an idle connection is closed after ``idle_timeout_seconds``, and one whose request
    (headers and body) has not all arrived ``read_deadline_seconds`` after its first byte is
    closed too: a client that sends a header every few seconds is never idle, and would hold
    one of the ``connection_limit`` slots for as long as it likes. While every slot is taken, a
    connection idle or still sending its request for a second gives its slot up."""

    threads: int = 8
    backlog: int = 1024
    max_body_bytes: int = 1024 * 1024
    idle_timeout_seconds: float = 30.0
    connection_limit: int = 250
    read_deadline_seconds: float = 10.0


class _Parser(HTTPRequestParser):
    def __init__(self, adj):  # noqa: ANN001 - waitress's signature
        super().__init__(adj)
        self.received_at = time.monotonic()


class _Task(WSGITask):
    def get_environment(self):  # noqa: ANN201 - waitress's signature
        environ = super().get_environment()
        environ[RECEIVED_AT] = self.request.received_at
        return environ


class _RefusedTask(ErrorTask):
    """Waitress's answer to a request it refuses before the application sees it (a body over the
    limit, an invalid Content-Length, broken framing), logged as one line."""

    def execute(self) -> None:
        error = self.request.error
        log.warning(
            "refused a malformed request from %s: %s %s (%s)",
            self.channel.addr[0] if self.channel.addr else "?", error.code, error.reason, error.body,
            extra={"status": error.code},
        )
        super().execute()


class _Channel(HTTPChannel):
    parser_class = _Parser
    task_class = _Task
    error_task_class = _RefusedTask


# When every connection slot is taken, a connection idle or still sending its request this long
# gives its slot up: a request from Slack (or an Ingress in front of the bot) arrives whole in
# milliseconds.
_SLOW_UNDER_PRESSURE_SECONDS = 1.0


def _maintenance(server, read_deadline: float) -> Callable[[float], None]:  # noqa: ANN001 - a waitress server
    """Waitress's own sweep of idle connections, and the closing of those whose request is still
    arriving past ``read_deadline`` seconds; when the connections reach the limit, also of those
    idle or still sending their request for :data:`_SLOW_UNDER_PRESSURE_SECONDS`, so slow clients
    cannot keep the slots from requests that arrive whole (run on the I/O loop every
    ``cleanup_interval``)."""
    idle = server.maintenance

    def maintenance(now: float) -> None:
        idle(now)
        full = len(server._map) >= server.adj.connection_limit
        mono = time.monotonic()
        for channel in list(server.active_channels.values()):
            request = channel.request
            if channel.requests or channel.will_close:
                continue  # a request being handled, or already on its way out
            arriving = request is not None and not request.completed
            started = request.received_at if arriving else mono - (now - channel.last_activity)
            if arriving and started < mono - read_deadline:
                why = f"its request took over {read_deadline:g} s to arrive"
            elif full and started < mono - _SLOW_UNDER_PRESSURE_SECONDS:
                why = "every connection slot was taken and it was slow or idle"
            else:
                continue
            log.warning("closed a connection from %s: %s", channel.addr[0] if channel.addr else "?", why)
            channel.will_close = True
    return maintenance


class HttpServer:
    """A WSGI application served on ``host:port`` by waitress (its threads run the application;
    reading requests and writing answers happens on one I/O loop, so a slow or stalled client
    holds no thread), in a background thread. ``port`` is the port actually bound (pass 0 to let
    the OS pick one). Raises OSError when the port cannot be bound."""

    def __init__(self, app: "WSGIApplication", host: str, port: int, options: HttpOptions | None = None):
        o = options or HttpOptions()
        self._server = create_server(
            app, host=host, port=port, threads=o.threads, backlog=o.backlog,
            max_request_body_size=o.max_body_bytes, channel_timeout=o.idle_timeout_seconds,
            connection_limit=o.connection_limit, clear_untrusted_proxy_headers=False, ident="gpu-cost-bot",
            # The sweep of slow and idle connections runs every second.
            cleanup_interval=1,
        )
        self._server.channel_class = _Channel
        self._server.maintenance = _maintenance(self._server, o.read_deadline_seconds)
        self.host = host
        self.port: int = int(self._server.effective_port)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"http-{self.port}", daemon=True)

    @property
    def url(self) -> str:
        """``http://<host>:<port>`` (127.0.0.1 when bound to every interface)."""
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> "HttpServer":
        self._thread.start()
        return self

    def _loop(self) -> None:
        server = self._server
        while not self._stopping.is_set():
            wasyncore.loop(timeout=0.2, map=server._map, use_poll=True, count=1)
        # Everything below runs on the loop's own thread: asyncore's map is not thread-safe.
        server.close()
        deadline = time.monotonic() + _FLUSH_SECONDS
        while time.monotonic() < deadline and any(
            getattr(c, "requests", None) or getattr(c, "total_outbufs_len", 0) for c in list(server._map.values())
        ):
            wasyncore.loop(timeout=0.05, map=server._map, use_poll=True, count=1)
        for channel in list(server._map.values()):
            channel.handle_close()

    def shutdown(self) -> None:
        """Stop accepting requests, give answers being written a moment to go out, close every
        connection and the socket, and stop the application threads (a request still being
        handled finishes on its own, daemon, thread)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
        else:
            self._server.close()
        self._server.task_dispatcher.shutdown(cancel_pending=True, timeout=1)


def serve_http(
    app: "WSGIApplication", host: str = "0.0.0.0", port: int = 8080, options: HttpOptions | None = None
) -> HttpServer:
    """Start serving ``app`` on ``host:port`` in the background with ``options``; returns the
    running server (call ``shutdown()`` to stop it). Raises OSError when the port cannot be
    bound."""
    server = HttpServer(app, host, port, options).start()
    log.info("serving HTTP on %s:%d", host, server.port)
    return server
