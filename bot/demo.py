"""``gpu-cost-bot demo``: the real loop on recorded data, with a scripted approver.

The cluster is a recorded ``kubectl get ... -o json`` dump (bot/demo_data/cluster.json) held in
memory, so the executor's patches really change it; the telemetry is what the Prometheus source
computed from DCGM series built out of a real H100's NVML trace (bot/demo_data/telemetry.json,
checked against a real Prometheus by the tests); the 30 days before it (bot/demo_data/history.json,
:mod:`bot.demo_history`) are rolled into the demo store's usage ledger and are advice's history,
so ``/gpu cost``, ``/gpu budget``, ``/gpu advise`` and the cost chart answer without Prometheus.
Everything in between is the production code: the detector, the store (SQLite), the ledger, the
state machine, the Block Kit renderers, the commands.
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, TextIO

from actions.advice.round import AdviceSetup
from actions.cost.periods import parse_period
from actions.cost.report import CostReport
from actions.cost.reporting import CostSetup
from actions.energy.settings import EnergySettings
from actions.ledger.rollup import LedgerRollup, LedgerUsage
from actions.model.times import format_time
from actions.policy.teams import Team
from actions.store.ledger import LedgerStore
from bot.chat.chart import cost_chart_png
from bot.chat.commands.cost import all_teams_message
from bot.chat.console import ConsoleChat, ConsoleSession, to_text
from bot.demo_history import DemoAdviceHistory, DemoHistory, DemoUsage
from bot.runtime.runtime import Runtime
from bot.settings import Settings
from bot.wiring.jobs import sweep_for
from bot.wiring.runtime import build_runtime

DEMO_DATA = Path(__file__).parent / "demo_data"
SWEEP_AT = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
APPROVER = "U0DEMOAPPROVER"
BYSTANDER = "U0BYSTANDER"


class DemoClock:
    """A clock the script moves forward by hand."""

    def __init__(self, start: datetime):
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: float) -> datetime:
        self.now += timedelta(minutes=minutes)
        return self.now


def demo_settings(database_url: str) -> Settings:
    """Three teams with monthly budgets (USD), one approver, acting for real on the in-memory
    cluster."""
    teams = [
        Team(name="research", namespaces=["ml-research"], channel="#research-gpus", approvers=[APPROVER],
             monthly_budget_usd=3000),
        Team(name="training", namespaces=["training"], channel="#training-gpus", approvers=[APPROVER],
             monthly_budget_usd=6000),
        Team(name="serving", namespaces=["serving"], channel="#serving-gpus", approvers=[APPROVER],
             monthly_budget_usd=2500),
    ]
    # The demo's nodes are in us-east-1 (topology.kubernetes.io/region): its grid's carbon intensity.
    return Settings(dry_run=False, database_url=database_url, teams=teams, energy=EnergySettings(region="us-east-1"))


def demo_runtime(database_url: str, out: TextIO, clock: Callable[[], datetime]) -> Runtime:
    """The demo's runtime: recorded cluster and telemetry, console chat, the given database with
    the demo's 30 days in its usage ledger (:func:`load_history`), which cost reports read, and
    advice drawn from the same history."""
    settings = demo_settings(database_url)
    rt = build_runtime(
        settings,
        chat=ConsoleChat(out, clock=clock),
        cluster_state=DEMO_DATA / "cluster.json",
        telemetry_file=DEMO_DATA / "telemetry.json",
        clock=clock,
    )
    history = DemoHistory.from_file(DEMO_DATA / "history.json")
    load_history(rt, history)
    ledger = LedgerStore(rt.store)
    # The ledger alone: there is no Prometheus for the current hour.
    rt.costs = CostSetup(LedgerUsage(ledger, None, cluster=rt.cluster_name, team_label=None, source="ledger"), team_label=None,
                         energy=settings.energy_factors())
    rt.advice_setup = AdviceSetup(DemoAdviceHistory(history), settings.advice)
    return rt


def load_history(rt: Runtime, history: DemoHistory) -> int:
    """Roll ``history``'s hours up into ``rt``'s usage ledger, as the bot's hourly job rolls
    Prometheus's up (hours already there are kept). Returns the hours written."""
    rollup = LedgerRollup(DemoUsage(history), LedgerStore(rt.store), cluster=rt.cluster_name, team_label=None,
                          prices=rt.prices)
    return len(rollup.backfill(history.start, history.end, rt.policy))


