"""The running bot's parts, assembled once by :mod:`bot.wiring` and given to every chat handler,
and the questions every front end asks of them: what is idle now, what waits in Kueue's queues,
who may approve for a team, what each team spent.

Nothing here reads settings or the environment. The jobs never see a Runtime: ``bot.wiring``
hands each job the parts it needs, most often bound methods of this one.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from actions.advice.request import RIGHT_SIZE
from actions.advice.round import AdviceResult, AdviceSetup, gather_advice, recheck_change
from actions.budgets.model import EXHAUSTED, Budget
from actions.cost.fleet import FleetReport, fleet_report
from actions.cost.report import CostReport
from actions.cost.reporting import CostSetup, build_fleet_report, build_report
from actions.detect.clusters import in_cluster
from actions.detect.detection import Detection, with_energy
from actions.detect.gate import pods_of, policy_for, refusals, team_of
from actions.energy.settings import EnergyFactors
from actions.kueue.queues import QueueReport, queue_report
from actions.model.findings import Finding
from actions.model.snapshot import ClusterSnapshot
from actions.model.times import utc_now
from actions.policy.namespaces import PolicyBook
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory
from actions.ports import ClusterReader, ClusterWriter, TelemetrySource
from actions.pricing.book import PriceBook
from actions.remedy.patches import ExecutorError
from actions.sources.kube.reader import ClusterReadError
from actions.store import bulk as store_bulk
from actions.store.database import Store
from actions.text import one_line
from bot.runtime.budgets import hold_refusal
from bot.runtime.chat import Chat
from bot.runtime.clusters import ClusterParts, advice_of_clusters, detect_clusters, detect_with
from bot.runtime.latest import LatestFindings
from bot.runtime.visibility import queue_positions
from bot.service.metrics import BotMetrics
from bot.service.process import ActionsInFlight
from bot.service.work import SingleFlight

log = logging.getLogger(__name__)


class ReportUnavailable(RuntimeError):
    """The bot was started without a usage source, so it cannot report cost."""


class UnknownCluster(ValueError):
    """A cluster name that is not one of the configured clusters; the message lists them."""


@dataclass(frozen=True)
class ActionTimeouts:
    """How long acting may take, in seconds: ``recheck`` the evidence re-read before acting,
    ``apply`` the writer's reads and patches (conflict retries included), ``settle`` how long a
    patch nobody answered may still land. A request being acted on is settled by others only
    after :meth:`acting` seconds, when nothing its replica sent can land any more."""

    recheck: float = 60.0
    apply: float = 60.0
    settle: float = 50.0

    def acting(self, recheck: bool = True) -> float:
        """Seconds from the decision until nothing sent for it can land (``recheck``: the action
        re-reads the evidence first)."""
        return (self.recheck if recheck else 0.0) + self.apply + self.settle


@dataclass
class Runtime:
    """Everything a button press or a slash command needs.

    ``clock`` returns the current time (tests and the demo pass a controllable one);
    ``group_members`` expands a Slack user group id into user ids (empty set when unknown);
    ``metrics``, when set, records Kubernetes read errors, actions and API errors (see
    :mod:`bot.service.metrics`); ``inflight`` tracks the actions being applied or restored, for a
    graceful shutdown; ``costs`` is None when no usage source is configured; ``timeouts`` bound
    an action (see :class:`ActionTimeouts`).

    ``clusters`` lists every cluster of a bot of several, the first one first (empty for a bot of
    one cluster, which ``cluster``, ``telemetry``, ``writer`` and ``costs`` are, named
    ``cluster_name``); with several, those four are the first cluster's. ``home_cluster`` is the
    cluster of several whose finding keys keep the form a bot of one cluster gives them, recorded
    in the store once (:mod:`bot.runtime.identity`) so that reordering ``clusters:`` changes no
    key (None: the first). ``unreachable`` holds the clusters the last whole sweep could not read
    (cluster -> why), for the digests. A request acts on the cluster it names, never on another.

    ``latest`` keeps each cluster's latest findings, for :meth:`read_queues`.
    """

    store: Store
    chat: Chat
    cluster: ClusterReader
    telemetry: TelemetrySource
    writer: ClusterWriter
    prices: PriceBook
    teams: TeamDirectory
    policy: Policy
    dry_run: bool
    clock: Callable[[], datetime] = utc_now
    group_members: Callable[[str], set[str]] = lambda group: set()
    metrics: BotMetrics | None = None
    inflight: ActionsInFlight = field(default_factory=ActionsInFlight)
    costs: CostSetup | None = None
    timeouts: ActionTimeouts = field(default_factory=ActionTimeouts)
    clusters: tuple[ClusterParts, ...] = ()
    cluster_name: str = "default"
    home_cluster: str | None = None
    unreachable: dict[str, str] = field(default_factory=dict)
    advice_setup: AdviceSetup | None = None
    configured_budgets: tuple[Budget, ...] = ()  # the config's budgets: (bot.runtime.budgets)
    latest: LatestFindings = field(default_factory=LatestFindings)
    # Callers asking for the same period at once (ten people typing /gpu cost) share one report,
    # also those whose command waited in the queue while it was computed.
    _reports: SingleFlight[CostReport] = field(default_factory=lambda: SingleFlight(keep_seconds=60), repr=False)
    _fleets: SingleFlight[FleetReport] = field(default_factory=lambda: SingleFlight(keep_seconds=60), repr=False)

    # --- what is idle, what waits ---------------------------------------------------------------

    def snapshot(self, now: datetime) -> ClusterSnapshot:
        """The cluster at ``now``; a read failure is counted in ``metrics`` and re-raised
        (ClusterReadError, or whatever the reader raises)."""
        try:
            return self.cluster.snapshot(now)
        except ClusterReadError:
            if self.metrics:
                self.metrics.kubernetes_error("read")
            raise

    def snapshot_of(self, cluster: str, now: datetime) -> ClusterSnapshot:
        """The cluster named ``cluster`` (a request's) at ``now``: :meth:`snapshot` for a bot of
        one cluster. Raises UnknownCluster for a name not configured, and what the reader raises."""
        return self.snapshot(now) if not self.clusters else self.parts(cluster).cluster.snapshot(now)

    def detection(self, now: datetime, cluster: str | None = None) -> Detection:
        """Read the cluster and telemetry at ``now`` and run the idle detector: the first stage of
        every sweep, with what the data lacked. Raises what the sources raise.

        With several clusters, each is read in turn and a cluster that cannot be read fails
        alone: it is logged, counted (``gpu_cost_bot_cluster_sweep_failures_total``), kept in
        :attr:`unreachable` and returned in the answer's ``unreachable``
        (:class:`~actions.detect.clusters.FleetDetection`); NoClusterAnswered when none could be.
        ``cluster`` (a name) reads that one alone and raises what its sources raise,
        UnknownCluster for a name not configured (an empty one too)."""
        if not self.clusters:
            if cluster is not None and cluster != self.cluster_name:
                raise UnknownCluster(self._unknown(cluster))
            found = detect_with(self.snapshot(now), self.telemetry, self.prices, self.policy, self.teams, now)
            found = with_energy(found, self.costs.energy if self.costs else None)
            self.latest.keep(self.cluster_name, now, found.findings)
            return found
        chosen = self.clusters if cluster is None else (self.parts(cluster),)
        unreachable: dict[str, str] = {}

        def failed(name: str, e: Exception) -> None:
            if isinstance(e, ClusterReadError) and self.metrics:
                self.metrics.kubernetes_error("read")
            if cluster is not None:
                raise e
            unreachable[name] = one_line(e)
            if self.metrics:
                self.metrics.cluster_sweep_failed(name)

        try:
            found = detect_clusters(
                chosen, self.home(), self.prices, self.policy, self.teams, now, on_failure=failed,
            )
        finally:
            if cluster is None:
                # Also when none answered: the digests then name every one of them.
                self.unreachable = unreachable
        self.latest.keep_fleet([c.name for c in chosen], now, found)
        return found

    def detect(self, now: datetime, cluster: str | None = None) -> list[Finding]:
        """The idle findings at ``now`` (:meth:`detection`), as the re-check right before acting
        reads them (``cluster``: the request's cluster alone). Raises what the sources raise."""
        return self.detection(now, cluster).findings

    def count_failure(self, verb: str, operation: str, error: Exception) -> None:
        """Count a failed action (``verb``; ``operation`` apply, recheck or restore) in the
        metrics, and an API error when ``error`` came from the Kubernetes API."""
        if not self.metrics:
            return
        self.metrics.action_failed(verb, operation)
        # ExecutorErrors carry an HTTP status when the API server refused, and are raised from
        # the transport's exception when it could not be reached; the rest are the bot's own
        # refusals (an unsupported target, an unusable undo record) and no API error.
        if isinstance(error, ExecutorError) and (error.status or error.__cause__ is not None):
            self.metrics.kubernetes_error("restore" if operation == "restore" else "apply")

    def recheck(self, finding: Finding, key: str, cluster: str, now: datetime) -> Finding | None:
        """A request's ``finding`` (its ``key``) as a fresh read of ``cluster`` shows it right
        before acting: an idle kind detected again (None: no longer found); a budget's hold while
        its budget still asks for it (:func:`~bot.runtime.budgets.hold_refusal`); a right-sizing
        while its advice still holds over the re-check window (:meth:`advice_refusal`); without
        its action, why the gate or the re-check refuses it now, in ``report_reason``. Raises
        what the sources raise."""
        if finding.kind == EXHAUSTED:
            refused = hold_refusal(self, finding, cluster, now)
            return dataclasses.replace(finding, action=None, report_reason="; ".join(refused)) if refused else finding
        if finding.kind == RIGHT_SIZE:
            snapshot = self.snapshot_of(cluster, now)
            refused = self.gate(finding, cluster, now, snapshot)
            if not refused and (changed := self.advice_refusal(finding, cluster, snapshot, now)):
                refused = (f"the advice no longer holds: {changed}",)
            return dataclasses.replace(finding, action=None, report_reason="; ".join(refused)) if refused else finding
        fresh = {f.key: f for f in self.detect(now, cluster=cluster)}.get(key)
        # Detection leaves out an opted-out consumer altogether: the gate says why, not "busy".
        refused = self.gate(finding, cluster, now) if fresh is None else ()
        return dataclasses.replace(finding, action=None, report_reason="; ".join(refused)) if refused else fresh

    def gate(
        self, finding: Finding, cluster: str, now: datetime, snapshot: ClusterSnapshot | None = None,
    ) -> tuple[str, ...]:
        """Why the one gate (:func:`actions.detect.gate.refusals`, mode ``report`` included)
        refuses ``finding``'s action at ``now``, on ``snapshot`` or a fresh read of ``cluster`` (a
        request's ``cluster``): one sentence per guard, empty when it may go. Raises what the
        reader raises."""
        action = finding.action
        if action is None:
            return ()
        snapshot = snapshot or self.snapshot_of(cluster, now)
        book = PolicyBook(self.policy, self.teams, snapshot.namespace_annotations)
        pods = pods_of(action.target, finding.pods, snapshot)
        return refusals(action, finding.consumer_kind, pods, snapshot, policy_for(book, finding), now,
                        team=team_of(action, self.teams))

    def advice_refusal(self, finding: Finding, cluster: str, snapshot: ClusterSnapshot, now: datetime) -> str | None:
        """Why a right-sizing ``finding``'s advice no longer holds at ``now`` in ``cluster``
        (:func:`actions.advice.round.recheck_change` over its target's pods in ``snapshot``), or
        None when it does. Raises TelemetryError when the history cannot be read."""
        resize = finding.action.resize if finding.action else None
        if resize is None or resize.limits is None:
            return None
        setup = self.parts(cluster).advice if self.clusters else self.advice_setup
        if setup is None:
            return "no Prometheus for advice history is configured for its cluster now, so it cannot be re-checked"
        pods = pods_of(finding.action.target, (), snapshot)
        return recheck_change(setup.history, setup.policy, resize, pods, finding.detected_at, now)

    # --- which cluster ----------------------------------------------------------------------------

    def cluster_names(self) -> list[str]:
        """The clusters' names, the first one first (``[cluster_name]`` for a bot of one)."""
        return [c.name for c in self.clusters] or [self.cluster_name]

    def energy_factors(self) -> EnergyFactors | Mapping[str, EnergyFactors | None] | None:
        """The PUE and carbon intensity figures are computed with: a bot of one cluster's (its
        cost setup's; ``None`` without one), or each cluster's by name (findings and advice name
        their cluster)."""
        if self.clusters:
            return {c.name: c.energy for c in self.clusters}
        return self.costs.energy if self.costs is not None else None

    def home(self) -> str:
        """The cluster whose finding and alert keys keep the form a bot of one cluster gives them:
        :attr:`home_cluster`, else the first cluster (``cluster_name`` for a bot of one). It may
        be none of the configured ones (removed from ``clusters:``): then every key names its
        cluster."""
        return self.home_cluster or self.cluster_names()[0]

    def request_cluster(self, found_in: str) -> str:
        """The cluster's name a request stores for a finding or advice made in ``found_in`` (its
        ``cluster``): ``found_in`` itself when it is configured; a bot of one cluster's findings
        carry no name, and its requests store its ``cluster_name``. Raises UnknownCluster for any
        other name, the empty one of a bot of several too: it is never guessed."""
        if not self.clusters and found_in in ("", self.cluster_name):
            return self.cluster_name
        if found_in and found_in in self.cluster_names():
            return found_in
        raise UnknownCluster(self._unknown(found_in))

    def _unknown(self, name: str) -> str:
        if not name:
            return (f"it names no cluster (stored by a version that did not record it; the bot names such requests "
                    f"when it starts); the clusters are {', '.join(self.cluster_names())}")
        if not self.clusters:
            return f"no cluster {name!r}; this bot watches one cluster, {self.cluster_name}"
        return f"no cluster {name!r}; the clusters are {', '.join(self.cluster_names())}"

    def parts(self, cluster: str) -> ClusterParts:
        """The configured cluster named ``cluster``. Raises UnknownCluster naming the configured
        ones for any other name (the empty one too), or when the bot watches one cluster only (its
        parts are the Runtime's own)."""
        if not self.clusters:
            raise UnknownCluster(f"this bot watches one cluster ({self.cluster_name}); `clusters:` is not configured")
        for c in self.clusters:
            if c.name == cluster:
                return c
        raise UnknownCluster(self._unknown(cluster))

    def writer_for(self, cluster: str) -> ClusterWriter:
        """The writer that acts on the cluster named ``cluster`` (a request's ``cluster``). Raises
        UnknownCluster for a name that is not configured (one removed from ``clusters:``, or an
        empty one): nothing is sent anywhere else instead."""
        if not self.clusters:
            if cluster != self.cluster_name:
                raise UnknownCluster(self._unknown(cluster))
            return self.writer
        return self.parts(cluster).writer

    def advice(self, now: datetime, team: str | None = None) -> AdviceResult:
        """Advice at ``now`` (only ``team``'s when given) from the cluster and the history source;
        with several clusters, each cluster's from its own (:func:`~actions.advice.round.fleet_advice`).
        Raises ReportUnavailable without an advice setup, and what the sources raise."""
        if self.advice_setup is None:
            raise ReportUnavailable("this bot was started without a Prometheus for advice history")
        if self.clusters:
            return advice_of_clusters(self.clusters, self.prices, self.policy, self.teams, now, team)
        setup = self.advice_setup
        return gather_advice(self.snapshot(now), setup.history, self.prices, self.policy, setup.policy, self.teams, now, team=team)

    def read_queues(
        self, now: datetime, team: str | None = None, cluster: str | None = None,
    ) -> tuple[ClusterSnapshot, list[Finding], QueueReport]:
        """Read the cluster at ``now``; return the snapshot, the idle findings (its latest
        detection's when made within ``latest.reuse_seconds``, else detected from its
        telemetry now; empty, logged, when that cannot be read: the queues are still worth showing) and
        the queue report (only ``team``'s queues when given). ``cluster`` names one of several
        clusters (default: the first). Raises ClusterReadError when the cluster cannot be read,
        UnknownCluster for a name not configured."""
        reader, telemetry, name = self.cluster, self.telemetry, None
        if cluster is not None and self.clusters:
            parts = self.parts(cluster)
            reader, telemetry, name = parts.cluster, parts.telemetry, parts.name
        elif cluster not in (None, self.cluster_name):
            raise UnknownCluster(f"no cluster {cluster!r}; this bot watches one cluster, {self.cluster_name}")
        try:
            snapshot = reader.snapshot(now)
        except ClusterReadError:
            if self.metrics:
                self.metrics.kubernetes_error("read")
            raise
        # A bot of several asked for no cluster reads its first one unkeyed: no sweep's findings are.
        recent = self.latest.near(name or self.cluster_name, now) if name or not self.clusters else None
        if recent is not None:
            findings = recent
        else:
            try:
                found = detect_with(snapshot, telemetry, self.prices, self.policy, self.teams, now)
                if name is not None:
                    # Keyed as the sweep keys them, so open requests are recognised.
                    found = in_cluster(found, name, first=name == self.home())
                findings = found.findings
            except Exception:  # noqa: BLE001 - queues without the idle context beat no queues
                log.exception("telemetry at %s unreadable; queues shown without idle GPUs elsewhere", now.isoformat())
                findings = []
        positions = queue_positions(snapshot, reader)
        report = queue_report(
            snapshot, findings, self.teams, now, open_requests=store_bulk.proposed_ids(self.store), team=team,
            positions=positions,
        )
        return snapshot, findings, report

    # --- who may do what ------------------------------------------------------------------------

    def approvers_of(self, team_name: str) -> set[str]:
        """Slack user ids allowed to approve for ``team_name`` (user groups expanded)."""
        team = self.teams.team_for_name(team_name)
        users: set[str] = set()
        for a in team.approvers if team else []:
            if a.startswith("S"):
                users |= self.group_members(a)
            else:
                users.add(a)
        return users

    def team_budgets(self) -> dict[str, float]:
        """Team -> monthly budget in USD: the config's ``teams[].monthly_budget_usd``, overridden
        by budgets set in chat (``/gpu budget set``, kept in the store)."""
        out = {name: t.monthly_budget_usd for name, t in self.teams.teams.items() if t.monthly_budget_usd}
        out.update({b.team: b.usd_per_month for b in self.store.budgets()})
        return out

    # --- what it cost ---------------------------------------------------------------------------

    def cost_report(self, start: datetime, end: datetime, cluster: str | None = None) -> CostReport:
        """Every team's GPU-hours and USD over ``[start, end]`` (aware UTC datetimes, e.g. from
        :func:`actions.cost.periods.parse_period`), as a :class:`~actions.cost.report.CostReport` whose
        ``teams`` maps team name -> :class:`~actions.cost.report.TeamReport` (``"unallocated"`` included
        when pods in no team used GPUs; configured teams always present).

        With several clusters: the fleet's figures (:meth:`fleet_report`), or ``cluster``'s
        alone when named. Node capacity types missing from ``kube_node_labels`` are read through
        the cluster's API server. Overlapping calls for the same period share one computation
        and its result, which is also handed out for a minute after it was computed.
        Raises ReportUnavailable when there is no usage source, UnknownCluster for a cluster not
        configured, and actions.sources.prometheus.api.TelemetryError when Prometheus fails.
        """
        if not self.clusters:
            if cluster not in (None, self.cluster_name):
                raise UnknownCluster(f"no cluster {cluster!r}; this bot watches one cluster, {self.cluster_name}")
            return self._report_of(self.costs, self.cluster, start, end)
        if cluster is None:
            return self.fleet_report(start, end).fleet
        parts = self.parts(cluster)
        return self._report_of(parts.costs, parts.cluster, start, end, parts.name)

    def fleet_report(self, start: datetime, end: datetime) -> FleetReport:
        """Each cluster's report over ``[start, end]`` and the fleet's totals
        (:func:`actions.cost.reporting.build_fleet_report`): a cluster whose report fails is left out
        of the totals and named in the fleet's warnings. A bot of one cluster gives a fleet of
        one. Shared by overlapping callers as :meth:`cost_report`. Raises ReportUnavailable
        without a usage source, and the first cluster's error when no report could be made."""
        if not self.clusters:
            one = self.cost_report(start, end)
            return fleet_report({self.cluster_name: one}, {}, start, end)
        if any(c.costs is None for c in self.clusters):
            raise ReportUnavailable("cost reports need a Prometheus usage source for every cluster")

        def nodes(reader: ClusterReader) -> Callable[[], Mapping]:
            return lambda: reader.snapshot(self.clock()).nodes

        return self._fleets.do((start, end), lambda: build_fleet_report(
            [(c.name, c.costs, nodes(c.cluster)) for c in self.clusters],
            self.prices, self.teams, self.policy, start, end,
        ))

    def _report_of(
        self, costs: CostSetup | None, reader: ClusterReader, start: datetime, end: datetime, cluster: str = "",
    ) -> CostReport:
        if costs is None:
            raise ReportUnavailable("cost reports need a Prometheus usage source (Runtime.costs is not set)")
        return self._reports.do((cluster, start, end), lambda: build_report(
            costs, self.prices, self.teams, self.policy, start, end,
            api_nodes=lambda: reader.snapshot(self.clock()).nodes,
        ))

    def spend_function(self) -> Callable[[datetime, datetime], Mapping[str, float]] | None:
        """``(start, end) -> {team: USD spent in [start, end]}`` from :meth:`cost_report`, for
        what shows spend next to a budget; None when there is no usage source."""
        if self.costs is None:
            return None
        return lambda start, end: {team: r.cost_usd for team, r in self.cost_report(start, end).teams.items()}
