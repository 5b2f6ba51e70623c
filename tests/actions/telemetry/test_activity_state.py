"""The lookback answers kept in the store between sweeps (actions/activity.py,
actions/activity_store.py): a sequence of sweeps that each ask Prometheus only about the span
since the last one answers, on a real Prometheus, exactly what asking about the whole lookback
answers, through a gap longer than the lookback, a pod that becomes busy again, a pod that goes
away, new pods (one between two sweeps), exporter restarts (a new instance label; an upgrade
that renames ``Hostname``) and a sweep of the past, the window's coverage included; the state round-trips on SQLite and
PostgreSQL, per cluster and per policy.

Label conventions as dcgm-exporter writes them (NVIDIA/dcgm-exporter
internal/pkg/collector/gpu_collector.go: ``UUID``, ``gpu``, ``Hostname``, ``modelName``,
``GPU_I_ID``/``GPU_I_PROFILE`` for MIG; ``--use-old-namespace`` gives ``pod_name``/``pod_namespace``
and ``uuid``)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL
from actions.policy.rules import Policy
from actions.sources.prometheus.telemetry import PrometheusTelemetry
from actions.sources.prometheus.telemetry_promql import LOOKBACK_STEP_SECONDS, activity_policy
from actions.store.activity import ActivityStore
from actions.store.database import Store
from actions.telemetry.activity import Seen, decode, encode, first_step, lookback_answers, merge, span_seconds
from actions.telemetry.presence import Presence, advance, first_last, step_mask
from tests.support.openmetrics import gauge_families, samples
from tests.support.prometheus_server import running_prometheus

START = datetime(2026, 11, 20, 6, 0, tzinfo=timezone.utc)
END = datetime(2026, 11, 20, 14, 0, tzinfo=timezone.utc)
LOOKBACK = 3 * 3600
POLICY = Policy(activity_lookback_seconds=LOOKBACK)
STEP = LOOKBACK_STEP_SECONDS
A = ("GPU-a", "0", "", "", "n1", "NVIDIA H100 80GB HBM3", "ns", "a-0")


def _at(hh: int, mm: int = 0, ss: int = 0) -> datetime:
    return START.replace(hour=hh, minute=mm, second=ss)


def _ts(hh: int, mm: int = 0) -> int:
    return int(_at(hh, mm).timestamp())


def openmetrics() -> str:
    """Eight GPUs over START..END every 60 s (see the module docstring for the cases)."""
    times = list(range(_ts(6), _ts(14) + 1, 60))
    model = {"modelName": "NVIDIA H100 80GB HBM3"}
    lines: dict[str, list[str]] = {ENGINE_ACTIVE: [], GPU_UTIL: []}

    def a(ts: int) -> float:  # busy, idle, busy again at 10:30 for half an hour, idle
        return 70.0 if ts < _ts(7) or _ts(10, 30) <= ts < _ts(11) else 0.0

    lines[GPU_UTIL] += samples(GPU_UTIL, {**model, "UUID": "GPU-a", "gpu": "0", "Hostname": "n1", "namespace": "ns",
                                          "pod": "a-0"}, [(t, a(t)) for t in times])
    # --use-old-namespace, busy all along.
    lines[GPU_UTIL] += samples(GPU_UTIL, {**model, "uuid": "GPU-b", "gpu": "1", "Hostname": "n1",
                                          "pod_namespace": "ns", "pod_name": "b-0"}, [(t, 50.0) for t in times])
    # A new pod from 08:00 on, idle (ENGINE_ACTIVE, a ratio).
    lines[ENGINE_ACTIVE] += samples(ENGINE_ACTIVE, {**model, "UUID": "GPU-c", "gpu": "2", "Hostname": "n2",
                                                    "namespace": "ns", "pod": "c-0"},
                                    [(t, 0.0) for t in times if t >= _ts(8)])
    # A pod that went away at 08:00, busy till then: it leaves the lookback at 11:00.
    lines[ENGINE_ACTIVE] += samples(ENGINE_ACTIVE, {**model, "UUID": "GPU-d", "gpu": "3", "Hostname": "n2",
                                                    "namespace": "ns", "pod": "d-0"},
                                    [(t, 0.9) for t in times if t < _ts(8)])
    # MIG: two GPU instances, one busy now and then, one idle.
    for gi in ("1", "2"):
        lines[ENGINE_ACTIVE] += samples(ENGINE_ACTIVE, {**model, "UUID": "GPU-e", "gpu": "4", "Hostname": "n3",
                                                        "GPU_I_ID": gi, "GPU_I_PROFILE": "3g.40gb", "namespace": "ns",
                                                        "pod": f"e{gi}-0"},
                                        [(t, 0.5 if gi == "1" and (t // 3600) % 3 == 0 else 0.0) for t in times])
    # The exporter restarted at 07:00 (12 minutes without samples, a new instance label).
    for instance, part in (("10.0.0.1:9400", [t for t in times if t < _ts(7)]),
                           ("10.0.0.9:9400", [t for t in times if t >= _ts(7, 12)])):
        lines[GPU_UTIL] += samples(GPU_UTIL, {**model, "UUID": "GPU-f", "gpu": "5", "Hostname": "n3", "namespace": "ns",
                                              "pod": "f-0", "instance": instance}, [(t, 0.0) for t in part])
    # A pod that starts at 11:10, between two sweeps.
    lines[GPU_UTIL] += samples(GPU_UTIL, {**model, "UUID": "GPU-g", "gpu": "6", "Hostname": "n4", "namespace": "ns",
                                          "pod": "g-0"}, [(t, 30.0) for t in times if t >= _ts(11, 10)])
    # The exporter upgraded at 11:30 to its main branch, which names the node `hostname`: two
    # series sets of one GPU and pod.
    for host, part in (("Hostname", [t for t in times if t < _ts(11, 30)]), ("hostname", [t for t in times if t >= _ts(11, 33)])):
        lines[ENGINE_ACTIVE] += samples(ENGINE_ACTIVE, {**model, "UUID": "GPU-h", "gpu": "7", host: "n4",
                                                        "namespace": "ns", "pod": "h-0"}, [(t, 0.0) for t in part])
    return gauge_families(lines)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory):
    with running_prometheus(openmetrics(), tmp_path_factory.mktemp("activity")) as url:
        yield url


# Irregular intervals, a jump of 3 h 35 min (longer than the lookback), sweeps on and off the
# 5-minute grid, and none whose lookback starts inside the 07:00-07:12 restart gap (there the
# state answers the lookback's first step, as the module docstring of actions.telemetry.activity says).
SWEEPS = [_at(6, 20), _at(6, 33, 17), _at(6, 50), _at(10, 25), _at(10, 31, 40), _at(10, 45), _at(10, 58, 9),
          _at(11, 2), _at(11, 20), _at(11, 47, 30), _at(12, 30), _at(13, 5), _at(13, 55)]
# A sweep of the past (`sweep --at`), full lookback, leaving the newer state as it is.
PAST = _at(9, 0)


@pytest.mark.prometheus
def test_incremental_sweeps_answer_what_the_full_lookback_answers(prometheus: str, store: Store) -> None:
    kept = ActivityStore(store)
    incremental = PrometheusTelemetry(prometheus, state=kept, cluster="gpu-east")
    full = PrometheusTelemetry(prometheus)
    key = activity_policy(POLICY)
    spans, last_active_a, requests = [], {}, []
    for at in SWEEPS[:5] + [PAST] + SWEEPS[5:]:
        as_of, _ = kept.read("gpu-east", key)
        spans.append(span_seconds(as_of, at.timestamp(), LOOKBACK, STEP))
        sent = incremental.api.requests
        got, want = incremental.fetch(at, POLICY), full.fetch(at, POLICY)
        requests.append(incremental.api.requests - sent)
        assert got == want, at
        assert kept.read("gpu-east", key)[0] == max(at.timestamp(), as_of or 0)
        last_active_a[at] = next(g.last_active for g in got.gpus if g.pod == "a-0")
    # Full lookback first, after the 3 h 35 min jump and for the sweep of the past; else the span since.
    full_at = [at for at, span in zip(SWEEPS[:5] + [PAST] + SWEEPS[5:], spans) if span is None]
    assert full_at == [SWEEPS[0], SWEEPS[3], PAST]
    assert spans[1] == 13 * 60 + 17 + STEP
    # Peak, mean power, power limit and coverage, or the first three once the steps since earlier
    # sweeps cover the window; the window's presence since the last sweep (a first sweep in a
    # process, or one after a gap longer than the window, only marks where the next starts); the
    # lookback's three over 7 days or over the span, or last active alone once the presence in
    # memory covers the span.
    assert requests == [4 + 3, 4 + 1 + 3, 4 + 1 + 1, 4 + 3, 4 + 1 + 3, 4 + 3, 4 + 3, 4 + 1 + 3, 4 + 1 + 1, 4 + 1 + 1,
                        3 + 1 + 1, 3 + 1 + 1, 3 + 1 + 1, 3 + 1 + 1]
    # The cases are there: a-0 busy again from 10:30, then idle; d-0 gone from the lookback at 11:05.
    assert last_active_a[_at(10, 25)] is None
    assert last_active_a[_at(10, 45)] == _at(10, 45)
    assert last_active_a[_at(11, 20)] == _at(11, 0)
    assert last_active_a[_at(13, 55)] == _at(11, 0)
    pods = {g.pod for g in incremental.fetch(_at(10, 58, 9), POLICY).gpus}
    assert "d-0" in pods and "c-0" in pods and "b-0" in pods
    assert "d-0" not in {g.pod for g in incremental.fetch(_at(11, 20), POLICY).gpus}
    g = next(g for g in incremental.fetch(_at(11, 20), POLICY).gpus if g.pod == "g-0")
    assert g.first_sample == _at(11, 10) and 0 < g.coverage < 1


def test_span_is_the_time_since_the_state_plus_one_step() -> None:
    at = _at(12).timestamp()
    assert span_seconds(at - 600.5, at, LOOKBACK, STEP) == 601 + STEP
    assert span_seconds(at, at, LOOKBACK, STEP) == STEP
    assert span_seconds(None, at, LOOKBACK, STEP) is None
    assert span_seconds(at + 1, at, LOOKBACK, STEP) is None  # a sweep of the past
    assert span_seconds(at - LOOKBACK, at, LOOKBACK, STEP) is None  # down for the whole lookback


def test_merge_keeps_the_latest_and_earliest_and_drops_what_left_the_lookback() -> None:
    at = _at(12).timestamp()
    start = at - LOOKBACK
    known = {
        ("busy-before",): Seen(start - 600, at - 900, start - 300),  # last busy before the lookback: never
        ("gone",): Seen(start - 3000, start - 300, None),  # last seen before the lookback: dropped
        ("old",): Seen(start - 3000, at - 600, at - 600),  # first seen before it: kept, answered as its first step
        ("kept",): Seen(start + 600, at - 600, at - 1200),
    }
    new = {("kept",): Seen(at - 300, at, None), ("new",): Seen(at - 300, at, at)}
    state = merge(known, new, at, LOOKBACK)
    assert state == {
        ("busy-before",): Seen(start - 600, at - 900, None),
        ("old",): Seen(start - 3000, at - 600, at - 600),
        ("kept",): Seen(start + 600, at, at - 1200),
        ("new",): Seen(at - 300, at, at),
    }
    first = first_step(at, LOOKBACK, STEP)
    assert lookback_answers(state, at, LOOKBACK, STEP) == {
        **state, ("busy-before",): Seen(first, at - 900, None), ("old",): Seen(first, at - 600, at - 600),
    }
    assert first_step(at + 1, LOOKBACK, STEP) == start + STEP


def test_rows_of_a_gpu_that_stays_seen_do_not_change_between_sweeps() -> None:
    at = _at(12, 1).timestamp()
    state = {("idle",): Seen(at - 7000, _at(12).timestamp(), at - 3600), ("busy",): Seen(at - 60, _at(12).timestamp(), _at(12).timestamp())}
    rows = encode(state, at, STEP)
    assert decode(rows, at, STEP) == state
    later = at + 900
    moved = {k: Seen(s.first_sample, _at(12, 15).timestamp(), s.last_active if k == ("idle",) else _at(12, 15).timestamp())
             for k, s in state.items()}
    assert encode(moved, later, STEP) == rows


def test_state_round_trips_per_cluster_and_policy(store: Store) -> None:
    kept = ActivityStore(store)
    at = _at(12).timestamp() + 0.25
    rows = {A: (at - 3600, at - 60, False, None, False), (*A[:-1], "a-1"): (at - 7200, None, True, at - 300, False)}
    assert kept.read("gpu-east", "1%/10800s/300s") == (None, {})
    assert kept.write("gpu-east", "1%/10800s/300s", None, at, rows)
    assert kept.write("gpu-west", "1%/10800s/300s", None, at - 60, {A: (at, None, True, None, True)})
    assert kept.write("gpu-east", "5%/10800s/300s", None, at - 30, {A: (None, None, False, at, False)})
    # Read in another process (no rows kept in memory) and in this one.
    for reader in (ActivityStore(Store(store.engine.url)), kept):
        assert reader.read("gpu-east", "1%/10800s/300s") == (at, rows)
        assert reader.read("gpu-west", "1%/10800s/300s") == (at - 60, {A: (at, None, True, None, True)})
        assert reader.read("gpu-east", "5%/10800s/300s") == (at - 30, {A: (None, None, False, at, False)})
    # A write changes the rows that changed, adds the new and drops the ones not written again.
    again = {A: (at - 3600, None, True, at + 60, False), (*A[:-1], "a-2"): (at, None, True, None, True)}
    assert kept.write("gpu-east", "1%/10800s/300s", at, at + 60, again)
    assert ActivityStore(Store(store.engine.url)).read("gpu-east", "1%/10800s/300s") == (at + 60, again)
    assert kept.read("gpu-west", "1%/10800s/300s")[0] == at - 60
    # A write merged from a state someone else has since replaced changes nothing.
    other = ActivityStore(Store(store.engine.url))
    assert other.read("gpu-east", "1%/10800s/300s")[0] == at + 60
    assert kept.write("gpu-east", "1%/10800s/300s", at + 60, at + 120, {})
    assert not other.write("gpu-east", "1%/10800s/300s", at + 60, at + 180, again)
    assert not other.write("gpu-east", "1%/10800s/300s", None, at + 180, again)
    assert ActivityStore(Store(store.engine.url)).read("gpu-east", "1%/10800s/300s") == (at + 120, {})


def test_presence_keeps_the_window_and_replaces_the_steps_asked_again() -> None:
    known = Presence(100, 110, {"a": 0b10000000001, "b": 0b1})  # a at 100 and 110, b at 100
    # The window moves to 105..115; steps 110..115 asked again: a not at 110 after all, at 112.
    moved = advance(known, 105, 115, {"a": 0b100, "c": 0b1}, 110)
    assert moved == Presence(105, 115, {"a": 0b10000000, "c": 0b100000})
    # Known only from step 108 on: the window's steps before it stay unknown.
    assert advance(Presence(108, 110, {"a": 0b1}), 105, 115, {"c": 0b1}, 110) == Presence(108, 115, {"a": 0b1, "c": 0b100})
    assert first_last(moved.bits["a"], moved.base) == (112, 112)
    assert first_last(0, 105) is None
    # Steps 105..115 that are multiples of 5: 105, 110, 115.
    assert step_mask(105, 103, 115, 5) == (1 << 0) | (1 << 5) | (1 << 10)
