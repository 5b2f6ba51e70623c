"""Failure 6 of issue 16, against the real process: text that did not come from the bot's own
templates (a DCGM ``modelName``, words a user typed, an error from an API) can neither mention,
link nor vanish in Slack's mrkdwn; placeholders in help texts show."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.bot_process import CHANNEL
from tests.support.paths import DEMO

pytestmark = pytest.mark.process

HOSTILE = "NVIDIA H100 80GB HBM3 <!channel> <@U0BOSS> & <https://evil.example|click>"
# What Slack reads as a mention, a link or a special command.
LIVE_MARKUP = re.compile(r"<[!@#]|<https?:")


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def mrkdwn_texts(message: dict) -> list[str]:
    """Every text Slack parses as mrkdwn: the notification text and every block text that is not
    plain_text."""
    out = [message.get("text", "")]

    def walk(value) -> None:
        if isinstance(value, dict):
            if value.get("type") == "mrkdwn":
                out.append(value.get("text", ""))
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(message.get("blocks", []))
    return out


def test_a_hostile_dcgm_model_name_pings_no_one(make_sqlite_bot, tmp_path, slack):
    recording = json.loads((DEMO / "telemetry.json").read_text())
    for snapshot in recording.values():
        for gpu in snapshot["gpus"]:
            gpu["model_name"] = HOSTILE
    path = tmp_path / "telemetry.json"
    path.write_text(json.dumps(recording))
    with make_sqlite_bot(telemetry=path) as bot:
        req = bot.proposal()
        message = slack.messages(CHANNEL)[req.message_ts]
    texts = mrkdwn_texts(message)
    assert any("&lt;!channel&gt;" in t for t in texts), texts
    assert not [t for t in texts if "<!channel>" in t or "<https://evil" in t or "<@U0BOSS>" in t]


def test_what_a_user_types_is_shown_not_obeyed(sqlite_bot, slack):
    bot = sqlite_bot
    bot.command("budget set <!channel> 5000/month", "typed")
    bot.command("<!here> hello", "unknown")
    bot.command("budget x y", "usage")
    for name in ("typed", "unknown", "usage"):
        (answer,) = bot.answers(name)
        texts = [answer.get("text", "")] + [s for s in strings(answer.get("blocks", []))]
        assert not [t for t in texts if LIVE_MARKUP.search(t) and "<@U0APPROVER>" not in t], (name, texts)
    assert "&lt;!channel&gt;" in bot.answers("typed")[0]["text"]
    assert "&lt;!here&gt;" in bot.answers("unknown")[0]["text"]
    # A placeholder in a help text shows as written instead of being eaten.
    assert "&lt;team&gt;" in bot.answers("usage")[0]["text"]
