"""Policy per team and per namespace, and the modes ask / auto / report: the recorded fleet in an
in-memory cluster, real SQLite stores, Slack at the wire (FakeSlack and the real WebClient)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from actions.executors.in_memory import InMemoryCluster
from actions.policy.namespaces import PolicyBook
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.remedy.patches import STOPPED_ANNOTATION
from actions.sources.recording import RecordedTelemetry
from actions.store.database import Store
from bot.chat.approvals import Approvals
from bot.chat.blocks import proposals
from bot.chat.proposals import POLICY
from bot.chat.slack.web import SlackChat, web_client
from bot.runtime.runtime import Runtime
from bot.wiring.jobs import sweep_for
from tests.support.clock import T0, Clock
from tests.support.demo_world import APPROVER, CHANNEL, OTHER
from tests.support.fakes.slack_api import FakeSlack
from tests.support.paths import DEMO

GRACE = timedelta(hours=4)


@pytest.fixture
def slack():
    with FakeSlack() as fake:
        yield fake


def make(url, slack, team_policy: dict, namespace_annotations: dict | None = None) -> Runtime:
    store = Store(url)
    store.migrate()
    items = json.loads((DEMO / "cluster.json").read_bytes())["items"]
    if namespace_annotations is not None:
        items.append({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": "ml-research", "annotations": namespace_annotations}})
    cluster = InMemoryCluster(items)
    teams = TeamDirectory([Team(name="research", namespaces=["ml-research"], channel=CHANNEL, approvers=[APPROVER],
                                policy=team_policy)])
    return Runtime(
        store=store, chat=SlackChat(web_client("xoxb-test", slack.base_url)), cluster=cluster,
        telemetry=RecordedTelemetry.from_file(DEMO / "telemetry.json"), writer=cluster,
        prices=PriceBook(PriceCatalog.bundled()), teams=teams, policy=Policy(), dry_run=False, clock=Clock(),
    )


def stopped(rt) -> bool:
    return STOPPED_ANNOTATION in (rt.cluster.get("Notebook", "ml-research", "llm-explore")["metadata"].get("annotations") or {})


def message(slack, req) -> str:
    return str(slack.messages(CHANNEL)[req.message_ts]["blocks"])


def test_an_auto_team_is_acted_on_after_the_grace_with_no_press(sqlite_url, slack):
    rt = make(sqlite_url, slack, {"mode": "auto"})
    sweep = sweep_for(rt)
    sweep.run(T0)
    (req,) = rt.store.list_requests()
    assert req.state == "proposed" and req.act_at == T0 + GRACE
    assert "Acts automatically at 2026-11-20 16:00 UTC (in 4h" in message(slack, req)

    rt.clock.now = T0 + timedelta(hours=3)
    sweep.run(rt.clock.now)  # the countdown moves on, nothing acts yet
    assert rt.store.get(req.id).state == "proposed" and not stopped(rt)
    assert "(in 1h" in message(slack, rt.store.get(req.id))

    rt.clock.now = T0 + GRACE
    counts = sweep.run(rt.clock.now).counts
    assert counts["acted"] == 1
    done = rt.store.get(req.id)
    assert done.state == "done" and done.decided_by == POLICY and stopped(rt)
    (approved,) = [e for e in rt.store.events(req.id) if e.event == "approved"]
    assert approved.actor == POLICY
    detail = approved.detail()
    assert detail["mode"] == "auto" and detail["grace_seconds"] == GRACE.total_seconds()
    assert detail["policy"] == "team research"
    assert detail["message"] == {"channel": CHANNEL, "ts": req.message_ts}
    assert "by the team's policy" in message(slack, done)
    assert [b for b in slack.messages(CHANNEL)[req.message_ts]["blocks"] if b["type"] == "actions"][0]["elements"][0]["action_id"] == proposals.RESTORE


def test_an_auto_request_that_was_snoozed_is_not_acted_on(sqlite_url, slack):
    rt = make(sqlite_url, slack, {"mode": "auto"})
    sweep = sweep_for(rt)
    sweep.run(T0)
    (req,) = rt.store.list_requests()
    rt.clock.now = T0 + timedelta(hours=1)
    assert Approvals(rt).snooze(req.id, OTHER).ok  # anyone may snooze
    rt.clock.now = T0 + GRACE + timedelta(minutes=15)
    assert sweep.run(rt.clock.now).counts["acted"] == 0
    assert rt.store.get(req.id).state == "snoozed" and not stopped(rt)
    assert not any(e.actor == POLICY for e in rt.store.events(req.id))


def test_a_report_team_is_never_acted_on(sqlite_url, slack):
    rt = make(sqlite_url, slack, {"mode": "report"})
    sweep_for(rt).run(T0)
    (req,) = rt.store.list_requests()
    text = message(slack, req)
    assert proposals.APPROVE not in text and "report only (team research policy)" in text
    outcome = Approvals(rt).approve(req.id, APPROVER)
    assert not outcome.ok and "report only" in outcome.message and not stopped(rt)
    assert req.act_at is None


def test_a_namespace_annotation_overrides_the_team(sqlite_url, slack):
    rt = make(sqlite_url, slack, {"mode": "auto"}, {"gpu-cost-bot/mode": "report", "gpu-cost-bot/window-seconds": "7200"})
    (f,) = rt.detect(T0)
    assert f.handling.mode == "report" and f.handling.source == "namespace ml-research annotations"


def test_policy_book_merges_global_team_and_namespace():
    teams = TeamDirectory([
        Team(name="research", namespaces=["ml"], policy={"window_seconds": 7200, "act_on": ["Notebook"]}),
        Team(name="serving", namespaces=["serve"]),
    ])
    book = PolicyBook(Policy(warmup_seconds=600), teams, {
        "serve": {"gpu-cost-bot/mode": "auto", "gpu-cost-bot/grace-seconds": "1800"},
        "ml": {"gpu-cost-bot/engine-idle-pct": "lots"},
    })
    ml = book.for_namespace("ml")
    assert (ml.window_seconds, ml.warmup_seconds, ml.act_on) == (7200, 600, ["Notebook"])
    assert ml.acts_on("Notebook") and not ml.acts_on("RayJob", "Workload")
    assert book.resolve("ml")[1] == "team research"
    assert any("namespace ml" in w and "engine_idle_pct" in w for w in book.warnings)
    serve = book.handling("serve")
    assert (serve.mode, serve.grace_seconds, serve.source) == ("auto", 1800, "namespace serve annotations")
    assert book.handling("other").source == "global"
    # One telemetry query per distinct window.
    assert sorted(k[0] for k in book.telemetry_policies({"ml", "serve"})) == [3600, 7200]


def test_a_team_policy_that_expires_before_it_acts_is_refused():
    with pytest.raises(ValueError, match="grace_seconds"):
        Team(name="t", namespaces=["t"], policy={"mode": "auto", "grace_seconds": 90000})
    with pytest.raises(ValueError, match="unknown policy key"):
        Team(name="t", namespaces=["t"], policy={"windw_seconds": 60})
