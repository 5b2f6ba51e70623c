"""GPUs no pod requests (issue 11), in the cluster of tests/scenarios/test_gpu_accounting.py (scenario table
there, shapes and their sources in tests/support/gpu_shapes.py): found by `sweep` where dcgm-exporter
confirms them free for the whole window, counted by `report` from kube-state-metrics' node
capacity so that teams + unrequested come to what the GPU nodes cost, and an empty Karpenter
node's NodeClaim deleted when an approver presses Approve (the fake API server, the real
``kubernetes`` client, Slack at the wire).

By hand, the sweep at 12:00 (free GPUs = the node's physical GPUs - what its pods hold, each
confirmed by a DCGM entity no GPU pod holds; USD per hour at the node's price):

| node | physical | held | free (confirmed) | USD/h | action |
|---|---|---|---|---|---|
| h100-od-8 (free GPUs carry the exporter's pod) | 8 | 2 | 6 | 6 x 6.88 = 41.28 | none: 1 pod keeps it |
| a100-mig-single (count 56 = MIG devices) | 56/7 = 8 | 1/7 | 55 instances = 55/7 | 55/7 x 3.50 = 27.50 | none |
| h100-empty (only a DaemonSet pod) | 1 | 0 | 1 | 8.00 | delete NodeClaim gpu-h100-7xk2p |
| a100-mig-mixed | 6 + 14/7 = 8 | 6 + 3/7 | 11 instances = 11/7 | 11/7 x 3.50 = 5.50 | none |
| ts-h100-1, ts-h100-2 | 1 | 1/4, 1/2 | 0: their one GPU is a pod's (dcgm-exporter gives it the pod) | | |
| b200-od-1 | 8 | 8 | 0 | | |

By hand, the report over 6 h (node GPU-hours = capacity as equivalents x 6, at the node's price;
unrequested = node - what pods requested):

| node | node GPU-h | node USD | requested GPU-h | unrequested GPU-h | unrequested USD |
|---|---|---|---|---|---|
| a100-mig-mixed | 48 | 168.00 | 36 + 18/7 | 66/7 | 33.00 |
| a100-mig-single | 48 | 168.00 | 6/7 | 330/7 | 165.00 |
| h100-od-8 | 48 | 330.24 | 12 | 36 | 247.68 |
| ts-h100-1 | 6 | 48.00 | 1.5 | 4.5 | 36.00 |
| ts-h100-2 | 6 | 48.00 | 3 | 3 | 24.00 |
| h100-empty | 6 | 48.00 | 0 | 6 | 48.00 |
| b200-od-1 | 48 | 672.00 | 48 | 0 | 0 |
| all | 210 | 1,482.24 | | 49.5 + 396/7 = 106.07 | 553.68 |

Teams 928.56 (tests/scenarios/test_gpu_accounting.py) + unrequested 553.68 = 1,482.24, the nodes' cost.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from actions.executors.kubernetes import KubernetesWriter
from actions.policy.rules import Policy
from actions.policy.teams import ADMIN_TEAM, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.kube.reader import KubernetesSource
from actions.sources.prometheus.telemetry import PrometheusTelemetry
from actions.store.database import Store
from bot.chat.approvals import Approvals
from bot.chat.blocks import proposals as blocks
from bot.chat.proposals import Proposals
from bot.chat.slack.web import SlackChat, web_client
from bot.chat.verify import Verifier
from bot.runtime.runtime import Runtime
from tests.support import gpu_shapes as shapes
from tests.support.accounting import SWEEP_AT, cents, cli
from tests.support.clock import Clock
from tests.support.demo_world import buttons
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.fakes.slack_api import FakeSlack

pytestmark = pytest.mark.prometheus

KIND = "unrequested-gpus"
ADMINS, APPROVER = "C0ADMINS", "U0ADMIN"


# --- the sweep ---------------------------------------------------------------------------------------


def test_an_8_gpu_node_with_2_requested_shows_6_unrequested_gpus(accounting_sweep):
    f = accounting_sweep[f"{KIND}/h100-od-8"]
    assert (f["gpus"], f["usd_per_hour"], f["price"]["usd_per_gpu_hour"]) == (6, 41.28, 6.88)  # 6 x $6.88
    assert (f["team"], f["consumer_kind"], f["node"]) == (ADMIN_TEAM, "Node", "h100-od-8")
    assert f["devices"] == {"nvidia.com/gpu": 8}
    # Report only: a pod runs there, so deleting the node is no one's to propose.
    assert f["action"] is None
    assert f["notes"] == [
        "NodePool gpu-h100-8 consolidates only empty nodes (WhenEmpty), and 1 pod(s) run here",
        "1 pod(s) keep the node: bin-packing them onto other nodes would free 6 GPU(s), $41.28/h",
    ]
    # The six free GPUs, each seen by dcgm-exporter with no GPU pod for the whole hour.
    assert sorted(e["gpu"] for e in f["evidence"]) == sorted(shapes.gpu_uuid("h100-od-8", i) for i in range(2, 8))
    assert {e["verdict"] for e in f["evidence"]} == {"idle"}


def test_free_mig_instances_count_as_their_share_of_a_gpu(accounting_sweep):
    mixed = accounting_sweep[f"{KIND}/a100-mig-mixed"]  # 6 + 14/7 = 8 GPUs, pods hold 6 + 3/7
    assert (mixed["gpus"], mixed["usd_per_hour"], len(mixed["evidence"])) == (round(11 / 7, 6), 5.5, 11)
    assert mixed["devices"] == {"nvidia.com/gpu": 6, "nvidia.com/mig-1g.5gb": 14}
    # Under the single strategy GFD's gpu.count counts the 56 MIG devices of 8 GPUs.
    single = accounting_sweep[f"{KIND}/a100-mig-single"]
    assert (single["gpus"], single["usd_per_hour"], len(single["evidence"])) == (round(55 / 7, 6), 27.5, 55)
    assert {e["verdict"] for e in single["evidence"]} == {"idle"} and single["action"] is None
    # A time-sliced GPU with one replica requested has no free GPU to give back: dcgm-exporter
    # puts its series on the pod. A full node has none either.
    unrequested = sorted(k for k in accounting_sweep if k.startswith(KIND))
    assert unrequested == [f"{KIND}/{n}" for n in ("a100-mig-mixed", "a100-mig-single", "h100-empty", "h100-od-8")]


# --- the report --------------------------------------------------------------------------------------


def test_the_report_counts_unrequested_gpu_hours_and_reconciles_to_the_node_cost(
    accounting_report, accounting_config
):
    un = accounting_report["unrequested"]
    assert {n: (round(v["gpu_hours"], 6), cents(v["cost_usd"])) for n, v in un["by_node"].items()} == {
        "h100-od-8": (36.0, 247.68), "a100-mig-single": (round(330 / 7, 6), 165.00), "h100-empty": (6.0, 48.00),
        "ts-h100-1": (4.5, 36.00), "a100-mig-mixed": (round(66 / 7, 6), 33.00), "ts-h100-2": (3.0, 24.00),
    }
    assert list(un["by_node"])[:3] == ["h100-od-8", "a100-mig-single", "h100-empty"]  # highest cost first
    assert (un["gpu_hours"], cents(un["cost_usd"])) == (pytest.approx(49.5 + 396 / 7), 553.68)
    assert (accounting_report["node_gpu_hours"], cents(accounting_report["node_cost_usd"])) == (pytest.approx(210), 1482.24)
    teams = sum(t["cost_usd"] for t in accounting_report["teams"].values())
    assert cents(cents(teams) + cents(un["cost_usd"])) == cents(accounting_report["node_cost_usd"])  # to the cent
    assert accounting_report["reconciles"] is True and "unallocated" not in accounting_report["teams"]

    text = cli("report", "--config", str(accounting_config), "--period", "6h", "--at", SWEEP_AT).stdout
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines() if line.split()}
    # The fleet's DCGM power makes a kWh column: the teams and the unrequested GPUs add up to the nodes'.
    kwh = sum(t["gpu_energy_kwh"] for t in accounting_report["teams"].values())
    assert kwh + un["gpu_energy_kwh"] == pytest.approx(accounting_report["node_gpu_energy_kwh"])
    assert rows["total"] == ["104", "$928.56", f"{kwh:,.0f}"]
    assert rows["unrequested"] == ["106", "$553.68", f"{un['gpu_energy_kwh']:,.0f}"]
    assert rows["GPU"] == ["nodes", "210", "$1,482.24", f"{accounting_report['node_gpu_energy_kwh']:,.0f}"]
    assert ("Unrequested: GPUs on nodes that no pod requested, at the node's price: h100-od-8 36 GPU-hrs $247.68, "
            "a100-mig-single 47 GPU-hrs $165.00, h100-empty 6 GPU-hrs $48.00 and 3 more nodes") in text


# --- the NodeClaim, deleted on approval ------------------------------------------------------------------


@pytest.fixture
def admin_runtime(tmp_path, accounting_prometheus):
    """The bot's Runtime over a fresh fake API server (this test deletes from it), the real
    Prometheus and Slack at the wire; the cluster admins approve what belongs to no namespace."""
    with FakeKubeApi(shapes.cluster_objects(), kueue_versions=()) as kube, FakeSlack() as slack:
        store = Store(f"sqlite:///{tmp_path / 'bot.db'}")
        store.migrate()
        clock = Clock()
        clock.now = shapes.SWEEP_AT
        rt = Runtime(
            store=store, chat=SlackChat(web_client("xoxb-test", slack.base_url)),
            cluster=KubernetesSource(kube.api_client()), telemetry=PrometheusTelemetry(accounting_prometheus),
            writer=KubernetesWriter(kube.api_client()), prices=PriceBook(PriceCatalog.bundled(), shapes.PRICES),
            teams=TeamDirectory([], admin_channel=ADMINS, admin_approvers=[APPROVER]),
            policy=Policy(), dry_run=False, clock=clock,
        )
        yield rt, kube, slack
        store.close()


def test_an_empty_karpenter_nodes_nodeclaim_is_deleted_on_approval(admin_runtime):
    rt, kube, slack = admin_runtime
    Proposals(rt).reconcile(rt.detect(rt.clock()), rt.clock())
    req = rt.store.open_for_key(f"{KIND}/h100-empty")
    other = rt.store.open_for_key(f"{KIND}/h100-od-8")
    assert (req.team, req.verb, req.usd_per_hour, req.channel) == (ADMIN_TEAM, "delete-nodeclaim", 8.0, ADMINS)
    claim = shapes.EMPTY.nodeclaim
    message = slack.messages(ADMINS)[req.message_ts]
    text = json.dumps(message["blocks"])
    assert f"Proposed: delete NodeClaim {claim} (Karpenter drains and terminates node h100-empty; " in text
    assert "nothing to restore: Karpenter provisions again for pods that need GPUs)" in text
    assert "NodePool gpu-h100 has consolidateAfter: Never" in text  # why Karpenter left it
    assert buttons(message) == [blocks.APPROVE, blocks.SNOOZE, blocks.EXEMPT, blocks.DENY]
    # The partly used node is accounting_report, never offered for deletion.
    assert blocks.APPROVE not in buttons(slack.messages(ADMINS)[other.message_ts])

    rt.clock.now = shapes.SWEEP_AT + timedelta(minutes=5)
    outcome = Approvals(rt).approve(req.id, APPROVER)
    assert outcome.ok, outcome.message
    writes = [(r.method, r.path) for r in kube.changes()]
    assert writes == [("DELETE", f"/apis/karpenter.sh/v1/nodeclaims/{claim}")]
    # Sent first as a server-side dry run, at proposal and again right before acting.
    dry = [r for r in kube.requests if r.method == "DELETE" and r.query.get("dryRun") == "All"]
    assert len(dry) == 2 and all(r.path.endswith(f"/nodeclaims/{claim}") for r in dry)
    assert kube.get("NodeClaim", "", claim) is None
    assert all(kube.get("NodeClaim", "", n.nodeclaim) is not None for n in shapes.NODES if n is not shapes.EMPTY)

    done = rt.store.get(req.id)
    assert (done.state, done.decided_by) == ("done", APPROVER)
    message = slack.messages(ADMINS)[done.message_ts]
    assert buttons(message) == []  # no Restore: there is nothing to restore
    assert "nothing to restore: Karpenter provisions again for pods that need GPUs" in json.dumps(message["blocks"])
    refused = Approvals(rt).restore(req.id, APPROVER)
    assert not refused.ok and "there is nothing to restore" in refused.message
    assert [r for r in kube.changes()] == [r for r in kube.changes() if r.method == "DELETE"]


def test_a_nodeclaim_delete_is_verified_once_karpenter_removed_its_node(admin_runtime):
    rt, kube, slack = admin_runtime
    Proposals(rt).reconcile(rt.detect(rt.clock()), rt.clock())
    req = rt.store.open_for_key(f"{KIND}/h100-empty")
    assert Approvals(rt).approve(req.id, APPROVER).ok
    verifier = Verifier(rt)
    # The fake runs no Karpenter: the NodeClaim is gone, its node is still there.
    rt.clock.now += timedelta(seconds=60)
    assert verifier.run(rt.clock.now) == {"waiting": 1}
    kube.delete("Node", "", "h100-empty")  # Karpenter drained and terminated it
    rt.clock.now += timedelta(seconds=60)
    assert verifier.run(rt.clock.now) == {"verified": 1}
    done = rt.store.get(req.id)
    assert done.state == "done" and done.note.endswith("Verified: node gone.")
    assert "Verified: node gone." in json.dumps(slack.messages(ADMINS)[done.message_ts]["blocks"])


def test_a_nodeclaim_delete_whose_node_stays_is_reported_after_the_window(admin_runtime):
    rt, kube, slack = admin_runtime
    Proposals(rt).reconcile(rt.detect(rt.clock()), rt.clock())
    req = rt.store.open_for_key(f"{KIND}/h100-empty")
    assert Approvals(rt).approve(req.id, APPROVER).ok
    rt.clock.now += timedelta(seconds=601)
    assert Verifier(rt).run(rt.clock.now) == {"verify-failed": 1}
    done = rt.store.get(req.id)
    assert done.state == "done"  # nothing to undo: the NodeClaim is gone whatever happens to the node
    assert done.note.startswith("Not verified: node h100-empty still there within 600 s after delete NodeClaim")
