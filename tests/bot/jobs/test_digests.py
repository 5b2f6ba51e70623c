"""Scheduled digests: when each team's digest is due (pure), what it says (Block Kit), and sending
it exactly once through the real WebClient against FakeSlack with the claims in SQLite and
PostgreSQL; end to end over a real Prometheus holding the cost engine's 30-day fleet
(``tests.actions.cost.test_report_prometheus``), priced, charted with matplotlib and uploaded."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from actions.cost.report import ConsumerLine, CostReport, DailyCost, PriceLine, TeamReport, UnrequestedLine
from actions.cost.reporting import CostSetup
from actions.executors.in_memory import InMemoryCluster
from actions.model.energy import EnergyUse
from actions.model.kube import CapacityType
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.prometheus.usage import PrometheusUsage
from actions.store.database import Store
from bot.chat.blocks.digests import admin_summary_message, team_digest_message
from bot.chat.chart import cost_chart_png
from bot.chat.slack.web import SlackChat, web_client
from bot.jobs.digests import ADMIN_JOB_ID, DigestsJob, due_digests, last_fire_time
from bot.runtime.chat import Message
from bot.runtime.runtime import Runtime
from bot.settings import Settings, digest_trigger
from bot.wiring.jobs import digests_for
from tests.support.fakes.slack_api import FakeSlack
from tests.support.usage_history import PRICES

UTC = timezone.utc
MONDAY_0905 = datetime(2026, 11, 23, 9, 5, tzinfo=UTC)
BOOK = PriceBook(PriceCatalog.bundled())


def _settings(**extra) -> Settings:
    return Settings(
        teams=[
            {"name": "research", "namespaces": ["ml-research"], "channel": "C0RESEARCH", "timezone": "Europe/Berlin"},
            {"name": "serving", "namespaces": ["serving"], "channel": "C0SERVING", "timezone": "America/New_York"},
            {"name": "ops", "namespaces": ["ops"], "channel": "C0OPS"},
            {"name": "quiet", "namespaces": ["quiet"]},
        ],
        slack={"admin_channel": "C0ADMIN"},
        **extra,
    )


# --- when a digest is due -----------------------------------------------------------------------


def test_each_team_gets_its_digest_at_nine_local_time():
    settings = _settings()
    at = lambda h, m=0: datetime(2026, 11, 23, h, m, tzinfo=UTC)  # noqa: E731 - Monday

    assert due_digests(settings, at(7, 59)) == []
    (berlin,) = due_digests(settings, at(8, 30))
    assert (berlin.job_id, berlin.team, berlin.channel, berlin.tz) == ("digest:research", "research", "C0RESEARCH", "Europe/Berlin")
    assert berlin.scheduled_at == at(8) == berlin.period_end  # 09:00 CET
    assert berlin.period_start == at(8) - timedelta(days=7)

    at_nine = {d.job_id: d for d in due_digests(settings, at(9))}
    assert set(at_nine) == {"digest:research", "digest:ops", ADMIN_JOB_ID}
    assert at_nine[ADMIN_JOB_ID].team is None and at_nine[ADMIN_JOB_ID].channel == "C0ADMIN"
    assert at_nine["digest:ops"].tz == "UTC" and at_nine["digest:ops"].scheduled_at == at(9)

    # New York's 09:00 EST is 14:00 UTC; by then Berlin's is more than the 6 h catch-up ago.
    later = {d.job_id: d.scheduled_at for d in due_digests(settings, at(14, 10))}
    assert later == {"digest:serving": at(14), "digest:ops": at(9), ADMIN_JOB_ID: at(9)}
    assert {d.job_id for d in due_digests(settings, at(15, 1))} == {"digest:serving"}


def test_summer_time_moves_the_fire_time_in_utc():
    settings = _settings()
    (berlin,) = due_digests(settings, datetime(2026, 6, 1, 7, 0, tzinfo=UTC))  # Monday, CEST
    assert berlin.scheduled_at == datetime(2026, 6, 1, 7, 0, tzinfo=UTC)


def test_period_is_whole_local_days_across_the_end_of_summer_time():
    settings = _settings()
    # Berlin left CEST on Sunday 2026-10-25: Monday 09:00 CET is 08:00 UTC, a week earlier 07:00 UTC.
    (berlin,) = due_digests(settings, datetime(2026, 10, 26, 8, 0, tzinfo=UTC))
    assert berlin.period_end == datetime(2026, 10, 26, 8, 0, tzinfo=UTC)
    assert berlin.period_start == datetime(2026, 10, 19, 7, 0, tzinfo=UTC)


def test_team_zone_defaults_to_costs_timezone_and_admin_is_optional():
    settings = Settings(
        teams=[{"name": "ops", "namespaces": ["ops"], "channel": "C0OPS"}], costs={"timezone": "Asia/Tokyo", "digest_period_days": 14}
    )
    (d,) = due_digests(settings, datetime(2026, 11, 23, 0, 0, tzinfo=UTC))  # 09:00 JST
    assert (d.job_id, d.tz, d.scheduled_at) == ("digest:ops", "Asia/Tokyo", datetime(2026, 11, 23, 0, 0, tzinfo=UTC))
    assert d.period_start == d.period_end - timedelta(days=14)


@pytest.mark.parametrize(
    "dow, weekdays",
    [
        ("mon", {"Mon"}),
        ("1", {"Mon"}),  # crontab: 1 is Monday (APScheduler 3 alone would read Tuesday)
        ("0", {"Sun"}),
        ("7", {"Sun"}),
        ("1-5", {"Mon", "Tue", "Wed", "Thu", "Fri"}),
        ("0,6", {"Sat", "Sun"}),
        ("*/3", {"Sun", "Wed", "Sat"}),
        ("mon-fri", {"Mon", "Tue", "Wed", "Thu", "Fri"}),
        ("*", {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}),
    ],
)
def test_day_of_week_reads_as_crontab(dow, weekdays):
    trigger = digest_trigger(f"0 9 * * {dow}", "UTC")
    fire, seen = None, set()
    now = datetime(2026, 11, 23, tzinfo=UTC)
    for _ in range(14):
        fire = trigger.get_next_fire_time(fire, fire + timedelta(microseconds=1) if fire else now)
        seen.add(fire.strftime("%a"))
        assert (fire.hour, fire.minute) == (9, 0)
    assert seen == weekdays


@pytest.mark.parametrize(
    "cron, tz, message",
    [
        ("0 9 * mon", "UTC", "needs 5 fields"),
        ("0 25 * * mon", "UTC", "0 25"),
        ("0 9 * * 8", "UTC", "not a crontab day range"),
        ("0 9 * * mon", "Mars/Olympus", "not an IANA time zone"),
    ],
)
def test_bad_schedule_is_named(cron, tz, message):
    with pytest.raises(ValueError, match=message):
        digest_trigger(cron, tz)


def test_last_fire_time_takes_the_latest_in_the_window():
    daily = digest_trigger("0 9 * * *", "UTC")
    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert last_fire_time(daily, now, 3 * 86400) == datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    assert last_fire_time(daily, now, 2 * 3600) is None


# --- what a digest says -------------------------------------------------------------------------


def _flavor(instance_type: str, capacity: CapacityType, gpu_hours: float, idle_hours: float) -> PriceLine:
    q = BOOK.quote(instance_type, capacity, None)
    return PriceLine(
        gpu_model=q.gpu_model or "?",
        capacity_type=capacity.value,
        gpu_hours=gpu_hours,
        usd_per_gpu_hour=q.usd_per_gpu_hour,
        cost_usd=gpu_hours * q.usd_per_gpu_hour,
        idle_gpu_hours=idle_hours,
        idle_cost_usd=idle_hours * q.usd_per_gpu_hour,
        price_source=q.source,
        price_as_of=q.as_of,
        instance_type=instance_type,
    )


def _team(name: str, start: datetime, end: datetime, flavors: list[PriceLine], consumers: list[ConsumerLine]) -> TeamReport:
    hours = sum(f.gpu_hours for f in flavors)
    idle = sum(f.idle_gpu_hours for f in flavors)
    spot = sum(f.gpu_hours for f in flavors if f.capacity_type == "spot")
    days = (end - start).days
    daily = tuple(
        DailyCost(
            (start + timedelta(days=i)).date(),
            {f.capacity_type: f.cost_usd / days for f in flavors},
            sum(f.idle_cost_usd for f in flavors) / days,
        )
        for i in range(days)
    )
    return TeamReport(
        team=name,
        period_start=start,
        period_end=end,
        gpu_hours=hours,
        cost_usd=sum(f.cost_usd for f in flavors),
        idle_gpu_hours=idle,
        idle_cost_usd=sum(f.idle_cost_usd for f in flavors),
        efficiency=(hours - idle) / hours,
        spot_ratio=spot / hours,
        price_lines=tuple(sorted(flavors, key=lambda f: -f.cost_usd)),
        top_consumers=tuple(consumers),
        daily=daily,
    )


def _report(start: datetime, end: datetime) -> CostReport:
    research = _team(
        "research",
        start,
        end,
        [_flavor("p5.48xlarge", CapacityType.ON_DEMAND, 336.0, 84.0), _flavor("p4d.24xlarge", CapacityType.SPOT, 112.0, 0.0)],
        [
            ConsumerLine("Notebook", "ml-research", "llm-explore", 168.0, 168.0 * 12.29, 84.0, 0.5),
            ConsumerLine("Workload", "ml-research", "job-train-7b", 112.0, 175.0, 0.0, 0.0, queue="research-queue"),
        ],
    )
    serving = _team("serving", start, end, [_flavor("g5.xlarge", CapacityType.ON_DEMAND, 168.0, 20.0)], [])
    return CostReport(start, end, {"research": research, "serving": serving}, notes=("telemetry from Prometheus",))


def _texts(message: Message) -> str:
    parts = [message.text]
    for b in message.blocks:
        if "text" in b:
            parts.append(b["text"]["text"])
        parts += [f["text"] for f in b.get("fields", [])]
        parts += [e.get("text", "") for e in b.get("elements", [])]
    return "\n".join(parts)


def test_team_digest_says_the_dollars_and_where_the_prices_come_from():
    end = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    report = _report(end - timedelta(days=7), end).teams["research"]
    text = _texts(team_digest_message(report, "Europe/Berlin", 7))

    p5 = 55.04 / 8  # p5.48xlarge $55.04 / 8 GPUs = $6.88 per GPU-hour
    p4d_spot = 14.2313 / 8  # p4d.24xlarge spot $14.2313 / 8 GPUs = $1.7789 per GPU-hour
    cost = 336 * p5 + 112 * p4d_spot
    assert f"${cost:,.2f}" in text
    assert "448.0" in text  # GPU-hours
    assert f"${84 * p5:,.2f} (84.0 GPU-hours, 19%)" in text  # idle waste
    assert "81% (target 80%)" in text  # efficiency
    assert "Spot ratio*\n25%" in text
    assert "Notebook `ml-research/llm-explore`" in text and "50% idle" in text
    assert "Workload `ml-research/job-train-7b` (queue research-queue)" in text
    assert f"H100 on-demand (p5.48xlarge): 336.0 GPU-hours × ${p5:,.2f}" in text
    assert "p4d.24xlarge" in text and "spot" in text
    # Every price says its source and as-of date, as the PriceBook gave them.
    for f in report.price_lines:
        assert f"{f.price_source}, as of {f.price_as_of}" in text
    assert "2026-11-16 09:00 to 2026-11-23 09:00 (Europe/Berlin)" in text
    assert text.startswith("Weekly GPU cost: research:")


def test_team_without_gpu_use_says_so():
    end = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    empty = TeamReport("ops", end - timedelta(days=7), end, 0.0, 0.0, 0.0, 0.0, None, None)
    message = team_digest_message(empty, "UTC", 7)
    assert "no GPU use recorded" in message.text
    assert "$" not in _texts(message)


def test_admin_summary_ranks_teams_and_weights_ratios_by_gpu_hours():
    end = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    report = _report(end - timedelta(days=7), end)
    text = _texts(admin_summary_message(report, "UTC", 7))
    research, serving = report.teams["research"], report.teams["serving"]
    assert text.index("*research*") < text.index("*serving*")
    assert f"${research.cost_usd + serving.cost_usd:,.2f}" in text
    assert "Spot ratio*\n18%" in text  # 112 spot of 616 GPU-hours
    assert f"Efficiency*\n{(616 - 104) / 616:.0%} (target 80%)" in text
    assert "g5.xlarge" in text and "telemetry from Prometheus" in text


def test_the_weekly_digest_says_what_idle_gpus_drew():
    end = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    report = _report(end - timedelta(days=7), end)
    # research's notebook idled at the real H100 capture's ~125 W; an unrequested GPU drew its empty 75 W.
    held = EnergyUse(gpu_energy_kwh=310.0, idle_gpu_energy_kwh=21.0, facility_energy_kwh=372.0, co2e_kg=105.6,
                     measured_gpu_hours=448.0, idle_co2e_kg=7.15)
    free = EnergyUse(gpu_energy_kwh=12.6, facility_energy_kwh=15.12, co2e_kg=4.29)
    report = dataclasses.replace(
        report, teams={**report.teams, "research": dataclasses.replace(report.teams["research"], energy=held)},
        unrequested=UnrequestedLine(168.0, 1155.84, {"h100-spare": (168.0, 1155.84)}, free),
    )
    text = _texts(admin_summary_message(report, "UTC", 7))
    assert "Idle GPUs drew 33.6 kWh (11.4 kg CO2e) this week: 21.0 kWh held idle by pods, 12.6 kWh on GPUs no pod requested." in text
    team = _texts(team_digest_message(report.teams["research"], "UTC", 7))
    assert "Energy (at the GPU)*\n310 kWh (106 kg CO2e)" in team and "Idle energy*\n21.0 kWh (7.2 kg CO2e)" in team
    # A cluster without DCGM power says nothing of energy rather than 0 kWh.
    assert "kWh" not in _texts(admin_summary_message(_report(end - timedelta(days=7), end), "UTC", 7))


def test_summary_of_many_teams_keeps_slack_limits():
    end = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    start = end - timedelta(days=7)
    teams = {
        f"team-{i:03d}-with-a-rather-long-name": _team(
            f"team-{i:03d}-with-a-rather-long-name", start, end, [_flavor("g5.xlarge", CapacityType.ON_DEMAND, 10.0 + i, 1.0)], []
        )
        for i in range(400)
    }
    message = admin_summary_message(CostReport(start, end, teams), "UTC", 7)
    assert len(message.blocks) <= 50
    for b in message.blocks:
        if b["type"] == "section" and "text" in b:
            assert len(b["text"]["text"]) <= 3000
    text = _texts(message)
    assert "team-399" in text  # the biggest first
    # Every team while 50 blocks allow, the rest counted: none lost without a "more" line.
    shown = sum(1 for name in teams if f"*{name}*" in text)
    hidden = re.findall(r"… and (\d+) more", text)
    assert shown + (int(hidden[0]) if hidden else 0) == 400 and shown > 300


# --- sending --------------------------------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server


class Reports:
    """The cost reports a digest asks for, answered from ``_report`` and recorded."""

    def __init__(self, fail: int = 0):
        self.calls: list[tuple[datetime, datetime]] = []
        self.fail = fail

    def __call__(self, start: datetime, end: datetime) -> CostReport:
        self.calls.append((start, end))
        if self.fail:
            self.fail -= 1
            raise ConnectionError("Prometheus at http://127.0.0.1:9/ refused the connection")
        return _report(start, end)


def _runtime(store: Store, fake: FakeSlack, settings: Settings, now: datetime) -> Runtime:
    return Runtime(
        store=store,
        chat=SlackChat(web_client("xoxb-test", base_url=fake.base_url)),
        cluster=None,  # type: ignore[arg-type] - digests read the cost report only
        telemetry=None,  # type: ignore[arg-type]
        writer=None,  # type: ignore[arg-type]
        prices=BOOK,
        teams=settings.team_directory(),
        policy=settings.policy,
        dry_run=True,
        clock=lambda: now,
    )


def digests(rt: Runtime, settings: Settings, reports: Reports, holder: str = "pod-a") -> DigestsJob:
    """The digests job over ``rt`` with the test's reports."""
    return DigestsJob(rt.store, rt.chat, settings, reports, holder, cost_chart_png, rt.clock)


