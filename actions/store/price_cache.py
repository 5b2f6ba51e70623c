"""The cache of live prices (``price_cache``): what the leader fetched from AWS, with when, read
by every replica's price book.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Iterable

import sqlalchemy as sa
from sqlmodel import Field, col, select

from actions.model.kube import CapacityType
from actions.pricing.live import LivePrice
from actions.store.schema import StoreBase, StoreModel, UTCDateTime, as_utc


class PriceCache(StoreModel, table=True):
    """The last live price fetched for one instance type, capacity type and region.

    ``usd_per_hour`` is USD per instance-hour; ``source`` says which API and how (see
    ``actions.pricing.live.LivePrice``); ``as_of`` is when the price was known current, ``fetched_at``
    when it was written here (both aware UTC). One row per (instance type, capacity type, region):
    a refresh replaces it.
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
            capacity_type=CapacityType(self.capacity_type),
            usd_per_hour=self.usd_per_hour,
            source=self.source,
            as_of=self.as_of,
            region=self.region,
        )


class PriceCacheTable(StoreBase):
    """Writing and reading the live-price cache."""

    def put_prices(self, rows: Iterable[LivePrice], now: datetime) -> int:
        """Cache live prices, replacing the row of the same (instance type, capacity type, region)
        and stamping ``fetched_at = now``. One transaction. Returns the number of rows written.

        Raises ValueError for a naive ``now`` or ``as_of``, or a price that is not > 0 USD/hour.
        """
        now = as_utc(now)
        values = []
        for row in rows:
            if not row.usd_per_hour > 0:
                raise ValueError(f"{row.instance_type} {row.capacity_type}: price {row.usd_per_hour} is not > 0")
            values.append(
                dict(
                    instance_type=row.instance_type,
                    capacity_type=CapacityType(row.capacity_type).value,
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
        instance type then capacity type. Older rows are left out (not deleted)."""
        now = as_utc(now)
        oldest = now - timedelta(seconds=max_age_seconds)
        query = (
            select(PriceCache)
            .where(PriceCache.region == region, col(PriceCache.fetched_at) >= oldest)
            .order_by(col(PriceCache.instance_type), col(PriceCache.capacity_type))
        )
        with self._session() as session:
            return [row.live_price() for row in session.exec(query).all()]
