"""Every interface between the decisions and the outside: what the bot reads (the cluster, its
telemetry, its usage and history) and what it writes (a cluster, the state it keeps between sweeps,
the usage ledger). Each is a Protocol; the implementations are the edges: ``sources/`` (the
Kubernetes API, Prometheus, a kubectl dump, a recording), ``executors/`` (a live cluster, a
JupyterHub, a cluster in memory) and ``store/`` (the bot's database).

Times are aware UTC; durations seconds. What an implementation raises is named on its method.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from actions.model.advice_hours import AdviceHour
from actions.model.findings import ProposedAction
from actions.model.history import AdviceHistory
from actions.model.ledger import LedgerRow
from actions.model.snapshot import ClusterSnapshot
from actions.model.telemetry import TelemetrySnapshot
from actions.model.usage import DailyUsage, UsageData
from actions.policy.advice import AdvicePolicy
from actions.policy.rules import Policy
from actions.telemetry.activity import Key, Row

# --- reading ---------------------------------------------------------------------------------------


class ClusterReader(Protocol):
    """The cluster's state: the Kubernetes API (:class:`actions.sources.kube.reader.KubernetesSource`)
    or a kubectl dump (:class:`actions.executors.in_memory.InMemoryCluster`)."""

    def snapshot(self, now: datetime) -> ClusterSnapshot:
        """The cluster's GPU pods and their owners as of ``now``. Raises ClusterReadError
        (:mod:`actions.sources.kube.reader`) when the cluster cannot be read."""


class TelemetrySource(Protocol):
    """Per-GPU telemetry: Prometheus (:class:`actions.sources.prometheus.telemetry.PrometheusTelemetry`)
    or a recording (:class:`actions.sources.recording.RecordedTelemetry`)."""

    def fetch(self, at: datetime, policy: Policy) -> TelemetrySnapshot:
        """Per-GPU telemetry over ``policy.window_seconds`` ending at ``at``. Raises TelemetryError
        (:mod:`actions.sources.prometheus.api`) when Prometheus fails."""


class UsageSource(Protocol):
    """GPU usage over a period for cost reports: Prometheus
    (:class:`actions.sources.prometheus.usage.PrometheusUsage`) or the usage ledger
    (:class:`actions.ledger.rollup.LedgerUsage`)."""

    def fetch(self, start: datetime, end: datetime, policy: Policy) -> UsageData:
        """GPU usage over ``[start, end]`` (aware UTC), aggregated per pod, node and day."""


class HourlyUsageSource(UsageSource, Protocol):
    """A usage source the ledger rolls hours up from (Prometheus): its resolution and where its
    data starts."""

    step_seconds: float

    def first_data_hour(self, since: datetime, until: datetime) -> datetime | None:
        """The first hour in ``[since, until)`` (hour starts) that holds any usage, None when
        none does. Raises TelemetryError when Prometheus fails."""


class HistorySource(Protocol):
    """The GPU history advice is made from
    (:class:`actions.sources.prometheus.history.AdviceHistorySource`)."""

    def fetch(
        self, at: datetime, policy: AdvicePolicy, consumers: Mapping[str, tuple[str, Sequence[str]]],
        teams: Mapping[str, Sequence[str]], reserved_nodes: Sequence[str] = (),
        container_pods: Sequence[tuple[str, str]] = (),
    ) -> AdviceHistory:
        """The history over ``policy.window_seconds`` ending at ``at`` of ``consumers`` (key ->
        ``(namespace, pods)``), ``teams`` (team -> namespaces), ``reserved_nodes`` and the pods of
        several GPU containers ``container_pods`` (``(namespace, pod)``)."""


# --- writing ---------------------------------------------------------------------------------------


class ClusterWriter(Protocol):
    """Something that can apply an action to a cluster and undo it: the Kubernetes API
    (:class:`actions.executors.kubernetes.KubernetesWriter`), a JupyterHub
    (:class:`actions.executors.jupyterhub.HubWriter`), both (:class:`actions.executors.routing.RoutingWriter`)
    or a cluster in memory (:class:`actions.executors.in_memory.InMemoryCluster`)."""

    def apply(self, action: ProposedAction, now: datetime) -> dict:
        """Apply ``action`` at ``now``; returns the JSON-serialisable undo record to pass to
        ``restore``. Idempotent. Raises ExecutorError (e.g. "... no longer exists")."""
        ...

    def dry_run(self, action: ProposedAction, now: datetime) -> dict:
        """Send the request ``apply`` would send at ``now`` (the same merge patch, planned from
        the target as it is now, or the same DELETE) as a server-side dry run (``dryRun=All``),
        so the API server's validation and admission webhooks judge it and nothing changes.
        Nothing is sent when the target is already in the applied state (``apply`` would send
        nothing either). Returns the undo record ``apply`` would return were the target to stay
        as read: the caller stores it before acting, so a process that dies between the write
        and its record still knows what to restore. Raises ActionRefused
        (:mod:`actions.remedy.patches`) with the server's message and HTTP code when it refuses
        (400, 403, 422: validation or a webhook), ExecutorError("<target> no longer exists")
        (status 404) when the target is gone, and ExecutorError for anything else (never
        ``uncertain``: a dry run changes nothing). A writer whose backend has no dry run says
        what it checks instead (:class:`actions.executors.jupyterhub.HubWriter`: a read)."""
        ...

    def restore(self, action: ProposedAction, undo: dict, now: datetime) -> None:
        """Undo ``action`` using the record ``apply`` returned. Idempotent. Raises ExecutorError."""
        ...

    def current(self, action: ProposedAction) -> dict | None:
        """What ``action`` writes, as the cluster holds it now: its target's JSON (for a scale to
        zero, the target's ``scale`` subresource, an ``autoscaling/v1`` Scale; for a JupyterHub
        server, the Hub's model of it), None when it does not exist. Raises ExecutorError when
        it cannot be read."""
        ...


# --- state the bot keeps -----------------------------------------------------------------------------


class ActivityStateStore(Protocol):
    """Where the lookback answers are kept between sweeps (:class:`actions.store.activity.ActivityStore`)."""

    def read(self, cluster: str, policy: str) -> tuple[float | None, dict[Key, Row]]:
        """``(as_of, rows)``: unix seconds the rows are known up to (None: none kept)."""

    def write(self, cluster: str, policy: str, read_as_of: float | None, as_of: float, rows: Mapping[Key, Row]) -> bool:
        """Replace the rows merged from the state of ``read_as_of`` by ``rows`` known up to ``as_of``."""


class AdviceHourSource(Protocol):
    """Advice's facts of a piece of time, read live
    (:class:`actions.sources.prometheus.advice_hours.PrometheusAdviceHours`)."""

    def fetch(self, start: datetime, end: datetime, policy: AdvicePolicy) -> AdviceHour:
        """The facts of ``(start, end]``, at most an hour."""

    def first_data_hour(self, since: datetime, until: datetime) -> datetime | None:
        """The first hour in ``[since, until)`` with any DCGM series, None when none."""


class AdviceHourTable(Protocol):
    """The ledger's advice facts per hour (:class:`actions.store.advice_hours.AdviceHourStore`);
    ``tally`` is an :class:`actions.ledger.advice_tally.AdviceTally` (typed loosely: ports sit
    below the ledger)."""

    def write_hour(self, cluster: str, hour: AdviceHour, now: datetime) -> bool:
        """Write one whole hour's facts; False when another writer wrote the hour first."""

    def held(self, cluster: str, start: datetime, end: datetime, busy_engine_pct: float | None = None) -> set[datetime]:
        """The hours of ``[start, end)`` written (with that busy threshold, when given)."""

    def add_pods(self, tally: Any, cluster: str, ranges: Sequence[tuple[datetime, datetime]]) -> None:
        """Add the pods' facts of the hours in ``ranges`` to ``tally``."""

    def add_marks(self, tally: Any, cluster: str, ranges: Sequence[tuple[datetime, datetime]]) -> None:
        """Add the hour marks of the hours in ``ranges`` to ``tally``."""

    def drop_before(self, cutoff: datetime) -> int:
        """Delete every cluster's facts older than ``cutoff``; the pod rows deleted."""


class LedgerTable(Protocol):
    """The usage ledger's hours and rows (:class:`actions.store.ledger.LedgerStore`)."""

    def write_hour(
        self, cluster: str, hour: datetime, rows: Sequence[LedgerRow], status: str, now: datetime,
        detail: str | None = None,
    ) -> bool:
        """Write one hour's ``rows`` with its ``status``; False when another writer wrote the hour first."""

    def held_hours(self, cluster: str, start: datetime, end: datetime) -> dict[datetime, str]:
        """Hour start -> status of the hours in ``[start, end)`` the ledger holds."""

    def key_sums(
        self, cluster: str, ranges: Iterable[tuple[datetime, datetime]], namespaces: Sequence[str] | None = None,
    ) -> list[LedgerRow]:
        """The rows of ``ranges`` summed per key (namespace, owner, node, GPU model, price facts)."""

    def daily_sums(
        self, cluster: str, ranges: Iterable[tuple[datetime, datetime]], namespaces: Sequence[str] | None = None,
        groups: Mapping[str, str] | None = None,
    ) -> list[DailyUsage]:
        """The rows of ``ranges`` summed per day, namespace and price group (``groups``)."""
