"""Upstreams that misbehave as a hostile or broken one would, on 127.0.0.1: an answer dripped a
byte at a time, one far over any size limit (declared, undeclared and chunked). The answers are
shaped as Prometheus's HTTP API answers (prometheus/prometheus web/api/v1: ``{"status":
"success", "data": {"resultType": "vector", "result": [...]}}``)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.clock import T0

MiB = 1024 * 1024
ANSWER = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {"__name__": "up", "job": "dcgm-exporter"}, "value": [T0.timestamp(), "1"]}]}}).encode()


@contextmanager
def upstream(behave) -> Iterator[tuple[str, dict]]:
    """A server answering every GET, and every POST once its body is read (Slack's Web API, AWS's
    query and JSON protocols), with ``behave(handler, sent)``; ``sent["bytes"]`` counts the body
    bytes it managed to write before the client went away, ``sent["requests"]`` the requests."""
    sent = {"bytes": 0, "requests": 0}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802 - http.server's name
            sent["requests"] += 1
            try:
                behave(self, sent)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_POST(self):  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.do_GET()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", sent
    finally:
        server.shutdown()
        server.server_close()


def write(handler, sent, data: bytes) -> None:
    handler.wfile.write(data)
    handler.wfile.flush()
    sent["bytes"] += len(data)


def answer_json(handler, sent, body: bytes) -> None:
    """Answer 200 with ``body`` (JSON, its length declared) all at once."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    write(handler, sent, body)


def dripping(body: bytes, every: float = 0.2):
    """An upstream answering ``body`` (JSON, its length declared) one byte every ``every`` seconds."""
    def behave(handler, sent):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        for b in body:
            write(handler, sent, bytes([b]))
            time.sleep(every)
    return behave


drip = dripping(ANSWER)


def flood(declared: bool, chunked: bool = False, status: int = 200, mib: int = 64):
    def behave(handler, sent):
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        if declared:
            handler.send_header("Content-Length", str(mib * MiB))
        elif chunked:
            handler.send_header("Transfer-Encoding", "chunked")
        else:
            handler.send_header("Connection", "close")
        handler.end_headers()
        block = b'{"status":"success","data":{"resultType":"vector","result":[' + b" " * (MiB - 60)
        for _ in range(mib):
            data = block if not chunked else b"%x\r\n%s\r\n" % (len(block), block)
            write(handler, sent, data)
    return behave


def dripping_head(body: bytes, every: float = 0.2):
    """An upstream sending its status line and headers one byte every ``every`` seconds, then
    ``body`` (JSON) at once: a deadline that starts counting at the body misses it."""
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()

    def behave(handler, sent):
        for b in head:
            write(handler, sent, bytes([b]))
            time.sleep(every)
        write(handler, sent, body)
    return behave
