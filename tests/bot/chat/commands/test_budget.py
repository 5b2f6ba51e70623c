"""``/gpu budget``: showing and setting monthly budgets, on real stores (SQLite and PostgreSQL),
approvers resolved through Slack user groups at the wire, and the slash command through a signed
request to the real Bolt app."""

from __future__ import annotations

import io
from datetime import datetime, timezone

import pytest

from actions.executors.in_memory import InMemoryCluster
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.recording import RecordedTelemetry
from actions.store.database import Store
from bot.chat.commands import CommandContext, dispatch
from bot.chat.commands.budget import parse_usd_per_month
from bot.chat.console import ConsoleChat
from bot.chat.slack.app import build_app
from bot.chat.slack.web import UserGroups, web_client
from bot.runtime.runtime import Runtime
from tests.support.clock import Clock
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import bolt_request, slash_command_body
from tests.support.paths import DEMO
from tests.support.waiting import wait_for

SECRET = "test-signing-secret"
LEAD, GROUP_MEMBER, OTHER = "U0LEAD", "U0MEMBER", "U0OTHER"
CHANNEL = "C0RESEARCH"
# 2026-11-11 00:00 UTC: ten of November's thirty days have gone by.
NOW = datetime(2026, 11, 11, tzinfo=timezone.utc)


@pytest.fixture
def world(database_url):
    with FakeSlack() as slack:
        slack.usergroups = {"S0LEADS": [GROUP_MEMBER]}
        client = web_client("xoxb-test", slack.base_url)
        store = Store(database_url)
        store.migrate()
        cluster = InMemoryCluster.from_kubectl_dump((DEMO / "cluster.json").read_bytes())
        clock = Clock()
        clock.now = NOW
        rt = Runtime(
            store=store,
            chat=ConsoleChat(io.StringIO()),
            cluster=cluster,
            telemetry=RecordedTelemetry.from_file(DEMO / "telemetry.json"),
            writer=cluster,
            prices=PriceBook(PriceCatalog.bundled()),
            teams=TeamDirectory(
                [
                    Team(name="research", namespaces=["ml-research"], channel=CHANNEL, approvers=[LEAD, "S0LEADS"]),
                    Team(name="training", namespaces=["training"], monthly_budget_usd=20000),
                ]
            ),
            policy=Policy(),
            dry_run=True,
            clock=clock,
            group_members=UserGroups(client).members,
        )
        yield rt, slack, client
        store.close()


def run(rt, text, user, **kw):
    return dispatch(text, CommandContext(user=user, prices=rt.prices, rt=rt, channel=kw.pop("channel", CHANNEL), **kw))


def test_an_approver_sets_a_budget_in_the_channel_and_it_is_audited(world):
    rt, _, _ = world
    reply = run(rt, "budget set research 5000/month", LEAD)
    assert not reply.ephemeral
    assert "<@U0LEAD> set team research's GPU budget to $5,000.00/month" in reply.message.blocks[0]["text"]["text"]
    assert rt.store.budget("research").usd_per_month == 5000
    reply = run(rt, "budget set research $7,500 per month", GROUP_MEMBER)  # approver through S0LEADS
    assert "(was $5,000.00/month)" in reply.message.text
    assert rt.store.budget("research").usd_per_month == 7500
    assert [(e.actor, e.event, e.detail()["usd_per_month"]) for e in rt.store.all_events()] == [
        (LEAD, "budget-set", 5000.0),
        (GROUP_MEMBER, "budget-set", 7500.0),
    ]


def test_a_non_approver_is_refused_through_slack_and_nothing_changes(world):
    rt, slack, client = world
    rt.store.set_budget("research", 5000, LEAD, NOW)
    app = build_app(rt, client, SECRET)
    body = slash_command_body(
        text="budget set research 90000/month", user_id=OTHER, channel_id=CHANNEL, response_url=slack.response_url("cmd")
    )
    assert app.dispatch(bolt_request(SECRET, body)).status == 200
    wait_for(lambda: slack.responses_to("cmd"), "the refusal", timeout=10)
    (answer,) = slack.responses_to("cmd")
    assert answer["response_type"] == "ephemeral"
    assert "Only approvers of team research (<@U0LEAD>, <!subteam^S0LEADS>) can set its budget" in answer["text"]
    assert rt.store.budget("research").usd_per_month == 5000
    (rejected,) = [e for e in rt.store.all_events() if e.event == "budget-set-rejected"]
    assert rejected.actor == OTHER and rejected.detail()["usd_per_month"] == 90000


