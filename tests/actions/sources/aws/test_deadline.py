"""Every AWS call ends at a total deadline (issue 22, item 1): real boto3 clients, made by the
fetcher from a session (endpoints from boto3's standard environment variables, as
test_prices.test_refresh_job_default_fetcher_uses_the_standard_aws_configuration does) or handed
to it ready-made, against a server on 127.0.0.1 that drips its answer a byte at a time, each byte
well inside botocore's per-read timeout (tests/support/hostile_http.py). The answers are the
APIs' shapes: ``pricing:GetProducts`` in AWS JSON 1.1, ``ec2:DescribeSpotPriceHistory`` in EC2's
query protocol XML (2016-11-15)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import boto3
import pytest
from botocore.config import Config

from actions.sources.aws.deadline import AwsDeadlinePassed
from actions.sources.aws.price_list import PriceFetchError
from actions.sources.aws.prices import AwsClients, AwsPriceFetcher
from tests.support.hostile_http import dripping, flood, upstream

NOW = datetime(2026, 11, 23, 6, 0, tzinfo=timezone.utc)
REGION = "us-east-1"
CREDENTIALS = dict(aws_access_key_id="testing", aws_secret_access_key="testing")
NO_BOTO_RETRIES = Config(retries={"total_max_attempts": 1})  # botocore retries a read timeout too
PRODUCTS = json.dumps({"FormatVersion": "aws_v1", "PriceList": []}).encode()
SPOT = (b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        b"<requestId>59dbff89-35bd-4eac-99ed-be587EXAMPLE</requestId><spotPriceHistorySet/><nextToken/>"
        b"</DescribeSpotPriceHistoryResponse>")
# (the fetcher's method, the environment variable naming its endpoint, its answer, the call named)
CALLS = {
    "on_demand": ("AWS_ENDPOINT_URL_PRICING", PRODUCTS, "pricing:GetProducts for p5.48xlarge in us-east-1"),
    "spot": ("AWS_ENDPOINT_URL_EC2", SPOT, "ec2:DescribeSpotPriceHistory for p5.48xlarge in us-east-1"),
}


def fetcher(monkeypatch, url: str, **options) -> AwsPriceFetcher:
    for name in ("AWS_ENDPOINT_URL_PRICING", "AWS_ENDPOINT_URL_EC2"):
        monkeypatch.setenv(name, url)
    session = boto3.session.Session(region_name=REGION, **CREDENTIALS)
    return AwsPriceFetcher(session, region=REGION, retry_wait_seconds=0, **options)


@pytest.mark.parametrize("method", CALLS)
def test_an_answer_dripped_a_byte_at_a_time_ends_at_the_deadline_and_is_retried_as_a_timeout(monkeypatch, method):
    _, body, what = CALLS[method]
    with upstream(dripping(body)) as (url, sent):
        fetch = getattr(fetcher(monkeypatch, url, attempts=2, deadline_seconds=1), method)
        started = time.monotonic()
        with pytest.raises(PriceFetchError) as info:
            fetch(["p5.48xlarge"], NOW)
        took = time.monotonic() - started
    assert str(info.value) == f'{what} failed after 2 attempts: AWS did not answer at "{url}/" within 1 s in all'
    assert isinstance(info.value.__cause__, AwsDeadlinePassed)
    # Two tries of 1 s each; the whole answer would take minutes.
    assert took < 3.5 and sent["requests"] == 2 and sent["bytes"] < 2 * len(body)


@pytest.mark.parametrize("method", CALLS)
def test_the_same_answer_sent_at_once_is_read(monkeypatch, method):
    _, body, _ = CALLS[method]
    with upstream(dripping(body, every=0)) as (url, sent):
        assert getattr(fetcher(monkeypatch, url, deadline_seconds=1), method)(["p5.48xlarge"], NOW) == []
    assert sent == {"requests": 1, "bytes": len(body)}


def test_ready_made_clients_are_bounded_too():
    with upstream(dripping(PRODUCTS)) as (url, sent):
        clients = AwsClients(
            pricing=boto3.client("pricing", region_name=REGION, endpoint_url=url, config=NO_BOTO_RETRIES, **CREDENTIALS),
            ec2=boto3.client("ec2", region_name=REGION, endpoint_url=url, config=NO_BOTO_RETRIES, **CREDENTIALS),
        )
        started = time.monotonic()
        with pytest.raises(PriceFetchError, match="within 1 s in all"):
            AwsPriceFetcher(clients, region=REGION, attempts=1, deadline_seconds=1).on_demand(["p5.48xlarge"], NOW)
        assert time.monotonic() - started < 2.5 and sent["requests"] == 1


def test_an_answer_over_the_limit_is_refused_at_once_and_not_retried(monkeypatch):
    with upstream(flood(declared=True, mib=65)) as (url, sent):
        with pytest.raises(PriceFetchError) as info:
            fetcher(monkeypatch, url, attempts=3).on_demand(["p5.48xlarge"], NOW)
    assert str(info.value).endswith(f'The answer from "{url}/" passed the limit of 67,108,864 bytes')
    assert sent["requests"] == 1