def _files_in(fake: FakeSlack, channel: str) -> list[dict]:
    return [f for f in fake.files.values() if channel in f["channels"]]


def test_digests_go_out_once_with_their_charts(store, fake):
    settings = _settings()
    rt = _runtime(store, fake, settings, MONDAY_0905)
    reports = Reports()

    results = digests(rt, settings, reports, "pod-a").run(MONDAY_0905)

    assert sorted((r.digest.job_id, r.outcome) for r in results) == [
        ("digest-admin", "sent"), ("digest:ops", "sent"), ("digest:research", "sent"),
    ]
    berlin_end = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    utc_end = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    # One report per distinct period: Berlin's 09:00 and UTC's 09:00.
    assert sorted(reports.calls) == [(berlin_end - timedelta(days=7), berlin_end), (utc_end - timedelta(days=7), utc_end)]

    (research,) = fake.messages("C0RESEARCH").values()
    assert research["text"].startswith("Weekly GPU cost: research:")
    assert any("Where the prices come from" in b.get("text", {}).get("text", "") for b in research["blocks"])
    (chart,) = _files_in(fake, "C0RESEARCH")
    expected_png = cost_chart_png(_report(berlin_end - timedelta(days=7), berlin_end).teams["research"])
    assert fake.uploads[chart["id"]] == expected_png and expected_png.startswith(b"\x89PNG")
    assert chart["name"] == "gpu-cost-research-2026-11-23.png"
    assert "Daily GPU cost by capacity type" in chart["initial_comment"]

    (ops,) = fake.messages("C0OPS").values()
    assert "no GPU use recorded" in ops["text"]
    assert _files_in(fake, "C0OPS") == []

    (summary,) = fake.messages("C0ADMIN").values()
    assert summary["text"].startswith("Weekly GPU cost: all teams:")
    (admin_chart,) = _files_in(fake, "C0ADMIN")
    assert fake.uploads[admin_chart["id"]] == cost_chart_png(_report(utc_end - timedelta(days=7), utc_end))

    assert fake.messages("C0SERVING") == {}  # New York's 09:00 is hours away
    runs = {(r.job_id, r.outcome, r.holder) for r in store.job_runs()}
    assert runs == {("digest:research", "ok", "pod-a"), ("digest:ops", "ok", "pod-a"), ("digest-admin", "ok", "pod-a")}

    # The next check, and another replica, send nothing again and compute no report.
    for holder, minutes in (("pod-a", 15), ("pod-b", 20)):
        later = MONDAY_0905 + timedelta(minutes=minutes)
        again = digests(_runtime(store, fake, settings, later), settings, reports, holder).run(later)
        assert {r.outcome for r in again} == {"claimed-elsewhere"}
    assert len(reports.calls) == 2
    assert len(fake.calls_to("chat.postMessage")) == 3


