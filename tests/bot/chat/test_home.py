"""The App Home tab through the real Bolt app and the fake Slack at the wire: opened
(``app_home_opened``, docs.slack.dev/reference/events/app_home_opened) it is published with
``views.publish`` (docs.slack.dev/reference/methods/views.publish) for an approver with the
requests' buttons and for anyone else without them; a press on it (a ``block_actions`` payload
from a view, docs.slack.dev/reference/interaction-payloads/block_actions-payload: ``container``
type ``view``, a ``view``, no ``channel`` nor ``response_url``) acts as a press in the channel
does, and the Home is published again showing the outcome."""

from __future__ import annotations

import dataclasses
import io
import logging
import time

import pytest

from bot.chat.blocks.home import HomeData, HomeRequest, home_view
from bot.chat.blocks.proposals import APPROVE, RequestStatus
from bot.chat.home import home_data
from bot.chat.slack.app import build_app
from bot.chat.slack.front import SLACK_EVENTS_PATH, SlackEvents
from bot.chat.slack.web import web_client
from bot.service.http import RECEIVED_AT
from tests.support.clock import T0
from tests.support.demo_world import APPROVER, CHANNEL, OTHER, make_runtime, sweep
from tests.support.fakes.block_kit import VIEW_BLOCKS, blocks_errors
from tests.support.fakes.slack_requests import (
    app_home_opened_body,
    block_actions_body,
    bolt_request,
    sign,
    view_block_actions_body,
)
from tests.support.waiting import wait_for

SECRET = "test-signing-secret"


@pytest.fixture
def world(sqlite_url, slack):
    rt = make_runtime(sqlite_url, slack)
    sweep(rt)
    rt.store.set_budget("research", 5000, APPROVER, T0)
    app = build_app(rt, web_client("xoxb-test", slack.base_url), SECRET)
    yield rt, slack, app
    rt.store.close()


def open_home(app, slack, user: str, *, after: int = 0) -> dict:
    """``user`` opens the Home tab; the view Slack holds once the bot published it (the
    ``after``-th publish for them or a later one)."""
    assert app.dispatch(bolt_request(SECRET, app_home_opened_body(user))).status == 200
    return published(slack, user, after)


def published(slack, user: str, after: int) -> dict:
    wait_for(lambda: len([c for c in slack.calls_to("views.publish") if c["user_id"] == user]) > after,
             f"{user}'s Home published", timeout=15)
    return slack.home_views[user]


def buttons(view: dict) -> list[tuple[str, str]]:
    return [(e["action_id"], e["value"]) for b in view["blocks"] if b["type"] == "actions" for e in b["elements"]]


def text(view: dict) -> str:
    return "\n".join(
        b["text"]["text"] if "text" in b else " ".join(e.get("text", "") for e in b.get("elements", ()))
        for b in view["blocks"] if b["type"] in ("section", "context", "header")
    )


def test_an_approver_sees_spend_against_budget_and_the_requests_with_their_buttons(world):
    rt, slack, app = world
    proposed = rt.store.list_requests(states=["proposed"])
    assert proposed, "the demo sweep proposes requests"
    view = open_home(app, slack, APPROVER)
    assert view["type"] == "home"
    shown = text(view)
    assert "*research*: budget $5,000.00/month · spend in 2026-11: unavailable (no cost source in this bot)" in shown
    # The channel message's own buttons: the same action ids, the request id as the value.
    approvable = [r for r in proposed if r.verb]
    assert {(APPROVE, str(r.id)) for r in approvable} <= set(buttons(view))
    for r in proposed:
        assert f"request #{r.id}" in shown
    assert f"*Open requests* ({len(proposed)} awaiting a decision)" in shown
    assert "*Idle GPUs now*:" in shown


def test_the_home_shows_the_month_s_spend_and_forecast_and_the_advice_posted(world):
    rt, _, _ = world
    # The claim the advice job records when it posts (bot.jobs.advice): "<key>#<fingerprint>".
    rt.store.record_alert("research", "advice", "mig/idle-notebook/ml-research/llm-explore#0f3a", T0)
    rt.store.record_alert("training", "advice", "spot/idle-workload/training/big#77aa", T0)  # not the approver's team
    # On 2026-11-20 12:00 UTC, 19.5 of November's 30 days have gone by.
    view = home_view(home_data(rt, APPROVER, spend=lambda start, end: {"research": 1950.0, "training": 9.0}))
    shown = text(view)
    assert "*research*: budget $5,000.00/month · spent $1,950.00 in 2026-11 (39%) · month-end forecast $3,000.00 (60%)" in shown
    assert f"• `mig/idle-notebook/ml-research/llm-explore` (team research) posted 2026-11-20 12:00 UTC in <#{CHANNEL}>" in shown
    assert "spot/" not in shown


def test_someone_who_approves_for_no_team_sees_the_requests_without_buttons(world):
    rt, slack, app = world
    view = open_home(app, slack, OTHER)
    assert buttons(view) == []
    shown = text(view)
    for r in rt.store.list_requests(states=["proposed"]):
        assert f"request #{r.id}" in shown
    assert "Only a team's approvers get its buttons here" in shown
    assert "For <@U0OTHER>: every team" in shown


