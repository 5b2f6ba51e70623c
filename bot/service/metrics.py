"""The bot's Prometheus metrics, every one named ``gpu_cost_bot_*``, in one registry.

One :class:`BotMetrics` per process is handed to the Runtime (sweeps, approvals, actions), to
:class:`~bot.chat.slack.web.SlackChat` (Slack API errors) and to the HTTP front end (``/metrics``).
Metrics live in their own ``CollectorRegistry`` rather than prometheus_client's global one, so
two instances (two tests, or a test and a running bot) never share a counter.
"""

from __future__ import annotations

import json
import logging
from collections import Counter as Tally
from typing import Iterable, Literal, Mapping, Sequence

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
)

from actions.model.findings import ActionVerb, Finding
from actions.model.kube import CapacityType
from actions.store.database import Store
from actions.store.states import STATES, RequestState

log = logging.getLogger(__name__)

PREFIX = "gpu_cost_bot"

# Detection reads every GPU pod and a window of telemetry; on a large cluster that takes a minute
# (DESIGN.md, "Measured facts"), so the buckets reach well past the default 10 s.
SWEEP_SECONDS_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)

# Known up front so their series exist (at 0) from the first scrape: a rate() over a series that
# appears only at its first increment misses that increment.
FINDING_KINDS = ("idle-notebook", "idle-workload", "unrequested-gpus")

SweepPhase = Literal["detect", "reconcile"]
SweepOutcome = Literal["ok", "error"]
ActionOperation = Literal["recheck", "apply", "restore"]
KubernetesOperation = Literal["read", "apply", "restore"]


