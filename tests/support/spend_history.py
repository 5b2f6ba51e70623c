"""A world for spend anomalies: five weeks of ledger hours (2026-10-19 00:00 to 2026-11-23 20:00 UTC)
of three teams with a weekly pattern (weekday office hours 08-18 UTC busier than nights, weekends
quieter still), a small deterministic jitter (+-10%), and on Monday 2026-11-23:

- research's spend steps to 3x for 6 hours (10:00-16:00): one Workload, ``ml-research/llm-sweep``
  in LocalQueue ``research-q``, adds 16 H100s to the usual 8;
- a new team ``newbie`` (4 H100s, $27.52/h, over the $20/h floor) runs 12:00-16:00;
- a new team ``tiny`` (8 L4s, $6.44/h, under the floor) runs from 12:00 on.

Rows are :class:`~actions.model.ledger.LedgerRow` as the rollup writes them (one requested row per
consumer and node, one capacity row per node), priced by the bundled catalog (p5.48xlarge H100
on-demand $6.88, p4d.24xlarge A100 on-demand $2.7447, g6e.xlarge L40S spot $1.6119, g6.xlarge
L4 on-demand $0.8048 per GPU-hour).
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone
from typing import Iterable, Iterator

from actions.alerts.anomalies import SpendSeries, spend_lines
from actions.model.ledger import CAPACITY, FILLED, REQUESTED, LedgerRow
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.store.ledger import LedgerStore

UTC = timezone.utc
HOUR = timedelta(hours=1)
CLUSTER = "default"
START = datetime(2026, 10, 19, tzinfo=UTC)  # a Monday, five weeks before the step
STEP_START = datetime(2026, 11, 23, 10, tzinfo=UTC)  # Monday
STEP_HOURS = 6
NEW_START, NEW_END = datetime(2026, 11, 23, 12, tzinfo=UTC), datetime(2026, 11, 23, 16, tzinfo=UTC)
END = datetime(2026, 11, 23, 20, tzinfo=UTC)
BOOK = PriceBook(PriceCatalog.bundled())

H100 = dict(instance_type="p5.48xlarge", capacity_type="on-demand", gpu_product="NVIDIA-H100-80GB-HBM3",
            gpu_model="NVIDIA H100 80GB HBM3")
A100 = dict(instance_type="p4d.24xlarge", capacity_type="on-demand", gpu_product="NVIDIA-A100-SXM4-40GB",
            gpu_model="NVIDIA A100-SXM4-40GB")
L40S = dict(instance_type="g6e.xlarge", capacity_type="spot", gpu_product="NVIDIA-L40S", gpu_model="NVIDIA L40S")
L4 = dict(instance_type="g6.xlarge", capacity_type="on-demand", gpu_product="NVIDIA-L4", gpu_model="NVIDIA L4")

TEAMS = [
    {"name": "research", "namespaces": ["ml-research"], "channel": "C0RESEARCH"},
    {"name": "serving", "namespaces": ["serve"], "channel": "C0SERVING"},
    {"name": "vision", "namespaces": ["vision"], "channel": "C0VISION"},
]
DIRECTORY = TeamDirectory([Team(**t) for t in TEAMS], default_channel="C0OPS")
# (namespace, kind, name, LocalQueue, node facts, GPUs at office hours, weekday nights, weekends)
USUAL = [
    ("ml-research", "Workload", "finetune", "research-q", H100, 8, 4, 1),
    ("serve", "Deployment", "llm-api", None, A100, 16, 8, 8),
    ("vision", "Workload", "detector", "vision-q", L40S, 24, 4, 0),
]
STEP = ("ml-research", "Workload", "llm-sweep", "research-q", H100, 16)
NEW = [("newbie", "Job", "exp", None, H100, 4), ("tiny", "Job", "notebook", None, L4, 8)]


def usual_gpus(office: int, night: int, weekend: int, hour: datetime) -> int:
    if hour.weekday() >= 5:
        return weekend
    return office if 8 <= hour.hour < 18 else night


def jitter(name: str, hour: datetime) -> float:
    """A factor in [0.9, 1.1], the same for the same consumer and hour in every run."""
    return random.Random(f"{name}@{hour.isoformat()}").uniform(0.9, 1.1)


def _rows(hour: datetime, consumers: Iterable[tuple]) -> list[LedgerRow]:
    rows, capacity = [], {}
    for ns, kind, name, queue, facts, gpus in consumers:
        node = f"{facts['instance_type']}-{name}"
        rows.append(LedgerRow(hour, CLUSTER, REQUESTED, ns, kind, name, node, gpus, queue=queue, **facts))
        capacity[node] = (facts, max(8.0, gpus))
    rows += [LedgerRow(hour, CLUSTER, CAPACITY, "", "", "", node, hours, **{**facts, "gpu_model": None})
             for node, (facts, hours) in sorted(capacity.items())]
    return rows


def hour_rows(hour: datetime) -> list[LedgerRow]:
    """The ledger rows of ``hour`` in this world."""
    consumers = []
    for ns, kind, name, queue, facts, office, night, weekend in USUAL:
        gpus = usual_gpus(office, night, weekend, hour)
        if gpus:
            consumers.append((ns, kind, name, queue, facts, gpus * jitter(name, hour)))
    if STEP_START <= hour < STEP_START + STEP_HOURS * HOUR:
        consumers.append(STEP)
    for ns, kind, name, queue, facts, gpus in NEW:
        if hour >= NEW_START and (name != "exp" or hour < NEW_END):
            consumers.append((ns, kind, name, queue, facts, gpus))
    return _rows(hour, consumers)


def hours(start: datetime = START, end: datetime = END) -> Iterator[datetime]:
    h = start
    while h < end:
        yield h
        h += HOUR


def history(start: datetime = START, end: datetime = END) -> dict[datetime, list[LedgerRow]]:
    """Every hour of ``[start, end)`` and its rows."""
    return {h: hour_rows(h) for h in hours(start, end)}


def write_hours(ledger: LedgerStore, start: datetime = START, end: datetime = END) -> None:
    """Write ``[start, end)`` into ``ledger`` as the rollup would, each hour once it has ended."""
    for h in hours(start, end):
        ledger.write_hour(CLUSTER, h, hour_rows(h), FILLED, h + HOUR + timedelta(minutes=5))


def series_of(history: dict[datetime, list[LedgerRow]]) -> SpendSeries:
    """The spend series of ``history`` priced by :data:`BOOK`, teams from :data:`TEAMS`, each
    namespace's and LocalQueue's first day the first day it spent in ``history``."""
    lines = {h: spend_lines(rows, BOOK, DIRECTORY, "team") for h, rows in history.items()}
    first: dict[tuple[str, str | None], date] = {}
    for h in sorted(lines):
        for x in lines[h]:
            first.setdefault((x.namespace, x.queue), h.date())
    return SpendSeries(lines, first)
