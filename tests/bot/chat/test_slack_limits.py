"""Every message fits Slack at any size: rendered for 60 teams, 500 consumers, 200 pending
Workloads, 300 recommendations and 253-character Kubernetes names, and posted through the real
posting code (``SlackChat`` on slack_sdk's WebClient, Bolt's ``respond`` to a response_url) to
the fake Slack, which refuses what Slack refuses (:mod:`tests.support.fakes.block_kit` names the
pages of Slack's docs each limit comes from). Nothing listed is lost without a "more" line.
"""

from __future__ import annotations

import io
import re
from datetime import datetime, timedelta, timezone

import pytest
from slack_sdk.webhook import WebhookClient

from actions.advice.model import Recommendation
from actions.advice.round import AdviceResult
from actions.alerts.alert import Alert
from actions.cost.report import ConsumerLine, CostReport, PriceLine, TeamReport, table_order
from actions.executors.in_memory import InMemoryCluster
from actions.kueue.queues import ClusterQueueState, IdleElsewhere, LocalQueueState, PendingWorkload, QueueReport
from actions.model.findings import Finding, GpuEvidence
from actions.model.kube import CapacityType
from actions.model.kueue import Workload
from actions.model.quote import PriceQuote
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.recording import RecordedTelemetry
from actions.store.database import Store
from bot.chat.approve_all import remember, request_ids
from bot.chat.blocks.advice import advice_message
from bot.chat.blocks.alerts import APPROVE_ALL, alert_message
from bot.chat.blocks.digests import admin_summary_message, team_digest_message
from bot.chat.blocks.proposals import RequestStatus, proposal_message
from bot.chat.commands.cost import all_teams_message, team_message
from bot.chat.commands.queue import fleet_message, report_message
from bot.chat.console import ConsoleChat
from bot.chat.slack.app import build_app
from bot.chat.slack.web import SlackChat, web_client
from bot.jobs.advice import AdviceJob
from bot.runtime.chat import ChatError, Message
from bot.runtime.runtime import Runtime
from tests.support.clock import Clock
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import block_actions_body, bolt_request, slash_command_body
from tests.support.paths import DEMO
from tests.support.waiting import wait_for

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
CHANNEL = "C0LIMITS"
SECRET = "test-signing-secret"
H100 = "NVIDIA H100 80GB HBM3"
PRICE = PriceQuote(4.0, CapacityType.ON_DEMAND, "bundled catalog: AWS EC2 on-demand, us-east-1", "2026-11-01", "instance-type")


def long_name(i: int, prefix: str = "team") -> str:
    """A Kubernetes name at its 253-character limit (a DNS subdomain), told apart by its end."""
    tail = f"-{i:04d}"
    return (prefix + "-" + "x" * 253)[: 253 - len(tail)] + tail


@pytest.fixture
def slack():
    with FakeSlack() as fake:
        yield fake, SlackChat(web_client("xoxb-test", fake.base_url))


def shown_text(message: dict) -> str:
    """What a posted message shows: every section's text and fields, every context element."""
    parts = []
    for b in message.get("blocks", []):
        if isinstance(b.get("text"), dict):
            parts.append(b["text"]["text"])
        parts += [f["text"] for f in b.get("fields", [])]
        parts += [e.get("text", "") for e in b.get("elements", []) if isinstance(e.get("text"), str)]
    return "\n".join(parts)


def post(fake: FakeSlack, chat: SlackChat, message: Message) -> dict:
    """Post ``message`` and read it back from the fake as Slack keeps it."""
    ref = chat.post(CHANNEL, message)
    return fake.messages(CHANNEL)[ref.ts]


def more_count(text: str, noun: str) -> int:
    found = re.findall(rf"… and (\d+) {noun}", text)
    return int(found[0]) if found else 0


# -- the fake refuses what Slack refuses --------------------------------------------------------