class BotMetrics:
    """The bot's counters, gauges and histograms.

    ``registry``: where they are registered; None makes a new one that also carries the process,
    platform and garbage-collector collectors (CPU seconds, memory bytes, open fds, GC runs).

    Metrics (units in the names: seconds, USD per hour)::

        gpu_cost_bot_sweeps_total{outcome="ok"|"error"}              counter
        gpu_cost_bot_sweep_duration_seconds{phase="detect"|"reconcile"} histogram
        gpu_cost_bot_findings{cluster, kind}                         gauge, set by every sweep
        gpu_cost_bot_requests{state}                                 gauge, every request state
        gpu_cost_bot_actions_applied_total{verb}                     counter, real cluster changes
        gpu_cost_bot_actions_restored_total{verb}                    counter
        gpu_cost_bot_actions_failed_total{verb, operation="recheck"|"apply"|"restore"} counter
        gpu_cost_bot_slack_api_errors_total{method}                  counter, e.g. chat.postMessage
        gpu_cost_bot_kubernetes_api_errors_total{operation="read"|"apply"|"restore"} counter
        gpu_cost_bot_reclaimed_usd_per_hour                          gauge, done and not dry run
        gpu_cost_bot_reclaimed_reserved_gpus                         gauge, the same on reserved capacity
        gpu_cost_bot_work_refused_total{pool}                        counter, chat work answered "busy"
        gpu_cost_bot_cluster_sweep_failures_total{cluster}           counter, one cluster of several unread

    ``clusters`` names the clusters the bot watches, the first one first (``cluster_name`` for a
    bot of one): their finding series exist from the first scrape, and a finding that names no
    cluster (a bot of one) counts as the first's.
    """

    def __init__(self, registry: CollectorRegistry | None = None, clusters: Sequence[str] = ("default",)):
        if registry is None:
            registry = CollectorRegistry()
            for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
                registry.register(collector)
        self.registry = registry
        self.sweeps = Counter(
            f"{PREFIX}_sweeps", "Idle sweeps finished, by outcome.", ["outcome"], registry=registry
        )
        self.sweep_duration = Histogram(
            f"{PREFIX}_sweep_duration_seconds",
            "Seconds per sweep phase: detect reads the cluster and telemetry and finds idle GPUs; "
            "reconcile updates the requests and their Slack messages.",
            ["phase"],
            buckets=SWEEP_SECONDS_BUCKETS,
            registry=registry,
        )
        self.findings = Gauge(
            f"{PREFIX}_findings", "Idle GPU consumers found by the last sweep, by cluster and kind.", ["cluster", "kind"],
            registry=registry,
        )
        self.requests = Gauge(
            f"{PREFIX}_requests", "Action requests in the store, by state.", ["state"], registry=registry
        )
        self.actions_applied = Counter(
            f"{PREFIX}_actions_applied", "Actions applied to the cluster (dry runs excluded), by verb.",
            ["verb"], registry=registry,
        )
        self.actions_restored = Counter(
            f"{PREFIX}_actions_restored", "Actions undone on the cluster (dry runs excluded), by verb.",
            ["verb"], registry=registry,
        )
        self.actions_failed = Counter(
            f"{PREFIX}_actions_failed",
            "Approved actions or restores that failed, by verb and by the step that failed.",
            ["verb", "operation"], registry=registry,
        )
        self.slack_api_errors = Counter(
            f"{PREFIX}_slack_api_errors", "Slack Web API calls that failed after retries, by method.",
            ["method"], registry=registry,
        )
        self.kubernetes_api_errors = Counter(
            f"{PREFIX}_kubernetes_api_errors",
            "Kubernetes API requests that failed (refused or unreachable), by operation.",
            ["operation"], registry=registry,
        )
        self.reclaimed_usd_per_hour = Gauge(
            f"{PREFIX}_reclaimed_usd_per_hour",
            "Estimated USD per hour no longer spent: the sum over requests done (not dry run), "
            "reserved capacity left out (it is paid for either way).",
            registry=registry,
        )
        self.reclaimed_reserved_gpus = Gauge(
            f"{PREFIX}_reclaimed_reserved_gpus",
            "Reserved or committed GPUs freed for the queue: physical-GPU equivalents over requests done.",
            registry=registry,
        )
        self.cluster_sweep_failures = Counter(
            f"{PREFIX}_cluster_sweep_failures",
            "Sweeps in which one cluster of several could not be read (its API server or telemetry), by cluster; "
            "the other clusters were swept.",
            ["cluster"], registry=registry,
        )
        self.work_refused = Counter(
            f"{PREFIX}_work_refused",
            "Slash commands and button presses answered 'busy' because their worker pool was full, by pool.",
            ["pool"], registry=registry,
        )
        for outcome in ("ok", "error"):
            self.sweeps.labels(outcome)
        for phase in ("detect", "reconcile"):
            self.sweep_duration.labels(phase)
        self._clusters = tuple(clusters) or ("default",)
        for cluster in self._clusters:
            for kind in FINDING_KINDS:
                self.findings.labels(cluster, kind).set(0)
        for state in sorted(STATES):
            self.requests.labels(str(state)).set(0)
        for verb in ActionVerb:
            self.actions_applied.labels(verb.value)
            self.actions_restored.labels(verb.value)
        for operation in ("read", "apply", "restore"):
            self.kubernetes_api_errors.labels(operation)
        self._finding_series: set[tuple[str, str]] = {(c, k) for c in self._clusters for k in FINDING_KINDS}

    # --- sweeps ----------------------------------------------------------------------------------

    def sweep_phase(self, phase: SweepPhase, seconds: float) -> None:
        """One sweep phase took ``seconds``."""
        self.sweep_duration.labels(phase).observe(seconds)

    def sweep_finished(self, outcome: SweepOutcome) -> None:
        """A sweep ended: ``ok`` when reconciled, ``error`` when detection or reconcile raised."""
        self.sweeps.labels(outcome).inc()

    def set_findings(self, findings: Iterable[Finding], unreachable: Iterable[str] = ()) -> None:
        """The findings of the sweep just run, by cluster and kind; a cluster and kind seen before
        but absent now drops to 0, except in the ``unreachable`` clusters: nothing is known of
        them, so their series keep the last sweep's figures (their failures are counted)."""
        counts = Tally((f.cluster or self._clusters[0], f.kind) for f in findings)
        self._finding_series |= set(counts)
        skipped = set(unreachable)
        for cluster, kind in self._finding_series:
            if cluster not in skipped:
                self.findings.labels(cluster, kind).set(counts.get((cluster, kind), 0))

    # --- the store -------------------------------------------------------------------------------

    def set_requests(self, counts: Mapping[str, int], reclaimed_usd_per_hour: float, reserved_gpus: float = 0.0) -> None:
        """``counts``: requests by state (states missing from it are 0); ``reclaimed_usd_per_hour``
        in USD per hour; ``reserved_gpus`` reserved GPUs freed (physical-GPU equivalents)."""
        for state in sorted(STATES):
            self.requests.labels(str(state)).set(counts.get(str(state), 0))
        self.reclaimed_usd_per_hour.set(reclaimed_usd_per_hour)
        self.reclaimed_reserved_gpus.set(reserved_gpus)

    def refresh_from_store(self, store: Store) -> None:
        """Set the request gauges from ``store``: one count by state and one read of the done
        requests. A store that cannot be read is logged and leaves the gauges as they were, so a
        database hiccup never fails the sweep or press that asked for the refresh."""
        try:
            counts = store.count_by_state()
            done = store.list_requests(states=[RequestState.DONE])
        except Exception as e:  # noqa: BLE001 - metrics must never break the work they measure
            log.warning("could not read request counts from the store: %s", e)
            return
        applied = [r for r in done if not r.dry_run]
        reserved = [r for r in applied if _reserved(r.finding_json)]
        self.set_requests(
            counts,
            sum(r.usd_per_hour for r in applied if r not in reserved),
            sum(r.gpus for r in reserved),
        )

    # --- actions and the APIs --------------------------------------------------------------------

    def action_applied(self, verb: str) -> None:
        """An action with ``verb`` (an ``ActionVerb`` value) changed the cluster."""
        self.actions_applied.labels(verb).inc()

    def action_restored(self, verb: str) -> None:
        """An action with ``verb`` was undone on the cluster."""
        self.actions_restored.labels(verb).inc()

    def action_failed(self, verb: str, operation: ActionOperation) -> None:
        """An approved action or a restore failed at ``operation``."""
        self.actions_failed.labels(verb, operation).inc()

    def slack_error(self, method: str) -> None:
        """A Slack Web API call (``method``, e.g. ``chat.update``) failed."""
        self.slack_api_errors.labels(method).inc()

    def cluster_sweep_failed(self, cluster: str) -> None:
        """Count a sweep in which ``cluster`` could not be read."""
        self.cluster_sweep_failures.labels(cluster=cluster).inc()

    def work_refused_by(self, pool: str) -> None:
        """A request was answered "busy": ``pool`` (``commands``, ``presses``) was full."""
        self.work_refused.labels(pool).inc()

    def kubernetes_error(self, operation: KubernetesOperation) -> None:
        """A request to the Kubernetes API server failed while ``operation``."""
        self.kubernetes_api_errors.labels(operation).inc()


def _reserved(finding_json: str) -> bool:
    # The capacity type is in the finding's price; a request from before it was recorded is not.
    try:
        return json.loads(finding_json)["price"]["capacity_type"] == CapacityType.RESERVED.value
    except (ValueError, KeyError, TypeError):
        return False
