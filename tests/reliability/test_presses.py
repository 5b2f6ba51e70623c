"""Failures 7 and 8 of issue 16 about presses, against the real process on SQLite and PostgreSQL:
a press or ``/gpu budget set`` during a database outage is answered "not recorded, press again",
and every press is answered and audited: refused ones, lost races, ids that name no request
(2^63 included), values that are no id at all.
"""

from __future__ import annotations

import threading

import pytest
from sqlalchemy.engine import make_url

from tests.support.bot_process import NOTEBOOK_PATH, OTHER, stopped
from tests.support.fakes.tcp_proxy import TcpProxy
from tests.support.waiting import wait_for

pytestmark = pytest.mark.process

ODD_IDS = ["999999", str(2**63 - 1), str(2**63), str(2**64), "-1", "0", "abc", "1e3", ""]


def test_every_press_is_answered_and_audited(bot, kube):
    req = bot.proposal()
    store = bot.store()
    before = len(store.all_events())
    for i, value in enumerate(ODD_IDS):
        assert bot.press("gpu_approve", value, f"odd-{i}")[0] == 200
        (answer,) = bot.answers(f"odd-{i}")
        assert "nothing was changed" in answer["text"] or "There is no request" in answer["text"], (value, answer)
    assert bot.press("gpu_approve", req.id, "refused", user=OTHER)[0] == 200
    assert "Only approvers" in bot.answers("refused")[0]["text"]
    unknown = [e for e in store.all_events()[before:] if e.event == "approve-unknown"]
    assert len(unknown) == len(ODD_IDS)
    assert ("U0OTHER", "approve-rejected") in [(e.actor, e.event) for e in store.events(req.id)]
    assert store.get(req.id).state == "proposed" and not stopped(kube)


def test_of_twenty_simultaneous_approves_one_acts_and_all_are_audited(bot, kube):
    req = bot.proposal()
    start = threading.Event()

    def press(i: int) -> None:
        start.wait()
        bot.press("gpu_approve", req.id, f"race-{i}")

    threads = [threading.Thread(target=press, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    start.set()
    for t in threads:
        t.join(30)
    store = bot.store()
    wait_for(lambda: store.get(req.id).state == "done", "the one approve to act")
    presses = wait_for(
        lambda: (p := [e.event for e in store.events(req.id) if e.event.startswith("approve")]) and len(p) == 20 and p,
        "every press to be audited",
    )
    assert presses.count("approved") == 1
    assert set(presses) - {"approved"} <= {"approve-ignored", "approve-lost-race"}
    assert sum(1 for r in kube.changes() if r.method == "PATCH") == 1 and stopped(kube)
    # Every loser was told why.
    told = wait_for(lambda: sum(bool(bot.slack.responses_to(f"race-{i}")) for i in range(20)) == 19, "19 answers")
    assert told


@pytest.mark.postgres
def test_a_press_and_a_budget_set_during_a_database_outage_are_answered(make_postgres_bot, postgres_url):
    url = make_url(postgres_url)
    proxy = TcpProxy((url.host or "127.0.0.1", url.port or 5432))
    try:
        through = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        bot = make_postgres_bot({"database_url": through}).start()
        req = bot.proposal()
        proxy.cut()
        assert bot.press("gpu_approve", req.id, "down")[0] == 200
        (answer,) = bot.answers("down", timeout=30)
        assert answer["text"].startswith(":warning: Not recorded") and "press Approve again" in answer["text"]
        assert bot.command("budget set research 5000/month", "budget-down")[0] == 200
        (answer,) = bot.answers("budget-down", timeout=30)
        assert "database" in answer["text"]
        proxy.heal()
        # Nothing half-done: the request is as it was, and the press works once it is back.
        assert bot.store().get(req.id).state == "proposed"
        assert bot.press("gpu_approve", req.id, "up")[0] == 200
        wait_for(lambda: bot.store().get(req.id).state == "done", "the approve after the outage")
        assert bot.store().budget("research") is None
        assert not [line for line in bot.log_lines() if "exc_info" in line and "press" in line["message"]]
    finally:
        proxy.close()


@pytest.mark.postgres
def test_a_database_lost_after_the_patch_went_out_is_answered_truthfully(make_postgres_bot, postgres_url, kube):
    # Issue 22, item 6: the PATCH reaches the API server, then the store is gone before the press
    # is recorded as done. The presser must not read "nothing was changed".
    url = make_url(postgres_url)
    proxy = TcpProxy((url.host or "127.0.0.1", url.port or 5432))
    try:
        through = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        bot = make_postgres_bot({"database_url": through, "actions": {"settle_seconds": 3}}).start()
        req = bot.proposal()
        kube.stall("PATCH", NOTEBOOK_PATH, seconds=2)
        assert bot.press("gpu_approve", req.id, "cut")[0] == 200
        wait_for(lambda: kube.stalling("PATCH", NOTEBOOK_PATH), "the PATCH to be on its way", 30)
        proxy.cut()  # the store drops while the API server holds the PATCH, which then lands
        (answer,) = bot.answers("cut", timeout=60)
        assert "the change may have been made" in answer["text"] and "Do not press Approve again" in answer["text"]
        assert "Nothing was changed" not in answer["text"]
        assert stopped(kube)
        proxy.heal()
        # Once the store answers and the request's deadline has passed, it is settled from the cluster.
        done = wait_for(lambda: (r := bot.store().get(req.id)).state == "done" and r, "the request settled", 120)
        assert "The bot stopped or lost its database while acting; the cluster shows it done" in done.note
        assert done.undo() is not None
    finally:
        proxy.close()
