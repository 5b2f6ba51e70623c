"""Leader election: the Lease client and the elector against the wire-level fake API server, and the
pure decisions (who may write which Lease record when)."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from actions.sources.kube.lease import (
    LeaseClient,
    LeaseConflict,
    LeaseError,
    LeaseRecord,
    format_micro_time,
    parse_micro_time,
)
from bot.service.leader import (
    ElectionTiming,
    LeaderElector,
    lease_namespace,
    next_record,
    observed_expired,
    released,
    replica_identity,
)
from bot.settings import LeaderElectionSettings
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.waiting import wait_for

NS, NAME = "gpu-cost", "gpu-cost-bot"
LEASE_PATH = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{NAME}"
T0 = datetime(2026, 11, 23, 10, 0, tzinfo=timezone.utc)
# Short enough for a fast test, with room between the deadline and the duration.
TIMING = ElectionTiming(lease_duration=2, renew_deadline=1.0, retry_period=0.1)


@pytest.fixture
def fake():
    with FakeKubeApi() as api:
        yield api


@pytest.fixture
def client(fake) -> LeaseClient:
    return LeaseClient(fake.api_client(), NS, NAME)


def _spec(fake) -> dict:
    return (fake.get("Lease", NS, NAME) or {}).get("spec", {})


class Recorder:
    """Callbacks that note what happened, with the wall time."""

    def __init__(self):
        self.events: list[tuple[str, datetime]] = []
        self.lock = threading.Lock()

    def started(self):
        with self.lock:
            self.events.append(("started", datetime.now(timezone.utc)))

    def stopped(self):
        with self.lock:
            self.events.append(("stopped", datetime.now(timezone.utc)))

    def kinds(self) -> list[str]:
        with self.lock:
            return [k for k, _ in self.events]


def _elector(fake, identity: str, rec: Recorder) -> LeaderElector:
    return LeaderElector(
        LeaseClient(fake.api_client(), NS, NAME), identity, TIMING,
        on_started_leading=rec.started, on_stopped_leading=rec.stopped,
    )


# --- the Lease client on the wire ---------------------------------------------------------------------


def test_create_then_get_round_trips_the_record_with_micro_times(fake, client):
    record = LeaseRecord("replica-a", 15, T0, T0 + timedelta(microseconds=250), 0)
    created = client.create(record, timeout=5)
    assert created.record == record
    posted = [r for r in fake.requests if r.method == "POST"][-1]
    assert posted.path == f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
    # Six fractional digits even when they are all zero: the API server refuses anything else.
    assert posted.body["spec"] == {
        "holderIdentity": "replica-a",
        "leaseDurationSeconds": 15,
        "leaseTransitions": 0,
        "acquireTime": "2026-11-23T10:00:00.000000Z",
        "renewTime": "2026-11-23T10:00:00.000250Z",
    }
    read = client.get(timeout=5)
    assert read is not None and read.record == record and read.resource_version == created.resource_version


def test_get_of_a_missing_lease_is_none(client):
    assert client.get(timeout=5) is None


def test_create_when_it_exists_is_a_conflict(client):
    client.create(LeaseRecord("replica-a", 15, T0, T0, 0), timeout=5)
    with pytest.raises(LeaseConflict) as e:
        client.create(LeaseRecord("replica-b", 15, T0, T0, 0), timeout=5)
    assert e.value.status == 409


def test_update_with_a_stale_resource_version_is_refused(fake, client):
    first = client.create(LeaseRecord("replica-a", 15, T0, T0, 0), timeout=5)
    renewed = client.update(first, LeaseRecord("replica-a", 15, T0, T0 + timedelta(seconds=2), 0), timeout=5)
    assert renewed.resource_version != first.resource_version
    put = [r for r in fake.requests if r.method == "PUT"][-1]
    assert put.path == LEASE_PATH and put.body["metadata"]["resourceVersion"] == first.resource_version
    # Another replica decided on what it read before the renewal: the API server refuses it.
    with pytest.raises(LeaseConflict):
        client.update(first, LeaseRecord("replica-b", 15, T0, T0, 1), timeout=5)
    assert _spec(fake)["holderIdentity"] == "replica-a"
    assert _spec(fake)["renewTime"] == "2026-11-23T10:00:02.000000Z"


def test_api_errors_and_unreachable_servers_are_lease_errors(fake, client):
    fake.fail("GET", LEASE_PATH, 500, "InternalError", "etcd is down")
    with pytest.raises(LeaseError) as e:
        client.get(timeout=5)
    assert e.value.status == 500 and "etcd is down" in str(e.value)
    assert not isinstance(e.value, LeaseConflict)
    cfg = kubernetes.client.Configuration()
    cfg.host = "http://127.0.0.1:9"  # discard port: nothing listens
    cfg.retries = 0
    with pytest.raises(LeaseError) as e:
        LeaseClient(kubernetes.client.ApiClient(cfg), NS, NAME).get(timeout=2)
    assert e.value.status == 0


def test_the_fake_refuses_times_without_six_fractional_digits(fake):
    # What the client's own models send for a whole-second datetime; a real API server answers 400.
    body = kubernetes.client.V1Lease(
        metadata=kubernetes.client.V1ObjectMeta(name=NAME),
        spec=kubernetes.client.V1LeaseSpec(holder_identity="x", renew_time=T0),
    )
    with pytest.raises(ApiException) as e:
        kubernetes.client.CoordinationV1Api(fake.api_client()).create_namespaced_lease(NS, body)
    assert e.value.status == 400
    assert fake.get("Lease", NS, NAME) is None


def test_micro_time_parsing_accepts_what_the_api_server_writes():
    assert parse_micro_time("2026-11-23T10:00:00.000250Z") == T0 + timedelta(microseconds=250)
    assert parse_micro_time("2026-11-23T10:00:00Z") == T0
    assert parse_micro_time("") is None and parse_micro_time(None) is None
    with pytest.raises(ValueError):
        parse_micro_time("yesterday")
    with pytest.raises(ValueError):
        format_micro_time(datetime(2026, 11, 23))


# --- the decisions ---------------------------------------------------------------------------------------


def test_nobody_holds_it_so_take_it():
    assert next_record(None, "a", 15, T0, expired=False) == LeaseRecord("a", 15, T0, T0, 0)


def test_renewal_keeps_acquire_time_and_transitions():
    held = LeaseRecord("a", 15, T0, T0 + timedelta(seconds=4), 3)
    later = T0 + timedelta(seconds=6)
    assert next_record(held, "a", 15, later, expired=True) == LeaseRecord("a", 15, T0, later, 3)


def test_a_valid_lease_of_another_replica_is_left_alone():
    held = LeaseRecord("a", 15, T0, T0, 3)
    assert next_record(held, "b", 15, T0 + timedelta(seconds=60), expired=False) is None


def test_an_expired_or_released_lease_is_taken_over_as_a_transition():
    later = T0 + timedelta(seconds=60)
    expired = LeaseRecord("a", 15, T0, T0, 3)
    assert next_record(expired, "b", 15, later, expired=True) == LeaseRecord("b", 15, later, later, 4)
    gone = released(expired, T0 + timedelta(seconds=1))
    assert gone.holder == "" and gone.transitions == 3
    # A released Lease is free at once, however recently it was written.
    assert next_record(gone, "b", 15, later, expired=False) == LeaseRecord("b", 15, later, later, 4)


def test_expiry_counts_from_when_this_replica_saw_the_last_change():
    record = LeaseRecord("a", 15, T0, T0, 0)
    assert not observed_expired(record, observed_at=100.0, now=114.9)
    assert observed_expired(record, observed_at=100.0, now=115.0)


def test_timing_must_leave_the_deadline_inside_the_duration():
    with pytest.raises(ValueError):
        ElectionTiming(lease_duration=10, renew_deadline=10, retry_period=2)
    with pytest.raises(ValueError):
        ElectionTiming(lease_duration=15, renew_deadline=10, retry_period=0)
    assert ElectionTiming(2.5, 2, 1).lease_duration_seconds == 3


def test_namespace_and_identity_defaults(tmp_path, monkeypatch):
    sa_file = tmp_path / "namespace"
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    assert lease_namespace(LeaderElectionSettings(namespace="ops"), sa_file) == "ops"
    with pytest.raises(ValueError, match="leader_election.namespace"):
        lease_namespace(LeaderElectionSettings(), sa_file)
    monkeypatch.setenv("POD_NAMESPACE", "from-env")
    assert lease_namespace(LeaderElectionSettings(), sa_file) == "from-env"
    sa_file.write_text("from-pod\n")
    assert lease_namespace(LeaderElectionSettings(), sa_file) == "from-pod"
    monkeypatch.setenv("HOSTNAME", "gpu-cost-bot-7d9f-abcde")
    assert replica_identity(LeaderElectionSettings()) == "gpu-cost-bot-7d9f-abcde"
    assert replica_identity(LeaderElectionSettings(identity="me")) == "me"


# --- the elector against the fake ----------------------------------------------------------------------


def test_one_leads_renews_and_hands_over_on_release(fake):
    rec_a, rec_b = Recorder(), Recorder()
    a = _elector(fake, "replica-a", rec_a).start()
    b = None
    try:
        assert a.wait_until_leading(10)
        first = _spec(fake)
        assert first["holderIdentity"] == "replica-a" and first["leaseTransitions"] == 0
        assert first["leaseDurationSeconds"] == 2
        wait_for(lambda: _spec(fake)["renewTime"] != first["renewTime"], "a renewal", timeout=10)
        assert _spec(fake)["acquireTime"] == first["acquireTime"]

        b = _elector(fake, "replica-b", rec_b).start()
        assert not b.wait_until_leading(0.5)  # a's Lease is renewed, so b stays a candidate
        assert _spec(fake)["holderIdentity"] == "replica-a" and rec_b.kinds() == []

        a.stop()
        assert rec_a.kinds() == ["started", "stopped"] and not a.is_leader
        assert b.wait_until_leading(10)  # released: no need to wait out the duration
        spec = _spec(fake)
        assert spec["holderIdentity"] == "replica-b" and spec["leaseTransitions"] == 1
        assert rec_b.kinds() == ["started"]
    finally:
        a.stop()
        if b is not None:
            b.stop()
    assert _spec(fake)["holderIdentity"] == ""  # b released on stop too


def test_a_dead_holders_lease_is_taken_over_after_its_duration(fake):
    fake.add({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {
            "holderIdentity": "crashed-replica", "leaseDurationSeconds": 2, "leaseTransitions": 4,
            "acquireTime": "2026-11-23T09:00:00.000000Z", "renewTime": "2026-11-23T09:00:00.000000Z",
        },
    })
    rec = Recorder()
    started = time.monotonic()
    b = _elector(fake, "replica-b", rec).start()
    try:
        assert b.wait_until_leading(10)
        # Not before the duration has passed since b first saw the record, whatever its renewTime says.
        assert time.monotonic() - started >= 2
        spec = _spec(fake)
        assert spec["holderIdentity"] == "replica-b" and spec["leaseTransitions"] == 5
        assert spec["acquireTime"] > "2026-11-23T09:00:00.000000Z"
    finally:
        b.stop()


def test_a_leader_that_cannot_renew_stops_before_others_may_take_over(fake):
    rec = Recorder()
    a = _elector(fake, "replica-a", rec).start()
    try:
        assert a.wait_until_leading(10)
        fake.fail("PUT", LEASE_PATH, 503, "ServiceUnavailable", "apiserver overloaded", times=10_000)
        wait_for(lambda: "stopped" in rec.kinds(), "leading to stop", timeout=10)
        assert not a.is_leader
        last_renew = parse_micro_time(_spec(fake)["renewTime"])
        stopped_at = dict(rec.events)["stopped"]
        # Others may take over lease_duration after the last renewal they saw: a stopped before that.
        assert stopped_at < last_renew + timedelta(seconds=TIMING.lease_duration)
        assert _spec(fake)["holderIdentity"] == "replica-a"  # lost, so not released (it could not write)
    finally:
        a.stop()


def test_a_leader_whose_lease_was_taken_stops_leading(fake):
    rec = Recorder()
    a = _elector(fake, "replica-a", rec).start()
    try:
        assert a.wait_until_leading(10)
        # Someone else wrote a fresh record (e.g. an operator forcing a hand-over).
        lease = LeaseClient(fake.api_client(), NS, NAME)
        current = lease.get(timeout=5)
        now = datetime.now(timezone.utc)
        lease.update(current, LeaseRecord("replica-z", 60, now, now, current.record.transitions + 1), timeout=5)
        wait_for(lambda: "stopped" in rec.kinds(), "leading to stop", timeout=10)
        assert _spec(fake)["holderIdentity"] == "replica-z"
    finally:
        a.stop()


def test_a_failing_start_releases_the_lease(fake):
    calls = []

    def broken():
        calls.append("start")
        raise RuntimeError("database unreachable")

    a = LeaderElector(
        LeaseClient(fake.api_client(), NS, NAME), "replica-a", TIMING,
        on_started_leading=broken, on_stopped_leading=lambda: calls.append("stop"),
    ).start()
    try:
        wait_for(lambda: len(calls) >= 1, "the start callback", timeout=10)
        wait_for(lambda: _spec(fake).get("holderIdentity") == "", "the release", timeout=10)
        assert "stop" not in calls[:1]
    finally:
        a.stop()
