"""The usage ledger's row (:class:`LedgerRow`, one row of ``usage_hour``) and what an hour of it
can be: its measures (:data:`REQUESTED`, :data:`CAPACITY`) and statuses (``filled``, ``partial``, ``empty``).
Plain data shared by the ledger's arithmetic (:mod:`actions.ledger`), its table
(:mod:`actions.store.ledger`) and the ports between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

REQUESTED = "held"  # GPU-hours pods requested; "held" is the published value in usage_hour.measure
CAPACITY = "capacity"
FILLED, PARTIAL, EMPTY = "filled", "partial", "empty"
"""Hour statuses: ``filled`` (written, the data whole), ``partial`` (written, but Prometheus
warned, e.g. no DCGM series), ``empty`` (Prometheus answered but held no kube-state-metrics
series for the hour). All three are held; an hour without a status is missing."""
HOUR_STATUSES = (FILLED, PARTIAL, EMPTY)


@dataclass(frozen=True)
class LedgerRow:
    """One row of ``usage_hour``. ``hour`` is the hour's start (aware UTC) or, in a period's sums
    (:meth:`actions.store.ledger.LedgerStore.key_sums`), the latest hour the row's key was seen;
    ``cluster`` the ``cluster_name`` setting; ``measure`` :data:`REQUESTED` or :data:`CAPACITY`
    (``namespace``/``consumer_*`` empty). ``consumer_kind``/``consumer_name``: the consumer as
    :func:`actions.cost.engine.consumer_of` names it. ``namespace_team``: the namespace's
    ``costs.team_label`` value that hour. ``sharing`` how the GPUs were shared (``"MIG 1g.5gb"``,
    ``"shared 1/4"``; None when whole). ``capacity_type`` is None when ``kube_node_labels`` had
    none (the report then asks the Kubernetes API, as it does for Prometheus).
    ``gpu_hours``/``idle_gpu_hours``: GPU-hours (physical-GPU equivalents). ``usd_per_gpu_hour``
    (USD per GPU-hour) and ``price_source``: the price in force when the hour was written (shown,
    never re-used: a report prices with the prices of its own day). ``energy_kwh``: kWh drawn at
    the GPU (a capacity row: all the node's GPUs), ``idle_energy_kwh`` the part in idle steps,
    ``energy_gpu_hours`` the GPU-hours whose energy was measured (0 in rows written before the
    ledger kept energy: unknown, not zero)."""

    hour: datetime
    cluster: str
    measure: str
    namespace: str
    consumer_kind: str
    consumer_name: str
    node: str
    gpu_hours: float
    idle_gpu_hours: float = 0.0
    queue: str | None = None
    namespace_team: str | None = None
    gpu_model: str | None = None
    sharing: str | None = None
    instance_type: str | None = None
    capacity_type: str | None = None
    gpu_product: str | None = None
    replicas: int = 1
    node_pool: str | None = None
    usd_per_gpu_hour: float | None = None
    price_source: str | None = None
    energy_kwh: float = 0.0
    idle_energy_kwh: float = 0.0
    energy_gpu_hours: float = 0.0

    @property
    def day(self) -> date:
        """The UTC day of :attr:`hour`."""
        return self.hour.date()