def test_opening_the_messages_tab_publishes_nothing(world):
    _, slack, app = world
    assert app.dispatch(bolt_request(SECRET, app_home_opened_body(APPROVER, tab="messages"))).status == 200
    open_home(app, slack, OTHER)  # handled after the first on the same pool
    assert [c["user_id"] for c in slack.calls_to("views.publish")] == [OTHER]


def _press(surface: str, rt, slack, app, request_id: int) -> None:
    if surface == "home":
        view = open_home(app, slack, APPROVER)
        body = view_block_actions_body(APPROVE, str(request_id), APPROVER, view, block_id=f"request-{request_id}")
    else:
        req = rt.store.get(request_id)
        posted = slack.messages(CHANNEL)[req.message_ts]
        body = block_actions_body(APPROVE, str(request_id), APPROVER, CHANNEL, req.message_ts,
                                  slack.response_url("press"), block_id=f"request-{request_id}",
                                  message_blocks=posted["blocks"])
    assert app.dispatch(bolt_request(SECRET, body)).status == 200


@pytest.mark.parametrize("surface", ["channel", "home"])
def test_approve_on_the_home_acts_as_approve_in_the_channel(world, surface):
    rt, slack, app = world
    req = next(r for r in rt.store.list_requests(states=["proposed"]) if r.verb)
    before = len(slack.calls_to("views.publish"))
    _press(surface, rt, slack, app, req.id)
    done = wait_for(lambda: (r := rt.store.get(req.id)).state == "done" and r, "the request acted on")
    assert done.decided_by == APPROVER
    events = [e.event for e in rt.store.events(req.id)]
    assert events[-3:] == ["approved", "dry-run-accepted", "applied"], events
    # The channel message shows it done, whichever surface the press came from.
    wait_for(lambda: ":white_check_mark: Done" in str(slack.messages(CHANNEL)[req.message_ts]["blocks"]),
             "the channel message updated")
    # And the presser's Home is published again: the request no longer has its buttons there, and
    # the press's answer is on top.
    view = published(slack, APPROVER, before + (1 if surface == "home" else 0))
    assert (APPROVE, str(req.id)) not in buttons(view)
    assert f"Your last press: Request #{req.id}" in text(view)


def test_a_refused_press_on_the_home_is_answered_on_the_home_and_changes_nothing(world):
    rt, slack, app = world
    req = next(r for r in rt.store.list_requests(states=["proposed"]) if r.verb)
    view = open_home(app, slack, APPROVER)  # an approver's Home, pressed by someone who is not one
    body = view_block_actions_body(APPROVE, str(req.id), OTHER, view, block_id=f"request-{req.id}")
    assert app.dispatch(bolt_request(SECRET, body)).status == 200
    other = published(slack, OTHER, 0)
    assert f"Your last press: Only approvers of team research (<@{APPROVER}>) can approve request #{req.id}" in text(other)
    assert buttons(other) == []
    assert rt.store.get(req.id).state == "proposed"
    assert [e.event for e in rt.store.events(req.id)][-1] == "approve-rejected"


def test_a_slack_failure_to_publish_is_logged_and_the_next_open_publishes(world, caplog):
    _, slack, app = world
    slack.fail_next("views.publish", error="not_enabled")
    with caplog.at_level(logging.WARNING, logger="bot.chat.slack.home"):
        assert app.dispatch(bolt_request(SECRET, app_home_opened_body(APPROVER))).status == 200
        wait_for(lambda: "not published" in caplog.text, "the failure logged")
    assert "not_enabled" in caplog.text and APPROVER not in slack.home_views
    assert open_home(app, slack, APPROVER, after=1)["type"] == "home"


def test_the_home_stays_within_slacks_limits_with_many_requests_and_teams(world):
    rt, _, _ = world
    data = home_data(rt, APPROVER)
    one = data.requests[0]
    many = tuple(
        HomeRequest(finding=one.finding, status=dataclasses.replace(one.status, id=i, note="n" * 2900),
                    team=one.team, may_press=True)
        for i in range(1, 200)
    )
    spend = tuple(dataclasses.replace(data.spend[0], team=f"team-{i}-" + "x" * 80) for i in range(100))
    view = home_view(HomeData(user=APPROVER, now=T0, teams=("research",), spend=spend, requests=many, idle=many))
    assert blocks_errors(view["blocks"], VIEW_BLOCKS) == []
    assert "… and 179 more in the teams' channels." in text(view)
    (spent,) = [b["text"]["text"] for b in view["blocks"] if b.get("text", {}).get("text", "").startswith("*Spend")]
    assert spent.endswith(" more") and "\n… and " in spent  # the spend lines, cut at whole lines


