"""What a GPU-hour costs: :mod:`.catalog` (the bundled catalog, ``data/prices.json``, each price
with its source and as-of date), :mod:`.overrides` (the config's ``prices:``), :mod:`.discounts`
(``prices.discounts``: Reserved Instances and Savings Plans, billing discounts on on-demand
hours), :mod:`.on_prem` (``prices.on_prem``: bought hardware amortised over years), :mod:`.live`
(prices fetched from a cloud's API, by offer) and :mod:`.book` (:class:`~.book.PriceBook`, the
lookup order over all of them). The AWS fetch itself is an edge: :mod:`actions.sources.aws`. Pure."""
