"""What a GPU costs per hour: the lookup over the bundled catalog (:mod:`actions.pricing.catalog`),
config overrides (:mod:`actions.pricing.overrides`) and live prices (:mod:`actions.pricing.live`).

Money is USD. Catalog and instance-type overrides are per instance-hour; quotes are per GPU-hour
(instance price / GPUs in the instance). Every quote names its source and as-of date.

Lookup order of :meth:`PriceBook.quote`, first hit wins:

1. config override for the instance type (``prices.instance_types``), field by field over the
   catalog entry, so an override of the on-demand rate keeps the catalog's spot rate;
2. live on-demand and spot prices fetched from the cloud provider (``PriceBook(..., live=...)``,
   see :class:`~actions.pricing.live.LivePrice` and :mod:`actions.sources.aws.prices`; only when
   ``prices.aws.enabled``), also field by field: a configured on-demand rate still leaves the
   live spot price in use;
3. the bundled catalog entry for the instance type;
4. the config flat price for the GPU family (``prices.gpu_families``, for on-prem or reserved
   capacity, the same for every capacity type);
5. on-prem hardware amortised (``prices.on_prem``: the family's entry, else its default; also for
   a node with no GPU model known), capacity type RESERVED, ``energy_billed`` (see
   :mod:`actions.pricing.on_prem`); not for :meth:`PriceBook.gpu_hour`, nor a strict spot request;
6. the catalog default for the GPU family: the median per-GPU-hour price over the catalog entries
   of that family (spot median for spot capacity);

and otherwise :class:`PriceNotFound`.

Capacity types (Karpenter's ``karpenter.sh/capacity-type`` values): SPOT uses the spot price when
one is known, else the on-demand price (the quote's source says so); ON_DEMAND and UNKNOWN use
on-demand; RESERVED (On-Demand Capacity Reservations and Capacity Blocks, which EC2 charges at the
on-demand rate or the block's own price) uses ``prices.instance_types.<type>.reserved_usd_per_hour``
when configured, else on-demand. A live Reserved Instance rate (offer ``reserved-instance``) never
prices capacity, so live prices on or off price a reserved node alike; it only tells the advice
what a commitment would cost (:meth:`PriceBook.commitment_quote`).

Billing discounts (``prices.discounts``: Reserved Instances, Savings Plans) apply to hours priced
at the on-demand rate, whatever the capacity type: ON_DEMAND, UNKNOWN, and RESERVED without a
configured reservation rate; never to spot, a reservation's own rate or a flat family price. A
discount naming the instance type wins over one naming its GPU family. The discounted quote's
``source`` ends with the discount (kind, ``prices.discounts[i]``, terms, note, as-of date); its
``as_of`` is the on-demand price's for a percent, the discount's for a rate.

A quote keeps the capacity type it was asked for (an on-prem quote's is RESERVED); its ``source``
says which price was used. A config price without ``as_of`` gives a quote with an empty ``as_of``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Mapping

from actions.model.kube import CapacityType
from actions.model.quote import PriceQuote
from actions.model.times import format_time
from actions.pricing.catalog import PriceCatalog, family_key, instance_key
from actions.pricing.discounts import Discount
from actions.pricing.live import LiveKey, LiveOffer, LivePrice, live_offer
from actions.pricing.on_prem import on_prem_quote
from actions.pricing.overrides import PriceOverrides


def config_example(
    instance_type: str | None, family: str | None, *, spot: bool = False, on_prem: bool = False
) -> str:
    """The config lines that would price ``instance_type`` (USD per instance-hour) or ``family``
    (USD per GPU-hour), as one-line YAML a reader can paste. With ``spot``, only the instance
    type's spot rate: a flat family price is not a spot price. With ``on_prem`` (a node without
    an instance type), ``prices.on_prem`` too. The figures are placeholders."""
    if spot:
        return f"prices: {{instance_types: {{{instance_type or 'p5.48xlarge'}: {{spot_usd_per_hour: 20.0}}}}}}"
    examples = []
    if instance_type:
        examples.append(
            f"prices: {{instance_types: {{{instance_type}: {{on_demand_usd_per_hour: 12.0, gpus: 8}}}}}}"
        )
    examples.append(f"prices: {{gpu_families: {{{family or 'H100'}: {{usd_per_gpu_hour: 2.5}}}}}}")
    if on_prem:
        examples.append('prices: {on_prem: {usd_per_gpu: 30000, years: 4, as_of: "2025-06"}}')
    return " or ".join(examples)


class PriceNotFound(LookupError):
    """No price could be found; the message lists what was tried and how to configure one."""


# --- the lookup ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _InstancePrice:
    usd_per_hour: float
    source: str
    as_of: str


class PriceBook:
    """Answers "what does one GPU of this node cost per hour" from the catalog, the config and,
    when given, live prices.

    ``live`` maps ``(instance_type, offer)`` to a :class:`LivePrice` (USD per instance-hour;
    offers as :class:`~actions.pricing.live.LiveOffer` or their values ``"on-demand"``, ``"spot"``,
    ``"reserved-instance"``; instance types match as in :func:`instance_key`). On-demand and spot
    prices price capacity; a Reserved Instance rate only :meth:`commitment_quote`. A live price
    needs the instance's GPU count from the catalog or from ``prices.instance_types.<type>.gpus``.
    Raises ValueError for a key whose offer is none of those (a capacity type ``reserved`` among
    them). Pure: no I/O after construction.
    """

    def __init__(
        self,
        catalog: PriceCatalog,
        overrides: PriceOverrides | None = None,
        live: Mapping[LiveKey, LivePrice] | None = None,
    ):
        self.catalog = catalog
        self.overrides = overrides or PriceOverrides()
        self.live: dict[LiveKey, LivePrice] | None = (
            None
            if live is None
            else {(instance_key(t), live_offer(c)): p for (t, c), p in live.items()}
        )

    def quote(
        self,
        instance_type: str | None,
        capacity_type: CapacityType,
        gpu_model: str | None,
        *,
        strict: bool = False,
    ) -> PriceQuote:
        """USD per GPU-hour of one GPU on a node of ``instance_type`` bought as ``capacity_type``.

        ``gpu_model`` (a DCGM ``modelName``, a GFD product or a family key) is used when the
        instance type has no price. With ``strict`` a spot request is answered only by a spot
        price, as in :meth:`gpu_hour`. Raises PriceNotFound listing what was tried.
        """
        tried: list[str] = []
        if instance_type:
            q = self._instance_quote(instance_type, capacity_type, gpu_model, tried, strict=strict)
            if q is not None:
                return q
        else:
            tried.append("instance type: not known for this node")
        family = family_key(gpu_model) if gpu_model else None
        if family is None:
            tried.append("GPU family: no GPU model known")
            q = on_prem_quote(self.overrides.on_prem, None, capacity_type, tried, strict=strict)
        else:
            q = self._family_quote(family, capacity_type, strict=strict, tried=tried, on_prem=True)
        if q is not None:
            return q
        example = config_example(instance_type, family, on_prem=not instance_type)
        raise PriceNotFound(
            f"no price for instance type {instance_type!r}, GPU model {gpu_model!r} ({capacity_type.value}): "
            + "; ".join(tried)
            + f". Add a price to the config, e.g. {example}"
        )

    def gpu_hour(
        self, gpu_model_or_alias: str, capacity_type: CapacityType, *, strict: bool = False
    ) -> PriceQuote:
        """USD per GPU-hour for a GPU family named loosely (``"a100"``, ``"H100"``, ``"t4"``,
        ``"NVIDIA A10G"``; case-insensitive): the config flat price, else the catalog median.

        With ``strict`` a spot request is answered only by a spot price (no on-demand fallback,
        and a flat config price, which is not a spot price, does not count). Raises PriceNotFound
        naming the families that have prices.
        """
        tried: list[str] = []
        family = family_key(gpu_model_or_alias)
        q = self._family_quote(family, capacity_type, strict=strict, tried=tried)
        if q is not None:
            return q
        raise PriceNotFound(
            f"no {capacity_type.value} price for GPU model {gpu_model_or_alias!r}: "
            + "; ".join(tried)
            + f". GPU families with prices: {', '.join(self.known_families())}."
            + f" Add a price to the config, e.g. {config_example(None, family)}"
        )

    def commitment_quote(self, instance_type: str | None) -> PriceQuote | None:
        """What committing to ``instance_type`` would cost, USD per GPU-hour, for advice, only when
        a rate is known: the config's ``reserved_usd_per_hour`` (what your reserved capacity of
        that type is billed at, as :meth:`quote` prices it), else the live Reserved Instance rate
        (1-year standard No Upfront, AWS Pricing API; ``basis="commitment"``). ``None`` otherwise:
        the on-demand price says nothing about what a commitment saves. Never the price of a node:
        :meth:`quote` does not use a live Reserved Instance rate."""
        if not instance_type:
            return None
        found = self.overrides.instance(instance_type)
        if found and found[1].reserved_usd_per_hour:
            try:
                return self.quote(instance_type, CapacityType.RESERVED, None)
            except PriceNotFound:
                return None
        live = self._live(instance_type, LiveOffer.RESERVED_INSTANCE)
        gpus = self.instance_gpus(instance_type)
        if live is None or not gpus:
            return None
        entry = self.catalog.entry(instance_type)
        fetched = format_time(live.as_of)
        return PriceQuote(
            usd_per_gpu_hour=live.usd_per_hour / gpus,
            capacity_type=CapacityType.RESERVED,
            source=f"{live.source}, fetched {fetched}",
            as_of=fetched,
            basis="commitment",
            instance_type=instance_type,
            gpu_model=entry.gpu_model if entry else None,
        )

    def instance_names(self) -> list[str]:
        """Instance types (and catalog aliases) that can be named in a request: the catalog's
        lookup keys and the config's ``prices.instance_types``, as :func:`instance_key` gives them."""
        return sorted(set(self.catalog.names()) | {instance_key(n) for n in self.overrides.instance_types})

    def instance_gpus(self, instance_type: str) -> int | None:
        """GPUs in one ``instance_type`` (config ``gpus`` first, then the catalog), or ``None``."""
        found = self.overrides.instance(instance_type)
        if found is not None and found[1].gpus:
            return found[1].gpus
        entry = self.catalog.entry(instance_type)
        return entry.gpus if entry else None

    def known_families(self) -> list[str]:
        """GPU families that can be priced (catalog or config), sorted."""
        return sorted(set(self.catalog.families()) | set(self.overrides.gpu_families))

    # --- steps -------------------------------------------------------------------------------------

    def _instance_quote(
        self,
        instance_type: str,
        capacity: CapacityType,
        gpu_model: str | None,
        tried: list[str],
        *,
        strict: bool = False,
    ) -> PriceQuote | None:
        found = self.overrides.instance(instance_type)
        entry = self.catalog.entry(instance_type)
        live_od = self._live(instance_type, LiveOffer.ON_DEMAND)
        live_spot = self._live(instance_type, LiveOffer.SPOT)
        tried.append(
            f"config prices.instance_types.{instance_type}: {'set' if found else 'not set'}"
        )
        if self.live is not None:
            tried.append(
                f"live prices for {instance_type}: "
                + ("found" if live_od or live_spot else "none fetched or all too old")
            )
        tried.append(
            f"bundled catalog instance type {instance_type}: {'found' if entry else 'not listed'}"
        )
        if found is None and entry is None and live_od is None and live_spot is None:
            return None
        name, override = found if found else (instance_type, None)
        gpus = (override.gpus if override and override.gpus else None) or (entry.gpus if entry else None)
        if gpus is None:
            tried.append(
                f"config prices.instance_types.{name} has no gpus, needed for an instance type the catalog does not list"
            )
            return None
        family = entry.gpu_model if entry else (family_key(gpu_model) if gpu_model else None)
        discount = self.overrides.discount(instance_type, family)

        def discounted(p: _InstancePrice | None) -> _InstancePrice | None:
            return p if p is None or discount is None else _discounted(p, *discount, gpus)

        def from_override(field: str, label: str) -> _InstancePrice | None:
            value = getattr(override, field) if override else None
            if value is None:
                return None
            note = f": {override.note}" if override and override.note else ""
            return _InstancePrice(
                value,
                f"config override prices.instance_types.{name} ({label}){note}",
                (override.as_of if override else None) or "",
            )

        def from_live(live: LivePrice | None) -> _InstancePrice | None:
            if live is None:
                return None
            fetched = format_time(live.as_of)
            return _InstancePrice(live.usd_per_hour, f"{live.source}, fetched {fetched}", fetched)

        def from_catalog(spot: bool) -> _InstancePrice | None:
            if entry is None:
                return None
            if spot:
                if entry.spot_usd_per_hour is None:
                    return None
                return _InstancePrice(
                    entry.spot_usd_per_hour,
                    f"bundled catalog: {entry.spot_source or entry.source} (spot)",
                    entry.spot_as_of or entry.as_of,
                )
            # The entry's note (a known price change, the region used) travels in the source, so
            # every place that shows where a price came from shows it too.
            note = f"; {entry.note}" if entry.note else ""
            return _InstancePrice(
                entry.on_demand_usd_per_hour, f"bundled catalog: {entry.source}{note}", entry.as_of
            )

        on_demand = (
            from_override("on_demand_usd_per_hour", "on-demand")
            or from_live(live_od)
            or from_catalog(False)
        )
        price: _InstancePrice | None
        if capacity is CapacityType.SPOT:
            price = (
                from_override("spot_usd_per_hour", "spot") or from_live(live_spot) or from_catalog(True)
            )
            if price is None and on_demand is not None and not strict:
                price = _with_note(on_demand, "no spot price known, priced at on-demand")
        elif capacity is CapacityType.RESERVED:
            # The reservation's own rate, else on-demand: never a Reserved Instance rate, which is
            # a billing discount (prices.discounts), not what reserved capacity costs.
            price = from_override("reserved_usd_per_hour", "reserved")
            if price is None and on_demand is not None:
                price = discounted(_with_note(on_demand, "reserved capacity priced at on-demand"))
        elif capacity is CapacityType.UNKNOWN:
            price = discounted(on_demand and _with_note(on_demand, "capacity type unknown, priced as on-demand"))
        else:
            price = discounted(on_demand)
        if price is None:
            fallback = "" if strict and capacity is CapacityType.SPOT else " or on-demand"
            tried.append(f"no {capacity.value}{fallback} price for {instance_type}")
            return None
        return PriceQuote(
            usd_per_gpu_hour=price.usd_per_hour / gpus,
            capacity_type=capacity,
            source=price.source,
            as_of=price.as_of,
            basis="instance-type",
            instance_type=instance_type,
            gpu_model=family,
        )

    def _live(self, instance_type: str, offer: LiveOffer) -> LivePrice | None:
        if self.live is None:
            return None
        return self.live.get((instance_key(instance_type), offer))

    def _family_quote(
        self,
        family: str,
        capacity: CapacityType,
        *,
        strict: bool,
        tried: list[str],
        on_prem: bool = False,
    ) -> PriceQuote | None:
        flat = self.overrides.gpu_families.get(family)
        tried.append(f"config prices.gpu_families.{family}: {'set' if flat else 'not set'}")
        if flat is not None:
            if strict and capacity is CapacityType.SPOT:
                tried.append(f"a flat price for {family} is not a spot price")
                return None
            note = f": {flat.note}" if flat.note else ""
            return PriceQuote(
                usd_per_gpu_hour=flat.usd_per_gpu_hour,
                capacity_type=capacity,
                source=f"config flat price prices.gpu_families.{family}{note}",
                as_of=flat.as_of or "",
                basis="gpu-model",
                gpu_model=family,
            )
        owned = on_prem_quote(self.overrides.on_prem, family, capacity, tried, strict=strict) if on_prem else None
        if owned is not None:
            return owned
        entries = self.catalog.family_entries(family)
        if not entries:
            tried.append(f"bundled catalog: no {family} instance types")
            return None
        spot_entries = [e for e in entries if e.spot_usd_per_hour is not None]
        if capacity is CapacityType.SPOT and spot_entries:
            values = [e.spot_usd_per_gpu_hour for e in spot_entries]
            estimated = any(e.spot_estimate for e in spot_entries)
            what = "spot" + (", includes estimated spot figures" if estimated else "")
            used = spot_entries
            as_ofs = [e.spot_as_of or e.as_of for e in spot_entries]
        else:
            if capacity is CapacityType.SPOT and strict:
                tried.append(f"bundled catalog: no spot price for any {family} instance type")
                return None
            values = [e.on_demand_usd_per_gpu_hour for e in entries]
            what = {
                CapacityType.SPOT: "on-demand; no spot price known",
                CapacityType.UNKNOWN: "on-demand; capacity type unknown",
                CapacityType.RESERVED: "on-demand; reserved capacity priced at on-demand",
            }.get(capacity, "on-demand")
            used = entries
            as_ofs = [e.as_of for e in entries]
        names = ", ".join(e.instance_type for e in used)
        over = "1 instance type" if len(used) == 1 else f"median over {len(used)} instance types"
        median = _InstancePrice(
            statistics.median(values),  # type: ignore[type-var]
            f"bundled catalog: {family} price per GPU-hour, {over} ({names}), {what}",
            _as_of_range(as_ofs),
        )
        discount = self.overrides.discount(None, family)
        if discount is not None and capacity is not CapacityType.SPOT:
            median = _discounted(median, *discount, 1)
        return PriceQuote(
            usd_per_gpu_hour=median.usd_per_hour,
            capacity_type=capacity,
            source=median.source,
            as_of=median.as_of,
            basis="default",
            gpu_model=family,
        )


def _with_note(p: _InstancePrice, note: str) -> _InstancePrice:
    return _InstancePrice(p.usd_per_hour, f"{p.source}; {note}", p.as_of)


def _discounted(p: _InstancePrice, index: int, discount: Discount, gpus: int) -> _InstancePrice:
    """``p`` (an on-demand price of ``gpus`` GPUs) after ``discount``; the source names it, and a
    rate (not a percent) brings its own as-of date."""
    as_of = p.as_of if discount.percent is not None else discount.as_of
    return _InstancePrice(discount.apply(p.usd_per_hour, gpus), f"{p.source}; {discount.label(index)}", as_of)


def _as_of_range(dates: list[str]) -> str:
    lo, hi = min(dates), max(dates)
    return lo if lo == hi else f"{lo} to {hi}"
