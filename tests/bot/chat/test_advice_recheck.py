"""A right-sizing is re-checked right before acting (issue 21, item 2): the container's GPU request
is still what the advice saw (the executor's own read) and the advice still holds over the
re-check window, read again from a real Prometheus (tests/support/resize_history.py: the real H100
trace of serving/vector-db-0, whose model grows past a 1g.10gb slice at GROWN_AT). The real
kubernetes client against the wire-level fake API server, real stores, Slack at the wire.

The bot's MIG table (actions/hardware/mig.py, after NVIDIA mig-parted) takes the H100 80GB's
1g.10gb slice as 10 decimal GB, 9,537 MiB: with the default 10% headroom the advice holds while
DCGM_FI_DEV_FB_USED stays at or under 9,537 / 1.1 = 8,670 MiB (8.5 GiB), and engine activity at or
under one of seven compute slices (14.3%). The grown model's idle rows read 21,486-21,970 MiB."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from bot.chat.approvals import Approvals
from bot.chat.proposals import Proposals
from tests.support.clock import T0
from tests.support.demo_world import APPROVER, SERVING_CHANNEL, wire_runtime
from tests.support.kueue_webhook import add_vector_db, one_gpu_statefulset, vector_db_mig_advice
from tests.support.resize_history import GROWN_AT

pytestmark = pytest.mark.prometheus
WEEK = 7 * 86400
GREW = "peak framebuffer used 21.0 GiB"  # 21,486 MiB


def proposed(database_url, slack, kube, history, at, *, pod: bool = True):
    """The MIG advice on vector-db proposed at ``at`` (its pod running unless ``pod`` is False):
    (runtime, request id)."""
    if pod:
        add_vector_db(kube, {"app": "vector-db"})
    else:
        kube.add(one_gpu_statefulset({"app": "vector-db"}))
    rt = wire_runtime(database_url, slack, kube, history=history)
    rt.clock.now = at
    [request_id] = Proposals(rt).propose_advice([vector_db_mig_advice()], at, WEEK)
    return rt, request_id


def gpu_limits(kube) -> dict:
    return kube.get("StatefulSet", "serving", "vector-db")["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]


def test_a_resize_whose_pod_still_fits_the_advice_is_applied(database_url, slack, kube, resize_prometheus):
    rt, request_id = proposed(database_url, slack, kube, resize_prometheus, T0)
    rt.clock.now = T0 + timedelta(minutes=30)  # the last hour: 6 GiB at most, 9% at most
    assert Approvals(rt).approve(request_id, APPROVER).ok
    assert gpu_limits(kube) == {"nvidia.com/mig-1g.10gb": "1"}


def test_a_resize_whose_pod_grew_past_the_advice_is_left_alone_and_says_what_grew(
        database_url, slack, kube, resize_prometheus):
    rt, request_id = proposed(database_url, slack, kube, resize_prometheus, GROWN_AT + timedelta(minutes=10))
    rt.clock.now = GROWN_AT + timedelta(minutes=70)
    kube.clear_requests()
    outcome = Approvals(rt).approve(request_id, APPROVER)
    assert not outcome.ok and "the advice no longer holds" in outcome.message and GREW in outcome.message
    assert "more than the 8.5 GiB the advised size holds with its headroom" in outcome.message
    req = rt.store.get(request_id)
    assert req.state == "superseded" and GREW in req.note
    event = rt.store.events(request_id)[-1]
    assert event.event == "superseded" and event.detail()["reason"] == "refused at re-check"
    assert kube.changes() == [] and [r.method for r in kube.requests if r.method != "GET"] == []  # not even a dry run
    assert gpu_limits(kube) == {"nvidia.com/gpu": "1"}
    assert GREW in json.dumps(slack.messages(SERVING_CHANNEL)[req.message_ts]["blocks"])


def test_the_window_runs_from_the_advice_so_five_minutes_of_growth_two_hours_ago_count(
        database_url, slack, kube, resize_prometheus):
    # Advised an hour before T0, approved 5 minutes after the model grew: the window is the time
    # since the advice (2 h 5 min, more than the 1 h minimum), and those 5 minutes are in it.
    rt, request_id = proposed(database_url, slack, kube, resize_prometheus, T0 - timedelta(hours=1))
    rt.clock.now = GROWN_AT + timedelta(minutes=5)
    outcome = Approvals(rt).approve(request_id, APPROVER)
    assert not outcome.ok and GREW in outcome.message and "in the last 2h 5m" in outcome.message
    assert gpu_limits(kube) == {"nvidia.com/gpu": "1"}


def test_a_resize_whose_pod_is_gone_cannot_be_confirmed_and_is_left_alone(database_url, slack, kube, resize_prometheus):
    rt, request_id = proposed(database_url, slack, kube, resize_prometheus, T0, pod=False)
    outcome = Approvals(rt).approve(request_id, APPROVER)
    assert not outcome.ok and "none of its pods runs now" in outcome.message
    assert gpu_limits(kube) == {"nvidia.com/gpu": "1"} and kube.changes() == []


def test_a_resize_with_no_dcgm_samples_in_the_window_is_left_alone(database_url, slack, kube, resize_prometheus):
    # The history ends 3 h after T0: an hour later nothing was scraped, which is not "it fits".
    end = T0 + timedelta(hours=4, minutes=10)
    rt, request_id = proposed(database_url, slack, kube, resize_prometheus, end - timedelta(minutes=5))
    rt.clock.now = end
    outcome = Approvals(rt).approve(request_id, APPROVER)
    assert not outcome.ok and "no DCGM samples of pod vector-db-0 in the last 1h 0m" in outcome.message
    assert kube.changes() == []


def test_without_an_advice_history_now_a_resize_is_not_applied(database_url, slack, kube):
    rt, request_id = proposed(database_url, slack, kube, None, T0)
    outcome = Approvals(rt).approve(request_id, APPROVER)
    assert not outcome.ok and "no Prometheus for advice history is configured" in outcome.message
    assert kube.changes() == []
