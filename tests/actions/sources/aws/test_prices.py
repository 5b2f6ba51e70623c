"""Live AWS prices: spot from EC2 served by moto in server mode, on-demand from a Price List Query
API endpoint on 127.0.0.1, both through real boto3 clients; cached in SQLite and PostgreSQL.

moto serves ``ec2:DescribeSpotPriceHistory`` (one record per availability zone that offers the
type, from its bundled instance-type offerings, all at the same generated price), so the spot
tests assert how our code aggregates what that API returned, read again through the same API. moto
has no Pricing API backend, so ``pricing:GetProducts`` is served by :class:`PricingApi` below: the
JSON 1.1 protocol boto3 speaks, answering with PriceList documents in the API's shape; the p5.48xlarge
figure is AWS's published us-east-1 Linux on-demand rate after the June 2025 reduction.
"""

from __future__ import annotations

import json
import statistics
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import boto3
import pytest
from botocore.config import Config
from moto.server import ThreadedMotoServer

from actions.model.kube import CapacityType
from actions.pricing.live import LiveOffer
from actions.sources.aws.price_list import PriceFetchError, on_demand_usd_per_hour, spot_median
from actions.sources.aws.prices import AwsClients, AwsPriceFetcher, live_prices_from_store, refresh_live_prices
from actions.store.database import Store
from bot.jobs.prices import refresh_prices
from bot.runtime.prices import ReloadingPriceBook, price_book
from bot.runtime.runtime import Runtime
from bot.settings import Settings

NOW = datetime(2026, 11, 23, 6, 0, tzinfo=timezone.utc)
REGION = "us-east-1"
P5_SKU = "QUMEF4UK3NPT4MN3"
P5_USD = "55.0440000000"
CREDENTIALS = dict(aws_access_key_id="testing", aws_secret_access_key="testing")
NO_BOTO_RETRIES = Config(retries={"total_max_attempts": 1})


def _product(
    sku: str,
    instance_type: str,
    usd: str,
    *,
    region: str = REGION,
    unit: str = "Hrs",
    **attributes: str,
) -> str:
    """One GetProducts PriceList item (JSON text, as the API returns it)."""
    attrs = {
        "instanceType": instance_type,
        "regionCode": region,
        "location": "US East (N. Virginia)",
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        "licenseModel": "No License required",
        "marketoption": "OnDemand",
        "servicecode": "AmazonEC2",
        **attributes,
    }
    term = f"{sku}.JRTCKXETXF"
    return json.dumps(
        {
            "product": {"productFamily": "Compute Instance", "attributes": attrs, "sku": sku},
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    term: {
                        "priceDimensions": {
                            f"{term}.6YS6EN2CT7": {
                                "unit": unit,
                                "endRange": "Inf",
                                "description": f"${float(usd):g} per On Demand Linux {instance_type} Instance Hour",
                                "appliesTo": [],
                                "rateCode": f"{term}.6YS6EN2CT7",
                                "beginRange": "0",
                                "pricePerUnit": {"USD": usd},
                            }
                        },
                        "sku": sku,
                        "effectiveDate": "2025-06-01T00:00:00Z",
                        "offerTermCode": "JRTCKXETXF",
                        "termAttributes": {},
                    }
                }
            },
            "version": "20251101000000",
            "publicationDate": "2025-11-01T00:00:00Z",
        }
    )


P5_PLAIN = _product(P5_SKU, "p5.48xlarge", P5_USD)
# Listed beside the plain row for the same filters people tend to write: a $0 Capacity Block row
# and a Windows row. Neither is the plain Linux on-demand price.
P5_CAPACITY_BLOCK = _product("CB000000000000P5", "p5.48xlarge", "0.0000000000", marketoption="CapacityBlock")
P5_WINDOWS = _product("WIN0000000000P5", "p5.48xlarge", "61.6840000000", operatingSystem="Windows")


