"""Upstream answers read against a size limit and a total deadline. :func:`read_bounded` reads a
body a read at a time (``read1``: whatever has arrived, never waiting to fill a buffer) and gives
up as soon as it passes ``max_bytes`` (decoded: a compressed answer is judged by what it would
take in memory) or the request has taken its deadline in all; a per-read timeout alone lets a
server that drips one byte every few seconds hold a caller for hours. The limit is checked on
``Content-Length`` before any of the body is read, then on every read.

Two ways in: :func:`bounded_reads`, a response hook for the ``requests`` session Prometheus is
queried through (an error answer keeps only its first :data:`ERROR_BODY_BYTES` for a message), and
:class:`BoundedPoolManager`, a urllib3 pool manager for the Kubernetes client and the JupyterHub
client, whose every answer but a watch's is read whole this way.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable

import requests
import urllib3

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
        try:
            body = read_bounded(response.raw, max_bytes, deadline, clock)
        except DeadlinePassed:
            raise DeadlinePassed(f"the answer took longer than {seconds:g} s in all", seconds) from None
        if not response.ok:
            body = body[:ERROR_BODY_BYTES]
        response._content = body  # what Response.content returns from now on
        response._content_consumed = True
        return response

    session.hooks["response"].append(hook)


class BoundedPoolManager:
    """A urllib3 pool manager whose answers are read whole as they arrive (:func:`read_bounded`),
    against ``max_bytes`` (decoded) and the request's own ``timeout`` taken as a deadline for the
    whole request (:func:`_seconds`), each handed on as a :class:`ReadResponse`. A watch (a URL
    asking ``watch=``) streams for as long as it lasts and is left to its reader. Everything else
    is the wrapped manager's."""

    def __init__(self, inner, max_bytes: int, *, clock: Callable[[], float] = time.monotonic):  # noqa: ANN001 - a PoolManager
        self._inner, self._max, self._clock = inner, max_bytes, clock

    def __getattr__(self, name: str):  # noqa: ANN204 - the wrapped manager's attributes
        return getattr(self._inner, name)

    def request(self, method: str, url: str, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - urllib3's signature
        started = self._clock()
        if "watch=" in url.partition("?")[2]:
            return self._inner.request(method, url, *args, **kwargs)
        response = self._inner.request(method, url, *args, **{**kwargs, "preload_content": False})
        seconds = _seconds(kwargs.get("timeout"))
        deadline = started + seconds if seconds is not None else None
        try:
            body = read_bounded(response, self._max, deadline, self._clock)
        finally:
            response.release_conn()
        return ReadResponse(response, body)


class ReadResponse:
    """A urllib3 response whose body was read whole (:func:`read_bounded`): ``data``, ``read``,
    ``read1`` and ``stream`` answer from it, everything else (``status``, ``headers``) is the
    response's own."""

    def __init__(self, response, body: bytes):  # noqa: ANN001 - a urllib3 response
        self._response, self._body = response, io.BytesIO(body)
        self.data = body

    def __getattr__(self, name: str):  # noqa: ANN204 - the response's own attributes
        return getattr(self._response, name)

    def read(self, amt: int | None = None, *args, **kwargs) -> bytes:  # noqa: ANN002, ANN003 - urllib3's signature
        return self._body.read(amt)

    def read1(self, amt: int | None = None, *args, **kwargs) -> bytes:  # noqa: ANN002, ANN003 - urllib3's signature
        return self._body.read1(amt if amt is not None else -1)

    def stream(self, amt: int | None = 2**16, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - urllib3's signature
        while chunk := self._body.read(amt):
            yield chunk

    def release_conn(self) -> None:
        """The connection went back to its pool when the body had been read."""

    def close(self) -> None:
        self._body.close()


def _seconds(timeout: object) -> float | None:
    """The whole of a request's ``timeout``: a number, or a ``urllib3.Timeout``'s total, else its
    read timeout (the Kubernetes client passes ``Timeout(total=...)`` or ``(connect, read)``)."""
    if isinstance(timeout, urllib3.Timeout):
        # Its read_timeout property needs a started timer: the values as given instead.
        timeout = timeout.total if timeout.total is not None else timeout._read
    return float(timeout) if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) else None


def read_bounded(  # noqa: ANN001 - response: a urllib3 response
    response, max_bytes: int, deadline: float | None, clock: Callable[[], float] = time.monotonic,
) -> bytes:
    """The body of ``response`` (a urllib3 response not yet read), read as it arrives. Raises
    ResponseTooLarge past ``max_bytes`` (decoded; also when ``Content-Length`` says so before any
    is read) and DeadlinePassed past ``deadline`` (``clock`` seconds; None: none), the connection
    closed."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        response.close()
        raise ResponseTooLarge(f"the answer is {int(declared):,} bytes, over the limit of {max_bytes:,}", max_bytes)
    body = bytearray()
    while chunk := response.read1(READ_BYTES, decode_content=True):
        body += chunk
        if len(body) > max_bytes:
            response.close()
            raise ResponseTooLarge(f"the answer passed the limit of {max_bytes:,} bytes", max_bytes)
        if deadline is not None and clock() > deadline:
            response.close()
            raise DeadlinePassed(f"the answer took longer than its timeout in all ({len(body):,} bytes read)", 0.0)
    return bytes(body)
