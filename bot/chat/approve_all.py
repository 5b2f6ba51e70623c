"""What an alert's "Approve all" button approves: the request ids stored for its alert.

Slack keeps a button's ``value`` to 2,000 characters
(https://docs.slack.dev/reference/block-kit/block-elements/button-element), and a queue-wait
alert may offer hundreds of proposals; the button therefore carries ``"alert:<AlertRecord id>"``
and the ids are recorded in the store when the alert is posted (:func:`remember`), read back when
it is pressed (:func:`request_ids`). A value of ids, ``"12,15"``, from a message posted before
still works: each id is checked on its own when approved, as it always was.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from actions.store.database import Store

PREFIX = "alert:"


def fact_name(alert_id: int) -> str:
    """The store fact holding alert ``alert_id``'s request ids: ``"approve-all/7"``."""
    return f"approve-all/{alert_id}"


def button_value(alert_id: int) -> str:
    """``"alert:7"``: what the button of alert ``alert_id`` carries, short for any number of ids."""
    return f"{PREFIX}{alert_id}"


def remember(store: Store, alert_id: int, ids: Sequence[int], now: datetime) -> None:
    """Record ``ids`` (request ids, in the alert's order) as what alert ``alert_id``'s Approve
    all approves; written once, as the alert is posted once. Raises ValueError for no ids."""
    store.record_fact(fact_name(alert_id), ",".join(str(i) for i in ids), now)


def request_ids(store: Store, value: str | None) -> list[int]:
    """The request ids a pressed button's ``value`` approves: those recorded for ``"alert:7"``,
    or the ids of an older message's ``"12,15"`` (``"#12"`` too). Raises ValueError for a value
    that is neither, or an alert with none recorded."""
    text = str(value or "").strip()
    if text.startswith(PREFIX):
        alert_id = int(text[len(PREFIX):])
        fact = store.fact(fact_name(alert_id))
        if fact is None:
            raise ValueError(f"alert #{alert_id} has no proposals to approve together")
        text = fact.value
    ids = [int(v.strip().lstrip("#")) for v in text.split(",") if v.strip()]
    if not ids:
        raise ValueError("no request ids")
    return ids
