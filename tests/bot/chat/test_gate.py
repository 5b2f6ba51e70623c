"""The one gate at its three moments, end to end: when a request is proposed, when mode auto's
countdown ends, and at Approve; on real stores, Slack at the wire, the demo fleet in an in-memory
cluster (the cluster changes between proposal and press as an operator's annotation would change
it). The right-sizing bypasses of issue 21 (mode report, act_on, exclude-until) are among them."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from actions.advice.model import ConsumerUsage
from actions.advice.recommend import advise_consumer
from actions.executors.in_memory import InMemoryCluster
from actions.model.kube import CapacityType, ObjectRef
from actions.model.times import format_time
from actions.policy.advice import AdvicePolicy
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.remedy.patches import STOPPED_ANNOTATION
from actions.sources.recording import RecordedTelemetry
from actions.store.database import Store
from bot.chat.approvals import Approvals
from bot.chat.proposals import Proposals
from bot.chat.slack.web import SlackChat, web_client
from bot.runtime.runtime import Runtime
from bot.wiring.jobs import sweep_for
from tests.support.clock import T0, Clock
from tests.support.demo_world import APPROVER, CHANNEL, buttons
from tests.support.gpu_nodes import h100_cluster
from tests.support.paths import DEMO

NOTEBOOK = ObjectRef("kubeflow.org/v1", "Notebook", "ml-research", "llm-explore")
LATER = format_time(T0 + timedelta(days=2))


def items() -> list[dict]:
    return json.loads((DEMO / "cluster.json").read_bytes())["items"]


def annotate(objects: list[dict], kind: str, name: str, annotations: dict) -> list[dict]:
    for o in objects:
        if o["kind"] == kind and o["metadata"]["name"] == name:
            o["metadata"].setdefault("annotations", {}).update(annotations)
    return objects


def make(url, slack, objects: list[dict], team_policy: dict | None = None) -> Runtime:
    store = Store(url)
    store.migrate()
    cluster = InMemoryCluster(objects)
    teams = TeamDirectory([Team(name="research", namespaces=["ml-research"], channel=CHANNEL, approvers=[APPROVER],
                                policy=team_policy or {})])
    return Runtime(
        store=store, chat=SlackChat(web_client("xoxb-test", slack.base_url)), cluster=cluster,
        telemetry=RecordedTelemetry.from_file(DEMO / "telemetry.json"), writer=cluster,
        prices=PriceBook(PriceCatalog.bundled()), teams=teams, policy=Policy(), dry_run=False, clock=Clock(),
    )


def becomes(rt: Runtime, objects: list[dict]) -> None:
    """The cluster now holds ``objects`` (someone annotated something since the proposal)."""
    rt.cluster = rt.writer = InMemoryCluster(objects)


def stopped(rt) -> bool:
    return STOPPED_ANNOTATION in (rt.cluster.get("Notebook", "ml-research", "llm-explore")["metadata"].get("annotations") or {})


def test_at_proposal_a_pod_that_asks_not_to_be_disrupted_gets_no_approve(sqlite_url, slack):
    rt = make(sqlite_url, slack, annotate(items(), "Pod", "llm-explore-0", {"karpenter.sh/do-not-disrupt": "true"}))
    sweep_for(rt).run(T0)
    (req,) = rt.store.list_requests()
    message = slack.messages(CHANNEL)[req.message_ts]
    assert buttons(message) == ["gpu_snooze", "gpu_exempt", "gpu_deny"]
    assert 'nothing the bot can do (pod ml-research/llm-explore-0 is annotated karpenter.sh/do-not-disrupt: \\"true\\")' \
        in json.dumps(message["blocks"])
    assert not stopped(rt)


@pytest.mark.parametrize("annotation", [{"karpenter.sh/do-not-disrupt": "true"}, {"gpu-cost-bot/exclude-until": LATER}])
def test_at_approve_what_was_annotated_since_the_proposal_is_left_alone(database_url, slack, annotation):
    rt = make(database_url, slack, items())
    sweep_for(rt).run(T0)
    (req,) = rt.store.list_requests()
    assert "gpu_approve" in buttons(slack.messages(CHANNEL)[req.message_ts])
    becomes(rt, annotate(items(), "Pod", "llm-explore-0", annotation))
    rt.clock.now = T0 + timedelta(minutes=5)
    outcome = Approvals(rt).approve(req.id, APPROVER)
    assert not outcome.ok and "not acted on" in outcome.message and next(iter(annotation)) in outcome.message
    done = rt.store.get(req.id)
    assert done.state == "superseded" and "may not act now" in done.note
    assert ("system", "superseded") in [(e.actor, e.event) for e in rt.store.events(req.id)]
    assert not stopped(rt)


def counting_down(url, slack):
    """The demo's idle notebook proposed at T0 to a team in mode auto: (runtime, its sweep, the
    request, its countdown running to T0 + the default 4 h grace)."""
    rt = make(url, slack, items(), {"mode": "auto"})
    sweep = sweep_for(rt)
    sweep.run(T0)
    (req,) = rt.store.list_requests()
    assert req.act_at == T0 + timedelta(hours=4)
    return rt, sweep, req


def test_after_the_countdown_what_was_annotated_since_is_left_alone(sqlite_url, slack):
    rt, sweep, req = counting_down(sqlite_url, slack)
    becomes(rt, annotate(items(), "Pod", "llm-explore-0", {"karpenter.sh/do-not-disrupt": "true"}))
    rt.clock.now = req.act_at
    counts = sweep.run(rt.clock.now).counts
    assert counts["acted"] == 0 and not stopped(rt)
    req = rt.store.get(req.id)
    assert req.state == "proposed" and req.act_at is None  # the countdown stopped: nothing to act with
    shown = json.dumps(slack.messages(CHANNEL)[req.message_ts]["blocks"])
    assert "karpenter.sh/do-not-disrupt" in shown and "Acts automatically" not in shown


def mig_request(rt) -> int:
    usage = ConsumerUsage(
        key="idle-notebook/ml-research/llm-explore", team="research", namespace="ml-research",
        consumer_kind="Notebook", name="llm-explore", role="notebook", pods=("llm-explore-0",), whole_gpus=1,
        gpus=1.0, gpu_model="NVIDIA H100 80GB HBM3", instance_type="p5.48xlarge", capacity=CapacityType.ON_DEMAND,
        window_seconds=7 * 86400, gpu_hours=168.0, peak_fb_mib=6000, peak_engine_pct=9, busy_gpus=1, target=NOTEBOOK,
        landing=h100_cluster(),
    )
    [rec] = [r for r in advise_consumer(usage, PriceBook(PriceCatalog.bundled()), AdvicePolicy()) if r.kind == "mig"]
    [request_id] = Proposals(rt).propose_advice([rec], rt.clock(), 7 * 86400)
    return request_id


@pytest.mark.parametrize("team_policy, objects, says", [
    ({"mode": "report"}, items, "mode report"),
    ({"act_on": ["RayJob"]}, items, "acts on RayJob only"),
    ({}, lambda: annotate(items(), "Notebook", "llm-explore", {"gpu-cost-bot/exclude-until": LATER}),
     "Notebook ml-research/llm-explore is annotated gpu-cost-bot/exclude-until"),
    ({}, lambda: annotate(items(), "Pod", "llm-explore-0", {"karpenter.sh/do-not-disrupt": "true"}), "karpenter.sh/do-not-disrupt"),
], ids=["mode-report", "act_on", "exclude-until", "do-not-disrupt"])
def test_a_right_sizing_passes_the_gate_at_approve(database_url, slack, team_policy, objects, says):
    rt = make(database_url, slack, items())
    request_id = mig_request(rt)
    before = rt.cluster.get("Notebook", "ml-research", "llm-explore")
    # Since the proposal: the team's policy changed, or someone annotated the notebook or its pod.
    rt.teams = TeamDirectory([Team(name="research", namespaces=["ml-research"], channel=CHANNEL, approvers=[APPROVER],
                                   policy=team_policy)])
    becomes(rt, objects())
    outcome = Approvals(rt).approve(request_id, APPROVER)
    assert not outcome.ok and says in outcome.message, outcome.message
    assert rt.store.get(request_id).state == "superseded"
    assert rt.cluster.get("Notebook", "ml-research", "llm-explore")["spec"] == before["spec"]


def without_approvers(rt: Runtime) -> None:
    """The config reloaded with research's approvers removed since the proposal."""
    rt.teams = TeamDirectory([Team(name="research", namespaces=["ml-research"], channel=CHANNEL, policy=dict(
        rt.teams.teams["research"].policy or {}))])


def test_a_team_without_approvers_is_proposed_without_approve_and_without_a_countdown(sqlite_url, slack):
    rt = make(sqlite_url, slack, items(), {"mode": "auto"})
    without_approvers(rt)
    sweep_for(rt).run(T0)
    (req,) = rt.store.list_requests()
    assert req.act_at is None  # nobody could stop a countdown: none starts
    message = slack.messages(CHANNEL)[req.message_ts]
    assert "gpu_approve" not in buttons(message)
    assert "team research has no approvers, so nobody could approve it" in json.dumps(message["blocks"])


def test_after_the_countdown_a_team_whose_approvers_were_removed_is_left_alone(sqlite_url, slack):
    rt, sweep, req = counting_down(sqlite_url, slack)
    without_approvers(rt)
    rt.clock.now = req.act_at
    assert sweep.run(rt.clock.now).counts["acted"] == 0 and not stopped(rt)
    assert "has no approvers" in json.dumps(slack.messages(CHANNEL)[rt.store.get(req.id).message_ts]["blocks"])
