"""The demo fleet as a bot's world: a Runtime over the recorded cluster (bot/demo_data, in an
in-memory cluster that is also the writer) and its real H100 telemetry, the bundled prices, one
team ``research`` (namespace ml-research) posting to :data:`CHANNEL`, Slack through the real
WebClient against a FakeSlack, a :class:`~tests.support.clock.Clock` at T0."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import datetime

from actions.detect.idle import detect_idle
from actions.executors.in_memory import InMemoryCluster
from actions.executors.kubernetes import KubernetesWriter
from actions.model.snapshot import ClusterSnapshot
from actions.model.telemetry import TelemetrySnapshot
from actions.model.times import utc_now
from actions.policy.rules import Policy
from actions.policy.teams import Team, TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.kube.dump import snapshot_from_kubectl_dump
from actions.sources.kube.reader import KubernetesSource
from actions.sources.recording import RecordedTelemetry
from actions.store.database import Store
from bot.chat.proposals import Proposals
from bot.chat.slack.web import SlackChat, UserGroups, web_client
from bot.runtime.runtime import Runtime
from bot.settings import Settings
from bot.wiring.runtime import build_runtime
from tests.support.clock import T0, Clock
from tests.support.paths import DEMO
from tests.support.resize_history import advice_setup

APPROVER, OTHER = "U0APPROVER", "U0OTHER"
CHANNEL = "C0RESEARCH"
SERVING_CHANNEL = "C0SERVING"


def make_runtime(database_url, slack, *, dry_run=False, telemetry=None, approvers=(APPROVER,),
                 history: str | None = None) -> Runtime:
    """The demo world on a migrated store at ``database_url`` with Slack at ``slack`` (a
    FakeSlack); ``approvers`` are research's Slack user ids; ``history`` the URL of a Prometheus
    that right-sizing advice is re-checked from (none: no advice history)."""
    store = Store(database_url)
    store.migrate()
    client = web_client("xoxb-test", slack.base_url)
    cluster = InMemoryCluster.from_kubectl_dump((DEMO / "cluster.json").read_bytes())
    teams = TeamDirectory([Team(name="research", namespaces=["ml-research"], channel=CHANNEL, approvers=list(approvers))])
    return Runtime(
        store=store,
        chat=SlackChat(client),
        cluster=cluster,
        telemetry=telemetry or RecordedTelemetry.from_file(DEMO / "telemetry.json"),
        writer=cluster,
        prices=PriceBook(PriceCatalog.bundled()),
        teams=teams,
        policy=Policy(),
        dry_run=dry_run,
        clock=Clock(),
        group_members=UserGroups(client).members,
        advice_setup=advice_setup(history) if history else None,
    )


def wire_runtime(database_url, slack, kube, *, history: str | None = None) -> Runtime:
    """The demo world on the wire: the real kubernetes client reading and writing through
    ``kube`` (a FakeKubeApi), the demo's recorded telemetry, teams research (ml-research, posting
    to :data:`CHANNEL`) and serving (serving, :data:`SERVING_CHANNEL`), both approved by
    :data:`APPROVER`; ``history`` the URL of a Prometheus that right-sizing advice is re-checked
    from before an Approve changes anything (none: no advice history)."""
    store = Store(database_url)
    store.migrate()
    teams = TeamDirectory([
        Team(name="research", namespaces=["ml-research"], channel=CHANNEL, approvers=[APPROVER]),
        Team(name="serving", namespaces=["serving"], channel=SERVING_CHANNEL, approvers=[APPROVER]),
    ])
    return Runtime(
        store=store, chat=SlackChat(web_client("xoxb-test", slack.base_url)), cluster=KubernetesSource(kube.api_client()),
        telemetry=RecordedTelemetry.from_file(DEMO / "telemetry.json"), writer=KubernetesWriter(kube.api_client()),
        prices=PriceBook(PriceCatalog.bundled()), teams=teams, policy=Policy(), dry_run=False, clock=Clock(),
        advice_setup=advice_setup(history) if history else None,
    )


def sweep(rt: Runtime) -> dict[str, int]:
    """One sweep at the runtime's clock: detection, then proposals reconciled; the counts."""
    now = rt.clock()
    return Proposals(rt).reconcile(rt.detect(now), now)


def buttons(message: dict) -> list[str]:
    """The action ids of a posted message's buttons, in order."""
    return [e["action_id"] for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]


def demo_fleet(now=T0) -> tuple[ClusterSnapshot, TelemetrySnapshot]:
    """The demo cluster and its telemetry as a sweep at ``now`` reads them."""
    snapshot = snapshot_from_kubectl_dump((DEMO / "cluster.json").read_bytes(), now)
    telemetry = RecordedTelemetry.from_file(DEMO / "telemetry.json").fetch(now, Policy())
    return snapshot, telemetry


def detect(snapshot, telemetry, policy=None, teams=None, now=T0):
    """The idle detector over ``snapshot`` and ``telemetry`` at ``now`` with the bundled prices,
    the default policy and no teams unless given; the findings."""
    return detect_idle(snapshot, telemetry, PriceBook(PriceCatalog.bundled()), policy or Policy(), teams or TeamDirectory([]), now)


def settings_runtime(settings: Settings, clock: Callable[[], datetime] = utc_now) -> Runtime:
    """The demo world as ``gpu-cost-bot run`` assembles it from ``settings``: the recorded cluster
    and telemetry, the console chat into a string, ``clock``."""
    return build_runtime(
        settings, cluster_state=DEMO / "cluster.json", telemetry_file=DEMO / "telemetry.json", out=io.StringIO(),
        clock=clock,
    )
