"""Live AWS prices: on-demand from the AWS Price List Query API, spot from EC2's spot price history.

Two calls, both read-only, both needing AWS credentials from the usual boto3 chain (IRSA or a pod
identity on EKS) allowed ``pricing:GetProducts`` and ``ec2:DescribeSpotPriceHistory``:

- On-demand: ``pricing:GetProducts`` (endpoint ``us-east-1``; the API is served from a few regions
  only, and every one of them answers for all regions) for ``ServiceCode=AmazonEC2`` with one
  ``TERM_MATCH`` per product attribute of the plain Linux row: ``instanceType``, ``regionCode``,
  ``operatingSystem=Linux``, ``tenancy=Shared``, ``preInstalledSw=NA``, ``capacitystatus=Used``,
  ``licenseModel=No License required`` and ``marketoption=OnDemand``. The price is the
  ``pricePerUnit.USD`` of the hourly ``OnDemand`` dimension of the matching product. The same
  products carry their ``Reserved`` terms: the hourly rate of the 1-year standard No Upfront
  Reserved Instance (:data:`~actions.sources.aws.price_list.RESERVED_TERM`) is read from them too, with no further call, as
  the offer ``reserved-instance``: advice of what a commitment would cost, never the price of a
  node (reserved capacity is billed at the on-demand rate, see :mod:`actions.pricing.book`).
- Spot: ``ec2:DescribeSpotPriceHistory`` in the cluster's region for ``Linux/UNIX`` since
  ``now - 1 h``. AWS includes the record in effect at the start time, so every availability zone
  that offers the type appears; the price is the median over zones of each zone's latest record.

Each price comes back as an :class:`~actions.pricing.live.LivePrice` (USD per instance-hour, with its
offer, source and the time it was fetched). :func:`default_fetcher` reads them with boto3's default
credential chain; :func:`refresh_live_prices` fetches and caches them in the store; :func:`live_prices_from_store` reads the cache back into the mapping ``PriceBook(...,
live=...)`` takes. Every request ends at :data:`DEADLINE_SECONDS` in all, counted from its send
(:mod:`actions.sources.aws.deadline`). Throttling, 5xx answers, dropped connections and
timeouts (a request past its deadline is one) are retried with tenacity; everything else fails at
once as a :class:`PriceFetchError` naming the call.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from actions.pricing.live import LiveKey, LiveOffer, LivePrice
from actions.sources.aws.deadline import bound_calls
from actions.sources.aws.price_list import (
    ON_DEMAND_FILTERS,
    PriceFetchError,
    on_demand_usd_per_hour,
    reserved_usd_per_hour,
    spot_median,
)

if TYPE_CHECKING:
    from actions.store.database import Store


log = logging.getLogger(__name__)

PRICING_REGION = "us-east-1"
SPOT_PRODUCT = "Linux/UNIX"
SPOT_LOOKBACK = timedelta(hours=1)
DEADLINE_SECONDS = 60.0
"""How long one AWS request may take in all, seconds: botocore's ``read_timeout`` here (60), taken
as the whole request's deadline. Each retry has a deadline of its own."""


_RETRYABLE_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "RequestThrottled",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalError",
        "InternalFailure",
        "InternalErrorException",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)
_TRANSIENT = (EndpointConnectionError, ConnectionClosedError, ConnectTimeoutError, ReadTimeoutError)

T = TypeVar("T")


@dataclass(frozen=True)
class AwsClients:
    """Ready-made boto3 clients: ``pricing`` (any Price List endpoint) and ``ec2`` (in the region
    whose spot prices are wanted). A fetcher bounds their requests as it does its own (see
    :func:`~actions.sources.aws.deadline.bound_calls`: the first fetcher's deadline stays)."""

    pricing: Any
    ec2: Any


def _retryable(e: BaseException) -> bool:
    if isinstance(e, _TRANSIENT):
        return True
    if isinstance(e, ClientError):
        code = e.response.get("Error", {}).get("Code", "")
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return code in _RETRYABLE_CODES or status >= 500
    return False


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value!r}: pass a timezone-aware UTC datetime")
    return value.astimezone(timezone.utc)


# --- the fetcher -----------------------------------------------------------------------------------


