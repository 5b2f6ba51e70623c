"""`/gpu cost`'s renderers with GPU energy: a team's energy line (kWh at the GPU, idle kWh, the
facility's kWh with the PUE, the kg CO2e and how much was measured) and the all-teams table's kWh
and CO2e columns, which add up with the unrequested GPUs to the nodes'; the words for a cost by Kueue
queue (``by localqueue``, ``per lq``, ``cq``), a misspelt one answered with what was read and an
example, and the table of queues."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from actions.cost.report import CostReport, TeamReport, UnrequestedLine
from actions.model.energy import EnergyUse
from bot.chat.commands.context import UsageError
from bot.chat.commands.cost import all_teams_message, grouping_arg, team_message
from bot.chat.console import to_text

T0, T1 = datetime(2026, 11, 1, tzinfo=timezone.utc), datetime(2026, 11, 8, tzinfo=timezone.utc)
# A week of one H100 team: the real capture's ~620 W training and ~125 W idle notebook, PUE 1.3,
# us-east-1's 283.89 g CO2e/kWh; 96% of its GPU-hours measured.
ENERGY = EnergyUse(gpu_energy_kwh=70.5, idle_gpu_energy_kwh=12.2, facility_energy_kwh=91.65, co2e_kg=26.02,
                   measured_gpu_hours=96.0, idle_co2e_kg=4.5)
TEAM = TeamReport("research", T0, T1, 100.0, 688.0, 20.0, 137.6, 0.8, 0.0, energy=ENERGY)


def test_a_teams_energy_line_says_what_is_measured_and_what_the_pue_adds():
    text = to_text(team_message(TEAM))
    assert ("Energy: 70.5 kWh at the GPU (idle 12.2 kWh), 91.7 kWh with PUE 1.3, 26.0 kg CO2e; "
            "measured for 96% of GPU-hours") in text


def test_a_team_without_energy_has_no_energy_line():
    text = to_text(team_message(TeamReport("research", T0, T1, 100.0, 688.0, 20.0, 137.6, 0.8, 0.0)))
    assert "Energy" not in text and "kWh" not in text


def test_the_all_teams_table_has_kwh_and_co2e_columns_that_add_up():
    free = EnergyUse(gpu_energy_kwh=5.0, facility_energy_kwh=6.5, co2e_kg=1.85)
    report = CostReport(T0, T1, {"research": TEAM}, unrequested=UnrequestedLine(10.0, 68.8, {"n1": (10.0, 68.8)}, free),
                        node_gpu_hours=110.0, node_cost_usd=756.8, node_energy_kwh=75.5)
    rows = {line.split()[0]: line.split()[1:] for line in to_text(all_teams_message(report)).splitlines() if line.split()}
    assert rows["team"][-3:] == ["kWh", "kg", "CO2e"]
    assert rows["research"][-2:] == ["70", "26"] and rows["total"][-2:] == ["70", "26"]
    assert rows["unrequested"][-2:] == ["5", "2"] and rows["GPU"][-1] == "76"  # 70.5 + 5.0 = the nodes' 75.5


# --- by Kueue queue --------------------------------------------------------------------------------


@pytest.mark.parametrize("args, rest, by", [
    ("by localqueue 30d", "30d", "localqueue"),
    ("7d by clusterqueue", "7d", "clusterqueue"),
    ("per queue", "", "localqueue"),
    ("per-localqueue 7d", "7d", "localqueue"),
    ("30d lq", "30d", "localqueue"),
    ("CQ mtd", "mtd", "clusterqueue"),
    ("by team research", "research", "team"),
    ("research 7d", "research 7d", "team"),
])
def test_the_groupings_people_type(args, rest, by):
    assert grouping_arg(args) == (rest, by)


@pytest.mark.parametrize("args, problem, example", [
    ("by lcoalqueue 7d", "`by lcoalqueue` is not one of team, localqueue (lq) or clusterqueue (cq); did you mean "
     "`by localqueue`? I read the rest as: 7d.", "/gpu cost by localqueue 7d"),
    ("by namespace", "`by namespace` is not one of team, localqueue (lq) or clusterqueue (cq). I read the rest as: "
     "nothing (every team, 30d).", "/gpu cost by localqueue 30d"),
    ("30d by", "`by` needs one of team", "/gpu cost by localqueue 30d"),
    ("by lq per cq", "Two groupings given (localqueue, clusterqueue)", "/gpu cost by localqueue 30d"),
])
def test_a_grouping_not_understood_says_what_was_read_with_an_example(args, problem, example):
    with pytest.raises(UsageError) as e:
        grouping_arg(args)
    assert problem in e.value.problem and e.value.example == example


def test_the_table_by_local_queue_keeps_the_queue_order_and_says_what_its_lines_are():
    lines = {
        "ml/train": TeamReport("ml/train", T0, T1, 10.0, 68.8, 1.0, 6.88, 0.9, 1.0),
        "(no LocalQueue)": TeamReport("(no LocalQueue)", T0, T1, 100.0, 688.0, 20.0, 137.6, 0.8, 0.0),
    }
    out = to_text(all_teams_message(CostReport(T0, T1, lines), by="localqueue"))
    rows = [line for line in out.splitlines() if line.split()]
    assert "GPU cost by LocalQueue" in out and any(r.startswith("LocalQueue") and "GPU-hrs" in r for r in rows)
    order = [r.split()[0] for r in rows if r.startswith(("ml/train", "(no"))]
    assert order == ["ml/train", "(no"]  # the report's order: the line outside Kueue last, whatever it cost
    assert next(r for r in rows if r.startswith("total")).split()[1:3] == ["110", "$756.80"]
