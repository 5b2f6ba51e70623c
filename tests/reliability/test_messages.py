"""Failures 3 and the duplicate posts of 7 (issue 16), against the real process on SQLite and
PostgreSQL: message updates that Slack refuses (429, 500) are retried until the channel shows the
request's state, and a post whose answer was lost is found by its metadata, not posted again.
"""

from __future__ import annotations

import time

import pytest

from tests.support.bot_process import CHANNEL, OTHER, buttons
from tests.support.waiting import wait_for

pytestmark = pytest.mark.process


def test_after_chat_update_fails_five_times_the_message_is_right_within_a_minute(bot, slack):
    req = bot.proposal()
    assert buttons(bot.message(req))[0] == "gpu_approve"
    slack.fail_next("chat.update", status=500, times=3)
    slack.fail_next("chat.update", status=429, retry_after=1, times=2)
    pressed = time.monotonic()
    assert bot.press("gpu_snooze", req.id, "snooze", user=OTHER)[0] == 200
    store = bot.store()
    wait_for(lambda: store.get(req.id).state == "snoozed", "the snooze")
    message = wait_for(
        lambda: (m := bot.message(req)) and buttons(m) == [] and "Snoozed" in str(m["blocks"]) and m,
        "the channel to show the snooze", 60,
    )
    assert time.monotonic() - pressed < 60
    failed = [c for c in slack.calls if c.method == "chat.update"]
    assert len(failed) >= 6  # five refused, then the one that landed
    wait_for(lambda: (r := store.get(req.id)).shown_version == r.version, "the store to record what Slack shows")
    assert "Awaiting approval" not in str(message["blocks"])


def test_a_message_slack_keeps_refusing_is_retried_by_the_housekeeping(sqlite_bot, slack):
    bot = sqlite_bot
    req = bot.proposal()
    slack.fail_next("chat.update", status=500, times=7)  # more than the client's own retries: three rounds
    assert bot.press("gpu_snooze", req.id, "snooze", user=OTHER)[0] == 200
    wait_for(lambda: "Snoozed" in str(bot.message(req)["blocks"]), "the housekeeping to write it", 60)
    lines = bot.log_lines()
    assert any("will retry" in line["message"] for line in lines)
    assert not [line for line in lines if line["level"] == "ERROR"]


def test_a_lost_post_answer_does_not_produce_a_second_message(make_bot, slack):
    # The first sweep's post is carried out, but its answer never comes back.
    slack.lose_next_answer("chat.postMessage")
    with make_bot() as bot:
        store = bot.store()
        req = wait_for(lambda: (r := store.list_requests()) and r[0].message_ts and r[0], "the post to be found", 60)
        assert len(slack.messages(CHANNEL)) == 1
        assert len(slack.calls_to("chat.postMessage")) == 1
        assert any(c["include_all_metadata"] in (True, "true", "1") for c in slack.calls_to("conversations.history"))
        assert "post-found" in [e.event for e in store.events(req.id)]
        (ts, only), = slack.messages(CHANNEL).items()
        assert req.message_ts == ts and only["metadata"]["event_payload"] == {"request_id": req.id}
        # The message found is the request's: it follows the request from now on.
        assert bot.press("gpu_snooze", req.id, "snooze", user=OTHER)[0] == 200
        wait_for(lambda: "Snoozed" in str(slack.messages(CHANNEL)[ts]["blocks"]), "the found message to update")
        assert len(slack.messages(CHANNEL)) == 1
