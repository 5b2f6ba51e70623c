"""AWS calls bounded in all: every request a botocore client sends ends at a deadline (seconds,
counted from the send) and its answer at a size limit, as the other upstreams' are
(:mod:`actions.sources.bounded`).

botocore bounds each socket read (``read_timeout``) but not the whole answer, so a server that
drips a byte every few seconds holds a call as long as the answer lasts. :func:`bound_calls`
answers a client's ``before-send`` event, botocore's public way to send a request in place of its
own sender (the first handler returning an ``AWSResponse`` is taken): the signed request goes
through botocore's own ``URLLib3Session`` (its TLS verification, proxies, connection pool and
errors), asking for the body unread, which :func:`~actions.sources.bounded.read_bounded` then reads
against the deadline and the limit. The deadline counts from the send, so connecting and waiting
for the headers count too, but it is checked as the body is read: headers that drip are bounded by
the per-read timeout alone (``read_timeout``, at most the deadline), as botocore's own are.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import HTTPClientError, ReadTimeoutError
from botocore.httpsession import URLLib3Session
from botocore.utils import get_environ_proxies

from actions.sources.bounded import DeadlinePassed, ReadResponse, ResponseTooLarge, read_bounded

MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The largest answer read, bytes (decoded): a page of ``GetProducts`` or of
``DescribeSpotPriceHistory`` is a few MiB at most."""

_HANDLER_ID = "gpu-cost-bot-deadline"


class AwsDeadlinePassed(ReadTimeoutError):
    """An AWS request (send, headers and every read of the answer) took longer than its deadline
    (``seconds``). A botocore ``ReadTimeoutError``: retried, and reported, like any read timeout."""

    fmt = 'AWS did not answer at "{endpoint_url}" within {seconds:g} s in all'


class AwsAnswerTooLarge(HTTPClientError):
    """An AWS answer passed the size limit (``limit``, bytes). Not retried."""

    fmt = 'The answer from "{endpoint_url}" passed the limit of {limit:,} bytes'


def bound_calls(client: Any, seconds: float, *, max_bytes: int = MAX_ANSWER_BYTES) -> None:
    """Make every request of the botocore ``client`` end ``seconds`` after it is sent, with
    AwsDeadlinePassed, and refuse an answer over ``max_bytes`` (decoded) with AwsAnswerTooLarge;
    both are raised out of the client's call (a ``BotoCoreError``). A client bound already is
    left as it is. The requests go out as the client's own would (see :func:`_sender`). Raises
    ValueError for a deadline or limit not > 0."""
    if seconds <= 0 or max_bytes <= 0:
        raise ValueError(f"seconds and max_bytes must be > 0, got {seconds} and {max_bytes}")
    http = _sender(client, seconds)

    def send(request: AWSPreparedRequest, **kwargs: Any) -> AWSResponse:
        deadline = time.monotonic() + seconds
        unread = AWSPreparedRequest(request.method, request.url, request.headers, request.body, stream_output=True)
        response = http.send(unread)
        try:
            body = read_bounded(response.raw, max_bytes, deadline)
        except DeadlinePassed:
            raise AwsDeadlinePassed(endpoint_url=request.url, seconds=seconds) from None
        except ResponseTooLarge:
            raise AwsAnswerTooLarge(endpoint_url=request.url, limit=max_bytes) from None
        finally:
            response.raw.release_conn()
        return AWSResponse(request.url, response.status_code, response.headers, ReadResponse(response.raw, body))

    client.meta.events.register("before-send", send, unique_id=_HANDLER_ID)


def _sender(client: Any, seconds: float) -> URLLib3Session:
    """An HTTP session made from ``client``'s config the way botocore makes the client's own
    (botocore 1.43, ``EndpointCreator.create_endpoint`` and ``ClientArgsCreator``: proxies from
    the config else the environment, ``AWS_CA_BUNDLE`` or ``REQUESTS_CA_BUNDLE`` else botocore's
    CA bundle, the pool size, the client certificate, TCP_NODELAY and keep-alive). Each read waits
    at most ``read_timeout`` or the deadline, whichever is shorter."""
    config = client.meta.config
    options = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    if config.tcp_keepalive:
        options.append((socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1))
    return URLLib3Session(
        verify=os.environ.get("AWS_CA_BUNDLE") or os.environ.get("REQUESTS_CA_BUNDLE") or True,
        proxies=config.proxies or get_environ_proxies(client.meta.endpoint_url),
        timeout=(config.connect_timeout, min(config.read_timeout, seconds)),
        max_pool_connections=config.max_pool_connections,
        socket_options=options,
        client_cert=config.client_cert,
        proxies_config=config.proxies_config,
    )
