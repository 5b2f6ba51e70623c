"""The App Home tab in Slack: published with ``views.publish`` when someone opens it
(``app_home_opened``) and again after each of their presses, and for the approvers of the
request pressed, so every Home shows where the requests stand.

Event payload (docs.slack.dev/reference/events/app_home_opened): ``event.type``
``app_home_opened``, ``event.user``, ``event.channel``, ``event.tab`` (``home`` or
``messages``), ``event.view`` once a view was published. ``views.publish`` takes ``user_id`` and
``view`` ``{type: "home", blocks}`` (docs.slack.dev/reference/methods/views.publish).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from slack_bolt import App
from slack_sdk import WebClient

from bot.chat.blocks.home import home_view
from bot.chat.home import Spend, home_data
from bot.runtime.runtime import Runtime
from bot.service.work import WorkerPool

log = logging.getLogger(__name__)

MAX_APPROVERS = 20  # Homes refreshed for the approvers of one pressed request, at most


def _read_once(spend: Spend | None) -> Spend | None:
    """``spend`` read once per month start: the Homes refreshed after one press are built a few
    milliseconds apart, and each reading is a month-to-date cost report."""
    if spend is None:
        return None
    read: dict[datetime, Mapping[str, float]] = {}

    def once(start: datetime, end: datetime) -> Mapping[str, float]:
        if start not in read:
            read[start] = spend(start, end)
        return read[start]

    return once


class HomeTab:
    """Publishes people's Home tabs through ``client`` from ``rt``'s store and cost source."""

    def __init__(self, rt: Runtime, client: WebClient):
        self.rt, self.client = rt, client
        self._pool: WorkerPool | None = None

    def publish(self, user: str, notice: str = "", spend: Spend | None = None) -> bool:
        """Publish ``user``'s Home (a Slack user id; ``notice`` the answer to their last press;
        ``spend`` as :func:`~bot.chat.home.home_data` takes it). True when Slack took it; a
        failure (the store, the cost source or Slack) is logged and answered False, never
        raised: the Home is shown again at the next open."""
        try:
            view = home_view(home_data(self.rt, user, notice=notice, spend=spend))
            self.client.views_publish(user_id=user, view=view)
        except Exception as e:  # noqa: BLE001 - a Home left as it was beats a failed press or event
            log.warning("home of %r not published (%s): %s", user, type(e).__name__, str(e)[:200])
            return False
        return True

    def after_press(self, user: str, value: str | None, notice: str = "", changed: bool = True) -> None:
        """Refresh the Home of ``user``, who just pressed a button carrying ``value`` (a request id,
        or anything else), with ``notice``; then, when the press ``changed`` the request, those of
        the approvers of that request's team. The Homes share one reading of the spend. On the
        pool :meth:`register` was given, when there is one: the press worker must be free for the
        next press. Never raises."""

        def refresh() -> None:
            spend = _read_once(self.rt.spend_function())
            self.publish(user, notice, spend)
            others = self._approvers(value) - {user} if changed else set()
            for other in sorted(others)[:MAX_APPROVERS]:
                self.publish(other, spend=spend)

        if self._pool is None:
            refresh()
        elif not self._pool.submit(refresh):
            log.warning("homes after a press by %r not refreshed: the pool is full or shutting down", user)

    def _approvers(self, value: str | None) -> set[str]:
        try:
            request_id = int(str(value))
        except ValueError:
            return set()  # names no request: the press was refused and audited as such
        try:
            req = self.rt.store.get(request_id)
            return self.rt.approvers_of(req.team) if req is not None else set()
        except Exception as e:  # noqa: BLE001 - only the other Homes wait for their next open
            log.warning("approvers of request %d unknown, their Homes not refreshed: %s", request_id, e)
            return set()

    def register(self, app: App, pool: WorkerPool) -> None:
        """Answer ``app_home_opened`` on ``app``: acknowledge at once, publish on ``pool`` (a full
        pool leaves the Home as it was, logged), where the refreshes after a press run too. The
        Messages tab is left alone."""
        self._pool = pool

        @app.event("app_home_opened")
        def home_opened(ack, event):
            ack()
            user, tab = event.get("user"), event.get("tab")
            if tab != "home" or not isinstance(user, str) or not user:
                return
            if not pool.submit(lambda: self.publish(user)):
                log.warning("home of %r not published: the pool is full or shutting down", user)