class PricingApi:
    """``pricing:GetProducts`` over HTTP on 127.0.0.1 (AWS JSON 1.1). ``products`` maps instance
    type -> PriceList items; the answer holds only items matching every TERM_MATCH filter, paged
    ``page_size`` at a time; ``match_fields``, when given, are the only filter fields the server
    applies (to make it answer rows the client must sort out itself). ``fail`` is a list of (HTTP status, error code) answered first, one
    per request. Every request body is kept in ``requests``."""

    def __init__(self, products: dict[str, list[str]], page_size: int = 100, match_fields: set[str] | None = None):
        self.products = products
        self.page_size = page_size
        self.match_fields = match_fields
        self.fail: list[tuple[int, str]] = []
        self.requests: list[dict[str, Any]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.requests.append({"target": self.headers.get("X-Amz-Target"), **body})
                if api.fail:
                    status, code = api.fail.pop(0)
                    self._answer(status, {"__type": code, "Message": f"{code} from the test"})
                    return
                self._answer(200, api.answer(body))

            def _answer(self, status: int, doc: dict[str, Any]) -> None:
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        wanted = {
            f["Field"]: f["Value"]
            for f in body.get("Filters", [])
            if self.match_fields is None or f["Field"] in self.match_fields
        }
        items = [
            item
            for items in self.products.values()
            for item in items
            if all(json.loads(item)["product"]["attributes"].get(k) == v for k, v in wanted.items())
        ]
        start = int(body.get("NextToken") or 0)
        page: dict[str, Any] = {"FormatVersion": "aws_v1", "PriceList": items[start : start + self.page_size]}
        if start + self.page_size < len(items):
            page["NextToken"] = str(start + self.page_size)
        return page

    def __enter__(self) -> PricingApi:
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def ec2(moto_url: str):
    return boto3.client("ec2", region_name=REGION, endpoint_url=moto_url, config=NO_BOTO_RETRIES, **CREDENTIALS)


@pytest.fixture(scope="module")
def pricing_server() -> Iterator[PricingApi]:
    with PricingApi({}) as api:
        yield api


@pytest.fixture
def pricing_api(pricing_server: PricingApi) -> PricingApi:
    """The module's Pricing API, reset to list the p5.48xlarge rows and answer every request."""
    pricing_server.products = {"p5.48xlarge": [P5_PLAIN, P5_CAPACITY_BLOCK, P5_WINDOWS]}
    pricing_server.page_size, pricing_server.match_fields = 100, None
    pricing_server.fail, pricing_server.requests = [], []
    return pricing_server


_PRICING_CLIENTS: dict[str, Any] = {}


def _fetcher(pricing_api: PricingApi, ec2, attempts: int = 3) -> AwsPriceFetcher:
    # Building a boto3 client loads the service model: once per endpoint, not once per test.
    pricing = _PRICING_CLIENTS.get(pricing_api.url) or _PRICING_CLIENTS.setdefault(
        pricing_api.url,
        boto3.client("pricing", region_name=REGION, endpoint_url=pricing_api.url, config=NO_BOTO_RETRIES, **CREDENTIALS),
    )
    return AwsPriceFetcher(AwsClients(pricing=pricing, ec2=ec2), region=REGION, attempts=attempts, retry_wait_seconds=0)


def _expected_spot(ec2, instance_type: str) -> tuple[float, int]:
    """The median over zones of each zone's latest price, computed here from the same API."""
    records = ec2.describe_spot_price_history(
        InstanceTypes=[instance_type], ProductDescriptions=["Linux/UNIX"], StartTime=NOW - timedelta(hours=1)
    )["SpotPriceHistory"]
    latest: dict[str, tuple[datetime, float]] = {}
    for r in records:
        if r["AvailabilityZone"] not in latest or r["Timestamp"] > latest[r["AvailabilityZone"]][0]:
            latest[r["AvailabilityZone"]] = (r["Timestamp"], float(r["SpotPrice"]))
    return statistics.median(p for _, p in latest.values()), len(latest)


# --- on-demand ------------------------------------------------------------------------------------


def test_on_demand_is_the_plain_linux_row_over_the_wire(pricing_api, ec2):
    prices = _fetcher(pricing_api, ec2).on_demand(["p5.48xlarge"], NOW)

    assert [(p.instance_type, p.offer, p.usd_per_hour) for p in prices] == [
        ("p5.48xlarge", LiveOffer.ON_DEMAND, 55.044)
    ]
    assert prices[0].source == "AWS Pricing API (on-demand, us-east-1)"
    assert prices[0].as_of == NOW and prices[0].region == REGION
    (request,) = pricing_api.requests
    assert request["target"] == "AWSPriceListService.GetProducts"
    assert request["ServiceCode"] == "AmazonEC2"
    sent = {f["Field"]: f["Value"] for f in request["Filters"]}
    assert sent["instanceType"] == "p5.48xlarge" and sent["regionCode"] == REGION
    assert sent["marketoption"] == "OnDemand" and sent["operatingSystem"] == "Linux"
    assert {f["Type"] for f in request["Filters"]} == {"TERM_MATCH"}


def test_on_demand_follows_pages(pricing_api, ec2):
    # A server matching on instance type only answers the $0 Capacity Block and Windows rows too,
    # one per page: every page is read and the plain Linux row is still the one picked.
    pricing_api.products = {"p5.48xlarge": [P5_CAPACITY_BLOCK, P5_WINDOWS, P5_PLAIN]}
    pricing_api.page_size, pricing_api.match_fields = 1, {"instanceType"}
    prices = _fetcher(pricing_api, ec2).on_demand(["p5.48xlarge"], NOW)
    assert [p.usd_per_hour for p in prices] == [55.044]
    assert [r.get("NextToken") for r in pricing_api.requests] == [None, "1", "2"]


def test_type_without_a_listed_price_is_left_out(pricing_api, ec2):
    assert _fetcher(pricing_api, ec2).on_demand(["a3-megagpu-8g"], NOW) == []


def test_throttling_is_retried_then_succeeds(pricing_api, ec2):
    pricing_api.fail = [(400, "ThrottlingException"), (503, "ServiceUnavailableException")]
    prices = _fetcher(pricing_api, ec2, attempts=3).on_demand(["p5.48xlarge"], NOW)
    assert [p.usd_per_hour for p in prices] == [55.044]
    assert len(pricing_api.requests) == 3


def test_throttling_past_the_attempts_names_the_call(pricing_api, ec2):
    pricing_api.fail = [(400, "ThrottlingException")] * 2
    with pytest.raises(PriceFetchError, match=r"pricing:GetProducts for p5.48xlarge in us-east-1 failed after 2 attempts: ThrottlingException"):
        _fetcher(pricing_api, ec2, attempts=2).on_demand(["p5.48xlarge"], NOW)


def test_access_denied_fails_at_once(pricing_api, ec2):
    pricing_api.fail = [(400, "AccessDeniedException")]
    with pytest.raises(PriceFetchError, match="AccessDeniedException"):
        _fetcher(pricing_api, ec2, attempts=4).on_demand(["p5.48xlarge"], NOW)
    assert len(pricing_api.requests) == 1


def test_conflicting_plain_prices_are_refused_not_guessed():
    other = _product("OTHER00000000P5", "p5.48xlarge", "98.3200000000")
    with pytest.raises(PriceFetchError, match=r"OTHER00000000P5.*\$98.32, QUMEF4UK3NPT4MN3.*\$55.044"):
        on_demand_usd_per_hour([P5_PLAIN, other], instance_type="p5.48xlarge", region=REGION)


def test_rows_that_are_not_an_hourly_linux_rate_are_ignored():
    per_gb = _product("GB0000000000000", "p5.48xlarge", "1.0000000000", unit="GB-Mo")
    other_region = _product("EU00000000000P5", "p5.48xlarge", "66.0000000000", region="eu-west-1")
    items = [P5_CAPACITY_BLOCK, P5_WINDOWS, per_gb, other_region]
    assert on_demand_usd_per_hour(items, instance_type="p5.48xlarge", region=REGION) is None
    assert on_demand_usd_per_hour(items + [P5_PLAIN], instance_type="p5.48xlarge", region=REGION) == 55.044


def test_a_malformed_item_is_an_error():
    with pytest.raises(PriceFetchError, match="not a price list document"):
        on_demand_usd_per_hour(["{not json"], instance_type="p5.48xlarge", region=REGION)


# --- spot -----------------------------------------------------------------------------------------


def test_spot_is_the_median_of_each_zones_latest_record(pricing_api, ec2):
    types = ["p5.48xlarge", "p4d.24xlarge", "g5.xlarge"]
    prices = {p.instance_type: p for p in _fetcher(pricing_api, ec2).spot(types, NOW)}

    assert set(prices) == set(types)
    for instance_type in types:
        usd, zones = _expected_spot(ec2, instance_type)
        assert zones >= 2
        assert prices[instance_type].usd_per_hour == usd
        assert prices[instance_type].offer is LiveOffer.SPOT
        assert prices[instance_type].source == f"EC2 spot price history (us-east-1, median of {zones} AZs)"
        assert prices[instance_type].as_of == NOW


def test_type_with_no_spot_offering_is_left_out(pricing_api, ec2):
    assert _fetcher(pricing_api, ec2).spot(["a3-megagpu-8g"], NOW) == []


def test_spot_median_takes_each_zones_latest_record():
    t0 = NOW - timedelta(minutes=50)
    history = [
        {"AvailabilityZone": "us-east-1a", "SpotPrice": "30.0", "Timestamp": t0},
        {"AvailabilityZone": "us-east-1a", "SpotPrice": "12.0", "Timestamp": t0 + timedelta(minutes=30)},
        {"AvailabilityZone": "us-east-1b", "SpotPrice": "14.0", "Timestamp": t0},
        {"AvailabilityZone": "us-east-1c", "SpotPrice": "20.0", "Timestamp": t0},
    ]
    assert spot_median(history) == (14.0, 3)
    assert spot_median([]) is None
    with pytest.raises(PriceFetchError, match="without a zone, time or price"):
        spot_median([{"AvailabilityZone": "us-east-1a", "SpotPrice": "n/a", "Timestamp": t0}])


def test_naive_now_is_refused(pricing_api, ec2):
    with pytest.raises(ValueError, match="naive datetime"):
        _fetcher(pricing_api, ec2).spot(["p5.48xlarge"], NOW.replace(tzinfo=None))


# --- cache and the PriceBook ------------------------------------------------------------------------


def test_refresh_caches_both_and_the_price_book_uses_them(pricing_api, ec2, store):
    fetched = refresh_live_prices(_fetcher(pricing_api, ec2), store, ["p5.48xlarge"], NOW)
    spot_usd, _ = _expected_spot(ec2, "p5.48xlarge")

    assert {(p.offer, p.usd_per_hour) for p in fetched} == {
        (LiveOffer.ON_DEMAND, 55.044),
        (LiveOffer.SPOT, spot_usd),
    }
    live = live_prices_from_store(store, REGION, 3600, NOW + timedelta(minutes=5))
    assert live[("p5.48xlarge", LiveOffer.ON_DEMAND)].usd_per_hour == 55.044
    assert live[("p5.48xlarge", LiveOffer.ON_DEMAND)].as_of == NOW

    settings = Settings(prices={"aws": {"enabled": True, "region": REGION, "refresh_seconds": 3600}})
    book = price_book(settings, store, NOW + timedelta(hours=1))
    od = book.quote("p5.48xlarge", CapacityType.ON_DEMAND, "H100")
    assert od.usd_per_gpu_hour == pytest.approx(55.044 / 8)
    assert od.source == "AWS Pricing API (on-demand, us-east-1), fetched 2026-11-23T06:00:00Z"
    assert od.as_of == "2026-11-23T06:00:00Z"
    spot = book.quote("p5.48xlarge", CapacityType.SPOT, "H100")
    assert spot.usd_per_gpu_hour == pytest.approx(spot_usd / 8)
    assert spot.source.startswith("EC2 spot price history (us-east-1, median of")

    # Past max_age (3 refresh periods by default) the bundled catalog answers again.
    stale = price_book(settings, store, NOW + timedelta(hours=3, seconds=1))
    assert stale.quote("p5.48xlarge", CapacityType.ON_DEMAND, "H100").source.startswith("bundled catalog")
    # Not enabled: the cache is not consulted at all.
    off = price_book(Settings(), store, NOW)
    assert off.quote("p5.48xlarge", CapacityType.ON_DEMAND, "H100").source.startswith("bundled catalog")


def test_refresh_keeps_spot_when_on_demand_fails(pricing_api, ec2, store):
    pricing_api.fail = [(400, "AccessDeniedException")]
    with pytest.raises(PriceFetchError, match=r"AccessDeniedException.*cached the 1 prices that were fetched"):
        refresh_live_prices(_fetcher(pricing_api, ec2), store, ["p5.48xlarge"], NOW)
    cached = store.cached_prices(REGION, 3600, NOW)
    assert [(p.instance_type, p.offer) for p in cached] == [("p5.48xlarge", LiveOffer.SPOT)]


# --- the scheduled job ----------------------------------------------------------------------------


def _runtime(store: Store, settings: Settings) -> Runtime:
    return Runtime(
        store=store,
        chat=None,  # type: ignore[arg-type] - the job never posts
        cluster=None,  # type: ignore[arg-type]
        telemetry=None,  # type: ignore[arg-type]
        writer=None,  # type: ignore[arg-type]
        prices=ReloadingPriceBook(settings, store, lambda: NOW),
        teams=settings.team_directory(),
        policy=settings.policy,
        dry_run=True,
        clock=lambda: NOW,
    )


def test_refresh_job_swaps_the_price_book(pricing_api, ec2, store):
    settings = Settings(
        prices={"aws": {"enabled": True, "region": REGION, "refresh_seconds": 3600, "instance_types": ["p5.48xlarge"]}}
    )
    rt = _runtime(store, settings)
    assert rt.prices.quote("p5.48xlarge", CapacityType.ON_DEMAND, "H100").source.startswith("bundled catalog")

    fetched = refresh_prices(rt.store, rt.prices, settings.prices.aws, NOW, fetcher=_fetcher(pricing_api, ec2))
    assert {p.offer for p in fetched} == {LiveOffer.ON_DEMAND, LiveOffer.SPOT}
    quote = rt.prices.quote("p5.48xlarge", CapacityType.ON_DEMAND, "H100")
    assert quote.usd_per_gpu_hour == pytest.approx(55.044 / 8)
    assert quote.source == "AWS Pricing API (on-demand, us-east-1), fetched 2026-11-23T06:00:00Z"


def test_refresh_job_failure_raises_but_uses_what_was_fetched(pricing_api, ec2, store):
    settings = Settings(
        prices={"aws": {"enabled": True, "region": REGION, "refresh_seconds": 3600, "instance_types": ["p5.48xlarge"]}}
    )
    rt = _runtime(store, settings)
    pricing_api.fail = [(400, "AccessDeniedException")]
    with pytest.raises(PriceFetchError, match="AccessDeniedException"):
        refresh_prices(rt.store, rt.prices, settings.prices.aws, NOW, fetcher=_fetcher(pricing_api, ec2))
    # The spot half was cached and is in use; on-demand falls back to the catalog.
    assert rt.prices.quote("p5.48xlarge", CapacityType.SPOT, "H100").source.startswith("EC2 spot price history")
    assert rt.prices.quote("p5.48xlarge", CapacityType.ON_DEMAND, "H100").source.startswith("bundled catalog")


def test_refresh_job_drops_prices_past_max_age_even_when_fetching_fails(pricing_api, ec2, store):
    settings = Settings(
        prices={"aws": {"enabled": True, "region": REGION, "refresh_seconds": 3600, "instance_types": ["p5.48xlarge"]}}
    )
    rt = _runtime(store, settings)
    refresh_prices(rt.store, rt.prices, settings.prices.aws, NOW, fetcher=_fetcher(pricing_api, ec2))
    pricing_api.fail = [(400, "AccessDeniedException")]
    later = NOW + timedelta(hours=3, minutes=1)
    with pytest.raises(PriceFetchError):
        refresh_prices(rt.store, rt.prices, settings.prices.aws, later, fetcher=_fetcher(pricing_api, ec2))
    # The on-demand price fetched three hours ago is past max_age (3 x refresh_seconds).
    assert rt.prices.quote("p5.48xlarge", CapacityType.ON_DEMAND, "H100").source.startswith("bundled catalog")


def test_a_replica_that_never_runs_the_job_prices_with_what_the_leader_cached(pricing_api, ec2, store):
    settings = Settings(
        prices={"aws": {"enabled": True, "region": REGION, "refresh_seconds": 3600, "instance_types": ["p5.48xlarge"]}}
    )
    now = [NOW]
    follower = ReloadingPriceBook(settings, store, lambda: now[0], reload_seconds=300)
    assert follower.quote("p5.48xlarge", CapacityType.ON_DEMAND, "H100").source.startswith("bundled catalog")

    refresh_prices(store, _runtime(store, settings).prices, settings.prices.aws, NOW, fetcher=_fetcher(pricing_api, ec2))
    # Within the reload interval the follower keeps its book; after it, it reads the cache.
    assert follower.quote("p5.48xlarge", CapacityType.ON_DEMAND, "H100").source.startswith("bundled catalog")
    now[0] = NOW + timedelta(minutes=5)
    live = follower.quote("p5.48xlarge", CapacityType.ON_DEMAND, "H100")
    assert live.usd_per_gpu_hour == pytest.approx(55.044 / 8)
    assert live.source.startswith("AWS Pricing API (on-demand, us-east-1)")
    # Once the cache is past max_age (3 refresh periods) with no refresh, the catalog answers again.
    now[0] = NOW + timedelta(hours=3, minutes=1)
    assert follower.quote("p5.48xlarge", CapacityType.ON_DEMAND, "H100").source.startswith("bundled catalog")


def test_refresh_job_does_nothing_when_disabled(store):
    settings = Settings()
    rt = _runtime(store, settings)
    assert refresh_prices(rt.store, rt.prices, settings.prices.aws, NOW) == []
    assert store.cached_prices(REGION, 86400, NOW) == []


def test_refresh_job_default_fetcher_uses_the_standard_aws_configuration(pricing_api, moto_url, store, monkeypatch):
    # The production path: credentials and endpoints from boto3's standard environment variables.
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL_EC2": moto_url,
        "AWS_ENDPOINT_URL_PRICING": pricing_api.url,
    }.items():
        monkeypatch.setenv(name, value)
    settings = Settings(
        prices={"aws": {"enabled": True, "region": REGION, "instance_types": ["p5.48xlarge", "g5.xlarge"]}}
    )
    rt = _runtime(store, settings)
    fetched = refresh_prices(rt.store, rt.prices, settings.prices.aws, NOW)
    assert {(p.instance_type, p.offer) for p in fetched} == {
        ("p5.48xlarge", LiveOffer.ON_DEMAND),
        ("p5.48xlarge", LiveOffer.SPOT),
        ("g5.xlarge", LiveOffer.SPOT),
    }
    assert [r["Filters"][0]["Value"] for r in pricing_api.requests] == ["p5.48xlarge", "g5.xlarge"]


