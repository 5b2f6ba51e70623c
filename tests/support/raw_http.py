"""HTTP requests written byte by byte on a socket, for what a client library would not send."""

from __future__ import annotations

import socket
import time


def raw_request(port: int, head: bytes, body_chunks, timeout: float = 30) -> tuple[int | None, float]:
    """Send ``head`` then the chunks, stopping when the server hangs up; (status, seconds)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(head)
            for chunk in body_chunks:
                sock.sendall(chunk)
        except OSError:
            pass  # refused before the body ended: what we want
        try:
            reply = sock.recv(200)
        except OSError:
            reply = b""
    status = int(reply.split()[1]) if reply.startswith(b"HTTP/") else None
    return status, time.monotonic() - started


def big_post(port: int, size: int, chunked: bool) -> tuple[int | None, float]:
    """An unsigned POST of ``size`` bytes to /slack/events, framed by Content-Length or chunked;
    (status, seconds), status None when the server hung up without one."""
    piece = b"x" * (64 * 1024)
    framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: %d" % size
    head = b"POST /slack/events HTTP/1.1\r\nHost: bot\r\nContent-Type: application/x-www-form-urlencoded\r\n" + framing + b"\r\n\r\n"

    def chunks():
        for _ in range(size // len(piece)):
            yield (b"%x\r\n" % len(piece) + piece + b"\r\n") if chunked else piece
        if chunked:
            yield b"0\r\n\r\n"

    return raw_request(port, head, chunks())