@pytest.mark.parametrize("blocks, why", [
    ([{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}], "[0].text: must be at most 3000"),
    ([{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}], "[0].text: must be at most 150"),
    ([{"type": "section", "text": {"type": "mrkdwn", "text": "x"}}] * 51, "at most 50 items"),
    ([{"type": "context", "elements": [{"type": "mrkdwn", "text": "x"}] * 11}], "[0].elements: must have 1 to 10"),
    ([{"type": "section", "fields": [{"type": "mrkdwn", "text": "x" * 2001}]}], "[0].fields[0]: must be at most 2000"),
    ([{"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Approve all"},
                                        "action_id": APPROVE_ALL, "value": "1," * 1001}]}], "value: must be at most 2000"),
])
def test_the_fake_answers_invalid_blocks_as_slack_does_and_keeps_nothing(slack, blocks, why):
    fake, chat = slack
    with pytest.raises(ChatError, match="invalid_blocks"):
        chat.post(CHANNEL, Message(text="too big", blocks=blocks))
    assert fake.messages(CHANNEL) == {}
    # Also on a response_url (what Bolt's respond posts to): refused, not shown.
    response = WebhookClient(fake.response_url("cmd")).send(text="too big", blocks=blocks)
    assert response.status_code == 400 and why in response.body
    assert fake.responses_to("cmd") == [] and fake.refused[0][1]["error"] == "invalid_blocks"


# -- /gpu cost ------------------------------------------------------------------------------------


def team_report(name: str, i: int, consumers: int = 3) -> TeamReport:
    hours = 100.0 + i
    lines = (PriceLine("H100", "on-demand", hours, 4.0, hours * 4.0, 10.0, 40.0, PRICE.source, PRICE.as_of, "p5.48xlarge"),)
    top = tuple(ConsumerLine("Notebook", name[:63], long_name(c, "notebook"), 1.0, 4.0, 0.5, 0.5) for c in range(consumers))
    return TeamReport(name, NOW - timedelta(days=30), NOW, hours, hours * 4.0, 10.0, 40.0, 0.9, 0.0,
                      price_lines=lines, top_consumers=top, notes=(f"note of {name}",))


def cost_report(n: int) -> CostReport:
    teams = {long_name(i): team_report(long_name(i), i) for i in range(n)}
    return CostReport(NOW - timedelta(days=30), NOW, teams)


@pytest.mark.parametrize("n", [60, 500])
def test_cost_of_every_team_fits_keeps_the_total_and_counts_what_it_leaves_out(slack, n):
    fake, chat = slack
    report = cost_report(n)
    shown = post(fake, chat, all_teams_message(report))
    tables = "\n".join(b["text"]["text"] for b in shown["blocks"] if b["type"] == "section" and "```" in b["text"]["text"])
    rows = [t.team for t in table_order(report.teams.values()) if re.search(rf"^{t.team} +[\d,]+ +\$", tables, re.M)]
    hidden = more_count(tables, "more teams")
    assert len(rows) + hidden == n and rows == [t.team for t in table_order(report.teams.values())][: len(rows)]  # highest cost first
    assert (hidden > 0) == (n == 500)  # 500 rows of 253 characters pass 50 blocks; 60 do not
    assert re.search(rf"^total +{report.gpu_hours:,.0f} +\${report.cost_usd:,.2f}$", tables, re.M)
    # No row cut in two and no code block left open: each section opens and closes its own.
    for b in shown["blocks"]:
        if b["type"] == "section" and "```" in b["text"]["text"]:
            assert b["text"]["text"].count("```") == 2


def test_a_team_of_500_consumers_and_a_253_character_name_keeps_its_total(slack):
    fake, chat = slack
    r = team_report(long_name(7), 7, consumers=500)
    shown = post(fake, chat, team_message(r, where=", cluster gpu-west"))
    text = shown_text(shown)
    assert shown["blocks"][0]["text"]["text"].endswith(", cluster gpu-west")
    assert f"*Total: ${r.cost_usd:,.2f}*" in text
    named = sum(1 for c in r.top_consumers if c.name in text)
    assert named > 0 and named + more_count(text, "more consumers") == 500


# -- /gpu budget, through Bolt's respond to the response_url ---------------------------------------