def _with_reserved(item: str) -> str:
    """``item`` with the ``Reserved`` offers the price list gives an EC2 product: the 1-year
    standard No Upfront one (offer term code 4NA7Y494T4, an hourly rate only), a 3-year All
    Upfront one (an upfront ``Quantity`` fee and $0 an hour) and a 1-year convertible one."""
    doc = json.loads(item)
    sku = doc["product"]["sku"]

    def offer(code: str, attrs: dict[str, str], dims: dict[str, tuple[str, str]]) -> dict:
        return {"offerTermCode": code, "sku": sku, "effectiveDate": "2025-06-04T00:00:00Z", "termAttributes": attrs,
                "priceDimensions": {f"{sku}.{code}.{rate}": {"unit": unit, "pricePerUnit": {"USD": usd}, "appliesTo": [],
                                                             "rateCode": f"{sku}.{code}.{rate}", "description": "reserved"}
                                    for rate, (unit, usd) in dims.items()}}

    doc["terms"]["Reserved"] = {
        f"{sku}.4NA7Y494T4": offer("4NA7Y494T4", {"LeaseContractLength": "1yr", "OfferingClass": "standard",
                                                  "PurchaseOption": "No Upfront"}, {"6YS6EN2CT7": ("Hrs", "36.3290000000")}),
        f"{sku}.NQ3QZPMQV9": offer("NQ3QZPMQV9", {"LeaseContractLength": "3yr", "OfferingClass": "standard",
                                                  "PurchaseOption": "All Upfront"},
                                   {"2TG2D8R56U": ("Quantity", "570000"), "6YS6EN2CT7": ("Hrs", "0.0000000000")}),
        f"{sku}.7NE97W5U4E": offer("7NE97W5U4E", {"LeaseContractLength": "1yr", "OfferingClass": "convertible",
                                                  "PurchaseOption": "No Upfront"}, {"6YS6EN2CT7": ("Hrs", "40.1000000000")}),
    }
    return json.dumps(doc)