class AwsPriceFetcher:
    """Fetches live on-demand and spot prices of EC2 instance types for one region.

    ``session_or_clients`` is a ``boto3.session.Session`` (clients are made from it: ``pricing``
    in ``pricing_region``, ``ec2`` in ``region``, with botocore's own retries off so that tenacity
    alone retries) or an :class:`AwsClients` of ready-made clients (tests, custom endpoints).
    ``region`` is the AWS region the cluster runs in (``us-east-1``). ``attempts`` and
    ``retry_wait_seconds`` (the first back-off, doubling, at most 20 s) govern retries of
    throttling, 5xx answers, dropped connections and timeouts. ``deadline_seconds``: how long each
    request may take in all, from its send to the last byte of its answer, before it fails as a
    read timeout
    (:class:`~actions.sources.aws.deadline.AwsDeadlinePassed`). Raises ValueError for an empty
    region, ``attempts`` under 1 or a deadline not > 0.
    """

    def __init__(
        self,
        session_or_clients: boto3.session.Session | AwsClients,
        *,
        region: str,
        pricing_region: str = PRICING_REGION,
        attempts: int = 4,
        retry_wait_seconds: float = 1.0,
        deadline_seconds: float = DEADLINE_SECONDS,
    ) -> None:
        if not region:
            raise ValueError("region is empty; give the AWS region the cluster runs in")
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {attempts}")
        self.region = region
        self._attempts = attempts
        self._wait = retry_wait_seconds
        if isinstance(session_or_clients, AwsClients):
            self._pricing = session_or_clients.pricing
            self._ec2 = session_or_clients.ec2
        else:
            config = Config(
                retries={"total_max_attempts": 1},
                connect_timeout=10,
                read_timeout=60,
            )
            self._pricing = session_or_clients.client("pricing", region_name=pricing_region, config=config)
            self._ec2 = session_or_clients.client("ec2", region_name=region, config=config)
        for client in (self._pricing, self._ec2):
            bound_calls(client, deadline_seconds)

    def fetch(self, instance_types: Iterable[str], now: datetime) -> list[LivePrice]:
        """On-demand then spot prices of ``instance_types`` (see :meth:`on_demand` and
        :meth:`spot`). Raises PriceFetchError when either call fails."""
        types = list(instance_types)
        return self.on_demand(types, now) + self.spot(types, now)

    def on_demand(self, instance_types: Iterable[str], now: datetime) -> list[LivePrice]:
        """On-demand USD per instance-hour of each instance type, from the Pricing API, as of
        ``now`` (aware UTC, the fetch time), each followed by its 1-year No Upfront Reserved
        Instance rate (offer ``reserved-instance``, for commitment advice) when the same products
        list one. Types the API
        lists no plain Linux on-demand price for in this region are left out. One paginated
        ``GetProducts`` per type.

        Raises PriceFetchError naming ``pricing:GetProducts`` when a call fails (after retries for
        throttling and transient faults) or the answer is ambiguous or malformed.
        """
        now = _utc(now)
        out = []
        for instance_type in dict.fromkeys(instance_types):
            filters = [
                {"Type": "TERM_MATCH", "Field": field, "Value": value}
                for field, value in {
                    "instanceType": instance_type,
                    "regionCode": self.region,
                    **ON_DEMAND_FILTERS,
                }.items()
            ]
            what = f"pricing:GetProducts for {instance_type} in {self.region}"

            def pages(filters: list[dict[str, str]] = filters) -> list[str]:
                items: list[str] = []
                paginator = self._pricing.get_paginator("get_products")
                for page in paginator.paginate(
                    ServiceCode="AmazonEC2", Filters=filters, FormatVersion="aws_v1"
                ):
                    items.extend(page.get("PriceList", []))
                return items

            items = self._call(what, pages)
            usd = on_demand_usd_per_hour(items, instance_type=instance_type, region=self.region)
            if usd is None:
                log.info("%s: no on-demand Linux price listed (%d products)", what, len(items))
                continue
            out.append(
                LivePrice(
                    instance_type=instance_type,
                    offer=LiveOffer.ON_DEMAND,
                    usd_per_hour=usd,
                    source=f"AWS Pricing API (on-demand, {self.region})",
                    as_of=now,
                    region=self.region,
                )
            )
            reserved = reserved_usd_per_hour(items, instance_type=instance_type, region=self.region)
            if reserved is not None:
                out.append(
                    LivePrice(
                        instance_type=instance_type,
                        offer=LiveOffer.RESERVED_INSTANCE,
                        usd_per_hour=reserved,
                        source=f"AWS Pricing API (Reserved Instance, 1 year standard, No Upfront, {self.region})",
                        as_of=now,
                        region=self.region,
                    )
                )
        return out

    def spot(self, instance_types: Iterable[str], now: datetime) -> list[LivePrice]:
        """Spot USD per instance-hour of each instance type in this region: the median over
        availability zones of each zone's latest ``Linux/UNIX`` price since ``now - 1 h`` (aware
        UTC; also the fetch time). Types with no spot offering here are left out. One paginated
        ``DescribeSpotPriceHistory`` for all types.

        Raises PriceFetchError naming ``ec2:DescribeSpotPriceHistory`` when the call fails (after
        retries for throttling and transient faults) or returns malformed records.
        """
        now = _utc(now)
        types = list(dict.fromkeys(instance_types))
        if not types:
            return []
        what = f"ec2:DescribeSpotPriceHistory for {', '.join(types)} in {self.region}"

        def pages() -> list[dict[str, Any]]:
            records: list[dict[str, Any]] = []
            paginator = self._ec2.get_paginator("describe_spot_price_history")
            for page in paginator.paginate(
                InstanceTypes=types,
                ProductDescriptions=[SPOT_PRODUCT],
                StartTime=now - SPOT_LOOKBACK,
            ):
                records.extend(page.get("SpotPriceHistory", []))
            return records

        by_type: dict[str, list[dict[str, Any]]] = {}
        for record in self._call(what, pages):
            by_type.setdefault(record.get("InstanceType", ""), []).append(record)
        out = []
        for instance_type in types:
            found = spot_median(by_type.get(instance_type, []))
            if found is None:
                log.info("%s: no spot price for %s", what, instance_type)
                continue
            usd, zones = found
            out.append(
                LivePrice(
                    instance_type=instance_type,
                    offer=LiveOffer.SPOT,
                    usd_per_hour=usd,
                    source=(
                        f"EC2 spot price history ({self.region}, median of {zones} "
                        f"AZ{'' if zones == 1 else 's'})"
                    ),
                    as_of=now,
                    region=self.region,
                )
            )
        return out

    def _call(self, what: str, call: Callable[[], T]) -> T:
        retrying = Retrying(
            stop=stop_after_attempt(self._attempts),
            wait=wait_exponential(multiplier=self._wait, max=20),
            retry=retry_if_exception(_retryable),
            reraise=True,
        )
        try:
            return retrying(call)
        except ClientError as e:
            error = e.response.get("Error", {})
            tries = f" after {self._attempts} attempts" if _retryable(e) else ""
            raise PriceFetchError(
                f"{what} failed{tries}: {error.get('Code', '?')}: {error.get('Message', e)}"
            ) from e
        except BotoCoreError as e:
            tries = f" after {self._attempts} attempts" if _retryable(e) else ""
            raise PriceFetchError(f"{what} failed{tries}: {e}") from e


