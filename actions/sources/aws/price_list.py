"""Reading AWS's answers into prices: the Price List Query API's products into on-demand and
reserved USD per instance-hour, and EC2's spot price history into a median over availability
zones. Pure: JSON in, numbers out.
"""

from __future__ import annotations

import json
import logging
import statistics
from datetime import datetime
from typing import Any, Iterable, Mapping

log = logging.getLogger(__name__)

# The attributes that single out the on-demand price of plain Linux on shared hardware. Each one
# removes rows a looser query returns for GPU instances: capacitystatus the (unused) capacity
# reservation rows, licenseModel the BYOL rows, marketoption the Capacity Block rows (a p5.48xlarge
# Capacity Block row is listed at $0.00 beside the $55.04 on-demand one). regionCode rather than
# the region's long name in "location": the Price List spells some of those differently from the
# SDK's region descriptions ("EU (Ireland)" against botocore's "Europe (Ireland)").
ON_DEMAND_FILTERS: Mapping[str, str] = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
    "marketoption": "OnDemand",
}


class PriceFetchError(RuntimeError):
    """An AWS price call failed or answered something unusable. The message names the call
    (``pricing:GetProducts`` or ``ec2:DescribeSpotPriceHistory``), what it asked for and why."""


# --- parsing (pure) --------------------------------------------------------------------------------


# termAttributes of the Reserved Instance offer read: the one with no upfront fee, so its hourly
# rate is its whole price.
RESERVED_TERM = {"LeaseContractLength": "1yr", "OfferingClass": "standard", "PurchaseOption": "No Upfront"}


def reserved_usd_per_hour(
    price_list: Iterable[str | Mapping[str, Any]], *, instance_type: str, region: str
) -> float | None:
    """The 1-year standard No Upfront Reserved Instance rate, USD per instance-hour, in a
    ``GetProducts`` ``PriceList`` (items as :func:`on_demand_usd_per_hour` reads them, whose
    ``terms.Reserved`` offers carry ``termAttributes`` and hourly ``priceDimensions``). Only the
    plain Linux products count. ``None`` when none is listed or the products disagree (logged):
    a missing reserved rate must not cost the on-demand one. Never raises for a malformed item;
    :func:`on_demand_usd_per_hour` reports those."""
    found: set[float] = set()
    for item in price_list:
        try:
            doc = json.loads(item) if isinstance(item, str) else item
            attributes = doc["product"].get("attributes", {})
            offers = doc.get("terms", {}).get("Reserved", {}) or {}
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        wanted = {"instanceType": instance_type, "regionCode": region, **ON_DEMAND_FILTERS}
        if any(attributes.get(k, v) != v for k, v in wanted.items()):
            continue
        for offer in offers.values():
            if any(offer.get("termAttributes", {}).get(k) != v for k, v in RESERVED_TERM.items()):
                continue
            for dim in offer.get("priceDimensions", {}).values():
                try:
                    usd = float(dim["pricePerUnit"]["USD"])
                except (KeyError, TypeError, ValueError):
                    continue
                if dim.get("unit") == "Hrs" and usd > 0:
                    found.add(usd)
    if len(found) > 1:
        log.warning("pricing:GetProducts for %s in %s: several 1-year No Upfront reserved rates %s; none used",
                    instance_type, region, sorted(found))
        return None
    return found.pop() if found else None


def on_demand_usd_per_hour(
    price_list: Iterable[str | Mapping[str, Any]], *, instance_type: str, region: str
) -> float | None:
    """The on-demand USD per instance-hour in a ``GetProducts`` ``PriceList``.

    ``price_list`` holds the API's items: JSON text (as boto3 returns them) or parsed documents,
    each ``{"product": {"sku", "attributes": {...}}, "terms": {"OnDemand": {term: {
    "priceDimensions": {rate: {"unit": "Hrs", "pricePerUnit": {"USD": "21.9576420000"}, ...}}}}}}``.
    Products whose attributes contradict ``instance_type``, ``region`` (``regionCode``) or
    :data:`ON_DEMAND_FILTERS` are ignored, and so are dimensions that are not a plain hourly rate
    (a unit other than ``Hrs``, a bounded range such as the free tier's 750 hours, an
    ``appliesTo`` list) or are $0.

    Returns None when nothing is left. Raises PriceFetchError when an item is not a price list
    document, or when the products left disagree on the price (the message lists each SKU).
    """
    found: dict[str, float] = {}
    for item in price_list:
        try:
            doc = json.loads(item) if isinstance(item, str) else item
            product = doc["product"]
            attributes = product.get("attributes", {})
            sku = product.get("sku", "?")
            terms = doc.get("terms", {}).get("OnDemand", {})
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise PriceFetchError(
                f"pricing:GetProducts for {instance_type} in {region}: a PriceList item is not a "
                f"price list document ({e!r}): {str(item)[:200]}"
            ) from None
        wanted = {"instanceType": instance_type, "regionCode": region, **ON_DEMAND_FILTERS}
        if any(attributes.get(k, v) != v for k, v in wanted.items()):
            continue
        for term in terms.values():
            for dim in term.get("priceDimensions", {}).values():
                if dim.get("unit") != "Hrs" or dim.get("appliesTo"):
                    continue
                if dim.get("beginRange", "0") != "0" or dim.get("endRange", "Inf") != "Inf":
                    continue
                try:
                    usd = float(dim["pricePerUnit"]["USD"])
                except (KeyError, TypeError, ValueError):
                    continue
                if usd > 0:
                    found[f"{sku} ({dim.get('rateCode', '?')})"] = usd
    prices = set(found.values())
    if not prices:
        return None
    if len(prices) > 1:
        listed = ", ".join(f"{k}: ${v}" for k, v in sorted(found.items()))
        raise PriceFetchError(
            f"pricing:GetProducts for {instance_type} in {region} found different on-demand "
            f"prices for plain Linux: {listed}; set prices.instance_types.{instance_type} in the "
            "config to choose one"
        )
    return prices.pop()


def spot_median(history: Iterable[Mapping[str, Any]]) -> tuple[float, int] | None:
    """The spot price of one instance type from ``DescribeSpotPriceHistory`` records: each
    availability zone's latest record (by ``Timestamp``), then the median over zones.

    Records are ``{"AvailabilityZone": "us-east-1a", "SpotPrice": "12.50", "Timestamp": datetime,
    ...}`` of a single instance type. Returns ``(USD per instance-hour, number of zones)``, or
    None when there are no records. Raises PriceFetchError for a record without a zone, a
    timestamp or a numeric price.
    """
    latest: dict[str, tuple[datetime, float]] = {}
    for record in history:
        try:
            zone = record["AvailabilityZone"]
            at = record["Timestamp"]
            usd = float(record["SpotPrice"])
        except (KeyError, TypeError, ValueError) as e:
            raise PriceFetchError(
                f"ec2:DescribeSpotPriceHistory returned a record without a zone, time or price "
                f"({e!r}): {dict(record)}"
            ) from None
        if zone not in latest or at > latest[zone][0]:
            latest[zone] = (at, usd)
    if not latest:
        return None
    return statistics.median(usd for _, usd in latest.values()), len(latest)
