"""Slack calls bounded in all: every request to the Web API, to a file's upload URL and to a
``response_url`` ends at its client's ``timeout`` (seconds) counted from the start of the request,
connect, send, headers and every read of the body together, and raises
:class:`SlackDeadlinePassed` there.

slack_sdk's own ``timeout`` bounds each socket operation only, so a server that drips a byte
every few seconds holds a caller (and the worker it runs on) for as long as the answer lasts.
:func:`open_within` sends a ``urllib.request.Request`` as slack_sdk does (urllib, its proxy and
SSL context, its errors: ``URLError`` when the connection fails, ``HTTPError`` for a 4xx or 5xx)
but reads the answer through a socket whose every wait is the time left.
"""

from __future__ import annotations

import functools
import http.client
import io
import time
import urllib.request
from ssl import SSLContext
from typing import Any, Callable

from slack_bolt import BoltContext
from slack_bolt.context.respond import Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackClientError, SlackRequestError
from slack_sdk.web.file_upload_v2_result import FileUploadV2Result
from slack_sdk.webhook import WebhookClient, WebhookResponse

TIMEOUT_SECONDS = 30.0
"""How long one Slack request may take in all, seconds: slack_sdk's default ``timeout``, taken as
the whole request's deadline. A Web API call that Slack answers with a 429 or, where retried, a
5xx or a dropped connection, is tried again by the client's retry handlers, each try with a
deadline of its own; a try past its deadline is not retried."""


class SlackDeadlinePassed(SlackClientError):
    """A Slack request (connect, send, headers and body) took longer than its deadline;
    ``seconds`` is the deadline. A ``SlackClientError``: wherever a failed Slack call is handled,
    this one is too."""

    def __init__(self, message: str, seconds: float):
        super().__init__(message)
        self.seconds = seconds


class _Deadline:
    def __init__(self, seconds: float):
        self.seconds, self._at = seconds, time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left; raises SlackDeadlinePassed when none are."""
        left = self._at - time.monotonic()
        if left <= 0:
            raise self.passed()
        return left

    def passed(self) -> SlackDeadlinePassed:
        return SlackDeadlinePassed(f"Slack did not answer within {self.seconds:g} s in all", self.seconds)


class _Reader(io.RawIOBase):
    """A connected socket's bytes, each read waiting at most the time left."""

    def __init__(self, sock, deadline: _Deadline):  # noqa: ANN001 - a socket or an SSL socket
        # makefile holds a reference, so the socket stays open after urllib drops its own.
        self._sock, self._file, self._deadline = sock, sock.makefile("rb", buffering=0), deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int | None:  # noqa: ANN001 - a writable buffer
        self._sock.settimeout(self._deadline.left())
        try:
            return self._file.readinto(buffer)
        except TimeoutError:
            raise self._deadline.passed() from None

    def close(self) -> None:
        self._file.close()
        super().close()


class _Response(http.client.HTTPResponse):
    def __init__(self, sock, *args: Any, deadline: _Deadline, **kwargs: Any):  # noqa: ANN001 - http.client's
        super().__init__(sock, *args, **kwargs)
        self.fp.close()  # the reader HTTPResponse made, without a deadline
        self.fp = io.BufferedReader(_Reader(sock, deadline))


class _Bounded:
    """An ``http.client`` connection that connects and sends within the time left and reads its
    answers (a proxy's tunnel answer too) through :class:`_Reader`."""

    def __init__(self, *args: Any, deadline: _Deadline, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._deadline = deadline
        self.response_class = functools.partial(_Response, deadline=deadline)

    def connect(self) -> None:
        # The socket keeps this timeout for the TLS handshake and the request's send too.
        self.timeout = self._deadline.left()
        super().connect()


class _HTTPConnection(_Bounded, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_Bounded, http.client.HTTPSConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline):
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_HTTPConnection, deadline=self._deadline), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline, context: SSLContext | None):
        super().__init__(context=context)
        self._deadline, self._ssl = deadline, context

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_HTTPSConnection, deadline=self._deadline), req, context=self._ssl)


def open_within(
    req: urllib.request.Request, seconds: float, *, proxy: str | None = None, ssl: SSLContext | None = None,
) -> http.client.HTTPResponse:
    """``urlopen(req)`` through ``proxy`` (else the environment's) with ``ssl`` (else the default
    context), the request and the reading of its answer ending ``seconds`` after this call:
    reading the returned response past then raises SlackDeadlinePassed (so does waiting for its
    headers). Raises URLError when the connection fails, HTTPError for a 4xx or 5xx answer (its
    body read within the same deadline), and SlackRequestError for a URL that is not http(s)."""
    if not req.full_url.lower().startswith("http"):
        raise SlackRequestError(f"Invalid URL detected: {req.full_url}")
    deadline = _Deadline(seconds)
    handlers: list[urllib.request.BaseHandler] = [_HTTPHandler(deadline), _HTTPSHandler(deadline, ssl)]
    if proxy:
        handlers.append(urllib.request.ProxyHandler({"http": proxy, "https": proxy}))
    return urllib.request.build_opener(*handlers).open(req, timeout=seconds)


