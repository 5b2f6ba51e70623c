"""The cache of live prices (``price_cache``): what the leader fetched from AWS, with when, read
by every replica's price book.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Iterable

import sqlalchemy as sa
from sqlmodel import Field, col, select

from actions.pricing.live import LiveOffer, LivePrice, live_offer
from actions.store.schema import StoreBase, StoreModel, UTCDateTime, as_utc

# Before the offers were told apart from capacity types, the Reserved Instance rate was cached
# as "reserved": such a row is that offer, never a price of reserved capacity.
_LEGACY_OFFERS = {"reserved": LiveOffer.RESERVED_INSTANCE}


class PriceCache(StoreModel, table=True):
    """The last live price fetched for one instance type, offer and region.

    The column ``capacity_type`` holds the :class:`~actions.pricing.live.LiveOffer` value
    (``on-demand``, ``spot`` or ``reserved-instance``; a ``reserved`` row, written by an older
    version, is read as ``reserved-instance``). ``usd_per_hour`` is USD per instance-hour;
    ``source`` says which API and how (see ``actions.pricing.live.LivePrice``); ``as_of`` is when
    the price was known current, ``fetched_at`` when it was written here (both aware UTC). One row
    per (instance type, offer, region): a refresh replaces it.
    """

    __tablename__ = "price_cache"

    instance_type: str = Field(sa_type=sa.String, primary_key=True)
    capacity_type: str = Field(sa_type=sa.String, primary_key=True)
    region: str = Field(sa_type=sa.String, primary_key=True)
    usd_per_hour: float = Field(sa_type=sa.Float)
    source: str = Field(sa_type=sa.Text)
    as_of: datetime = Field(sa_type=UTCDateTime)
    fetched_at: datetime = Field(sa_type=UTCDateTime)

    def live_price(self) -> LivePrice:
        """This row as the ``LivePrice`` it was stored from."""
        return LivePrice(
            instance_type=self.instance_type,
            offer=_LEGACY_OFFERS.get(self.capacity_type) or live_offer(self.capacity_type),
            usd_per_hour=self.usd_per_hour,
            source=self.source,
            as_of=self.as_of,
            region=self.region,
        )


class PriceCacheTable(StoreBase):
    """Writing and reading the live-price cache."""

    def put_prices(self, rows: Iterable[LivePrice], now: datetime) -> int:
        """Cache live prices, replacing the row of the same (instance type, offer, region)
        and stamping ``fetched_at = now``. One transaction. Returns the number of rows written.

        Raises ValueError for a naive ``now`` or ``as_of``, or a price that is not > 0 USD/hour.
        """
        now = as_utc(now)
        values = []
        for row in rows:
            if not row.usd_per_hour > 0:
                raise ValueError(f"{row.instance_type} {row.offer.value}: price {row.usd_per_hour} is not > 0")
            values.append(
                dict(
                    instance_type=row.instance_type,
                    capacity_type=live_offer(row.offer).value,
                    region=row.region,
                    usd_per_hour=float(row.usd_per_hour),
                    source=row.source,
                    as_of=as_utc(row.as_of, "as_of"),
                    fetched_at=now,
                )
            )
        if not values:
            return 0
        table = PriceCache.__table__
        keys = ("instance_type", "capacity_type", "region")
        with self._session() as session, session.begin():
            connection = session.connection()
            for value in values:
                statement = self._insert(table).values(**value)
                connection.execute(
                    statement.on_conflict_do_update(
                        index_elements=list(keys),
                        set_={k: statement.excluded[k] for k in value if k not in keys},
                    )
                )
        return len(values)

    def cached_prices(self, region: str, max_age_seconds: float, now: datetime) -> list[LivePrice]:
        """Cached prices of ``region`` fetched at most ``max_age_seconds`` before ``now``, by
        instance type then offer. Older rows are left out (not deleted)."""
        now = as_utc(now)
        oldest = now - timedelta(seconds=max_age_seconds)
        query = (
            select(PriceCache)
            .where(PriceCache.region == region, col(PriceCache.fetched_at) >= oldest)
            .order_by(col(PriceCache.instance_type), col(PriceCache.capacity_type))
        )
        with self._session() as session:
            return [row.live_price() for row in session.exec(query).all()]
