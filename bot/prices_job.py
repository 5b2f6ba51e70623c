"""The scheduled refresh of live AWS prices (``prices.aws``), every ``prices.aws.refresh_seconds``.

Register it as a :class:`bot.scheduler.ScheduledJob` (id :data:`JOB_ID`, an interval trigger of
``prices.aws.refresh_seconds``): the scheduler claims each run once across replicas and records
its outcome. Whatever the outcome, the Runtime's PriceBook is rebuilt from the cache, so prices
older than ``prices.aws.max_age()`` stop being used even when every fetch fails.
"""

from __future__ import annotations

import logging
from datetime import datetime

from actions.prices import LivePrice, PriceCatalog
from actions.sources.aws_prices import AwsPriceFetcher, default_fetcher, refresh_live_prices
from bot.runtime import Runtime
from bot.settings import Settings
from bot.wiring import price_book

__all__ = ["JOB_ID", "refresh_prices_job"]

log = logging.getLogger(__name__)

JOB_ID = "prices-refresh"


def refresh_prices_job(
    rt: Runtime, settings: Settings, now: datetime, *, fetcher: AwsPriceFetcher | None = None
) -> list[LivePrice]:
    """Fetch the on-demand and spot prices of ``prices.aws.fetch_types(...)`` (USD per
    instance-hour) into ``rt.store`` as of ``now`` (aware UTC), then replace ``rt.prices`` with a
    PriceBook over the cache. Returns the prices cached; an empty list, with nothing fetched,
    when ``prices.aws.enabled`` is false.

    ``fetcher`` defaults to one on boto3's default credential chain (IRSA, pod identity, ...) in
    ``prices.aws.region``. Raises :class:`~actions.sources.aws_prices.PriceFetchError` when a
    fetch failed (after retries); what was fetched is cached and in use all the same.
    """
    aws = settings.prices.aws
    if not aws.enabled:
        return []
    try:
        fetcher = fetcher or default_fetcher(aws.region)
        cached = refresh_live_prices(fetcher, rt.store, aws.fetch_types(PriceCatalog.bundled()), now)
    finally:
        rt.prices = price_book(settings, rt.store, now)
    log.info("cached %d live AWS prices for %s at %s", len(cached), aws.region, now.isoformat())
    return cached