def _text(resp: http.client.HTTPResponse) -> str:
    return resp.read().decode(resp.headers.get_content_charset() or "utf-8")


# slack_sdk 3.48 opens every request with urllib's urlopen(req, timeout=self.timeout), a bound on
# each socket operation only, inside BaseClient._perform_urllib_http_request_internal (Web API
# calls), internal_utils._upload_file_via_v2_url (reached through WebClient._upload_file) and
# WebhookClient._perform_http_request_internal; the clients take a proxy URL and an SSL context
# but no handler or opener. So each of those three is overridden, only to open the same request
# with open_within and hand back the same shape.


class DeadlineWebClient(WebClient):
    """A WebClient whose every request (a Web API call, a file's upload) ends at ``timeout``
    seconds in all (slack_sdk's default, :data:`TIMEOUT_SECONDS`) with SlackDeadlinePassed."""

    def _perform_urllib_http_request_internal(self, url: str, req: urllib.request.Request) -> dict[str, Any]:
        with open_within(req, self.timeout, proxy=self.proxy, ssl=self.ssl) as resp:
            if resp.headers.get_content_type() == "application/gzip":  # admin.analytics.getFile: bytes
                return {"status": resp.status, "headers": resp.headers, "body": resp.read()}
            return {"status": resp.status, "headers": resp.headers, "body": _text(resp)}

    def _upload_file(
        self, *, url: str, data: bytes, logger: Any, timeout: int, proxy: str | None, ssl: SSLContext | None,
    ) -> FileUploadV2Result:
        req = urllib.request.Request(method="POST", url=url, data=data, headers={})
        with open_within(req, timeout, proxy=proxy, ssl=ssl) as resp:
            return FileUploadV2Result(status=resp.status, body=_text(resp))


class DeadlineWebhookClient(WebhookClient):
    """A WebhookClient (a ``response_url`` or an incoming webhook) whose every post ends at
    ``timeout`` seconds in all (slack_sdk's default, :data:`TIMEOUT_SECONDS`) with
    SlackDeadlinePassed."""

    def _perform_http_request_internal(self, url: str, req: urllib.request.Request) -> WebhookResponse:
        with open_within(req, self.timeout, proxy=self.proxy, ssl=self.ssl) as resp:
            return WebhookResponse(url=url, status_code=resp.status, body=_text(resp), headers=resp.headers)


class DeadlineRespond(Respond):
    """Bolt's ``respond``, posting to the request's ``response_url`` through
    :class:`DeadlineWebhookClient` within ``timeout`` seconds in all. Takes the fields Bolt's
    takes (``text``, a str, ``blocks``, ``response_type``, ``replace_original``, ...); raises
    ValueError without a ``response_url`` and SlackDeadlinePassed past the deadline."""

    def __init__(self, *, response_url: str | None, timeout: float, proxy: str | None = None,
                 ssl: SSLContext | None = None):
        super().__init__(response_url=response_url, proxy=proxy, ssl=ssl)
        self.timeout = timeout

    def __call__(self, text: str = "", blocks: Any = None, **fields: Any) -> WebhookResponse:  # type: ignore[override]
        if self.response_url is None:
            raise ValueError("respond is unsupported here as there is no response_url")
        client = DeadlineWebhookClient(self.response_url, timeout=self.timeout, proxy=self.proxy, ssl=self.ssl)
        return client.send_dict({"text": text, "blocks": blocks, **fields})  # None values are left out


def deadline_respond(context: BoltContext, next: Callable[[], Any]) -> Any:  # noqa: A002 - Bolt passes it by this name
    """A Bolt global middleware (``app.use(deadline_respond)``): the listeners' ``respond`` is a
    :class:`DeadlineRespond` bounded by the app client's ``timeout`` (Bolt's own posts with a
    WebhookClient bounded per read only)."""
    client = context.client
    context["respond"] = DeadlineRespond(
        response_url=context.response_url, timeout=getattr(client, "timeout", TIMEOUT_SECONDS),
        proxy=getattr(client, "proxy", None), ssl=getattr(client, "ssl", None),
    )
    return next()
