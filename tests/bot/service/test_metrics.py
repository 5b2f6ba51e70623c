"""``/metrics`` after real work: a sweep over a real Prometheus (the FLEET.md telemetry) and the
wire-level Kubernetes API, an approval through a signed Slack request to the real Bolt app, Slack
and Kubernetes API failures injected at the wire."""

from __future__ import annotations

import json
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from actions.executors.kubernetes import KubernetesWriter
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.kube.reader import KubernetesSource
from actions.sources.prometheus.telemetry import PrometheusTelemetry
from actions.store.database import Store
from bot.chat.approvals import Approvals
from bot.chat.blocks import proposals
from bot.chat.slack.app import build_app
from bot.chat.slack.front import events_route
from bot.chat.slack.web import SlackChat, UserGroups, web_client
from bot.runtime.runtime import Runtime
from bot.service.http import serve_http, wsgi_app
from bot.service.metrics import BotMetrics
from bot.wiring.jobs import sweep_for
from tests.support.clock import Clock
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import block_actions_body, post_to_app
from tests.support.fleet import RECHECK_AT, SWEEP_AT
from tests.support.paths import DEMO
from tests.support.waiting import wait_for

pytestmark = pytest.mark.prometheus

SECRET = "test-signing-secret"
APPROVER = "U0APPROVER"
CHANNEL = "C0RESEARCH"


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """``{(sample name, sorted labels): value}`` from a real scrape of ``url``/metrics."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.fixture
def world(fleet_prometheus, tmp_path):
    with FakeSlack() as slack, FakeKubeApi.from_list_json((DEMO / "cluster.json").read_bytes()) as kube:
        # A bot of one cluster: its findings' series carry its cluster_name.
        metrics = BotMetrics(clusters=("gpu-lab",))
        client = web_client("xoxb-test", slack.base_url)
        store = Store(f"sqlite:///{tmp_path}/bot.db")
        store.migrate()
        api = kube.api_client()
        clock = Clock()
        clock.now = SWEEP_AT
        rt = Runtime(
            store=store,
            chat=SlackChat(client, metrics),
            cluster=KubernetesSource(api, page_size=50),
            telemetry=PrometheusTelemetry(fleet_prometheus),
            writer=KubernetesWriter(api),
            prices=PriceBook(PriceCatalog.bundled()),
            teams=TeamDirectory([
                Team(name="research", namespaces=["ml-research"], channel=CHANNEL, approvers=[APPROVER, "S0LEADS"]),
            ]),
            policy=Policy(),
            dry_run=False,
            clock=clock,
            group_members=UserGroups(client, metrics=metrics).members,
            metrics=metrics,
            cluster_name="gpu-lab",
        )
        server = serve_http(wsgi_app(events_route(build_app(rt, client, SECRET), SECRET), metrics=metrics), "127.0.0.1", 0)
        try:
            yield rt, slack, kube, server.url
        finally:
            server.shutdown()


def test_a_sweep_and_an_approval_show_in_the_metrics(world):
    rt, slack, kube, url = world
    before = scrape(url)
    assert before[("gpu_cost_bot_sweeps_total", (("outcome", "ok"),))] == 0
    assert before[("gpu_cost_bot_reclaimed_usd_per_hour", ())] == 0

    assert sweep_for(rt).once()["proposed"] == 1
    m = scrape(url)
    assert m[("gpu_cost_bot_sweeps_total", (("outcome", "ok"),))] == 1
    assert m[("gpu_cost_bot_sweep_duration_seconds_count", (("phase", "detect"),))] == 1
    assert m[("gpu_cost_bot_sweep_duration_seconds_count", (("phase", "reconcile"),))] == 1
    assert m[("gpu_cost_bot_sweep_duration_seconds_sum", (("phase", "detect"),))] > 0
    assert m[("gpu_cost_bot_findings", (("cluster", "gpu-lab"), ("kind", "idle-notebook")))] == 1
    assert m[("gpu_cost_bot_findings", (("cluster", "gpu-lab"), ("kind", "idle-workload")))] == 0
    assert m[("gpu_cost_bot_requests", (("state", "proposed"),))] == 1

    (req,) = rt.store.list_requests()
    rt.clock.now = RECHECK_AT
    body = block_actions_body(proposals.APPROVE, str(req.id), APPROVER, CHANNEL, req.message_ts, slack.response_url("ok"))
    assert post_to_app(f"{url}/slack/events", SECRET, body)[0] == 200
    wait_for(lambda: rt.store.get(req.id).state == "done", "the action", timeout=20)
    m = wait_for(
        lambda: (m := scrape(url))[("gpu_cost_bot_requests", (("state", "done"),))] == 1 and m,
        "the gauges",
        timeout=20,
    )
    assert m[("gpu_cost_bot_actions_applied_total", (("verb", "stop-notebook"),))] == 1
    assert m[("gpu_cost_bot_requests", (("state", "proposed"),))] == 0
    # The re-check before acting is not a sweep.
    assert m[("gpu_cost_bot_sweeps_total", (("outcome", "ok"),))] == 1
    usd = rt.store.get(req.id).usd_per_hour
    assert usd > 0 and m[("gpu_cost_bot_reclaimed_usd_per_hour", ())] == pytest.approx(usd)


def test_api_errors_are_counted(world):
    rt, slack, kube, url = world
    # The API server refuses the pod list: the sweep fails and says why.
    kube.fail("GET", "/api/v1/pods", 503, "ServiceUnavailable", "etcd is down")
    assert sweep_for(rt).once() is None
    m = scrape(url)
    assert m[("gpu_cost_bot_sweeps_total", (("outcome", "error"),))] == 1
    assert m[("gpu_cost_bot_kubernetes_api_errors_total", (("operation", "read"),))] >= 1

    # Slack refuses the post: counted by method (the request is kept and posted next sweep).
    slack.fail_next("chat.postMessage", error="channel_not_found")
    sweep_for(rt).once()
    m = scrape(url)
    assert m[("gpu_cost_bot_slack_api_errors_total", (("method", "chat.postMessage"),))] == 1
    assert m[("gpu_cost_bot_sweeps_total", (("outcome", "ok"),))] == 1

    # An unreadable user group counts too, and grants nobody.
    slack.fail_next("usergroups.users.list", error="missing_scope")
    (req,) = rt.store.list_requests()
    assert rt.approvers_of("research") == {APPROVER}
    assert scrape(url)[("gpu_cost_bot_slack_api_errors_total", (("method", "usergroups.users.list"),))] == 1

    # The API server refuses the patch: the action fails, counted by verb and step.
    sweep_for(rt).once()  # posts the message this time
    rt.clock.now = RECHECK_AT
    kube.fail("PATCH", "/apis/kubeflow.org/v1/namespaces/ml-research/notebooks/llm-explore", 403, "Forbidden", "no RBAC")
    outcome = Approvals(rt).approve(req.id, APPROVER)
    assert not outcome.ok and "403" in outcome.message
    m = scrape(url)
    assert m[("gpu_cost_bot_actions_failed_total", (("operation", "apply"), ("verb", "stop-notebook")))] == 1
    assert m[("gpu_cost_bot_kubernetes_api_errors_total", (("operation", "apply"),))] == 1
    assert m[("gpu_cost_bot_actions_applied_total", (("verb", "stop-notebook"),))] == 0
    assert m[("gpu_cost_bot_requests", (("state", "failed"),))] == 1
    assert json.loads(rt.store.get(req.id).finding_json)["kind"] == "idle-notebook"
