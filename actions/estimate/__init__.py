"""``/gpu estimate`` and ``gpu-cost-bot estimate``: what would N GPUs for a while cost.
:mod:`.grammar` (the words and patterns), :mod:`.parse` (a request read the way people type it),
:mod:`.market` (cloud, region, series and commitment words), :mod:`.request` (what is asked and
answered), :mod:`.price` (on-demand beside spot, adjusted for interruptions) and :mod:`.render`
(how it was read, and its JSON). Pure."""
