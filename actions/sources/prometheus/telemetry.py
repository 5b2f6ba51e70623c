"""Per-GPU telemetry from dcgm-exporter series in Prometheus.

Every figure is aggregated server-side in PromQL, one instant query per signal evaluated at the
caller's ``at``, so a fetch costs a fixed number of requests however large the fleet is: the
window's four and two over the whole activity lookback; or, with a state store, the window's
peak, power and power limit, the steps of the window since the last fetch at which each series
set was seen as one number (:mod:`actions.telemetry.presence`: the coverage, and the first and
last sample since) and when each GPU was last busy since the last fetch
(:mod:`actions.telemetry.activity`): minutes of steps instead of an hour and 7 days. The queries
are :mod:`actions.sources.prometheus.telemetry_promql`; every dcgm-exporter label convention is
read as one (:mod:`actions.sources.prometheus.promql`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping

from actions.model.telemetry import TelemetrySnapshot
from actions.policy.rules import Policy
from actions.ports import ActivityStateStore
from actions.sources.prometheus.api import PrometheusApi, TelemetryError
from actions.sources.prometheus.promql import GROUP_LABELS, SOURCE_LABELS
from actions.sources.prometheus.telemetry_promql import (
    LOOKBACK_STEP_SECONDS,
    SIGNAL_LABEL,
    activity_policy,
    assemble_snapshot,
    group_key,
    lookback_queries,
    metric_key,
    presence_query,
    sample_value,
    source_key,
    telemetry_queries,
    window_queries,
)
from actions.telemetry.activity import Key, Seen, decode, encode, lookback_answers, merge, span_seconds
from actions.telemetry.presence import Presence, advance, first_last, step_mask, step_range


def _seen(results: Mapping[str, list[Any]], base: Mapping[Key, Seen] | None = None) -> dict[Key, Seen]:
    """The :func:`lookback_queries` results per telemetry key, over what ``base`` holds."""
    values = {key: [s.first_sample, s.last_sample, None] for key, s in (base or {}).items()}
    for field, name in enumerate(("first_sample", "last_sample", "last_active")):
        for sample in results.get(name, ()):
            key = metric_key(sample.metric)
            v = values.get(key)
            if v is None:
                v = values[key] = [None, None, None]
            v[field] = sample_value(sample)
    return {key: Seen(*v) for key, v in values.items()}


def _seen_in(presence: Presence, lo: int, hi: int, every: int, step: float) -> dict[Key, Seen]:
    """The first and last sample per telemetry key at the steps ``lo`` to ``hi`` of ``presence``
    that are multiples of ``every``, in unix seconds: what ``lookback_queries``' ``first_sample``
    and ``last_sample`` answer over those steps."""
    mask = step_mask(presence.base, lo, hi, every)
    out: dict[Key, Seen] = {}
    for source, bits in presence.bits.items():
        found = first_last(bits & mask, presence.base)
        if found is None:
            continue
        key = group_key(source)
        first, last = found[0] * step, found[1] * step
        s = out.get(key)
        out[key] = Seen(first, last) if s is None else Seen(min(first, s.first_sample), max(last, s.last_sample))
    return out


def _coverage(presence: Presence, policy: Policy) -> dict[Key, float]:
    """The window's coverage per telemetry key (ratio 0-1): the most steps any of its series sets
    was seen at over the window's steps, capped at 1, as the ``coverage`` query answers."""
    steps = policy.window_seconds / policy.sample_step_seconds
    counts: dict[Key, int] = {}
    for source, bits in presence.bits.items():
        key = group_key(source)
        counts[key] = max(counts.get(key, 0), bits.bit_count())
    return {key: min(n / steps, 1.0) for key, n in counts.items()}


