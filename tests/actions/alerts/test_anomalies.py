"""Spend anomalies within the hour, the pure decision: five weeks of a weekly pattern for three
teams (``tests.support.spend_history``), priced by the bundled catalog, and one team's 3x step
for 6 hours caused by one Workload. The alert fires on the first anomalous hour and names the
Workload; the hours after it post nothing; a recovery follows on the first normal hour. Nothing
fires for the other teams nor for the weekly pattern (Monday 09:00 against Sunday); a new team
over the floor fires, one under it does not."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest

from actions.alerts.anomalies import (
    LOCALQUEUE,
    SPEND_ANOMALY,
    SPEND_RECOVERED,
    TEAM,
    AnomalyRule,
    SpendLine,
    SpendSeries,
    baseline_hours,
    judge_hour,
    spend_lines,
)
from actions.model.ledger import REQUESTED, LedgerRow
from tests.support import spend_history as world

UTC = world.UTC
HOUR = timedelta(hours=1)
TEAMS = world.DIRECTORY
series_of = world.series_of


@pytest.fixture(scope="module")
def series() -> SpendSeries:
    return series_of(world.history())


def judged(series: SpendSeries, start: datetime, end: datetime, rule: AnomalyRule = AnomalyRule()):
    """(hour, kind, period key) of every alert and recovery of the hours in ``[start, end)``,
    each judged 5 minutes after the rollup wrote it."""
    out = []
    for h in world.hours(start, end):
        j = judge_hour(series, h, h + HOUR + timedelta(minutes=5), rule)
        out += [(h, a.kind, a.period_key) for a in (*j.alerts, *j.recoveries)]
    return out


def test_rows_are_priced_with_todays_prices_per_gpu_hour():
    rows = world.hour_rows(datetime(2026, 11, 23, 10, tzinfo=UTC))
    lines = {(x.namespace, x.name): x for x in spend_lines(rows, world.BOOK, TEAMS, "team")}
    assert set(lines) == {("ml-research", "finetune"), ("ml-research", "llm-sweep"), ("serve", "llm-api"),
                          ("vision", "detector")}  # capacity rows are not spend
    sweep = lines[("ml-research", "llm-sweep")]
    assert sweep.usd == pytest.approx(16 * 6.88)
    assert (sweep.team, sweep.kind, sweep.queue, sweep.gpu_model, sweep.capacity) == (
        "research", "Workload", "research-q", "H100", "on-demand")
    assert lines[("vision", "detector")].capacity == "spot" and lines[("vision", "detector")].gpu_model == "L40S"


def test_team_label_names_teams_no_config_lists_and_unpriced_rows_count_zero():
    h = datetime(2026, 11, 23, 10, tzinfo=UTC)
    rows = [LedgerRow(h, "c", REQUESTED, "lab", "Job", "a", "n1", 2.0, namespace_team="physics", **world.H100),
            LedgerRow(h, "c", REQUESTED, "lab", "Job", "b", "n2", 2.0, instance_type="x9.weird")]
    a, b = spend_lines(rows, world.BOOK, TEAMS, "team")
    assert (a.team, a.usd) == ("physics", pytest.approx(13.76))
    assert (b.team, b.usd, b.gpu_model) == ("lab", 0.0, "unknown GPU")


def test_baseline_hours_are_the_same_weekday_and_hour_of_the_weeks_before():
    h = datetime(2026, 11, 23, 10, tzinfo=UTC)
    got = baseline_hours(h, 4)
    assert got[:5] == [h - timedelta(weeks=w) for w in range(5)]
    assert got[5:] == [h - HOUR - timedelta(weeks=w) for w in range(5)]
    assert {x.weekday() for x in got} == {0} and {x.hour for x in got} == {9, 10}


def test_the_step_fires_once_on_its_first_hour_naming_the_workload_then_recovers(series):
    events = judged(series, datetime(2026, 11, 23, tzinfo=UTC), world.END)
    research = [e for e in events if "research" in e[2]]
    step, end = world.STEP_START, world.STEP_START + world.STEP_HOURS * HOUR
    assert research == [
        (step, SPEND_ANOMALY, "localqueue:ml-research/research-q@2026-11-23T10:00Z"),
        (step, SPEND_ANOMALY, "team:research@2026-11-23T10:00Z"),
        (end, SPEND_RECOVERED, "localqueue:ml-research/research-q@2026-11-23T16:00Z"),
        (end, SPEND_RECOVERED, "team:research@2026-11-23T16:00Z"),
    ]
    j = judge_hour(series, step, step + HOUR + timedelta(minutes=5))
    (alert,) = [a for a in j.alerts if a.period_key.startswith("team:")]
    assert alert.team == "research" and alert.kind == SPEND_ANOMALY
    assert alert.title.startswith("GPU spend anomaly: team research at $")
    fields = dict(alert.fields)
    top = fields["Top workloads (share of the increase)"].split("\n")
    assert top[0].startswith("`Workload ml-research/llm-sweep` (LocalQueue research-q): 100% (+$110.08/h)")
    assert fields["GPU models (share of the increase)"].startswith("H100: 100%")
    assert fields["Capacity (share of the increase)"].startswith("on-demand: 100%")
    # The rate is 3x the median of the 4 previous Mondays at 10:00, and the dollars per day follow.
    base = sorted(sum(x.usd for x in series.hours[step - timedelta(weeks=w)] if x.team == "research")
                  for w in range(1, 5))
    median = (base[1] + base[2]) / 2
    rate = alert.usd
    assert rate == pytest.approx(sum(x.usd for x in series.hours[step] if x.team == "research"))
    assert 2.8 < rate / median < 3.2
    assert f"${rate * 24:,.2f} a day" in alert.text and f"baseline of ${median:,.2f}/h" in alert.text
    assert "median of the same hour on the 4 previous Mondays" in alert.text and "New:" not in alert.text


def test_nothing_fires_for_the_other_teams_or_the_weekly_pattern(series):
    events = judged(series, world.START + timedelta(weeks=4), world.END)
    assert {e[2].split("@")[0] for e in events} == {
        "team:research", "localqueue:ml-research/research-q", "team:newbie"}
    # Monday 09:00 costs research 8x its Sunday 09:00 and $48/h more: not an anomaly, for
    # last Monday's 09:00 is its baseline.
    monday, sunday = datetime(2026, 11, 23, 9, tzinfo=UTC), datetime(2026, 11, 22, 9, tzinfo=UTC)
    spend = {h: sum(x.usd for x in series.hours[h] if x.team == "research") for h in (monday, sunday)}
    assert spend[monday] > 6 * spend[sunday] and spend[monday] - spend[sunday] > 40
    j = judge_hour(series, monday, monday + HOUR)
    assert j.judged and j.alerts == () and j.recoveries == ()


def test_a_new_team_over_the_floor_fires_against_the_floor_alone_and_one_under_it_does_not(series):
    events = judged(series, world.NEW_START, world.END)
    newbie = [e for e in events if "newbie" in e[2]]
    assert newbie == [(world.NEW_START, SPEND_ANOMALY, "team:newbie@2026-11-23T12:00Z"),
                      (world.NEW_END, SPEND_RECOVERED, "team:newbie@2026-11-23T16:00Z")]
    assert not [e for e in events if "tiny" in e[2]]  # 8 L4s: $6.44/h, under the $20/h floor
    (alert,) = [a for a in judge_hour(series, world.NEW_START, world.NEW_START + HOUR).alerts if a.team == "newbie"]
    assert "New: no GPU spend before 2026-11-23, so its baseline is $0/h for 4 of the 4 weeks; " \
           "judged against the $20.00/h floor alone." in alert.text
    # A floor under tiny's $6.44/h: it fires too.
    low = AnomalyRule(floor_usd_per_hour=5.0)
    assert any("team:tiny@" in e[2] for e in judged(series, world.NEW_START, world.NEW_START + HOUR, low))


def test_a_team_seen_for_part_of_the_baseline_says_so():
    h = datetime(2026, 11, 23, 12, tzinfo=UTC)
    weeks = [h - timedelta(weeks=w) for w in range(5)]

    def line(at: datetime, usd: float) -> SpendLine:
        return SpendLine(at, "lab", "lab", "Job", "x", None, "H100", "on-demand", usd)

    # Seen two weeks ago at $10/h, now $60/h: median of (10, 10, 0, 0) is 5.
    hours = {weeks[0]: [line(h, 60.0)], weeks[1]: [line(weeks[1], 10.0)], weeks[2]: [line(weeks[2], 10.0)],
             weeks[3]: [], weeks[4]: []}
    series = SpendSeries(hours, {("lab", None): weeks[2].date()})
    (alert,) = judge_hour(series, h, h + HOUR, AnomalyRule(by=(TEAM,))).alerts
    assert "baseline of $5.00/h (12.0x, $55.00/h over)" in alert.text
    assert "New: no GPU spend before 2026-11-09, so its baseline is $0/h for 2 of the 4 weeks." in alert.text


def test_factor_and_floor_must_both_be_exceeded():
    h = datetime(2026, 11, 23, 12, tzinfo=UTC)

    def series(rate: float, base: float) -> SpendSeries:
        mk = lambda at, usd: [SpendLine(at, "t", "t", "Job", "x", "q", "H100", "spot", usd)]  # noqa: E731
        hours = {h - timedelta(weeks=w): mk(h - timedelta(weeks=w), base) for w in range(1, 5)}
        return SpendSeries({**hours, h: mk(h, rate)}, {("t", "q"): date(2026, 1, 1)})

    team = AnomalyRule(by=(TEAM,))
    assert judge_hour(series(31.0, 10.0), h, h + HOUR, team).alerts  # 3.1x, $21/h over
    assert not judge_hour(series(30.0, 10.0), h, h + HOUR, team).alerts  # $20/h over: not over the floor
    assert not judge_hour(series(31.0, 10.0), h, h + HOUR, AnomalyRule(factor=3.5, by=(TEAM,))).alerts
    assert not judge_hour(series(300.0, 160.0), h, h + HOUR, team).alerts  # $140/h over but 1.9x
    both = judge_hour(series(300.0, 100.0), h, h + HOUR)
    assert sorted(a.period_key.split("@")[0] for a in both.alerts) == ["localqueue:t/q", "team:t"]
    only_queues = judge_hour(series(300.0, 100.0), h, h + HOUR, AnomalyRule(by=(LOCALQUEUE,)))
    assert [a.period_key.split("@")[0] for a in only_queues.alerts] == ["localqueue:t/q"]


def test_weeks_the_ledger_lacks_are_left_out_and_an_hour_without_any_is_not_judged():
    h = datetime(2026, 11, 23, 12, tzinfo=UTC)
    mk = lambda at, usd: [SpendLine(at, "t", "t", "Job", "x", None, "H100", "spot", usd)]  # noqa: E731
    # Only one week held, at $40/h: $100/h is 2.5x, $60/h over.
    held = {h: mk(h, 100.0), h - timedelta(weeks=3): mk(h - timedelta(weeks=3), 40.0)}
    (alert,) = judge_hour(SpendSeries(held, {("t", None): date(2026, 1, 1)}), h, h + HOUR).alerts
    assert "baseline of $40.00/h" in alert.text and "on the 1 previous Mondays the ledger holds" in alert.text
    alone = judge_hour(SpendSeries({h: mk(h, 100.0)}), h, h + HOUR)
    assert not alone.judged and alone.alerts == ()


def test_an_episode_whose_previous_hour_is_not_held_alerts_again_and_a_running_one_does_not():
    h = datetime(2026, 11, 23, 12, tzinfo=UTC)
    mk = lambda at, usd: [SpendLine(at, "t", "t", "Job", "x", None, "H100", "spot", usd)]  # noqa: E731
    base = {x - timedelta(weeks=w): mk(x - timedelta(weeks=w), 10.0) for x in (h, h - HOUR) for w in range(1, 5)}
    running = SpendSeries({**base, h: mk(h, 100.0), h - HOUR: mk(h - HOUR, 100.0)})
    assert judge_hour(running, h, h + HOUR).alerts == ()
    gap = SpendSeries({**base, h: mk(h, 100.0)})
    assert len(judge_hour(gap, h, h + HOUR).alerts) == 1


def test_an_hour_not_ended_or_a_naive_time_is_refused(series):
    h = datetime(2026, 11, 23, 12, tzinfo=UTC)
    with pytest.raises(ValueError, match="has not ended"):
        judge_hour(series, h, h + timedelta(minutes=59))
    with pytest.raises(ValueError, match="no time zone"):
        judge_hour(series, h.replace(tzinfo=None), h + HOUR)
