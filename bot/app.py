"""The Bolt app: the ``/gpu`` slash command and the approval buttons, assembled in one place."""

from __future__ import annotations

import logging
import re

from slack_bolt import App
from slack_sdk import WebClient

from bot import alerting, blocks, logs
from bot.alert_blocks import ALERT_SNOOZE, message_from_payload
from bot.approvals import Approvals
from bot.commands import CommandContext, dispatch
from bot.reports import spend_function
from bot.runtime import Runtime
from bot.settings import AlertSettings

log = logging.getLogger(__name__)

BUTTONS = re.compile("^(" + "|".join(blocks.BUTTON_ACTIONS) + ")$")


def build_app(
    rt: Runtime, client: WebClient, signing_secret: str, *, alert_snooze_seconds: float | None = None
) -> App:
    """A Bolt App answering ``/gpu`` and the buttons of ``bot.blocks`` and ``bot.alert_blocks``
    (an alert's Snooze holds follow-ups for ``alert_snooze_seconds``, default ``alerts.snooze_seconds``).

    Every listener acks first; slow work (a re-check before acting queries Prometheus and the
    API server) runs after the ack, so Slack's 3-second limit is never at risk.
    """
    # Socket Mode needs no signing secret: Slack's websocket is already authenticated.
    app = App(
        client=client,
        signing_secret=signing_secret or None,
        request_verification_enabled=bool(signing_secret),
        token_verification_enabled=False,
        # Copies the request id (bot.logs) into the threads that run listeners after the ack.
        listener_executor=logs.ContextThreadPoolExecutor(max_workers=5),
    )
    app.use(logs.slack_request_ids)
    approvals = Approvals(rt)

    @app.command("/gpu")
    def gpu_command(ack, command, respond):
        ack()
        ctx = CommandContext(
            user=command["user_id"], prices=rt.prices, rt=rt, channel=command.get("channel_id"),
            spend_usd=spend_function(rt),
        )
        reply = dispatch(command.get("text", ""), ctx)
        respond(
            text=reply.message.text,
            blocks=reply.message.blocks,
            response_type="ephemeral" if reply.ephemeral else "in_channel",
        )

    @app.action(BUTTONS)
    def button(ack, body, action, respond):
        ack()
        user = body["user"]["id"]
        try:
            request_id = int(action["value"])
        except (KeyError, ValueError):
            respond(text=f"This button carries no request id ({action.get('value')!r}).",
                    response_type="ephemeral", replace_original=False)
            return
        outcome = approvals.press(action["action_id"], request_id, user)
        log.info("press %s on #%s by %s: %s", action["action_id"], request_id, user, outcome.message)
        if not outcome.ok:
            respond(text=outcome.message, response_type="ephemeral", replace_original=False)

    snooze_seconds = alert_snooze_seconds or AlertSettings().snooze_seconds

    @app.action(ALERT_SNOOZE)
    def alert_snooze(ack, body, action, respond):
        ack()
        user = body["user"]["id"]
        try:
            alert_id = int(action["value"])
        except (KeyError, ValueError):
            respond(text=f"This button carries no alert id ({action.get('value')!r}).",
                    response_type="ephemeral", replace_original=False)
            return
        posted = body.get("message")
        original = message_from_payload(posted.get("text", ""), posted.get("blocks")) if posted else None
        outcome = alerting.snooze(rt, alert_id, user, snooze_seconds, original)
        log.info("alert snooze on #%s by %s: %s", alert_id, user, outcome.message)
        if not outcome.ok:
            respond(text=outcome.message, response_type="ephemeral", replace_original=False)

    return app