def test_budget_of_60_teams_answers_every_team_through_the_response_url(slack, sqlite_url):
    fake, _ = slack
    names = [long_name(i) for i in range(60)]
    store = Store(sqlite_url)
    store.migrate()
    cluster = InMemoryCluster.from_kubectl_dump((DEMO / "cluster.json").read_bytes())
    clock = Clock()
    clock.now = NOW
    rt = Runtime(
        store=store, chat=ConsoleChat(io.StringIO()), cluster=cluster,
        telemetry=RecordedTelemetry.from_file(DEMO / "telemetry.json"), writer=cluster,
        prices=PriceBook(PriceCatalog.bundled()),
        teams=TeamDirectory([Team(name=n, namespaces=[f"ns-{i}"], monthly_budget_usd=5000 + i) for i, n in enumerate(names)]),
        policy=Policy(), dry_run=True, clock=clock,
    )
    app = build_app(rt, web_client("xoxb-test", fake.base_url), SECRET)
    body = slash_command_body(text="budget", user_id="U1", channel_id="C0ELSEWHERE", response_url=fake.response_url("cmd"))
    assert app.dispatch(bolt_request(SECRET, body)).status == 200
    wait_for(lambda: fake.responses_to("cmd") or fake.refused, "the budget answer", timeout=10)
    assert fake.refused == []
    (answer,) = fake.responses_to("cmd")
    text = shown_text(answer)
    assert sum(1 for n in names if f"*{n}*" in text) + more_count(text, "more teams") == 60
    store.close()


# -- /gpu queue -----------------------------------------------------------------------------------


def queue_report(cluster_queues: int, pending: int) -> QueueReport:
    lqs, cqs, idle = [], [], {}
    for c in range(cluster_queues):
        cq = long_name(c, "cq")
        waiting = []
        for p in range(c, pending, cluster_queues):
            w = Workload(namespace=long_name(p, "ns")[:63], name=long_name(p, "job"), uid=f"uid-{p}",
                         api_version="kueue.x-k8s.io/v1beta2", queue_name=f"lq-{c}", active=True,
                         created=NOW - timedelta(hours=1), admitted=False, cluster_queue=cq, gpus=8)
            waiting.append(PendingWorkload(w, long_name(c), 3600.0 + p, cq, ("h100-on-demand",), "H100"))
            idle[w.uid] = (IdleElsewhere("research", "H100", 8, 32.0, ("notebooks",), (p,)),)
        lqs.append(LocalQueueState(f"ns-{c}", f"lq-{c}", long_name(c), cq, tuple(waiting), ()))
        cqs.append(ClusterQueueState(cq, (f"lq-{c}",), (long_name(c),), tuple(waiting), (), ("h100-on-demand",)))
    return QueueReport(NOW, tuple(lqs), tuple(cqs), idle)


@pytest.mark.parametrize("cluster_queues, pending", [(60, 200), (1, 200)])
def test_queue_keeps_idle_elsewhere_and_counts_the_queues_it_leaves_out(slack, cluster_queues, pending):
    fake, chat = slack
    report = queue_report(cluster_queues, pending)
    shown = post(fake, chat, report_message(report, "kueue.x-k8s.io/v1beta2", None, "gpu-west"))
    text = shown_text(shown)
    assert shown["blocks"][0]["text"]["text"].endswith(" in cluster gpu-west")
    assert "*Idle elsewhere*" in text and "more" in text.split("*Idle elsewhere*")[1]
    named = sum(1 for c in report.cluster_queues if f"ClusterQueue {c.name}*" in text)
    assert named + more_count(text, "more ClusterQueues") == cluster_queues
    # Every ClusterQueue shown names its pending Workloads or counts those it does not.
    for b in shown["blocks"]:
        if b["type"] == "section" and "LocalQueue" in b["text"]["text"]:
            assert "◦" in b["text"]["text"]


def test_queue_of_several_clusters_names_the_clusters_it_leaves_out(slack):
    fake, chat = slack
    answers = [(f"c{i}", report_message(queue_report(10, 40), "kueue.x-k8s.io/v1beta2", None, f"c{i}")) for i in range(6)]
    text = shown_text(post(fake, chat, fleet_message(answers)))
    assert "in cluster c0" in text and re.search(r"… and \d+ more clusters \(", text)


# -- a proposal for a many-pod consumer, with 253-character names --------------------------------


