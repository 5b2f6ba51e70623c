"""The ``prices-refresh`` job: one replica, the scheduler's leader, fetches live AWS prices
(``prices.aws``) every ``prices.aws.refresh_seconds`` into the store, then reloads its own price
book. Every replica prices through a :class:`bot.runtime.prices.ReloadingPriceBook`, which
re-reads that cache, so a replica that never runs the job still uses what the leader fetched.
"""
from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from actions.pricing.catalog import PriceCatalog
from actions.pricing.live import LivePrice
from actions.pricing.overrides import AwsLivePrices
from actions.store.database import Store
from bot.runtime.prices import ReloadingPriceBook

if TYPE_CHECKING:
    # Imported where live prices are used: boto3 is a tenth of a second of every start-up.
    from actions.sources.aws.prices import AwsPriceFetcher


log = logging.getLogger(__name__)

JOB_ID = "prices-refresh"


def refresh_prices(
    store: Store,
    book: ReloadingPriceBook,
    aws: AwsLivePrices,
    now: datetime,
    *,
    fetcher: AwsPriceFetcher | None = None,
) -> list[LivePrice]:
    """Fetch the on-demand and spot prices of ``aws.fetch_types(...)`` (USD per instance-hour)
    into ``store`` as of ``now`` (aware UTC), then reload ``book`` (the bot's prices). Returns the
    prices cached; an empty list, with nothing fetched, when ``aws.enabled`` is false.

    ``fetcher`` defaults to one on boto3's default credential chain (IRSA, pod identity, ...) in
    ``aws.region``. Raises :class:`~actions.sources.aws.price_list.PriceFetchError` when a fetch
    failed (after retries); what was fetched is cached and in use all the same.
    """
    if not aws.enabled:
        return []
    from actions.sources.aws.prices import default_fetcher, refresh_live_prices

    try:
        fetcher = fetcher or default_fetcher(aws.region)
        cached = refresh_live_prices(fetcher, store, aws.fetch_types(PriceCatalog.bundled()), now)
    finally:
        book.reload(now)
    log.info("cached %d live AWS prices for %s at %s", len(cached), aws.region, now.isoformat())
    return cached
