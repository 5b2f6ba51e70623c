"""Graceful shutdown and the settling of interrupted actions: real stores (SQLite and PostgreSQL),
the recorded fleet in an in-memory cluster, Slack at the wire, the real Bolt app over HTTP, and
one real ``gpu-cost-bot run`` process stopped with SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from datetime import timedelta

import pytest

from actions.executors.in_memory import InMemoryCluster
from actions.executors.kubernetes import KubernetesWriter
from actions.remedy.patches import STOPPED_ANNOTATION
from actions.sources.kube.reader import KubernetesSource
from actions.store.database import Store
from bot.chat.approvals import Approvals
from bot.chat.blocks import proposals
from bot.chat.proposals import SYSTEM, Proposals, finding_of
from bot.chat.slack.app import build_app
from bot.chat.slack.web import web_client
from bot.service.metrics import BotMetrics
from bot.settings import Settings
from bot.wiring.process import slack_process
from tests.support.demo_world import APPROVER, CHANNEL, make_runtime, sweep
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import block_actions_body, post_to_app
from tests.support.paths import DEMO
from tests.support.processes import python_env
from tests.support.prometheus_server import free_port
from tests.support.waiting import wait_for

SECRET = "test-signing-secret"


@pytest.fixture
def slack():
    with FakeSlack() as fake:
        yield fake


@pytest.fixture
def rt(database_url, slack):
    return make_runtime(database_url, slack)


def stopped(rt) -> bool:
    nb = rt.cluster.get("Notebook", "ml-research", "llm-explore")
    return STOPPED_ANNOTATION in (nb["metadata"].get("annotations") or {})


def approved_request(rt):
    """A proposal approved in the store, as a press records it just before acting."""
    sweep(rt)
    (req,) = rt.store.list_requests()
    rt.clock.now += timedelta(minutes=5)
    return rt.store.transition(
        req.id, from_states=["proposed"], to_state="approved", now=rt.clock.now, actor=APPROVER,
        event="approved", decided_by=APPROVER, decided_at=rt.clock.now, note="Re-checking before acting.",
    )


def recovered_event(rt, request_id):
    (event,) = [e for e in rt.store.events(request_id) if e.event == "recovered"]
    assert event.actor == SYSTEM
    return event.detail()


# --- recovery of requests a dead process left mid-action -------------------------------------------


def test_killed_after_the_patch_the_request_is_found_done_and_can_be_restored(rt, slack):
    req = approved_request(rt)
    rt.writer.apply(finding_of(req).action, rt.clock.now)  # the patch landed, then the process died
    assert Proposals(rt).settle(rt.clock.now, why="The bot restarted") == {"done": 1}
    after = rt.store.get(req.id)
    assert after.state == "done" and "the cluster shows it done" in after.note
    assert json.loads(after.undo_json)["verb"] == "stop-notebook"
    assert recovered_event(rt, req.id)["to"] == "done"
    assert buttons_of(slack, after) == [proposals.RESTORE]
    rt.clock.now += timedelta(minutes=1)
    assert Approvals(rt).restore(req.id, APPROVER).ok
    assert not stopped(rt) and rt.store.get(req.id).state == "restored"


def test_killed_before_the_patch_the_request_fails_and_nothing_changes(rt, slack):
    req = approved_request(rt)
    assert Proposals(rt).settle(rt.clock.now, why="The bot restarted") == {"failed": 1}
    after = rt.store.get(req.id)
    assert after.state == "failed" and "nothing was changed" in after.note
    assert not stopped(rt)
    assert recovered_event(rt, req.id) == {
        "from": "approved", "to": "failed", "why": "The bot restarted", "target_exists": True,
    }
    assert "nothing was changed" in str(slack.messages(CHANNEL)[after.message_ts]["blocks"])
    # The key is free again: the next sweep proposes the still-idle notebook afresh.
    assert sweep(rt)["proposed"] == 1


def test_an_interrupted_restore_is_finished_or_offered_again(rt):
    req = approved_request(rt)
    approvals = Approvals(rt)
    rt.store.transition(req.id, from_states=["approved"], to_state="proposed", now=rt.clock.now, actor=SYSTEM, event="reset")
    assert approvals.approve(req.id, APPROVER).ok and stopped(rt)

    def restoring():
        return rt.store.transition(
            req.id, from_states=["done"], to_state="restoring", now=rt.clock.now, actor=APPROVER, event="restore-requested",
        )

    restoring()  # killed before the restore patch: back to done, Restore offered again
    assert Proposals(rt).settle(rt.clock.now, why="The bot restarted") == {"done": 1}
    assert "Press Restore again" in rt.store.get(req.id).note and stopped(rt)

    r = restoring()  # killed after the restore patch: it is restored
    rt.writer.restore(finding_of(r).action, json.loads(r.undo_json), rt.clock.now)
    assert Proposals(rt).settle(rt.clock.now, why="The bot restarted") == {"restored": 1}
    assert rt.store.get(req.id).state == "restored" and not stopped(rt)


def test_only_requests_past_their_deadline_are_settled_by_a_sweep(rt):
    req = approved_request(rt)
    acting = rt.timeouts.acting()
    rt.store.update_fields(req.id, now=rt.clock.now, actor=APPROVER, event="deadline", deadline_at=rt.clock.now + timedelta(seconds=acting))
    # Another replica may be acting on it right now: a sweep leaves it alone...
    sweep(rt)
    assert rt.store.get(req.id).state == "approved"
    # ...until nothing it sent can land any more (about three minutes, not fifteen).
    assert acting < 200
    rt.clock.now += timedelta(seconds=acting + 1)
    sweep(rt)
    assert rt.store.get(req.id).state == "failed"
    assert recovered_event(rt, req.id)["to"] == "failed"


def test_an_unreadable_target_leaves_the_request_for_a_later_round(database_url, slack):
    with FakeKubeApi.from_list_json((DEMO / "cluster.json").read_bytes()) as kube:
        rt = make_runtime(database_url, slack)
        req = approved_request(rt)
        rt.cluster = KubernetesSource(kube.api_client())
        rt.writer = KubernetesWriter(kube.api_client())
        path = "/apis/kubeflow.org/v1/namespaces/ml-research/notebooks/llm-explore"
        kube.fail("GET", path, 503, "ServiceUnavailable", "etcd is down", times=1)
        # Never guessed: the request waits for a round in which its target can be read.
        assert Proposals(rt).settle(rt.clock.now, why="The bot restarted") == {"unchecked": 1}
        assert rt.store.get(req.id).state == "approved"
        assert Proposals(rt).settle(rt.clock.now, why="The bot restarted") == {"failed": 1}
        after = rt.store.get(req.id)
        assert after.state == "failed" and "nothing was changed" in after.note


def buttons_of(slack, req):
    message = slack.messages(CHANNEL)[req.message_ts]
    return [e["action_id"] for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]


# --- draining a running bot -------------------------------------------------------------------------


class GatedWriter:
    """The in-memory cluster's writer, holding each apply until ``release`` is set (an API
    server that is slow to answer); ``entered`` is set once an apply is waiting."""

    def __init__(self, cluster: InMemoryCluster):
        self.cluster = cluster
        self.entered = threading.Event()
        self.release = threading.Event()

    def apply(self, action, now):
        self.entered.set()
        if not self.release.wait(30):
            raise TimeoutError("never released")
        return self.cluster.apply(action, now)

    def restore(self, action, undo, now):
        return self.cluster.restore(action, undo, now)

    def dry_run(self, action, now):
        return self.cluster.dry_run(action, now)

    def current(self, action):
        return self.cluster.current(action)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture
def running(rt, slack):
    """A started bot process (Slack HTTP mode) over ``rt``, its writer gated, grace 2 s."""
    port = free_port()
    settings = Settings(
        slack={"mode": "http", "http_port": port}, server={"port": port, "shutdown_grace_seconds": 2},
        SLACK_SIGNING_SECRET=SECRET, dry_run=False,
    )
    rt.writer = GatedWriter(rt.cluster)
    rt.metrics = BotMetrics()
    bot = slack_process(settings, rt, build_app(rt, web_client("xoxb-test", slack.base_url), SECRET), rt.metrics, host="127.0.0.1")
    # The scheduler's first sweep runs at the fake clock's time and proposes the idle notebook.
    bot.start()
    try:
        yield bot
    finally:
        rt.writer.release.set()
        if not bot.readiness.stopping.is_set():
            bot.stop()


def press_approve(bot, slack, req, name):
    body = block_actions_body(proposals.APPROVE, str(req.id), APPROVER, CHANNEL, req.message_ts, slack.response_url(name))
    return post_to_app(f"{bot.url}/slack/events", SECRET, body)


def test_shutdown_waits_for_the_action_in_flight(running, rt, slack):
    bot = running
    req = wait_for(lambda: rt.store.list_requests(states=["proposed"]), "the first sweep's proposal")[0]
    assert get(f"{bot.url}/readyz") == (200, "ok\n")
    assert press_approve(bot, slack, req, "first")[0] == 200
    assert rt.writer.entered.wait(10)

    result: dict = {}
    stopper = threading.Thread(target=lambda: result.update(bot.stop()))
    stopper.start()
    wait_for(lambda: bot.readiness.stopping.is_set(), "the drain")
    assert get(f"{bot.url}/readyz") == (503, "shutting down\n")
    assert press_approve(bot, slack, req, "late") == (503, "shutting down\n")
    assert stopper.is_alive()  # still waiting for the action
    rt.writer.release.set()
    stopper.join(10)
    assert not stopper.is_alive() and result == {}
    assert rt.store.get(req.id).state == "done" and stopped(rt)
    assert not bot.scheduler.running


def test_an_action_outliving_the_grace_is_uncertain_then_read_back(running, rt, slack):
    bot = running
    req = wait_for(lambda: rt.store.list_requests(states=["proposed"]), "the first sweep's proposal")[0]
    assert press_approve(bot, slack, req, "first")[0] == 200
    assert rt.writer.entered.wait(10)
    assert bot.stop() == {"uncertain": 1}  # after the 2 s grace: the patch may still be on its way
    after = rt.store.get(req.id)
    assert after.state == "uncertain" and after.note.startswith("The bot shut down (2 s grace period over) while acting")
    assert "Outcome unknown" in str(slack.messages(CHANNEL)[after.message_ts]["blocks"])
    # The next replica reads it back once nothing sent can land: the gated patch never went out.
    assert Proposals(rt).settle(rt.clock.now) == {"waiting": 1}
    rt.clock.now = after.deadline_at + timedelta(seconds=1)
    assert Proposals(rt).settle(rt.clock.now) == {"failed": 1}
    assert recovered_event(rt, req.id)["to"] == "failed" and not stopped(rt)
    # Presses that reach the bot after the drain began are refused before anything is read.
    refused = Approvals(rt).approve(req.id, APPROVER)
    assert not refused.ok and "restarting" in refused.message
    assert [e.event for e in rt.store.events(req.id)].count("approve-ignored") == 0


# --- a real process ---------------------------------------------------------------------------------


@pytest.mark.process
def test_a_real_process_recovers_at_start_serves_and_stops_on_sigterm(tmp_path, slack):
    db = f"sqlite:///{tmp_path}/bot.db"
    rt = make_runtime(db, slack)
    req = approved_request(rt)  # then "killed": the new process must settle it
    rt.store.close()
    port = free_port()
    config = tmp_path / "bot.yaml"
    config.write_text(json.dumps({
        "dry_run": False,
        "database_url": db,
        "slack": {"mode": "http", "http_port": port, "base_url": slack.base_url},
        "server": {"port": port, "shutdown_grace_seconds": 5, "log_format": "json", "log_level": "INFO"},
        "teams": [{"name": "research", "namespaces": ["ml-research"], "channel": CHANNEL, "approvers": [APPROVER]}],
    }))
    env = python_env({"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SECRET})
    proc = subprocess.Popen(
        [sys.executable, "-c", "from bot.cli.main import app; app()", "run", "--config", str(config),
         "--cluster-state", str(DEMO / "cluster.json"), "--telemetry", str(DEMO / "telemetry.json")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(lambda: proc.poll() is not None or get_or_none(f"http://127.0.0.1:{port}/readyz") == 200, "readiness", 30)
        assert proc.poll() is None
        metrics = get(f"http://127.0.0.1:{port}/metrics")[1]
        assert "gpu_cost_bot_requests{state=\"failed\"} 1.0" in metrics
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    messages = [line["message"] for line in lines]
    assert "SIGTERM: shutting down" in messages and messages[-1] == "stopped"
    assert any(line.get("recovered") == {"failed": 1} for line in lines)
    store = Store(db)
    after = store.get(req.id)
    assert after.state == "failed" and after.note.startswith("The bot restarted before acting")


def get_or_none(url: str) -> int | None:
    try:
        return get(url)[0]
    except OSError:
        return None
