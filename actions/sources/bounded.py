"""Upstream answers read against a size limit and a total deadline, for the ``requests`` sessions
the bot queries through (Prometheus): :func:`bounded_reads` installs a response hook that reads
the body itself, a read at a time (``read1``: whatever has arrived, never waiting to fill a
buffer), and gives up as soon as the body passes ``max_bytes`` (decoded: a compressed answer is
judged by what it would take in memory) or the request has taken ``seconds`` in all. A per-read
timeout alone lets a server that drips one byte every few seconds hold a caller for hours.

The limit is checked on ``Content-Length`` before any of the body is read, then on every read.
An error answer is read against the same limit, and only its first :data:`ERROR_BODY_BYTES` are
kept for a message.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import requests

READ_BYTES = 64 * 1024
ERROR_BODY_BYTES = 2048


class ResponseTooLarge(requests.RequestException):
    """The answer was larger than the limit; ``limit`` in bytes."""

    def __init__(self, message: str, limit: int):
        super().__init__(message)
        self.limit = limit


class DeadlinePassed(requests.ReadTimeout):
    """The whole request (connect, headers and every read of the body) took longer than its
    deadline; ``seconds`` is the deadline."""

    def __init__(self, message: str, seconds: float):
        super().__init__(message)
        self.seconds = seconds


def bounded_reads(
    session: requests.Session, max_bytes: int, seconds: float, *, clock: Callable[[], float] = time.monotonic,
) -> None:
    """Make every response of ``session`` read its body at most ``max_bytes`` long (bytes) within
    ``seconds`` of the request's start (its time to the headers, ``Response.elapsed``, counts).
    A response past either raises :class:`ResponseTooLarge` or :class:`DeadlinePassed` (a
    ``requests.ReadTimeout``) out of the request, its connection closed. A non-2xx answer keeps
    only its first :data:`ERROR_BODY_BYTES`. Raises ValueError for a limit or deadline not > 0."""
    if max_bytes <= 0 or seconds <= 0:
        raise ValueError(f"max_bytes and seconds must be > 0, got {max_bytes} and {seconds}")

    def hook(response: requests.Response, *args, **kwargs) -> requests.Response:  # noqa: ANN002, ANN003 - requests' hook
        deadline = clock() - response.elapsed.total_seconds() + seconds
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            response.close()
            raise ResponseTooLarge(f"the answer is {int(declared):,} bytes, over the limit of {max_bytes:,}", max_bytes)
        body = bytearray()
        while chunk := response.raw.read1(READ_BYTES, decode_content=True):
            body += chunk
            if len(body) > max_bytes:
                response.close()
                raise ResponseTooLarge(f"the answer passed the limit of {max_bytes:,} bytes", max_bytes)
            if clock() > deadline:
                response.close()
                raise DeadlinePassed(f"the answer took longer than {seconds:g} s in all ({len(body):,} bytes read)",
                                     seconds)
        if not response.ok:
            del body[ERROR_BODY_BYTES:]
        response._content = bytes(body)  # what Response.content returns from now on
        response._content_consumed = True
        return response

    session.hooks["response"].append(hook)
