"""The ledger's fast read of a period: the daily split summed per price group in the database
(real SQLite and PostgreSQL), the groups themselves (pure), and the collector pause around the
read and the pricing. That a whole report is unchanged to the cent is tests/actions/ledger/test_ledger.py's
comparison with the report straight from Prometheus."""

from __future__ import annotations

import gc
import threading
from datetime import date, datetime, timezone

from actions.cost.gc_pause import gc_paused
from actions.ledger.rows import price_groups
from actions.model.kube import CapacityType
from actions.model.ledger import CAPACITY, REQUESTED, LedgerRow
from actions.model.usage import NodeInfo, PodUsage, UsageData
from actions.store.ledger import LedgerStore

UTC = timezone.utc
H0 = datetime(2026, 11, 20, 0, tzinfo=UTC)
ON_DEMAND, SPOT = CapacityType.ON_DEMAND, CapacityType.SPOT


def node(name: str, capacity: CapacityType | None = ON_DEMAND, instance: str = "p5.48xlarge") -> NodeInfo:
    return NodeInfo(name, instance_type=instance, capacity_type=capacity, gpu_model="NVIDIA-H100-80GB-HBM3")


def usage(nodes: list[NodeInfo], pods: list[PodUsage] = ()) -> UsageData:
    return UsageData(H0, H0, 300, pods=tuple(pods), nodes={n.name: n for n in nodes})


def test_nodes_priced_alike_share_the_first_node_by_name_and_the_others_stand_alone():
    groups = price_groups(usage(
        [node("n3"), node("n1"), node("n2"), node("s1", SPOT), node("s2", SPOT), node("g1", instance="p4d.24xlarge"),
         node("u1", None), node("u2", None), node("m1"), node("m2")],
        # The engine prices a node's daily rows with the model its first pod named: m1 and m2 differ.
        [PodUsage("ml", "a", "m1", 1.0, gpu_model="NVIDIA A100-SXM4-40GB"), PodUsage("ml", "b", "m2", 1.0)],
    ))
    # n1..n3 and m2: the same node facts, no pod model; u1/u2 lack a capacity type (the API may say).
    assert groups == {"n1": "m2", "n2": "m2", "n3": "m2", "s2": "s1"}


def test_no_groups_when_every_node_differs():
    assert price_groups(usage([node("a"), node("b", SPOT), node("c", None)])) == {}


def _row(n: str, ns: str, hours: float, idle: float = 0.0, measure: str = REQUESTED) -> LedgerRow:
    owner = ("Job", "train") if measure == REQUESTED else ("", "")
    return LedgerRow(H0, "eu-1", measure, ns if measure == REQUESTED else "", *owner, n, hours, idle,
                     instance_type="p5.48xlarge", capacity_type="on-demand")


def test_daily_sums_add_a_groups_nodes_under_its_node_in_the_database(store):
    ledger = LedgerStore(store)
    rows = [_row("n1", "ml", 2.0, 0.5), _row("n2", "ml", 3.0, 1.0), _row("n3", "ml", 4.0), _row("n2", "cv", 1.0),
            _row("n1", "", 8.0, measure=CAPACITY)]
    assert ledger.write_hour("eu-1", H0, rows, "filled", H0)
    span = [(H0, H0.replace(hour=1))]
    day = date(2026, 11, 20)

    by_node = {(d.namespace, d.node): (d.gpu_hours, d.idle_gpu_hours) for d in ledger.daily_sums("eu-1", span)}
    assert by_node == {("ml", "n1"): (2.0, 0.5), ("ml", "n2"): (3.0, 1.0), ("ml", "n3"): (4.0, 0.0),
                       ("cv", "n2"): (1.0, 0.0)}

    grouped = ledger.daily_sums("eu-1", span, groups={"n2": "n1"})
    assert sorted((d.day, d.namespace, d.node, d.gpu_hours, d.idle_gpu_hours) for d in grouped) == [
        (day, "cv", "n1", 1.0, 0.0), (day, "ml", "n1", 5.0, 1.5), (day, "ml", "n3", 4.0, 0.0)]
    # The group map lives only for the read: the next read without it sees every node again.
    assert len(ledger.daily_sums("eu-1", span)) == 4
    assert ledger.daily_sums("eu-1", span, ["cv"], {"n2": "n3"})[0].node == "n3"


def test_the_collector_is_off_inside_and_back_on_after_the_last_holder():
    was = gc.isenabled()
    gc.enable()
    try:
        with gc_paused():
            assert not gc.isenabled()
            with gc_paused():
                assert not gc.isenabled()
            assert not gc.isenabled()  # the outer block still holds it
        assert gc.isenabled()

        inside, release = threading.Event(), threading.Event()

        def other_report() -> None:
            with gc_paused():
                inside.set()
                release.wait(10)

        t = threading.Thread(target=other_report)
        t.start()
        inside.wait(10)
        with gc_paused():
            pass
        assert not gc.isenabled()  # another thread's report is still running
        release.set()
        t.join(10)
        assert gc.isenabled()

        gc.disable()
        with gc_paused():
            pass
        assert not gc.isenabled()  # off before, so left off
    finally:
        gc.enable() if was else gc.disable()