def test_a_request_status_renders_its_buttons_only_when_the_viewer_may_press():
    # Pure: the same request, once for an approver and once for anyone else.
    status = RequestStatus(id=7, state="proposed", dry_run=False, expires_at=T0)
    data = home_data_stub(status)
    assert [a for a, _ in buttons(home_view(data))][:1] == [APPROVE]
    nobody = dataclasses.replace(data, requests=tuple(dataclasses.replace(r, may_press=False) for r in data.requests))
    assert buttons(home_view(nobody)) == []


def home_data_stub(status: RequestStatus) -> HomeData:
    from tests.support.demo_world import demo_fleet, detect

    finding = next(f for f in detect(*demo_fleet()) if f.action is not None)
    return HomeData(user=APPROVER, now=T0, teams=("research",),
                    requests=(HomeRequest(finding=finding, status=status, team="research", may_press=True),))


def test_a_press_refreshes_the_home_of_the_requests_other_approvers(sqlite_url, slack):
    second = "U0SECOND"
    rt = make_runtime(sqlite_url, slack, approvers=(APPROVER, second))
    sweep(rt)
    app = build_app(rt, web_client("xoxb-test", slack.base_url), SECRET)
    req = next(r for r in rt.store.list_requests(states=["proposed"]) if r.verb)
    view = open_home(app, slack, APPROVER)
    body = view_block_actions_body(APPROVE, str(req.id), APPROVER, view, block_id=f"request-{req.id}")
    assert app.dispatch(bolt_request(SECRET, body)).status == 200
    theirs = published(slack, second, 0)
    wait_for(lambda: rt.store.get(req.id).state == "done", "the request acted on")
    assert (APPROVE, str(req.id)) not in buttons(theirs)
    assert "Your last press" not in text(theirs)  # the answer is the presser's alone
    rt.store.close()


def _through_the_front(front, body: str) -> int:
    """POST ``body`` signed to the HTTP front as the server hands it a request; the status."""
    raw = body.encode()
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": SLACK_EVENTS_PATH, "CONTENT_LENGTH": str(len(raw)),
               "wsgi.input": io.BytesIO(raw), RECEIVED_AT: time.monotonic()}
    for k, v in sign(SECRET, body, int(time.time())).items():
        environ["CONTENT_TYPE" if k == "Content-Type" else "HTTP_" + k.upper().replace("-", "_")] = v
    got: dict = {}
    b"".join(front(environ, lambda status, headers, exc=None: got.update(status=status)))
    return int(got["status"].split()[0])


def test_in_http_mode_the_front_takes_the_event_and_the_home_press(world):
    # The Events API body is JSON, the press a form body: both pass the front's checks to Bolt.
    rt, slack, _ = world
    front = SlackEvents(build_app(rt, web_client("xoxb-test", slack.base_url), SECRET), SECRET)
    assert _through_the_front(front, app_home_opened_body(APPROVER)) == 200
    view = published(slack, APPROVER, 0)
    req = next(r for r in rt.store.list_requests(states=["proposed"]) if r.verb)
    body = view_block_actions_body(APPROVE, str(req.id), APPROVER, view, block_id=f"request-{req.id}")
    assert _through_the_front(front, body) == 200
    wait_for(lambda: rt.store.get(req.id).state == "done", "the request acted on")


def test_a_refused_press_refreshes_no_other_approvers_home(world):
    rt, slack, app = world
    req = next(r for r in rt.store.list_requests(states=["proposed"]) if r.verb)
    view = open_home(app, slack, APPROVER)
    before = len(slack.calls_to("views.publish"))
    body = view_block_actions_body(APPROVE, str(req.id), OTHER, view, block_id=f"request-{req.id}")
    assert app.dispatch(bolt_request(SECRET, body)).status == 200
    published(slack, OTHER, 0)
    time.sleep(0.5)  # any refresh of the approver's Home would have been queued with the presser's
    # Anyone may press any button: a refused press must not cost a cost report per approver.
    assert [c["user_id"] for c in slack.calls_to("views.publish")[before:]] == [OTHER]


def test_a_held_request_no_sweep_has_seen_for_an_hour_is_not_idle_now(world):
    from datetime import timedelta

    rt, _, _ = world
    req = next(r for r in rt.store.list_requests(states=["proposed"]) if r.verb)
    rt.store.transition(req.id, from_states=["proposed"], to_state="exempt", now=rt.clock(), actor=APPROVER,
                        event="exempted", until=rt.clock() + timedelta(days=7))
    assert req.id in {r.status.id for r in home_data(rt, APPROVER).idle}
    # The notebook got busy or went away: no sweep refreshes the exempt request any more.
    rt.clock.now += timedelta(hours=2)
    assert req.id not in {r.status.id for r in home_data(rt, APPROVER).idle}


def test_the_homes_refreshed_after_one_press_read_the_spend_once_per_month_start():
    from datetime import datetime, timezone

    from bot.chat.slack.home import _read_once

    calls = []
    once = _read_once(lambda start, end: calls.append(start) or {"research": 1.0})
    start = datetime(2026, 11, 1, tzinfo=timezone.utc)
    for _ in range(21):  # the presser and 20 approvers
        assert once(start, datetime(2026, 11, 20, tzinfo=timezone.utc)) == {"research": 1.0}
    assert calls == [start]
