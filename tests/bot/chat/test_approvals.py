"""The ActionRequest state machine end to end, on real stores (SQLite and PostgreSQL), Slack at
the wire (FakeSlack + the real WebClient), the recorded fleet in an in-memory cluster."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from actions.remedy.patches import STOPPED_ANNOTATION
from actions.sources.recording import RecordedTelemetry
from bot.chat.approvals import Approvals
from bot.chat.blocks import proposals
from tests.support.clock import T0
from tests.support.demo_world import APPROVER, CHANNEL, OTHER, buttons, make_runtime, sweep
from tests.support.fakes.slack_api import FakeSlack
from tests.support.paths import DEMO

KEY = "idle-notebook/ml-research/llm-explore"


@pytest.fixture
def slack():
    with FakeSlack() as fake:
        fake.usergroups = {"S0APPROVERS": ["U0GROUPMEMBER"]}
        yield fake


def events(rt, request_id):
    return [(e.actor, e.event) for e in rt.store.events(request_id)]


@pytest.fixture
def rt(database_url, slack):
    return make_runtime(database_url, slack)


def test_sweep_posts_one_proposal_and_updates_it_on_the_next_sweep(rt, slack):
    assert sweep(rt)["proposed"] == 1
    posts = slack.calls_to("chat.postMessage")
    assert len(posts) == 1 and posts[0]["channel"] == CHANNEL
    (ts, message), = slack.messages(CHANNEL).items()
    assert buttons(message) == [proposals.APPROVE, proposals.SNOOZE, proposals.EXEMPT, proposals.DENY]
    text = str(message["blocks"])
    # p5.48xlarge $55.04 / 8 GPUs = $6.88 per GPU-hour; x 24 h = $165.12 a day.
    assert "llm-explore" in text and "$6.88/h" in text and "$165.12/day" in text
    assert "p5.48xlarge" in text and "as of 2026-07-20" in text

    rt.clock.now += timedelta(minutes=5)
    counts = sweep(rt)
    assert counts["proposed"] == 0 and counts["updated"] == 1
    assert len(slack.calls_to("chat.postMessage")) == 1  # no duplicate
    assert slack.calls_to("chat.update")[-1]["ts"] == ts
    (req,) = rt.store.list_requests()
    assert req.state == "proposed" and req.message_ts == ts


def test_only_approvers_can_approve_and_a_double_click_acts_once(rt, slack):
    sweep(rt)
    (req,) = rt.store.list_requests()
    approvals = Approvals(rt)

    refused = approvals.approve(req.id, OTHER)
    assert not refused.ok and f"<@{APPROVER}>" in refused.message
    assert rt.store.get(req.id).state == "proposed"
    assert rt.cluster.get("Notebook", "ml-research", "llm-explore")["metadata"].get("annotations", {}).get(STOPPED_ANNOTATION) is None

    rt.clock.now += timedelta(minutes=5)
    done = approvals.approve(req.id, APPROVER)
    assert done.ok, done.message
    nb = rt.cluster.get("Notebook", "ml-research", "llm-explore")
    assert STOPPED_ANNOTATION in nb["metadata"]["annotations"]
    assert "llm-explore-0" not in {p.name for p in rt.cluster.snapshot(rt.clock.now).pods}
    req = rt.store.get(req.id)
    assert (req.state, req.decided_by) == ("done", APPROVER)
    message = slack.messages(CHANNEL)[req.message_ts]
    assert buttons(message) == [proposals.RESTORE]
    assert f"<@{APPROVER}>" in str(message["blocks"])

    again = approvals.approve(req.id, APPROVER)
    assert not again.ok and "already done" in again.message
    assert [e for _, e in events(rt, req.id)].count("applied") == 1
    assert (OTHER, "approve-rejected") in events(rt, req.id)
    assert (APPROVER, "approve-ignored") in events(rt, req.id)


def test_restore_undoes_the_action_exactly(rt, slack):
    sweep(rt)
    (req,) = rt.store.list_requests()
    approvals = Approvals(rt)
    rt.clock.now += timedelta(minutes=5)
    assert approvals.approve(req.id, APPROVER).ok
    assert not approvals.restore(req.id, OTHER).ok  # restore is an approver's decision too
    rt.clock.now += timedelta(minutes=5)
    assert approvals.restore(req.id, APPROVER).ok
    nb = rt.cluster.get("Notebook", "ml-research", "llm-explore")
    assert STOPPED_ANNOTATION not in (nb["metadata"].get("annotations") or {})
    assert "llm-explore-0" in {p.name for p in rt.cluster.snapshot(rt.clock.now).pods}
    assert rt.store.get(req.id).state == "restored"
    assert (OTHER, "restore-rejected") in events(rt, req.id)
    names = [e for _, e in events(rt, req.id)]
    assert names.index("approved") < names.index("applied") < names.index("restore-requested") < names.index("restored")
    assert buttons(slack.messages(CHANNEL)[req.message_ts]) == []


def test_a_notebook_busy_again_at_approval_is_left_alone(database_url, slack):
    recording = RecordedTelemetry.from_file(DEMO / "telemetry.json")
    sweep_snap, recheck_snap = recording.snapshots
    busy = dataclasses.replace(
        recheck_snap,
        gpus=tuple(
            dataclasses.replace(g, peak_engine_pct=97.0, mean_power_w=650.0) if g.pod == "llm-explore-0" else g
            for g in recheck_snap.gpus
        ),
    )
    rt = make_runtime(database_url, slack, telemetry=RecordedTelemetry([sweep_snap, busy]))
    sweep(rt)
    (req,) = rt.store.list_requests()
    rt.clock.now = recheck_snap.at
    outcome = Approvals(rt).approve(req.id, APPROVER)
    assert not outcome.ok and "busy again" in outcome.message
    assert rt.store.get(req.id).state == "superseded"
    nb = rt.cluster.get("Notebook", "ml-research", "llm-explore")
    assert STOPPED_ANNOTATION not in (nb["metadata"].get("annotations") or {})
    assert "no longer idle" in str(slack.messages(CHANNEL)[req.message_ts]["blocks"])


def test_dry_run_records_everything_and_patches_nothing(database_url, slack):
    rt = make_runtime(database_url, slack, dry_run=True)
    sweep(rt)
    (req,) = rt.store.list_requests()
    rt.clock.now += timedelta(minutes=5)
    assert Approvals(rt).approve(req.id, APPROVER).ok
    assert rt.store.get(req.id).state == "done"
    nb = rt.cluster.get("Notebook", "ml-research", "llm-explore")
    assert STOPPED_ANNOTATION not in (nb["metadata"].get("annotations") or {})
    assert "DRY RUN" in str(slack.messages(CHANNEL)[req.message_ts]["blocks"])
    # The pod still runs, so the next sweep finds it again: it updates the same request.
    rt.clock.now += timedelta(minutes=1)
    assert sweep(rt)["proposed"] == 0
    assert len(rt.store.list_requests()) == 1


def test_snooze_then_repropose_when_still_idle(rt, slack):
    sweep(rt)
    (req,) = rt.store.list_requests()
    outcome = Approvals(rt).snooze(req.id, OTHER)  # anyone may snooze
    assert outcome.ok
    req = rt.store.get(req.id)
    assert req.state == "snoozed" and req.until == T0 + timedelta(hours=4)
    assert buttons(slack.messages(CHANNEL)[req.message_ts]) == []
    rt.clock.now = T0 + timedelta(hours=1)
    sweep(rt)
    assert rt.store.get(req.id).state == "snoozed"
    rt.clock.now = T0 + timedelta(hours=4, minutes=1)
    assert sweep(rt)["reproposed"] == 1
    assert rt.store.get(req.id).state == "proposed"
    assert buttons(slack.messages(CHANNEL)[req.message_ts])[0] == proposals.APPROVE
    assert len(slack.calls_to("chat.postMessage")) == 1


def test_exempt_and_deny_need_an_approver(rt, slack):
    sweep(rt)
    (req,) = rt.store.list_requests()
    approvals = Approvals(rt)
    assert not approvals.exempt(req.id, OTHER).ok
    assert not approvals.deny(req.id, OTHER).ok
    assert rt.store.get(req.id).state == "proposed"
    assert approvals.exempt(req.id, APPROVER).ok
    req = rt.store.get(req.id)
    assert req.state == "exempt" and req.until == T0 + timedelta(days=7)
    rt.clock.now = T0 + timedelta(days=1)
    assert sweep(rt)["proposed"] == 0


def test_a_request_expires_and_a_later_sweep_asks_again(rt, slack):
    sweep(rt)
    (req,) = rt.store.list_requests()
    rt.clock.now = T0 + timedelta(hours=25)
    assert not Approvals(rt).approve(req.id, APPROVER).ok
    assert rt.store.get(req.id).state == "expired"
    counts = sweep(rt)
    assert counts["proposed"] == 1
    assert len(slack.calls_to("chat.postMessage")) == 2
    assert "Expired" in str(slack.messages(CHANNEL)[req.message_ts]["blocks"])


def test_user_group_members_can_approve(database_url, slack):
    rt = make_runtime(database_url, slack, approvers=("S0APPROVERS",))
    sweep(rt)
    (req,) = rt.store.list_requests()
    refused = Approvals(rt).approve(req.id, APPROVER)
    assert not refused.ok and "<!subteam^S0APPROVERS>" in refused.message
    rt.clock.now += timedelta(minutes=5)
    assert Approvals(rt).approve(req.id, "U0GROUPMEMBER").ok


def test_a_failed_post_is_retried_by_the_next_sweep(rt, slack):
    slack.fail_next("chat.postMessage", error="channel_not_found")
    sweep(rt)
    (req,) = rt.store.list_requests()
    assert req.state == "proposed" and req.message_ts is None
    rt.clock.now += timedelta(minutes=5)
    sweep(rt)
    req = rt.store.get(req.id)
    assert req.message_ts in slack.messages(CHANNEL)
    assert len(rt.store.list_requests()) == 1


def test_a_bot_of_one_cluster_names_its_requests_and_acts_on_no_other(rt, slack):
    sweep(rt)
    (req,) = rt.store.list_requests()
    # The one cluster's name (cluster_name, "default" unless set); key and message as they always were.
    assert (req.key, req.cluster) == (KEY, "default")
    assert " in cluster " not in slack.messages(CHANNEL)[req.message_ts]["text"]

    # The same bot renamed its cluster: the request made under the old name is refused, not guessed.
    renamed = dataclasses.replace(rt, cluster_name="gpu-main")
    rt.clock.now += timedelta(minutes=5)
    outcome = Approvals(renamed).approve(req.id, APPROVER)
    assert not outcome.ok and "no cluster 'default'; this bot watches one cluster, gpu-main" in outcome.message
    failed = renamed.store.get(req.id)
    assert failed.state == "failed" and failed.note.startswith("Not acted on, nothing was changed")
    nb = rt.cluster.get("Notebook", "ml-research", "llm-explore")
    assert STOPPED_ANNOTATION not in (nb["metadata"].get("annotations") or {})


def test_a_proposal_of_a_renamed_cluster_is_closed_and_its_finding_proposed_under_the_new_name(rt, slack):
    sweep(rt)
    (old,) = rt.store.list_requests()
    renamed = dataclasses.replace(rt, cluster_name="gpu-main")
    rt.clock.now += timedelta(minutes=5)
    counts = sweep(renamed)
    assert (counts["superseded"], counts["proposed"], counts["updated"]) == (1, 1, 0)
    closed = renamed.store.get(old.id)
    assert closed.state == "superseded" and closed.note == "Its cluster default is no longer configured; not acted on."
    new = renamed.store.open_for_key(KEY)
    assert new.cluster == "gpu-main" and new.id != old.id
    assert Approvals(renamed).approve(new.id, APPROVER).ok
    nb = rt.cluster.get("Notebook", "ml-research", "llm-explore")
    assert STOPPED_ANNOTATION in nb["metadata"]["annotations"]