def test_a_64_pod_proposal_shows_gpu_evidence_a_pod_count_and_its_cluster(slack):
    fake, chat = slack
    pods = tuple(long_name(p, "llm-serving-pod") for p in range(64))
    evidence = tuple(GpuEvidence(f"GPU-{g}", H100, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.0, 1.0, 70.0, 150.0, 1.0, "idle", "idle")
                     for g in range(64))
    f = Finding(kind="idle-serving", key="idle-serving/x", namespace=long_name(1, "ns")[:63], name=long_name(1, "svc"),
                team="research", consumer_kind="LeaderWorkerSet", pods=pods, node=long_name(1, "node"), gpus=64,
                gpu_model=H100, idle_seconds=7200, usd_per_hour=256.0, price=PRICE, evidence=evidence,
                detected_at=NOW, window_seconds=3600, cluster="gpu-west", workload=long_name(2, "workload"))
    shown = post(fake, chat, proposal_message(f, RequestStatus(1, "proposed", False, NOW + timedelta(days=1))))
    text = shown_text(shown)
    assert shown["blocks"][0]["text"]["text"].endswith(" in cluster gpu-west")
    assert "64 pods: " in text and "and 61 more" in text and pods[63] not in text
    assert "• GPU GPU-0: peak `PROF_GR_ENGINE_ACTIVE` 0.0%" in text and "and 56 more GPUs" in text


# -- the advice job -------------------------------------------------------------------------------


def recommendation(i: int) -> Recommendation:
    return Recommendation(
        kind="fewer-gpus", key=f"fewer-gpus/ns/{long_name(i, 'nb')}", team="research", namespace="ns",
        subject=f"Notebook ns/{long_name(i, 'nb')}", summary=f"Notebook ns/{long_name(i, 'nb')}: 4 GPUs instead of 8",
        change="spec.resources.limits nvidia.com/gpu: 4", current_usd_per_month=10_000.0 - i,
        advised_usd_per_month=5_000.0, saving_usd_per_month=5_000.0 - i,
        evidence=(("peak GPUs busy", "4 of 8"),), prices=(PRICE,),
    )


def test_the_advice_job_records_as_posted_only_what_its_message_shows(slack, sqlite_url):
    fake, chat = slack
    recs = tuple(recommendation(i) for i in range(300))
    store = Store(sqlite_url)
    store.migrate()
    teams = TeamDirectory([Team(name="research", namespaces=["ns"], channel=CHANNEL)])
    job = AdviceJob(store, chat, teams, lambda at, team: AdviceResult(at, recs, (), (), 0.0))
    first = job.run(NOW)
    (message,) = fake.messages(CHANNEL).values()
    shown = [r for r in recs if r.subject in shown_text(message)]
    assert first["posted"] == len(shown) == 15 and first["held"] == 285
    assert shown == list(recs[:15])  # the highest savings first
    assert "15 recommendation(s) (285 more in the next post" in shown_text(message)
    # The next post shows the next ones: none of the 285 is lost.
    second = job.run(NOW + timedelta(days=1))
    assert second["posted"] == 15 and second["repeated"] == 15 and second["held"] == 270
    latest = list(fake.messages(CHANNEL).values())[-1]
    assert recs[15].subject in shown_text(latest) and recs[0].subject not in shown_text(latest)
    store.close()


# -- a queue-wait alert offering 320 proposals ----------------------------------------------------


def test_approve_all_of_320_proposals_fits_a_button_and_approves_them_all(slack, sqlite_url):
    fake, chat = slack
    ids = tuple(range(100_000, 100_320))  # "100000,...": 2,239 characters as one value
    text = "training waits 3h for 320 H100\n*Approve these 320 notebooks:*\n" + "\n".join(
        f"• #{i} Notebook {long_name(i, 'nb')}: 1 × H100, idle 2h (team research)" for i in ids)
    alert = Alert(team="training", kind="queue-wait", period_key="uid-1", title=f"Workload {long_name(1, 'job')} has waited 3h",
                  text=text, fields=tuple((f"Field {i}", "x" * 2100) for i in range(12)), approve_all=ids)
    store = Store(sqlite_url)
    store.migrate()
    remember(store, 7, ids, NOW)  # as the alerts job does before it posts alert #7
    shown = post(fake, chat, alert_message(alert, 7, 4 * 3600))
    (button,) = [e for b in shown["blocks"] if b["type"] == "actions" for e in b["elements"] if e["action_id"] == APPROVE_ALL]
    assert button["text"]["text"] == "Approve all 320"
    assert request_ids(store, button["value"]) == list(ids)
    assert request_ids(store, "12,15") == [12, 15]  # a button of a message posted before
    body = shown_text(shown)
    assert sum(1 for i in ids if f"• #{i} " in body) + more_count(body, "more") == 320
    store.close()