def test_a_failed_report_claims_nothing_and_the_next_check_sends(store, fake):
    settings = _settings()
    reports = Reports(fail=2)
    with pytest.raises(RuntimeError, match="digest:research: ConnectionError: Prometheus"):
        digests(_runtime(store, fake, settings, MONDAY_0905), settings, reports, "pod-a").run(MONDAY_0905)
    assert store.job_runs() == [] and fake.calls_to("chat.postMessage") == []

    later = MONDAY_0905 + timedelta(minutes=15)
    results = digests(_runtime(store, fake, settings, later), settings, reports, "pod-a").run(later)
    assert {r.outcome for r in results} == {"sent"}
    # Still the 09:00 digest: its fire time is the claim and the period end.
    assert {r.scheduled_at for r in store.job_runs("digest:ops")} == {datetime(2026, 11, 23, 9, 0, tzinfo=UTC)}


def test_a_channel_that_refuses_fails_alone_and_is_recorded(store, fake):
    settings = _settings()
    fake.fail_next("files.completeUploadExternal", error="not_in_channel")
    rt = _runtime(store, fake, settings, MONDAY_0905)
    with pytest.raises(RuntimeError, match="not_in_channel"):
        digests(rt, settings, Reports(), "pod-a").run(MONDAY_0905)
    outcomes = {r.job_id: r.outcome for r in store.job_runs()}
    assert sorted(outcomes.values()) == ["error", "ok", "ok"]
    failed = next(r for r in store.job_runs() if r.outcome == "error")
    assert "files_upload_v2: not_in_channel" in (failed.detail or "")
    # Posted but not charted: not resent (it would duplicate the message).
    later = MONDAY_0905 + timedelta(minutes=15)
    again = digests(_runtime(store, fake, settings, later), settings, Reports(), "pod-a").run(later)
    assert {r.outcome for r in again} == {"claimed-elsewhere"}


