"""Signed Slack bodies of every wrong shape, made from real ones: fields of the wrong type (null, a
list, an object, a number), fields missing, JSON nested 1,000 to 100,000 levels deep inside a
payload or an Events API body, interactions without a payload's parts. Each is what a holder of
the signing secret, or a broken proxy, could send; none is Slack's own."""

from __future__ import annotations

import json
import random
from urllib.parse import parse_qsl, urlencode

from tests.support.fakes.slack_requests import block_actions_body, slash_command_body

WRONG = [None, [], ["U0FUZZ"], {}, {"id": "U0FUZZ"}, 0, 1.5, True, "", "x" * 5000]


def deep(levels: int) -> str:
    """JSON of ``levels`` nested lists around a string."""
    return "[" * levels + '"x"' + "]" * levels


def _retyped(obj: dict, rng: random.Random) -> dict:
    """``obj`` with one field, at any depth, given a wrong value."""
    out = json.loads(json.dumps(obj))
    node = out
    while True:
        keys = [k for k, v in node.items()] if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            break
        key = rng.choice(keys)
        if isinstance(node[key], (dict, list)) and node[key] and rng.random() < 0.6:
            node = node[key]
            continue
        node[key] = rng.choice(WRONG) if rng.random() < 0.9 else json.loads(deep(rng.randint(200, 900)))
        break
    return out


def fuzzed(rng: random.Random, response_url: str) -> tuple[str, str]:
    """One wrong body: ``(body, content type)``."""
    kind = rng.choice(["press", "press", "command", "event", "deep-payload", "deep-event"])
    if kind == "press":
        form = dict(parse_qsl(block_actions_body("gpu_approve", "1", "U0FUZZ", "C0X", "1.0", response_url)))
        payload = _retyped(json.loads(form["payload"]), rng)
        return urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded"
    if kind == "command":
        fields = parse_qsl(slash_command_body(text="budget set research 1/month", user_id="U0FUZZ",
                                              response_url=response_url))
        fields = [f for f in fields if rng.random() > 0.3]  # some missing
        fields.append(("payload", rng.choice(["null", "[]", "1", '"x"', "{", deep(rng.randint(1000, 3000))])))
        return urlencode(fields), "application/x-www-form-urlencoded"
    if kind == "deep-payload":
        return urlencode({"payload": '{"type":"block_actions","x":' + deep(rng.randint(1000, 100_000)) + "}"}), \
            "application/x-www-form-urlencoded"
    event = {"token": "x", "team_id": "T1", "api_app_id": "A1", "type": "event_callback", "event_id": "Ev1",
             "event_time": 1, "event": {"type": "app_home_opened", "user": "U0FUZZ", "tab": "home"}}
    if kind == "deep-event":
        return '{"type":"event_callback","event":' + deep(rng.randint(1000, 100_000)) + "}", "application/json"
    return json.dumps(_retyped(event, rng)), "application/json"
