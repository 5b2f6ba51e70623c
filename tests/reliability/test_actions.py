"""Failures 2, 4 and the interrupted action of 7 (issue 16), against the real process on SQLite and
PostgreSQL: a patch the API server applies after the client gave up, a list that hangs during
the re-check, and a process killed while its patch is on the way.

An action whose outcome is unknown is ``uncertain``, never ``failed``; the bot reads the target
back and settles it within a minute, with Restore when it landed.
"""

from __future__ import annotations

import time

import pytest

from tests.support.bot_process import NOTEBOOK_PATH, buttons, stopped
from tests.support.waiting import wait_for

pytestmark = pytest.mark.process


def events(store, request_id):
    return [e.event for e in store.events(request_id)]


def test_a_patch_applied_after_the_client_timeout_ends_done_with_restore(bot, kube):
    req = bot.proposal()
    # The API server holds the PATCH past the client's 2 s timeout, then applies it.
    kube.stall("PATCH", NOTEBOOK_PATH, seconds=4)
    pressed = time.monotonic()
    assert bot.press("gpu_approve", req.id, "approve")[0] == 200
    (answer,) = bot.answers("approve")
    assert "did not answer in time" in answer["text"]
    store = bot.store()
    assert wait_for(lambda: store.get(req.id).state == "uncertain", "the request to be uncertain")
    assert "Outcome unknown" in str(bot.message(req)["blocks"])
    done = wait_for(lambda: (r := store.get(req.id)).state == "done" and r, "the read-back to find it done", 60)
    assert time.monotonic() - pressed < 60
    assert stopped(kube) and done.undo() is not None and "the cluster shows it done" in done.note
    assert "failed" not in events(store, req.id) and "apply-failed" not in events(store, req.id)
    message = wait_for(lambda: buttons(bot.message(req)) == ["gpu_restore"] and bot.message(req), "Restore on the message")
    assert "Outcome unknown" not in str(message["blocks"])
    # And the Restore it offers works.
    assert bot.press("gpu_restore", req.id, "restore")[0] == 200
    assert wait_for(lambda: store.get(req.id).state == "restored", "the restore")
    assert not stopped(kube)


def test_a_patch_that_never_lands_ends_failed_once_nothing_can_land(bot, kube):
    req = bot.proposal()
    # Refused after the client gave up: an API server that timed out the write itself.
    kube.stall("PATCH", NOTEBOOK_PATH, seconds=3)
    kube.fail("PATCH", NOTEBOOK_PATH, 500, "InternalError", "etcdserver: request timed out")
    assert bot.press("gpu_approve", req.id, "approve")[0] == 200
    store = bot.store()
    wait_for(lambda: store.get(req.id).state == "uncertain", "the request to be uncertain")
    after = wait_for(lambda: (r := store.get(req.id)).state == "failed" and r, "the settle window to pass", 60)
    assert not stopped(kube) and "nothing was changed" in after.note
    assert "recovered" in events(store, req.id)


def test_a_hung_kubernetes_list_does_not_hold_an_approve(bot, kube):
    req = bot.proposal()
    # Pods come from run's watch cache once it is synced; namespaces are listed by every re-check.
    kube.stall("GET", "/api/v1/namespaces", seconds=60, times=3)
    pressed = time.monotonic()
    assert bot.press("gpu_approve", req.id, "approve")[0] == 200
    (answer,) = bot.answers("approve", timeout=20)
    took = time.monotonic() - pressed
    assert "re-check failed, nothing was changed" in answer["text"] and "namespaces" in answer["text"]
    assert took < 10, f"the approve was held {took:.1f} s"
    assert bot.store().get(req.id).state == "failed" and not stopped(kube)


@pytest.mark.postgres
def test_a_process_killed_while_its_patch_is_on_the_way_is_settled_by_the_next(make_postgres_bot, kube):
    make_bot = make_postgres_bot  # two replicas share PostgreSQL in the ha overlay
    config = {"actions": {"recheck_timeout_seconds": 2, "settle_seconds": 3}}
    first = make_bot(config).start()
    req = first.proposal()
    kube.clear_requests()
    kube.stall("PATCH", NOTEBOOK_PATH, seconds=3)
    assert first.press("gpu_approve", req.id, "approve")[0] == 200
    # The writer reads the Notebook, then sends the PATCH the API server holds. Kill it once the
    # PATCH is held (a fixed sleep after the read killed it before the PATCH on a loaded machine).
    wait_for(lambda: kube.stalling("PATCH", NOTEBOOK_PATH), "the writer's PATCH to be held", 60)
    first.kill()  # the API server applies the patch after the process died
    store = first.store()
    assert store.get(req.id).state == "approved" and not stopped(kube)
    killed = time.monotonic()
    with make_bot(config) as second:
        done = wait_for(lambda: (r := store.get(req.id)).state == "done" and r, "the next process to settle it", 90)
        # Its deadline: re-check 2 s + patches 6 x 2 s + settle 3 s, then one housekeeping round
        # (and the second process's start): well under a minute, not the old 15 minutes.
        assert time.monotonic() - killed < 60
        assert stopped(kube) and done.undo() is not None
        assert "The bot stopped or lost its database while acting; the cluster shows it done" in done.note
        wait_for(lambda: buttons(second.message(req)) == ["gpu_restore"], "Restore on the message")
