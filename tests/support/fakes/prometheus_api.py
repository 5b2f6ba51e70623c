"""A slow Prometheus HTTP API on 127.0.0.1, for tests: every query succeeds with no series, after
``delay_seconds``, as a Prometheus scanning weeks of a large fleet's history would take.

``/api/v1/query`` answers an empty vector, ``/api/v1/query_range`` an empty matrix, each as
Prometheus's JSON envelope; ``queries`` records each PromQL expression received and
``max_in_flight`` the most requests it held at once (several clients asking side by side). The real
``prometheus_api_client`` is pointed at :attr:`FakePrometheus.url`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


class FakePrometheus:
    """Serves until :meth:`stop`; ``delay_seconds`` may be changed while it runs."""

    def __init__(self, delay_seconds: float = 0.0):
        self.delay_seconds = delay_seconds
        self.queries: list[str] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def _answer(self, query: str, body: bytes) -> None:
                url = urlsplit(self.path)
                params = {**parse_qs(url.query), **parse_qs(body.decode("utf-8", "replace"))}
                with fake._lock:
                    fake.queries.append((params.get("query") or [""])[0])
                    fake._in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake._in_flight)
                time.sleep(fake.delay_seconds)
                with fake._lock:
                    fake._in_flight -= 1
                kind = "matrix" if url.path.endswith("/query_range") else "vector"
                if not url.path.startswith("/api/v1/query"):
                    self.send_error(404)
                    return
                data = json.dumps({"status": "success", "data": {"resultType": kind, "result": []}}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    # The client gave up after its timeout, as it should; a traceback printed from
                    # this thread would land in whichever test is capturing stderr by then.
                    pass

            def do_GET(self) -> None:
                self._answer(self.path, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._answer(self.path, self.rfile.read(length) if length else b"")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "FakePrometheus":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
