"""Live AWS prices (``prices.aws``) in a running bot: who fetches them and who reads them.

One replica, the scheduler's leader, fetches them every ``prices.aws.refresh_seconds``
(:func:`refresh_prices`, the ``prices-refresh`` job) into the store. Every replica prices through
a :class:`ReloadingPriceBook`, which re-reads that cache every few minutes, so a replica that
never runs the job still uses what the leader fetched, and prices older than
``prices.aws.max_age()`` stop being used everywhere even when every fetch fails.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Callable

from actions.prices import AwsLivePrices, LivePrice, PriceBook, PriceCatalog
from actions.store import Store
from bot.settings import Settings

if TYPE_CHECKING:
    # Imported where live prices are used: boto3 is a tenth of a second of every start-up.
    from actions.sources.aws_prices import AwsPriceFetcher

__all__ = ["JOB_ID", "RELOAD_SECONDS", "ReloadingPriceBook", "price_book", "refresh_prices"]

log = logging.getLogger(__name__)

JOB_ID = "prices-refresh"
# How stale a replica's view of the cache may get; one indexed query per reload.
RELOAD_SECONDS = 300.0


def price_book(settings: Settings, store: Store | None = None, now: datetime | None = None) -> PriceBook:
    """The bundled catalog with the config's overrides on top and, when ``prices.aws.enabled`` and
    a ``store`` is given, the live AWS prices cached there (those of ``prices.aws.region`` fetched
    at most ``prices.aws.max_age()`` seconds before ``now``, aware UTC; required then)."""
    aws = settings.prices.aws
    if not aws.enabled or store is None:
        return PriceBook(PriceCatalog.bundled(), settings.prices)
    if now is None:
        raise ValueError("now is required to age the cached live prices")
    from actions.sources.aws_prices import live_prices_from_store

    return PriceBook(PriceCatalog.bundled(), settings.prices, live=live_prices_from_store(store, aws.region, aws.max_age(), now))


class ReloadingPriceBook:
    """A :class:`~actions.prices.PriceBook` over the store's live-price cache, rebuilt by
    :func:`price_book` when it is more than ``reload_seconds`` old at ``clock()`` (or on
    :meth:`reload`). Attribute access (``quote``, ``catalog``, ...) goes to the current book.
    A reload that fails (the database is down) is logged and the previous book kept."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        clock: Callable[[], datetime],
        reload_seconds: float = RELOAD_SECONDS,
    ):
        self._settings, self._store, self._clock = settings, store, clock
        self._every = timedelta(seconds=reload_seconds)
        self._lock = threading.Lock()
        now = clock()
        self._book, self._loaded_at = price_book(settings, store, now), now

    def reload(self, now: datetime) -> PriceBook:
        """Rebuild the book from the cache as of ``now`` and return it."""
        book = price_book(self._settings, self._store, now)
        with self._lock:
            self._book, self._loaded_at = book, now
        return book

    def current(self) -> PriceBook:
        """The book in use, reloaded first when it is older than ``reload_seconds``."""
        now = self._clock()
        with self._lock:
            book, fresh = self._book, now - self._loaded_at < self._every
        if fresh:
            return book
        try:
            return self.reload(now)
        except Exception as e:  # noqa: BLE001 - a database hiccup must not fail a price lookup
            log.warning("reloading live prices from the store failed, keeping the last ones: %s", e)
            return book

    def __getattr__(self, name: str) -> Any:
        return getattr(self.current(), name)


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
    ``aws.region``. Raises :class:`~actions.sources.aws_prices.PriceFetchError` when a fetch
    failed (after retries); what was fetched is cached and in use all the same.
    """
    if not aws.enabled:
        return []
    from actions.sources.aws_prices import default_fetcher, refresh_live_prices

    try:
        fetcher = fetcher or default_fetcher(aws.region)
        cached = refresh_live_prices(fetcher, store, aws.fetch_types(PriceCatalog.bundled()), now)
    finally:
        book.reload(now)
    log.info("cached %d live AWS prices for %s at %s", len(cached), aws.region, now.isoformat())
    return cached