class PrometheusTelemetry:
    """Reads per-GPU telemetry through a :class:`PrometheusApi` at ``url`` (arguments as there).

    With ``state`` the lookback answers (last active, first sample) are kept there under
    ``cluster`` between fetches and the window's per-step presence in this object's memory, and
    each fetch asks Prometheus only about the steps since the last one (:mod:`actions.telemetry.activity`,
    :mod:`actions.telemetry.presence`); without it every fetch asks about the whole window and lookback
    (:func:`telemetry_queries`)."""

    def __init__(
        self, url: str, headers: dict[str, str] | None = None, *, state: ActivityStateStore | None = None,
        cluster: str = "", **options: Any,
    ):
        self.api = PrometheusApi(url, headers, **options)
        self.url = self.api.url
        self.state = state
        self.cluster = cluster
        # (window, step) -> the window's steps each series set was seen at, as of the last fetch.
        self._windows: dict[tuple[float, float], Presence] = {}

    def fetch(self, at: datetime, policy: Policy) -> TelemetrySnapshot:
        """Telemetry of every GPU over ``policy.window_seconds`` ending at ``at`` (aware datetime;
        the queries are evaluated at ``at``, never at the wall clock).

        Returns one GpuTelemetry per (GPU, namespace, pod) seen in the window or the lookback
        (see ``window_queries`` and ``lookback_queries`` for units). Raises ValueError for a
        naive ``at`` and TelemetryError when Prometheus is unreachable or answers an error; lets
        the state store's errors through.
        """
        if at.tzinfo is None:
            raise ValueError(f"at={at!r} has no time zone; pass an aware UTC datetime")
        at = at.astimezone(timezone.utc)
        lookback = coverage = None
        if self.state is None:
            queries = telemetry_queries(policy)
            results = {name: self._vector(name, q, at) for name, q in queries.items()}
        else:
            try:
                presence = self._presence(at, policy)
            except (KeyError, ValueError, TypeError, IndexError) as e:
                raise TelemetryError(f"Prometheus at {self.url} returned a malformed result: {e}") from e
            # Coverage from the steps in memory once they span the window, else its subquery.
            whole = presence is not None and presence.base <= step_range(
                at.timestamp() - policy.window_seconds, at.timestamp(), policy.sample_step_seconds)[0]
            queries = {name: q for name, q in window_queries(policy).items() if name != "coverage" or not whole}
            results = {name: self._vector(name, q, at) for name, q in queries.items()}
            coverage = _coverage(presence, policy) if whole and presence is not None else None
            lookback = self._lookback(at, policy, presence)
        try:
            return assemble_snapshot(at, policy.window_seconds, results, lookback, coverage)
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise TelemetryError(f"Prometheus at {self.url} returned a malformed result: {e}") from e

    def _vector(self, name: str, promql: str, at: datetime) -> list[Any]:
        """An instant query's samples keyed by ``GROUP_LABELS`` (and the peak's signal label)."""
        return self.api.vector(name, promql, at, GROUP_LABELS, (SIGNAL_LABEL,))

    def _presence(self, at: datetime, policy: Policy) -> Presence | None:
        """At which steps of the window ending at ``at`` each series set was seen, from the
        last step the previous fetch saw on (the steps since asked of Prometheus, the ones before
        from memory): the whole window once fetches have covered it. None on a first fetch, which
        only marks where the next one starts (a whole window of points would cost this process
        more than the coverage subquery costs Prometheus)."""
        step = policy.sample_step_seconds
        first, last = step_range(at.timestamp() - policy.window_seconds, at.timestamp(), step)
        known = self._windows.get((policy.window_seconds, step))
        if known is None or known.last > last or known.last < first:
            self._windows[(policy.window_seconds, step)] = Presence(last, last, {})
            return None
        # The last step known is asked again: it may have been asked before its samples arrived.
        new_first = known.last
        new: dict[Key, int] = {}
        start, end = (datetime.fromtimestamp(n * step, tz=timezone.utc) for n in (new_first, last))
        # A range query, not a subquery: its points are the steps as they are, with no arithmetic
        # at each step to pack them (which cost Prometheus more than the steps themselves).
        for series in self.api.matrix("presence", presence_query(), start, end, step, SOURCE_LABELS):
            bits = 0
            for t, _ in series.values:
                bits |= 1 << (round(t / step) - new_first)
            new[source_key(series.metric)] = bits
        presence = advance(known, first, last, new, new_first)
        self._windows[(policy.window_seconds, step)] = presence
        return presence

    def _lookback(self, at: datetime, policy: Policy, presence: Presence | None) -> dict[Key, Seen]:
        """The lookback answers at ``at`` (unix seconds) from the state kept and the span since
        it, kept again. The first and last sample over the span come from ``presence`` when it
        holds the span's steps."""
        assert self.state is not None
        key, now = activity_policy(policy), at.timestamp()
        lookback, step = policy.activity_lookback_seconds, LOOKBACK_STEP_SECONDS
        as_of, rows = self.state.read(self.cluster, key)
        span = span_seconds(as_of, now, lookback, step)
        queries = lookback_queries(policy, span)
        seen: dict[Key, Seen] = {}
        every = step / policy.sample_step_seconds
        if presence is not None and span is not None and every.is_integer():
            lo, hi = step_range(now - span, now, policy.sample_step_seconds)
            if lo >= presence.base and hi == presence.last:
                seen = _seen_in(presence, lo, hi, int(every), policy.sample_step_seconds)
                queries = {"last_active": queries["last_active"]}
        try:
            new = _seen({name: self._vector(name, q, at) for name, q in queries.items()}, seen)
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise TelemetryError(f"Prometheus at {self.url} returned a malformed result: {e}") from e
        known = decode(rows, as_of, step) if span is not None and as_of is not None else {}
        state = merge(known, new, now, lookback)
        # A fetch of the past leaves a newer state as it is.
        if as_of is None or now >= as_of:
            self.state.write(self.cluster, key, as_of, now, encode(state, now, step))
        return lookback_answers(state, now, lookback, step)
