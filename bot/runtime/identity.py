"""Which cluster a request was made in, whatever the config's order says later.

A request names the cluster it was made in (``ActionRequest.cluster``) and acts on that cluster
alone. Versions before that stored an empty name for the only cluster of a bot of one and for the
first of several, and an empty name then went to whichever cluster was first when someone pressed
Approve. No migration can know the config, so the bot settles it when it starts:

- the store's *home cluster* is recorded once (``store_fact`` ``home_cluster``): the only
  cluster, or the first of ``clusters:`` at the first start of a version that records it. It never
  changes afterwards, whatever is reordered, added or removed;
- every request stored without a name is named after the home cluster (audited
  ``cluster-named``, logged): before the upgrade, the first cluster was where they were made;
- the home cluster's finding keys and alert period keys keep the form a bot of one cluster gives
  them, every other cluster's start with its name, so reordering ``clusters:`` changes no key.

Nothing here reads settings: the configured names are given.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from actions.store.database import Store
from actions.store.facts import HOME_CLUSTER

log = logging.getLogger(__name__)


def name_unnamed_requests(store: Store, home: str, now: datetime) -> list[int]:
    """Name every request stored without a cluster's name after ``home`` (the store's home
    cluster, where an older version made them), at ``now``; each is audited ``cluster-named`` and
    the count logged. Returns the ids named. Raises what the store raises."""
    named = store.name_unnamed_requests(
        home, now, why=f"stored without a cluster's name by an older version; {home} is the store's home cluster",
    )
    if named:
        log.warning(
            "%d request(s) stored without a cluster's name (ids %s%s) now name cluster %s, the store's home cluster: "
            "the first cluster when this version first started, where an older version made them",
            len(named), ", ".join(map(str, named[:10])), ", ..." if len(named) > 10 else "", home,
        )
    return named


def settle_home_cluster(store: Store, configured: Sequence[str], now: datetime) -> str:
    """The store's home cluster, recorded at ``now`` as the first of ``configured`` (the
    clusters' names, the first one first; the only one for a bot of one cluster) unless it was
    recorded before, then every request stored without a cluster's name named after it
    (:func:`name_unnamed_requests`). Run at start, after the store's migrations. Logs what it
    recorded, and warns when the home cluster is no longer configured (acting on its requests is
    then refused). Raises ValueError for no configured cluster, and what the store raises."""
    if not configured:
        raise ValueError("no cluster configured")
    fact = store.fact(HOME_CLUSTER)
    if fact is None:
        fact = store.record_fact(HOME_CLUSTER, configured[0], now)
        log.info(
            "store: cluster %s recorded as the home cluster (%s): its request keys keep the form of a bot of one "
            "cluster, and requests stored without a cluster's name were made in it",
            fact.value, "the only cluster" if len(configured) == 1 else f"the first of {', '.join(configured)}",
        )
    home = fact.value
    named = name_unnamed_requests(store, home, now)
    if home not in configured and named:
        log.warning(
            "store: the home cluster %s (recorded %s) is not configured (%s): acting on its requests is refused "
            "until it is", home, fact.recorded_at.isoformat(), ", ".join(configured),
        )
    return home