# -- the digests and /gpu advise ------------------------------------------------------------------


@pytest.mark.parametrize("n", [60, 500])
def test_the_all_teams_digest_fits_and_counts_the_teams_it_leaves_out(slack, n):
    fake, chat = slack
    report = cost_report(n)
    text = shown_text(post(fake, chat, admin_summary_message(report, "UTC", 7)))
    by_team = text.split("*By team*")[1].split("*Where the prices come from*")[0]
    named = sum(1 for t in report.teams if f"• *{t}*:" in by_team)
    assert named + more_count(by_team, "more") == n and (named < n) == (n == 500)
    assert f"{n} more notes" not in text and re.search(r"… and \d+ more notes", text)  # 9 shown, the rest counted


def test_a_team_digest_of_500_consumers_fits(slack):
    fake, chat = slack
    r = team_report(long_name(3), 3, consumers=500)
    shown = post(fake, chat, team_digest_message(r, "UTC", 7))
    text = shown_text(shown)
    assert shown["blocks"][0]["text"]["text"].endswith("-0003")  # the name's end tells it from its siblings
    named = sum(1 for c in r.top_consumers if c.name in text)
    assert named > 0 and named + more_count(text, "more") == 500


def test_advise_of_300_recommendations_fits_and_says_how_many_it_does_not_show(slack):
    fake, chat = slack
    recs = tuple(recommendation(i) for i in range(300))
    text = shown_text(post(fake, chat, advice_message(recs, 1_000_000.0, NOW, long_name(1))))
    assert sum(1 for r in recs if r.subject in text) == 15 and "300 recommendation(s) (285 more not shown)" in text


def test_pressing_approve_all_through_slack_approves_each_stored_request(slack, sqlite_url):
    fake, _ = slack
    store = Store(sqlite_url)
    store.migrate()
    cluster = InMemoryCluster.from_kubectl_dump((DEMO / "cluster.json").read_bytes())
    clock = Clock()
    clock.now = NOW
    rt = Runtime(store=store, chat=ConsoleChat(io.StringIO()), cluster=cluster,
                 telemetry=RecordedTelemetry.from_file(DEMO / "telemetry.json"), writer=cluster,
                 prices=PriceBook(PriceCatalog.bundled()), teams=TeamDirectory([]), policy=Policy(), dry_run=True,
                 clock=clock)
    remember(store, 7, (100_318, 100_319), NOW)
    app = build_app(rt, web_client("xoxb-test", fake.base_url), SECRET)
    body = block_actions_body(APPROVE_ALL, "alert:7", "U1", CHANNEL, "1.000001", fake.response_url("press"),
                              button_text="Approve all 2")
    assert app.dispatch(bolt_request(SECRET, body)).status == 200
    wait_for(lambda: fake.responses_to("press"), "the answer to the press", timeout=10)
    (answer,) = fake.responses_to("press")
    # Each id the store holds for alert #7 was tried on its own (neither exists here).
    assert "#100318: " in answer["text"] and "#100319: " in answer["text"]
    store.close()


def test_long_warnings_after_the_rows_never_shorten_the_rows():
    from bot.chat.blocks.fit import fit_rows

    # /gpu budget over a dozen clusters each missing DCGM: ~2,900 characters of warnings.
    rows = [f"*team-{i}*: $3,000.00/month (from the bot's config)\n    spent $1,234.56 in 2026-11 (41%)" for i in range(60)]
    warnings = "\n".join(f":warning: cluster west-{i} holds no DCGM series for the period: spend may be short" for i in range(35))
    sections = fit_rows(rows, max_sections=50, tail=[warnings])
    shown = "\n".join(sections)
    assert all(row in shown for row in rows)  # whole, with their spend
    assert all(len(s) <= 3000 for s in sections) and sections[-1].endswith(warnings[-40:])
