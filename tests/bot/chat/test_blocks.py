"""Block Kit renderers: every state renders within Slack's limits with the right buttons."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta, timezone

import pytest

from actions.model.codec import finding_from_jsonable, to_jsonable
from bot.chat.blocks import proposals
from bot.chat.console import to_text
from tests.support.demo_world import detect

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)


def status(state, **kw):
    return proposals.RequestStatus(id=7, state=state, dry_run=False, expires_at=T0 + timedelta(days=1), **kw)


@pytest.mark.parametrize(
    "state,expected",
    [
        ("proposed", [proposals.APPROVE, proposals.SNOOZE, proposals.EXEMPT, proposals.DENY]),
        ("done", [proposals.RESTORE]),
        ("snoozed", []),
        ("superseded", []),
        ("restored", []),
    ],
)
def test_buttons_follow_the_state(demo_fleet, state, expected):
    (finding,) = detect(*demo_fleet)
    message = proposals.proposal_message(finding, status(state, decided_by="U1", decided_at=T0))
    actions = [e for b in message.blocks if b["type"] == "actions" for e in b["elements"]]
    assert [a["action_id"] for a in actions] == expected
    assert all(a["value"] == "7" for a in actions)


def test_many_gpus_stay_within_slack_limits(demo_fleet):
    (finding,) = detect(*demo_fleet)
    big = dataclasses.replace(finding, evidence=finding.evidence * 64, gpus=64)
    message = proposals.proposal_message(big, status("proposed"))
    assert len(message.blocks) <= 50
    for b in message.blocks:
        if b["type"] == "section" and "text" in b:
            assert len(b["text"]["text"]) <= 3000
    assert "56 more GPUs" in json.dumps(message.blocks)


def test_a_finding_survives_the_store_round_trip_and_renders_the_same(demo_fleet):
    (finding,) = detect(*demo_fleet)
    back = finding_from_jsonable(json.loads(json.dumps(to_jsonable(finding))))
    assert back == finding
    assert proposals.proposal_message(back, status("proposed")) == proposals.proposal_message(finding, status("proposed"))


def test_console_rendering_turns_buttons_into_commands(demo_fleet):
    (finding,) = detect(*demo_fleet)
    text = to_text(proposals.proposal_message(finding, status("proposed")))
    assert "[approve 7] [snooze 7] [exempt 7] [deny 7]" in text
    assert "$6.88/h" in text and "*" not in text  # p5.48xlarge $55.04 / 8 GPUs = $6.88 per GPU-hour


def test_durations_and_money_read_naturally():
    assert proposals.duration(93784) == "1d 2h"
    assert proposals.duration(5400) == "1h 30m"
    assert proposals.usd(8064) == "$8,064.00"


def test_the_console_shows_mrkdwn_as_a_terminal_reads_it():
    from bot.runtime.chat import Message

    text = (":warning: *Budget* of <!subteam^S0PLAT> at 80%: see <https://grafana.example/d/gpu|the dashboard>, "
            "asked by <@U0ALICE>\n```\nteam      cost\nresearch  $1.00\n```\nSQLite :memory: stays")
    shown = to_text(Message(text=text))
    assert shown == ("⚠️ Budget of @group:S0PLAT at 80%: see the dashboard (https://grafana.example/d/gpu), asked by "
                     "@U0ALICE\nteam      cost\nresearch  $1.00\nSQLite :memory: stays")


def test_a_proposal_says_what_its_idle_gpus_draw_a_day_and_its_carbon(demo_fleet):
    (finding,) = detect(*demo_fleet)
    # The demo's notebook GPU holds a model at 0%: the real H100 capture's ~127 W, all day.
    watts = finding.evidence[0].mean_power_w
    assert 120 < watts < 135 and finding.kwh_per_day == pytest.approx(watts * 24 / 1000)
    assert finding.co2e_kg_per_day is None  # no carbon intensity known
    assert f"*Energy*\n{finding.kwh_per_day:.1f} kWh/day" in json.dumps(proposals.proposal_message(finding, status("proposed")).blocks).replace("\\n", "\n")
    grid = dataclasses.replace(finding, pue=1.2, gco2e_per_kwh=283.89)  # us-east-1 (eGRID2022 SRVC), PUE 1.2
    co2 = finding.kwh_per_day * 1.2 * 283.89 / 1000
    assert grid.co2e_kg_per_day == pytest.approx(co2)
    text = to_text(proposals.proposal_message(grid, status("proposed")))
    assert f"Energy: {grid.kwh_per_day:.1f} kWh ({co2:.1f} kg CO2e)/day" in text
    # and the factors survive the store, as the proposal is re-rendered from it after a press
    assert finding_from_jsonable(json.loads(json.dumps(to_jsonable(grid)))) == grid
