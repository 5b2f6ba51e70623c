"""The spend-anomaly job on real stores (SQLite and PostgreSQL): the ledger written hour by hour as
the rollup writes it, the job run 5 minutes after each hour is written. The step's alert goes out
on its first hour, to the team's channel and the admin channel, naming the Workload; nothing for
the five hours after; a recovery note on the first normal hour, saying when the episode began.
Runs again, and a second replica, post nothing twice. Then at the wire: the real WebClient
against FakeSlack, assembled by the wiring as ``gpu-cost-bot run`` assembles it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from actions.store.database import Store
from actions.store.ledger import LedgerStore
from bot.chat.slack.web import SlackChat, web_client
from bot.jobs.anomalies import JOB_ID, AnomaliesJob, AnomalyRun
from bot.runtime.chat import ChatError, Message, MessageRef
from bot.runtime.runtime import Runtime
from bot.settings import Settings
from bot.wiring.jobs import anomalies_for, scheduled_jobs
from tests.support import spend_history as world
from tests.support.demo_world import settings_runtime
from tests.support.fakes.slack_api import FakeSlack

UTC = world.UTC
HOUR = timedelta(hours=1)
MONDAY = datetime(2026, 11, 23, tzinfo=UTC)
LAG = HOUR + timedelta(minutes=5)  # the hour ended, the rollup wrote it, the job ran


def _settings(**extra) -> Settings:
    return Settings(teams=world.TEAMS, slack={"default_channel": "C0OPS", "admin_channel": "C0ADMIN"},
                    ledger={"enabled": True}, **extra)


class Posts:
    """A Chat that keeps what is posted (channel, message); ``refuse`` channels raise ChatError."""

    def __init__(self, refuse: tuple[str, ...] = ()):
        self.posted: list[tuple[str, Message]] = []
        self.refuse = refuse

    def post(self, channel: str, message: Message) -> MessageRef:
        if channel in self.refuse:
            raise ChatError(f"chat.postMessage to {channel}: channel_not_found")
        self.posted.append((channel, message))
        return MessageRef(channel, f"{len(self.posted)}.0")


def _job(store: Store, chat, settings: Settings, holder: str = "pod-a", now: datetime = MONDAY) -> AnomaliesJob:
    return AnomaliesJob(store, chat, settings.team_directory(), world.BOOK, settings.anomalies, ("default",),
                        holder, "team", "C0ADMIN", clock=lambda: now)


def _all_text(m: Message) -> str:
    def texts(b):
        if isinstance(b, dict):
            for k, v in b.items():
                if k == "text" and isinstance(v, str):
                    yield v
                else:
                    yield from texts(v)
        elif isinstance(b, list):
            for x in b:
                yield from texts(x)
    return "\n".join(texts(m.blocks))


def test_the_step_alerts_on_its_first_hour_once_and_a_recovery_follows(store):
    settings = _settings()
    ledger = LedgerStore(store)
    world.write_hours(ledger, world.START, MONDAY)
    chat = Posts()
    by_run: dict[datetime, list[tuple[str, str]]] = {}
    for hour in world.hours(MONDAY, world.END):
        world.write_hours(ledger, hour, hour + HOUR)
        before = len(chat.posted)
        _job(store, chat, settings, now=hour + LAG).run(hour + LAG)
        by_run[hour] = [(c, m.text) for c, m in chat.posted[before:]]

    step, end = world.STEP_START, world.STEP_START + world.STEP_HOURS * HOUR
    # Within the hour the rollup covers: judged 5 minutes after hour 10:00 was written.
    assert by_run[step] == [
        ("C0RESEARCH", "GPU spend anomaly: localqueue ml-research/research-q at $161.46/h"),
        ("C0ADMIN", "GPU spend anomaly: localqueue ml-research/research-q at $161.46/h"),
        ("C0RESEARCH", "GPU spend anomaly: team research at $161.46/h"),
        ("C0ADMIN", "GPU spend anomaly: team research at $161.46/h"),
    ]
    (team_alert,) = [m for c, m in chat.posted if c == "C0RESEARCH" and m.text.startswith("GPU spend anomaly: team")]
    text = _all_text(team_alert)
    assert "`Workload ml-research/llm-sweep` (LocalQueue research-q): 100%" in text
    assert "At this rate: *$3,875.12 a day*" in text
    assert team_alert.metadata == {"event_type": "gpu_spend_anomaly", "event_payload": {
        "kind": "spend-anomaly", "key": "team:research@2026-11-23T10:00Z"}}
    # Once for the six hours; a recovery note on the first normal hour, naming the episode.
    research = {h: [t for c, t in posts if c == "C0RESEARCH"] for h, posts in by_run.items()}
    assert [h for h, texts in research.items() if texts] == [step, end]
    assert research[end] == ["GPU spend back to normal: localqueue ml-research/research-q",
                             "GPU spend back to normal: team research"]
    recovery = [m for c, m in chat.posted if c == "C0RESEARCH" and m.text == "GPU spend back to normal: team research"][0]
    assert "The episode began in the hour from 2026-11-23 10:00 UTC: 6 anomalous hour(s)." in _all_text(recovery)
    # The new team over the floor (no channel of its own: the default one), not the one under it.
    assert by_run[world.NEW_START] == [("C0OPS", "GPU spend anomaly: team newbie at $27.52/h"),
                                       ("C0ADMIN", "GPU spend anomaly: team newbie at $27.52/h")]
    newbie = [m for c, m in chat.posted if c == "C0OPS"]
    assert len(newbie) == 2 and "judged against the $20.00/h floor alone" in _all_text(newbie[0])
    assert not [m for c, m in chat.posted if "tiny" in m.text or "serving" in m.text or "vision" in m.text]
    assert {c for c, _ in chat.posted} == {"C0RESEARCH", "C0OPS", "C0ADMIN"}
    # Each hour judged once, the first run going back 6 hours (lookback_hours): all ok.
    runs = store.job_runs(f"{JOB_ID}:default")
    assert [r.scheduled_at for r in runs] == list(world.hours(MONDAY - 5 * HOUR, world.END))
    assert {(r.outcome, r.holder) for r in runs} == {("ok", "pod-a")}

    # Again, and from another replica: nothing is judged or posted twice.
    n = len(chat.posted)
    for holder in ("pod-a", "pod-b"):
        again = _job(store, chat, settings, holder, world.END + LAG).run(world.END + timedelta(minutes=5))
        assert again.judged == [] and again.posted == []
    assert len(chat.posted) == n


def test_replicas_racing_for_an_alert_post_it_once(store):
    settings = _settings()
    world.write_hours(LedgerStore(store), world.START, world.STEP_START + HOUR)
    at = world.STEP_START + LAG
    first, second = Posts(), Posts()
    # Both judged the hour (as if each had claimed it): each alert is a fact only one records.
    for chat, holder in ((first, "pod-a"), (second, "pod-b")):
        job, out = _job(store, chat, settings, holder, at), AnomalyRun()
        for alert in job.judge("default", world.STEP_START, at).alerts:
            job._post("default", alert, at, out)
    assert len(first.posted) == 4 and second.posted == [] and out.duplicate == 2


def test_hours_older_than_the_lookback_are_not_news(store):
    settings = _settings(anomalies={"lookback_hours": 2})
    world.write_hours(LedgerStore(store), world.START, world.END)  # a backfill: all at once
    chat = Posts()
    run = _job(store, chat, settings, now=world.END + LAG).run(world.END + timedelta(minutes=5))
    assert run.judged == [("default", world.END - 2 * HOUR), ("default", world.END - HOUR)]
    assert chat.posted == []


def test_a_channel_that_refuses_is_audited_and_not_posted_again(store):
    settings = _settings()
    world.write_hours(LedgerStore(store), world.START, world.STEP_START + HOUR)
    chat = Posts(refuse=("C0RESEARCH",))
    run = _job(store, chat, settings).run(world.STEP_START + LAG)
    assert [c for c, _ in chat.posted] == ["C0ADMIN", "C0ADMIN"] and len(run.posted) == 2
    failed = [e.detail() for e in store.all_events() if e.event == "anomaly-post-failed"]
    assert [(d["team"], d["key"]) for d in failed] == [
        ("research", "localqueue:ml-research/research-q@2026-11-23T10:00Z"), ("research", "team:research@2026-11-23T10:00Z")]
    assert failed[0]["reasons"] == ["C0RESEARCH: chat.postMessage to C0RESEARCH: channel_not_found"]
    # Not posted again: the alerts are claimed.
    assert _job(store, Posts(), settings, "pod-b").run(world.STEP_START + LAG).posted == []


def test_the_job_runs_with_the_ledger_unless_turned_off(sqlite_url):
    assert _settings().anomalies.active(True) and not Settings().anomalies.active(False)
    on = _settings(database_url=sqlite_url)
    assert JOB_ID in {j.id for j in scheduled_jobs(settings_runtime(on), on)}
    for off in (_settings(database_url=sqlite_url, anomalies={"enabled": False}), Settings(database_url=sqlite_url)):
        assert JOB_ID not in {j.id for j in scheduled_jobs(settings_runtime(off), off)}
    rule = _settings(anomalies={"factor": 3, "floor_usd_per_hour": 50, "weeks": 2, "by": ["team"]}).anomalies.rule()
    assert (rule.factor, rule.floor_usd_per_hour, rule.weeks, rule.by) == (3.0, 50.0, 2, ("team",))
    with pytest.raises(ValueError, match="factor"):
        _settings(anomalies={"factor": 1.0})
    with pytest.raises(ValueError, match="by"):
        _settings(anomalies={"by": ["namespace"]})


# --- at the wire ----------------------------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server


@pytest.fixture
def sqlite_store(sqlite_url: str) -> Iterator[Store]:
    """Claims on both databases are covered above; one is enough at the wire."""
    s = Store(sqlite_url)
    s.migrate()
    yield s
    s.close()


def test_the_wired_job_posts_to_slack_at_the_wire(sqlite_store, fake):
    settings = _settings()
    at = world.STEP_START + LAG
    rt = Runtime(
        store=sqlite_store, chat=SlackChat(web_client("xoxb-test", base_url=fake.base_url)),
        cluster=None,  # type: ignore[arg-type] - the job reads the ledger only
        telemetry=None,  # type: ignore[arg-type]
        writer=None,  # type: ignore[arg-type]
        prices=world.BOOK, teams=settings.team_directory(), policy=settings.policy, dry_run=True, clock=lambda: at,
    )
    world.write_hours(LedgerStore(sqlite_store), world.START, world.STEP_START + HOUR)
    fake.fail_next("chat.postMessage", error="channel_not_found")  # the first post: research's channel
    (job,) = [j for j in scheduled_jobs(rt, settings) if j.id == JOB_ID]
    job.run(at)

    research = list(fake.messages("C0RESEARCH").values())
    admin = list(fake.messages("C0ADMIN").values())
    assert [m["text"] for m in research] == ["GPU spend anomaly: team research at $161.46/h"]
    assert [m["text"] for m in admin] == ["GPU spend anomaly: localqueue ml-research/research-q at $161.46/h",
                                          "GPU spend anomaly: team research at $161.46/h"]
    blocks = research[0]["blocks"]
    assert blocks[0] == {"type": "header", "text": {"type": "plain_text", "text": "GPU spend anomaly: team research at $161.46/h"}}
    assert "llm-sweep" in str(blocks) and research[0]["metadata"]["event_type"] == "gpu_spend_anomaly"
    assert len(fake.calls_to("chat.postMessage")) == 4
    # The next run posts nothing again, the refused post included.
    anomalies_for(rt, settings, holder="pod-b").run(at + timedelta(minutes=5))
    assert len(fake.calls_to("chat.postMessage")) == 4
