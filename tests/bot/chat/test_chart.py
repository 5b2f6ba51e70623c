"""The cost chart: a real PNG, bars stacked by capacity type in their colours, idle marked."""

from __future__ import annotations

import io
from datetime import date, datetime, timezone

import numpy as np
from matplotlib import image as mpimg
from matplotlib.colors import to_rgb

from actions.cost.report import CostReport, DailyCost, TeamReport
from bot.chat.chart import COLOURS, cost_chart_png, cost_figure

UTC = timezone.utc


def _team(name: str, daily: list[DailyCost]) -> TeamReport:
    cost = sum(d.cost_usd for d in daily)
    idle = sum(d.idle_cost_usd for d in daily)
    return TeamReport(name, datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 4, tzinfo=UTC), 100, cost, 10, idle,
                      0.9, 0.5, daily=tuple(daily))


TRAINING = _team("training", [
    DailyCost(date(2026, 11, 1), {"on-demand": 165.12, "spot": 240.0}, 20.0),
    DailyCost(date(2026, 11, 2), {"on-demand": 165.12}, 123.84),
    DailyCost(date(2026, 11, 3), {}, 0.0),
])
RESEARCH = _team("research", [
    DailyCost(date(2026, 11, 1), {"reserved/on-prem": 26.4}, 0.0),
    DailyCost(date(2026, 11, 2), {}, 0.0),
    DailyCost(date(2026, 11, 3), {"reserved/on-prem": 26.4}, 11.0),
])


def _pixels(png: bytes) -> np.ndarray:
    return mpimg.imread(io.BytesIO(png), format="png")[..., :3]


def _has_colour(img: np.ndarray, colour: str) -> bool:
    return bool((np.abs(img - np.array(to_rgb(colour))).max(axis=-1) < 0.02).any())


def test_team_chart_is_a_png_with_a_bar_colour_per_capacity_type(tmp_path):
    path = tmp_path / "training.png"
    png = cost_chart_png(TRAINING, path)
    assert path.read_bytes() == png
    img = _pixels(png)
    assert img.shape[:2] == (450, 1000)
    assert _has_colour(img, COLOURS["on-demand"]) and _has_colour(img, COLOURS["spot"])
    assert not _has_colour(img, COLOURS["reserved/on-prem"])


def test_chart_marks_idle_and_names_the_idle_share():
    fig = cost_figure(TRAINING)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["on-demand", "spot", "idle"]
    idle_bars = [p for p in ax.patches if p.get_hatch() == "///"]
    assert [round(p.get_height(), 2) for p in idle_bars] == [20.0, 123.84, 0.0]
    assert ax.get_title() == "GPU cost: training ($570.24, idle 25.2%)"


def test_all_teams_chart_adds_the_teams_day_by_day():
    report = CostReport(TRAINING.period_start, TRAINING.period_end, {"training": TRAINING, "research": RESEARCH})
    ax = cost_figure(report).axes[0]
    tops = {}
    for p in ax.patches:
        if p.get_hatch() != "///":
            x = round(p.get_x() + p.get_width() / 2)
            tops[x] = max(tops.get(x, 0), p.get_y() + p.get_height())
    assert {k: round(v, 2) for k, v in tops.items()} == {0: 431.52, 1: 165.12, 2: 26.4}
    assert ax.get_title().startswith("GPU cost: all teams ($623.04")
    assert _has_colour(_pixels(cost_chart_png(report)), COLOURS["reserved/on-prem"])


def test_an_empty_period_still_draws():
    empty = _team("quiet", [])
    assert cost_chart_png(empty)[:4] == b"\x89PNG"