def default_fetcher(region: str) -> AwsPriceFetcher:
    """A fetcher for ``region`` on boto3's default credential chain (environment, IRSA or EKS Pod
    Identity, instance profile). Raises ValueError for an empty region; missing credentials
    surface at the first fetch as PriceFetchError."""
    return AwsPriceFetcher(boto3.session.Session(), region=region)


# --- cache -----------------------------------------------------------------------------------------


def refresh_live_prices(
    fetcher: AwsPriceFetcher, store: Store, instance_types: Sequence[str], now: datetime
) -> list[LivePrice]:
    """Fetch on-demand and spot prices of ``instance_types`` and cache them in ``store`` as of
    ``now`` (aware UTC). Returns the prices cached.

    The two calls are independent: when one fails, the other's prices are still cached, and then
    PriceFetchError is raised with the failure(s).
    """
    rows: list[LivePrice] = []
    failures: list[PriceFetchError] = []
    for fetch in (fetcher.on_demand, fetcher.spot):
        try:
            rows.extend(fetch(instance_types, now))
        except PriceFetchError as e:
            failures.append(e)
    store.put_prices(rows, now)
    if failures:
        cached = f"; cached the {len(rows)} prices that were fetched" if rows else ""
        raise PriceFetchError("; ".join(str(e) for e in failures) + cached) from failures[0]
    return rows


def live_prices_from_store(
    store: Store, region: str, max_age: float, now: datetime
) -> dict[LiveKey, LivePrice]:
    """The cached prices of ``region`` fetched at most ``max_age`` seconds before ``now``, keyed
    ``(instance_type, offer)`` as ``PriceBook(..., live=...)`` takes them."""
    return {(p.instance_type, p.offer): p for p in store.cached_prices(region, max_age, now)}
