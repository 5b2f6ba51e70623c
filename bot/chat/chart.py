"""The cost chart: daily USD stacked by capacity type, the idle part of each day marked.

A bare matplotlib ``Figure`` (no pyplot, so no GUI backend and no global figure state; it
renders with Agg): data in, PNG bytes out.
"""

from __future__ import annotations

import io
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from actions.cost.report import CAPACITY_ORDER, CostReport, DailyCost, TeamReport

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# One colour per capacity type, kept the same across every chart the bot draws.
COLOURS = {
    "on-demand": "#d9534f",
    "spot": "#5cb85c",
    "reserved/on-prem": "#5bc0de",
    "unknown": "#999999",
}


def _daily(report: TeamReport | CostReport) -> list[DailyCost]:
    if isinstance(report, TeamReport):
        return list(report.daily)
    by_cap: dict[date, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    idle: dict[date, float] = defaultdict(float)
    for t in report.teams.values():
        for d in t.daily:
            day = by_cap[d.day]  # a day without cost still gets its (empty) bar
            idle[d.day] += d.idle_cost_usd
            for cap, usd in d.cost_usd_by_capacity_type.items():
                day[cap] += usd
    return [DailyCost(day, dict(by_cap[day]), idle[day]) for day in sorted(by_cap)]


def cost_figure(report: TeamReport | CostReport) -> Figure:
    """The chart as a matplotlib Figure: one bar per UTC day (USD), stacked by capacity type
    (``on-demand``, ``spot``, ``reserved/on-prem``, ``unknown``), with the day's idle cost drawn
    hatched over the bottom of its bar and the period's idle share in the title."""
    # Imported here: matplotlib is two thirds of a second of every start of `run`, and a chart is
    # drawn once a week per team.
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    days = _daily(report)
    title = f"GPU cost: {report.team}" if isinstance(report, TeamReport) else "GPU cost: all teams"
    total = sum(d.cost_usd for d in days)
    idle_total = sum(d.idle_cost_usd for d in days)
    fig = Figure(figsize=(10, 4.5), dpi=100)
    ax = fig.add_subplot()
    x = list(range(len(days)))
    bottom = [0.0] * len(days)
    for cap in CAPACITY_ORDER:
        heights = [d.cost_usd_by_capacity_type.get(cap, 0.0) for d in days]
        if any(heights):
            ax.bar(x, heights, bottom=bottom, color=COLOURS[cap], label=cap, width=0.8)
            bottom = [b + h for b, h in zip(bottom, heights)]
    idle = [d.idle_cost_usd for d in days]
    if any(idle):
        ax.bar(x, idle, fill=False, hatch="///", edgecolor="black", linewidth=0.5, width=0.8, label="idle")
    share = f", idle {idle_total / total:.1%}" if total else ""
    ax.set_title(f"{title} (${total:,.2f}{share})")
    ax.set_ylabel("USD per day")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"${v:,.0f}"))
    every = max(1, len(days) // 10)
    ax.set_xticks(x[::every], [d.day.strftime("%b %d") for d in days][::every])
    if days:
        # Beside the plot, never over a bar.
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def cost_chart_png(report: TeamReport | CostReport, path: str | Path | None = None) -> bytes:
    """The chart of :func:`cost_figure` as PNG bytes; also written to ``path`` when given.
    Raises OSError when ``path`` cannot be written."""
    buf = io.BytesIO()
    fig = cost_figure(report)
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(png)
    return png
