"""Alerts: the pure decisions, and the scheduled job on real stores (SQLite and PostgreSQL), two
replicas sharing one database, Slack at the wire (FakeSlack + the real WebClient), Workloads from
the wire-level Kubernetes API fake in both Kueue versions, and Snooze through a signed Slack
request to the real Bolt app.

The point above all: each alert fires once per threshold and period, never twice.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from actions.alerts.budgets import budget_alerts, budget_kind, month_end_forecast, month_progress
from actions.alerts.capacity import spot_ratio_alerts
from actions.alerts.queues import cluster_queue_wait_alerts
from actions.kueue.queues import queue_report
from actions.model.kueue import Workload
from actions.model.snapshot import ClusterSnapshot
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.kube.reader import KubernetesSource
from actions.sources.recording import RecordedTelemetry
from actions.store.database import Store
from bot.chat.blocks import alerts as alert_blocks
from bot.chat.slack.app import build_app
from bot.chat.slack.web import SlackChat, web_client
from bot.runtime.runtime import Runtime
from bot.settings import Settings
from bot.wiring.jobs import alerts_for
from bot.wiring.sources import kueue_metrics
from tests.support.clock import T0, Clock
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import block_actions_body, bolt_request
from tests.support.paths import DEMO
from tests.support.waiting import wait_for

SECRET = "test-signing-secret"
CHANNELS = {"research": "C0RESEARCH", "training": "C0TRAINING", "serving": "C0SERVING"}
# Mid-month so a forecast is meaningful: 2026-11-16 00:00 UTC is half of November's 30 days.
MID_NOVEMBER = datetime(2026, 11, 16, 0, 0, tzinfo=timezone.utc)

# --- pure decisions -------------------------------------------------------------------------------


def kinds(alerts):
    return [(a.kind, a.period_key) for a in alerts]


def test_budget_thresholds_each_reported_at_the_highest_reached():
    assert budget_alerts("t", 1000, 100, MID_NOVEMBER) == []  # 10%, forecast 20%
    (half,) = budget_alerts("t", 1000, 500, MID_NOVEMBER)  # 50%, forecast exactly 100%: not over
    assert (half.kind, half.period_key, half.also_claims) == ("budget-50", "2026-11", ())
    alerts = budget_alerts("t", 1000, 850, MID_NOVEMBER)
    assert kinds(alerts) == [("budget-80", "2026-11"), ("budget-forecast", "2026-11")]
    assert alerts[0].also_claims == ("budget-50",)
    # 850 spent in half the month: linear extrapolation to 1700.
    assert alerts[1].usd == pytest.approx(1700.0)
    over = budget_alerts("t", 1000, 1200, MID_NOVEMBER)
    assert kinds(over) == [("budget-100", "2026-11")]  # already over: a forecast adds nothing
    assert over[0].also_claims == ("budget-50", "budget-80")


def test_forecast_waits_for_a_day_of_data_and_uses_the_teams_month():
    early = datetime(2026, 11, 1, 6, 0, tzinfo=timezone.utc)
    assert budget_alerts("t", 1000, 100, early) == []  # would extrapolate to 12,000 from 6 hours
    # 23:30 UTC on 31 October is already November in Berlin (UTC+1).
    eve = datetime(2026, 10, 31, 23, 30, tzinfo=timezone.utc)
    assert month_progress(eve, "Europe/Berlin").key == "2026-11"
    assert month_progress(eve, "UTC").key == "2026-10"
    # October in Berlin has a DST change: 31 days and one hour.
    assert month_progress(datetime(2026, 10, 15, tzinfo=timezone.utc), "Europe/Berlin").total_seconds == 31 * 86400 + 3600
    progress = month_progress(MID_NOVEMBER)
    assert progress.fraction == 0.5 and month_end_forecast(300, progress) == 600


def test_budget_thresholds_must_have_alert_kinds():
    assert budget_kind(80) == "budget-80"
    with pytest.raises(ValueError, match="90% has no alert kind"):
        budget_alerts("t", 1000, 950, MID_NOVEMBER, thresholds_percent=[90])
    with pytest.raises(ValueError, match="budget must be > 0"):
        budget_alerts("t", 0, 1, MID_NOVEMBER)


def test_cluster_queue_p90_and_spot_ratio_decisions():
    w = Workload(
        namespace="training", name="w", uid="u", api_version="kueue.x-k8s.io/v1beta2", queue_name="q",
        active=True, created=T0, admitted=True, cluster_queue="cq", gpus=1,
    )
    report = queue_report(
        ClusterSnapshot(taken_at=T0, workloads=(w,)), [], TeamDirectory([Team(name="training", namespaces=["training"])]), T0
    )
    alerts = cluster_queue_wait_alerts({"cq": 5400.0, "quiet": 60.0, "orphan": 4000.0}, report, 3600, T0)
    assert [(a.team, a.kind, a.period_key) for a in alerts] == [
        ("training", "queue-wait", "clusterqueue/cq/2026-11-20"),
        ("orphan", "queue-wait", "clusterqueue/orphan/2026-11-20"),  # feeds no known team: its own name
    ]
    assert "1h 30m" in alerts[0].title


def test_spot_ratio_below_target_for_the_whole_window():
    alerts = spot_ratio_alerts({"a": 0.39, "b": 0.4, "c": 0.0}, 0.4, 1800, T0)
    assert [(a.team, a.kind, a.period_key) for a in alerts] == [
        ("a", "spot-ratio", "2026-11-20"),
        ("c", "spot-ratio", "2026-11-20"),
    ]
    assert "30m" in alerts[0].text and "39%" in alerts[0].title


# --- the job --------------------------------------------------------------------------------------


def teams(budget: float | None = 1000.0) -> TeamDirectory:
    return TeamDirectory(
        [
            Team(name="research", namespaces=["ml-research"], channel=CHANNELS["research"], monthly_budget_usd=budget),
            Team(name="training", namespaces=["training"], channel=CHANNELS["training"]),
            Team(name="serving", namespaces=["serving"], channel=CHANNELS["serving"]),
        ]
    )


def make_runtime(database_url, slack, kube, clock) -> Runtime:
    store = Store(database_url)
    store.migrate()
    return Runtime(
        store=store,
        chat=SlackChat(web_client("xoxb-test", slack.base_url)),
        cluster=KubernetesSource(kube.api_client()),
        telemetry=RecordedTelemetry.from_file(DEMO / "telemetry.json"),
        writer=None,  # type: ignore[arg-type] - alerts never write to the cluster
        prices=PriceBook(PriceCatalog.bundled()),
        teams=teams(),
        policy=Policy(),
        dry_run=True,
        clock=clock,
    )


@pytest.fixture
def world(database_url):
    """Two replicas (two Stores on one database), one Slack, one cluster serving both Kueue
    versions."""
    with FakeSlack() as slack, FakeKubeApi.from_list_json((DEMO / "cluster.json").read_bytes()) as kube:
        clock = Clock()
        clock.now = T0
        one = make_runtime(database_url, slack, kube, clock)
        two = make_runtime(database_url, slack, kube, clock)
        yield one, two, slack, kube, clock
        one.store.close()
        two.store.close()


def posts(slack, channel=None):
    return [p for p in slack.calls_to("chat.postMessage") if channel is None or p["channel"] == channel]


def header(post) -> str:
    blocks = post["blocks"] if isinstance(post["blocks"], list) else json.loads(post["blocks"])
    return blocks[0]["text"]["text"]


def test_budget_alerts_fire_once_per_threshold_across_replicas(world):
    one, two, slack, _, clock = world
    settings = Settings()
    clock.now = MID_NOVEMBER
    sent = lambda: [header(p) for p in posts(slack, CHANNELS["research"]) if "budget" in header(p).lower()]  # noqa: E731

    for rt in (one, two, one):
        alerts_for(rt, settings).run(clock.now, {"research": 300.0})
    assert sent() == []  # 30%, on course for 60%

    for rt in (one, two, one, two):
        alerts_for(rt, settings).run(clock.now, {"research": 550.0})
    assert sent() == ["research has used 55% of its GPU budget for 2026-11",
                      "research is on course to exceed its GPU budget for 2026-11"]

    clock.now += timedelta(days=3)
    for rt in (two, one, two):
        alerts_for(rt, settings).run(clock.now, {"research": 850.0})
    assert sent()[2:] == ["research has used 85% of its GPU budget for 2026-11"]

    for rt in (one, two):
        alerts_for(rt, settings).run(clock.now, {"research": 1010.0})
        alerts_for(rt, settings).run(clock.now, {"research": 1500.0})
    assert sent()[3:] == ["research has used 101% of its GPU budget for 2026-11"]

    records = {(a.kind, a.period_key) for a in one.store.alerts("research") if a.kind.startswith("budget")}
    assert records == {(k, "2026-11") for k in ("budget-50", "budget-80", "budget-100", "budget-forecast")}
    # A new month starts over.
    clock.now = datetime(2026, 12, 20, tzinfo=timezone.utc)
    alerts_for(two, settings).run(clock.now, {"research": 600.0})
    assert sent()[4:] == ["research has used 60% of its GPU budget for 2026-12"]


def test_a_budget_set_in_chat_overrides_the_config_and_jumps_straight_to_the_highest(world):
    one, two, slack, _, clock = world
    clock.now = MID_NOVEMBER
    one.store.set_budget("serving", 100.0, "U0ADMIN", clock.now)
    one.store.set_budget("research", 5000.0, "U0ADMIN", clock.now)
    for rt in (one, two, one):
        alerts_for(rt, Settings()).run(clock.now, {"serving": 150.0, "research": 1000.0})
    assert [header(p) for p in posts(slack, CHANNELS["serving"])] == [
        "serving has used 150% of its GPU budget for 2026-11"
    ]
    # 50% and 80% were passed in the same breath: claimed with the 100% one, never sent later.
    assert {a.kind for a in one.store.alerts("serving")} == {"budget-50", "budget-80", "budget-100"}
    assert not [p for p in posts(slack, CHANNELS["research"]) if "budget" in header(p)]  # 20% of 5000


@pytest.mark.parametrize("versions", [("v1beta2", "v1beta1"), ("v1beta1",)], ids=["v1beta2", "v1beta1"])
def test_queue_wait_and_idle_on_demand_alerts_fire_once(database_url, versions):
    with FakeSlack() as slack, FakeKubeApi.from_list_json(
        (DEMO / "cluster.json").read_bytes(), kueue_versions=versions
    ) as kube:
        clock = Clock()
        clock.now = T0
        one = make_runtime(database_url, slack, kube, clock)
        two = make_runtime(database_url, slack, kube, clock)
        first = alerts_for(one, Settings()).run(clock.now)
        for rt in (two, one, two):
            again = alerts_for(rt, Settings()).run(clock.now)
            assert again["posted"] == 0 and again["duplicate"] == 2
        assert any(r.path == f"/apis/kueue.x-k8s.io/{versions[0]}/workloads" for r in kube.requests)

    assert first == {"posted": 2, "duplicate": 0, "snoozed": 0, "unposted": 0, "errors": 0}
    (wait,) = posts(slack, CHANNELS["training"])
    assert header(wait) == "Workload training/job-eval-4d5e6 has waited 3h 0m for admission"
    assert "training waits 3h for 8 H100; research holds 1 idle H100 in notebooks" in str(wait["blocks"])
    (idle,) = posts(slack, CHANNELS["research"])
    # One H100 of a p5.48xlarge on-demand (bundled catalog), idle six hours.
    finding = one.detect(T0)[0]
    assert header(idle) == f"research: 1 on-demand GPU idle, ${finding.usd_per_hour:,.2f}/h"
    record = one.store.alert("training", "queue-wait", "088e36aa-915f-5422-836d-53620aeea476")
    assert record is not None and record.channel == CHANNELS["training"]
    assert list(slack.messages(CHANNELS["training"])) == [record.message_ts]


def test_the_job_survives_an_unreadable_cluster_and_still_sends_budgets(world):
    one, _, slack, kube, clock = world
    clock.now = MID_NOVEMBER
    kube.fail("GET", "/api/v1/pods", 500, "InternalError", "etcd is sad", times=1)
    counts = alerts_for(one, Settings()).run(clock.now, {"research": 600.0})
    assert counts["errors"] == 1 and counts["posted"] == 2  # budget 50% and the forecast


def test_snooze_through_slack_updates_the_message_audits_and_holds_follow_ups(world):
    one, _, slack, _, clock = world
    client = web_client("xoxb-test", slack.base_url)
    app = build_app(one, client, SECRET, alert_snooze_seconds=4 * 3600)
    alerts_for(one, Settings()).run(clock.now)
    record = one.store.alert("research", "idle-on-demand", "2026-11-20")
    posted = slack.messages(CHANNELS["research"])[record.message_ts]
    assert [e["action_id"] for b in posted["blocks"] if b["type"] == "actions" for e in b["elements"]] == [
        alert_blocks.ALERT_SNOOZE
    ]

    body = block_actions_body(
        alert_blocks.ALERT_SNOOZE, str(record.id), "U0OTHER", CHANNELS["research"], record.message_ts,
        slack.response_url("snooze"), block_id=f"alert-{record.id}", message_text=posted["text"],
        message_blocks=posted["blocks"],
    )
    assert app.dispatch(bolt_request(SECRET, body)).status == 200
    wait_for(lambda: slack.calls_to("chat.update"), "the message update", timeout=10)

    updated = slack.messages(CHANNELS["research"])[record.message_ts]
    assert not [b for b in updated["blocks"] if b["type"] == "actions"]
    assert "Snoozed by <@U0OTHER> until 2026-11-20 16:00 UTC" in str(updated["blocks"])
    assert updated["blocks"][0] == posted["blocks"][0]  # the alert itself is kept
    snoozed = one.store.get_alert(record.id)
    assert snoozed.snoozed_until == T0 + timedelta(hours=4)
    assert [(e.actor, e.event) for e in one.store.all_events() if e.event.startswith("alert")] == [
        ("U0OTHER", "alert-snoozed")
    ]

    # Next day's idle-on-demand alert, still inside the snooze: held back, not claimed.
    clock.now = T0 + timedelta(hours=13)  # 2026-11-21 01:00, snooze ended at 16:00 the day before
    one.store.snooze_alert(record.id, clock.now + timedelta(hours=2), "U0OTHER", clock.now)
    held = alerts_for(one, Settings()).run(clock.now)
    assert held["snoozed"] == 1 and one.store.alert("research", "idle-on-demand", "2026-11-21") is None
    clock.now += timedelta(hours=3)
    released = alerts_for(one, Settings()).run(clock.now)
    assert released["posted"] == 1 and one.store.alert("research", "idle-on-demand", "2026-11-21") is not None


def test_snoozing_an_unknown_alert_changes_nothing_and_is_audited(world):
    one, _, slack, _, _ = world
    app = build_app(one, web_client("xoxb-test", slack.base_url), SECRET)
    body = block_actions_body(
        alert_blocks.ALERT_SNOOZE, "999", "U0OTHER", CHANNELS["research"], "1.000100", slack.response_url("nope")
    )
    assert app.dispatch(bolt_request(SECRET, body)).status == 200
    wait_for(lambda: slack.responses_to("nope"), "the refusal", timeout=10)
    (answer,) = slack.responses_to("nope")
    assert answer["response_type"] == "ephemeral" and "no alert #999" in answer["text"]
    assert [e.event for e in one.store.all_events()] == ["alert-snooze-rejected"]


@pytest.mark.prometheus
def test_spot_ratio_and_admission_p90_alerts_from_prometheus(world, tmp_path):
    from tests.support.kueue_metrics import AT, kueue_openmetrics
    from tests.support.prometheus_server import running_prometheus

    one, _, slack, _, clock = world
    one.teams = TeamDirectory(
        [Team(name="team-a", namespaces=["ml-a"], channel="C0A"), Team(name="bc", namespaces=["ml-b", "ml-c"], channel="C0BC")],
        default_channel="C0OPS",
    )
    clock.now = AT
    with running_prometheus(kueue_openmetrics(), tmp_path / "prom") as url:
        kueue = kueue_metrics(Settings(prometheus={"url": url}))
        first = alerts_for(one, Settings(), kueue=kueue).run(AT)
        again = alerts_for(one, Settings(), kueue=kueue).run(AT)
    # team-a peaked at 1/3 on spot and bc at 0.2, both under 40%; gpu-cq's p90 of 2880 s is
    # under the 1 h threshold, so no ClusterQueue alert.
    assert {a.kind for a in one.store.alerts()} >= {"spot-ratio"}
    assert {(a.team, a.kind) for a in one.store.alerts() if a.kind == "spot-ratio"} == {
        ("team-a", "spot-ratio"), ("bc", "spot-ratio")
    }
    assert not [a for a in one.store.alerts() if a.period_key.startswith("clusterqueue/")]
    assert again["posted"] == 0 and first["errors"] == 0
    assert [header(p) for p in posts(slack, "C0A")] == ["team-a: spot ratio 33%, below the 40% target"]


def test_the_console_shows_and_presses_the_alert_snooze(world):
    import io

    from bot.chat.blocks.alerts import alert_message
    from bot.chat.console import ConsoleSession, to_text

    one, _, _, _, clock = world
    alerts_for(one, Settings()).run(clock.now)
    record = one.store.alert("research", "idle-on-demand", "2026-11-20")
    (alert,) = [a for a in alerts_for(one, Settings()).evaluate(clock.now, None)[0] if a.kind == "idle-on-demand"]
    assert f"[snooze-alert {record.id}]" in to_text(alert_message(alert, record.id, 4 * 3600))
    out = io.StringIO()
    outcome = ConsoleSession(one, "U0CONSOLE", out).handle(f"snooze-alert {record.id}")
    assert outcome.ok and "snoozed until 2026-11-20 16:00 UTC" in out.getvalue()
    assert one.store.get_alert(record.id).snoozed_until == T0 + timedelta(hours=4)