@pytest.mark.parametrize(
    "text, problem, example",
    [
        ("budget set research lots", "`lots` is not an amount in USD per month", "/gpu budget set research 5000/month"),
        ("budget set research -5/month", "`-5/month` is not an amount", "/gpu budget set research 5000/month"),
        ("budget set research", "Say which team and how many USD per month", "/gpu budget set research 5000/month"),
        ("budget research training", "takes one team name", "/gpu budget set research 5000/month"),
    ],
)
def test_malformed_input_gets_an_ephemeral_error_with_a_correct_example(world, text, problem, example):
    rt, _, _ = world
    reply = run(rt, text, LEAD)
    assert reply.ephemeral
    assert problem in reply.message.text and f"For example: `{example}`" in reply.message.text
    assert rt.store.budgets() == []


@pytest.mark.parametrize(
    "text, example",
    [
        ("budget set nosuch 100/month", "/gpu budget set research 100/month"),
        ("budget set trainng $2,000", "/gpu budget set training $2,000"),  # a typo: the team meant
        ("budget set nosuch lots", "/gpu budget set research 5000/month"),
    ],
)
def test_setting_the_budget_of_no_team_names_the_teams_there_are(world, text, example):
    rt, _, _ = world
    reply = run(rt, text, LEAD)
    assert reply.ephemeral
    said = reply.message.text
    assert f"No team `{text.split()[2]}`. Teams: research, training." in said, said
    assert f"For example: `{example}`" in said
    assert "approvers" not in said
    assert rt.store.budgets() == []


def test_showing_budgets_with_and_without_a_cost_source(world):
    rt, _, _ = world
    rt.store.set_budget("research", 3000, LEAD, NOW)
    text = run(rt, "budget", OTHER).message.blocks[0]["text"]["text"]  # in research's channel: research
    assert text.startswith("*research*: $3,000.00/month (set by <@U0LEAD> on 2026-11-11 00:00 UTC)")
    assert "spend: unavailable" in text and "training" not in text

    seen = []

    def spend(start, end):
        seen.append((start, end))
        return {"research": 1200.0, "training": 500.0}

    text = run(rt, "budget", OTHER, channel="C0ELSEWHERE", spend_usd=spend).message.blocks[0]["text"]["text"]
    assert seen == [(datetime(2026, 11, 1, tzinfo=timezone.utc), NOW)] * 2
    # research: 1,200 in a third of the month -> 3,600 by its end (linear), 120% of 3,000.
    assert "spent $1,200.00 in 2026-11 (40%), month-end forecast $3,600.00 (120%" in text
    assert "*training*: $20,000.00/month (from the bot's config)" in text
    assert "spent $500.00 in 2026-11 (2%), month-end forecast $1,500.00 (8%" in text


def test_a_team_without_a_budget_is_told_how_to_set_one(world):
    rt, _, _ = world
    text = run(rt, "budget serving", OTHER).message.text
    assert "serving: no budget" in text and "/gpu budget set serving 5000/month" in text


@pytest.mark.parametrize(
    "text, usd",
    [("5000", 5000), ("$5,000", 5000), ("5000/month", 5000), ("$1,234.50 per month", 1234.5), ("5k/mo", 5000),
     ("lots", None), ("5,00", None), ("5000/week", None), ("", None)],
)
def test_parse_usd_per_month(text, usd):
    assert parse_usd_per_month(text) == usd


def test_a_budget_kueue_can_enforce_is_set_by_the_queues_team_and_read_as_typed(world):
    rt, _, _ = world
    reply = run(rt, "budget set lq ml-research/research-queue 2,000 GPU-hours per month ask", LEAD)
    assert not reply.ephemeral
    assert ("set the GPU budget of LocalQueue ml-research/research-queue to 2,000 GPU-hours per month, then a "
            "request to hold its LocalQueue(s) at 100%") in reply.message.blocks[0]["text"]["text"]
    [rule] = rt.store.rules()
    assert (rule.scope, rule.name, rule.amount, rule.unit, rule.on_exhausted, rule.set_by) == (
        "localqueue", "ml-research/research-queue", 2000.0, "gpu_hours", "ask", LEAD)
    [event] = [e for e in rt.store.all_events() if e.event == "budget-set"]
    assert event.detail()["budget"] == "localqueue:ml-research/research-queue" and event.detail()["previous"] is None
    # A ClusterQueue serves several teams: only the cluster admins set its budget (none here).
    refused = run(rt, "budget set cq cq-h100 $50k/week auto", LEAD)
    assert refused.ephemeral and "Only approvers of the cluster admins" in refused.message.text
    assert len(rt.store.rules()) == 1


def test_a_misread_queue_budget_says_what_was_understood(world):
    rt, _, _ = world
    reply = run(rt, "budget set lq research-queue 2000", LEAD)
    assert reply.ephemeral and "A LocalQueue is named namespace/name" in reply.message.text
    assert "/gpu budget set localqueue training/research-queue 2000 gpu-hours/month" in reply.message.text
    reply = run(rt, "budget set localqueue ml-research/q 10 drain", LEAD)
    assert "set only in the bot's config (budgets[].stop_policy: HoldAndDrain)" in reply.message.text
    assert rt.store.rules() == []
