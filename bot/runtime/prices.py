"""The prices a running bot uses: the bundled catalog with the config's overrides and, when
``prices.aws.enabled``, the live AWS prices the leader cached in the store (:func:`price_book`);
every replica prices through a :class:`ReloadingPriceBook`, which re-reads that cache every few
minutes, so prices older than ``prices.aws.max_age()`` stop being used even when every fetch
fails.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Callable

from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.store.database import Store
from bot.settings import Settings

if TYPE_CHECKING:
    # Imported where live prices are used: boto3 is a tenth of a second of every start-up.
    pass


log = logging.getLogger(__name__)
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
    from actions.sources.aws.prices import live_prices_from_store

    return PriceBook(PriceCatalog.bundled(), settings.prices, live=live_prices_from_store(store, aws.region, aws.max_age(), now))


class ReloadingPriceBook:
    """A :class:`~actions.pricing.book.PriceBook` over the store's live-price cache, rebuilt by
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