def test_no_digests_without_channels():
    settings = Settings(teams=[{"name": "quiet", "namespaces": ["quiet"]}])
    assert MONDAY_0905.weekday() == 0
    assert due_digests(settings, MONDAY_0905) == []


# --- end to end over a real Prometheus ------------------------------------------------------------


@pytest.fixture
def sqlite_store(sqlite_url: str) -> Iterator[Store]:
    """Claims on both databases are covered above; one is enough end to end."""
    s = Store(sqlite_url)
    s.migrate()
    yield s
    s.close()


@pytest.mark.prometheus
def test_digests_over_real_usage_price_chart_and_post(usage_prometheus, sqlite_store, fake):
    """Saturday 00:00 UTC digests of the week Nov 14-21 from the cost engine's fleet: research's
    notebook held one H100 all week, idle 9 of every 12 five-minute samples ($6.88 per GPU-hour,
    the configured p5.48xlarge rate); vision ran nothing that week; platform's node lacks its
    capacity-type label in the metrics, so the Kubernetes API (here a kubectl dump) says spot."""
    settings = Settings(
        teams=[
            {"name": "research", "namespaces": ["ml-research"], "channel": "C0RESEARCH"},
            {"name": "vision", "namespaces": ["vision"], "channel": "C0VISION"},
            {"name": "platform", "namespaces": ["platform-ns"], "channel": "C0PLATFORM"},
        ],
        slack={"admin_channel": "C0ADMIN"},
        costs={"digest_cron": "0 0 * * sat"},
        prices=PRICES.model_dump(exclude_none=True),
    )
    now = datetime(2026, 11, 21, 0, 10, tzinfo=UTC)
    nodes = {"items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "h100-nolabel-1", "labels": {
        "node.kubernetes.io/instance-type": "p5.48xlarge", "karpenter.sh/capacity-type": "spot"}},
        "status": {"capacity": {"nvidia.com/gpu": "8"}}}]}
    rt = Runtime(
        store=sqlite_store,
        chat=SlackChat(web_client("xoxb-test", base_url=fake.base_url)),
        cluster=InMemoryCluster.from_kubectl_dump(json.dumps(nodes).encode()),
        telemetry=None,  # type: ignore[arg-type] - digests read usage, not the idle telemetry
        writer=None,  # type: ignore[arg-type]
        prices=PriceBook(PriceCatalog.bundled(), settings.prices),
        teams=settings.team_directory(),
        policy=settings.policy,
        dry_run=True,
        clock=lambda: now,
        costs=CostSetup(PrometheusUsage(usage_prometheus, team_label="team"), team_label="team"),
    )

    results = digests_for(rt, settings, holder="pod-a").run(now)

    assert {r.digest.job_id: r.outcome for r in results} == {
        "digest:research": "sent", "digest:vision": "sent", "digest:platform": "sent", "digest-admin": "sent"}
    end = datetime(2026, 11, 21, tzinfo=UTC)
    report = rt.cost_report(end - timedelta(days=7), end)

    (research,) = fake.messages("C0RESEARCH").values()
    text = _texts(Message(research["text"], research["blocks"]))
    assert "$1,155.84 for 168.0 GPU-hours" in text  # 168 GPU-hours x $6.88
    assert "$866.88 (126.0 GPU-hours, 75%)" in text  # idle waste
    assert "Efficiency*\n25% (target 80%)" in text and "Spot ratio*\n0%" in text
    assert "Notebook `ml-research/llm-explore`: $1,155.84, 168.0 GPU-hours, 75% idle" in text
    assert "p5.48xlarge) $6.88/GPU-hour: config override prices.instance_types.p5.48xlarge (on-demand)" in text
    (chart,) = _files_in(fake, "C0RESEARCH")
    png = fake.uploads[chart["id"]]
    assert png.startswith(b"\x89PNG") and png == cost_chart_png(report.teams["research"])

    (vision,) = fake.messages("C0VISION").values()
    assert "no GPU use recorded" in vision["text"] and _files_in(fake, "C0VISION") == []

    (platform,) = fake.messages("C0PLATFORM").values()
    assert "$60.00 for 24.0 GPU-hours" in platform["text"]  # 24 GPU-hours x $2.50 spot, from the API
    assert "Spot ratio*\n100%" in _texts(Message(platform["text"], platform["blocks"]))

    (summary,) = fake.messages("C0ADMIN").values()
    summary_text = _texts(Message(summary["text"], summary["blocks"]))
    # research 1,155.84 + sandbox (its own team) 48 x 6.88 + training's eval 30 x 6.88 + platform 60.00
    assert f"${1155.84 + 330.24 + 206.40 + 60.00:,.2f}" in summary_text
    assert summary_text.index("*research*") < summary_text.index("*sandbox*") < summary_text.index("*training*")
    (admin_chart,) = _files_in(fake, "C0ADMIN")
    assert fake.uploads[admin_chart["id"]] == cost_chart_png(report)