def write_chart(path: str | Path, out: TextIO, database_dir: str | None = None) -> CostReport:
    """Write the chart of the demo's 30 days of cost (PNG) to ``path`` and print the report
    beside it; no sweep, no loop. Returns the report. Raises OSError when ``path`` cannot be
    written."""
    tmp = database_dir or tempfile.mkdtemp(prefix="gpu-cost-bot-demo-")
    rt = demo_runtime(f"sqlite:///{Path(tmp) / 'demo.db'}", out, DemoClock(SWEEP_AT))
    start, end = parse_period("30d", SWEEP_AT)
    report = rt.cost_report(start, end)
    cost_chart_png(report, path)
    print(to_text(all_teams_message(report)), file=out)
    print(f"\nthe daily cost chart of these 30 days (the demo's bundled history) is in {path}", file=out, flush=True)
    return report


def _gpu_pods(rt: Runtime, now: datetime) -> str:
    snap = rt.cluster.snapshot(now)
    return ", ".join(f"{p.namespace}/{p.name} ({p.gpus})" for p in snap.pods) or "none"


def run_demo(*, interactive: bool, out: TextIO, database_dir: str | None = None) -> Runtime:
    """Play the loop and print every step. Returns the runtime so tests can inspect the result."""
    tmp = database_dir or tempfile.mkdtemp(prefix="gpu-cost-bot-demo-")
    clock = DemoClock(SWEEP_AT)
    rt = demo_runtime(f"sqlite:///{Path(tmp) / 'demo.db'}", out, clock)

    def say(text: str) -> None:
        print(f"\n▶ [{clock.now.strftime('%H:%M')} UTC] {text}", file=out, flush=True)

    print(
        "gpu-cost-bot demo: recorded cluster (3 x p5.48xlarge, 5 GPU pods) and telemetry derived from a "
        "real H100's NVML trace, with the 30 days before it in the usage ledger; "
        f"store {rt.store.url.render_as_string(hide_password=True)}",
        file=out,
    )
    say(f"GPU pods running: {_gpu_pods(rt, clock.now)}")
    say("Idle sweep (1 h window: engine activity and power must both say idle)")
    sweep = sweep_for(rt)
    counts = sweep.run(clock.now).counts
    say(f"Sweep done: {counts['proposed']} proposal(s). Busy notebooks, training, and serving at GPU_UTIL 0% "
        "but ~220 W were left alone.")
    proposals = rt.store.list_requests(states=["proposed"])
    if not proposals:
        say("Nothing idle. (Unexpected with the bundled data.)")
        return rt
    req = proposals[0]

    if interactive:
        # The clock stays at the sweep: the 30 days the commands read then end on a whole hour,
        # all of them in the ledger.
        say(f"Your turn, as approver @{APPROVER}: try `approve {req.id}`, `/gpu cost`, `/gpu budget`, `/gpu advise`, "
            "`/gpu queue`, `/gpu estimate 16 a100 1w`, `/gpu help`, `quit`.")
        ConsoleSession(rt, APPROVER, out).loop()
        return rt

    say(f"@{BYSTANDER} asks why the training job has not started")
    ConsoleSession(rt, BYSTANDER, out).handle("/gpu queue")

    clock.advance(1)
    say(f"@{BYSTANDER} (not an approver) presses Approve on request #{req.id}")
    ConsoleSession(rt, BYSTANDER, out).handle(f"approve {req.id}")

    approver = ConsoleSession(rt, APPROVER, out)
    clock.advance(4)
    say(f"@{APPROVER} presses Approve: the bot re-checks the evidence, then stops the Notebook")
    approver.handle(f"approve {req.id}")
    say(f"GPU pods running now: {_gpu_pods(rt, clock.now)}")

    say(f"@{APPROVER} presses Approve again (a double click acts once)")
    approver.handle(f"approve {req.id}")

    say("Someone asks what 16 A100s for a week would cost")
    approver.handle("/gpu estimate 16 a100 1w")

    clock.advance(5)
    say(f"@{APPROVER} presses Restore")
    approver.handle(f"restore {req.id}")
    say(f"GPU pods running now: {_gpu_pods(rt, clock.now)}")

    clock.advance(5)
    say("Next sweep: the restarted notebook is inside its warm-up, so nothing new is proposed")
    sweep.run(clock.now)

    say(f"Audit log of request #{req.id}:")
    for e in rt.store.events(req.id):
        print(f"  {format_time(e.at)}  {e.actor:<15} {e.event}", file=out)
    print("\nDemo complete.", file=out, flush=True)
    return rt
