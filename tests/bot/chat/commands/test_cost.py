"""`/gpu cost`'s renderers with GPU energy: a team's energy line (kWh at the GPU, idle kWh, the
facility's kWh with the PUE, the kg CO2e and how much was measured) and the all-teams table's kWh
and CO2e columns, which add up with the unrequested GPUs to the nodes'."""

from __future__ import annotations

from datetime import datetime, timezone

from actions.cost.report import CostReport, TeamReport, UnrequestedLine
from actions.model.energy import EnergyUse
from bot.chat.commands.cost import all_teams_message, team_message
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