def test_the_1_year_no_upfront_reserved_rate_comes_with_the_on_demand_one(pricing_api, ec2):
    # EC2 price list products carry OnDemand and Reserved terms side by side (AWS Price List
    # API, offer file format: terms.Reserved[].termAttributes LeaseContractLength,
    # OfferingClass, PurchaseOption).
    pricing_api.products = {"p5.48xlarge": [_with_reserved(P5_PLAIN), _with_reserved(P5_WINDOWS)]}
    prices = _fetcher(pricing_api, ec2).on_demand(["p5.48xlarge"], NOW)
    assert [(p.offer, p.usd_per_hour) for p in prices] == [
        (LiveOffer.ON_DEMAND, 55.044), (LiveOffer.RESERVED_INSTANCE, 36.329)]
    assert prices[1].source == "AWS Pricing API (Reserved Instance, 1 year standard, No Upfront, us-east-1)"
    assert len(pricing_api.requests) == 1  # read from the same answer


def test_a_reserved_node_costs_the_same_in_a_report_with_live_prices_on_or_off(pricing_api, ec2, store, tmp_path):
    # Karpenter's capacity type "reserved" (kubernetes-sigs/karpenter pkg/apis/v1/labels.go
    # CapacityTypeReserved, v1.14.1) is an On-Demand Capacity Reservation or a Capacity Block
    # (aws/karpenter-provider-aws website/content/en/v1.14/tasks/odcrs.md), which EC2 charges at
    # the equivalent On-Demand rate (AWS EC2 User Guide, "Capacity Reservation pricing and
    # billing"): never at the Reserved Instance rate the same price list products carry.
    from datetime import date

    from actions.cost.engine import compute_cost_report
    from actions.cost.report import RESERVED_ON_PREM
    from actions.model.usage import DailyUsage, NodeInfo, PodUsage, UsageData
    from actions.policy.teams import Team, TeamDirectory

    usage = UsageData(
        start=NOW - timedelta(days=1), end=NOW, step_seconds=300,
        pods=(PodUsage("ml", "train-0", "p5-reserved", 10.0), PodUsage("web", "serve-0", "p5-on-demand", 10.0)),
        daily=(DailyUsage(date(2026, 11, 22), "ml", "p5-reserved", 10.0),
               DailyUsage(date(2026, 11, 22), "web", "p5-on-demand", 10.0)),
        nodes={"p5-reserved": NodeInfo("p5-reserved", "p5.48xlarge", CapacityType.RESERVED, "NVIDIA H100 80GB HBM3"),
               "p5-on-demand": NodeInfo("p5-on-demand", "p5.48xlarge", CapacityType.ON_DEMAND, "NVIDIA H100 80GB HBM3")},
    )
    teams = TeamDirectory([Team(name="ml", namespaces=["ml"]), Team(name="web", namespaces=["web"])])
    settings = Settings(prices={"aws": {"enabled": True, "region": REGION, "refresh_seconds": 3600}})

    pricing_api.products = {"p5.48xlarge": [_with_reserved(P5_PLAIN)]}
    fetched = refresh_live_prices(_fetcher(pricing_api, ec2), store, ["p5.48xlarge"], NOW)
    assert (LiveOffer.RESERVED_INSTANCE, 36.329) in {(p.offer, p.usd_per_hour) for p in fetched}
    with_ri = price_book(settings, store, NOW)
    no_ri_store = Store(f"sqlite:///{tmp_path / 'no-ri.db'}")
    no_ri_store.migrate()
    pricing_api.products = {"p5.48xlarge": [P5_PLAIN]}
    refresh_live_prices(_fetcher(pricing_api, ec2), no_ri_store, ["p5.48xlarge"], NOW)
    without_ri = price_book(settings, no_ri_store, NOW)
    off = price_book(Settings(), store, NOW)

    def costs(book) -> tuple[float, float, str]:
        report = compute_cost_report(usage, book, teams, team_label=None)
        [reserved], [on_demand] = report.teams["ml"].price_lines, report.teams["web"].price_lines
        assert (reserved.capacity_type, on_demand.capacity_type) == (RESERVED_ON_PREM, "on-demand")
        return reserved.cost_usd, on_demand.cost_usd, reserved.price_source

    # 10 GPU-hours x $55.044 / 8 GPUs = $68.805 with live prices on, RI rate known or not.
    assert costs(with_ri)[:2] == costs(without_ri)[:2] == (pytest.approx(68.805), pytest.approx(68.805))
    assert costs(with_ri)[2] == "AWS Pricing API (on-demand, us-east-1), fetched 2026-11-23T06:00:00Z; reserved capacity priced at on-demand"
    # Off: the catalog's $55.04, the reserved node again at its on-demand price.
    assert costs(off)[:2] == (pytest.approx(68.80), pytest.approx(68.80))
    # The fetched Reserved Instance rate is still what the commitment advice prices: $36.329 / 8.
    commitment = with_ri.commitment_quote("p5.48xlarge")
    assert commitment is not None and commitment.usd_per_gpu_hour == pytest.approx(36.329 / 8)
    no_ri_store.close()
