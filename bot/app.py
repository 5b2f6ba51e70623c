"""The Bolt app: the ``/gpu`` slash command and the approval buttons, assembled in one place."""

from __future__ import annotations

import logging
import re

from slack_bolt import App
from slack_sdk import WebClient

from bot import blocks
from bot.approvals import Approvals
from bot.commands import CommandContext, dispatch
from bot.runtime import Runtime

log = logging.getLogger(__name__)

BUTTONS = re.compile("^(" + "|".join(blocks.BUTTON_ACTIONS) + ")$")


def build_app(rt: Runtime, client: WebClient, signing_secret: str) -> App:
    """A Bolt App answering ``/gpu`` and the buttons of ``bot.blocks``.

    Every listener acks first; slow work (a re-check before acting queries Prometheus and the
    API server) runs after the ack, so Slack's 3-second limit is never at risk.
    """
    # Socket Mode needs no signing secret: Slack's websocket is already authenticated.
    app = App(
        client=client,
        signing_secret=signing_secret or None,
        request_verification_enabled=bool(signing_secret),
        token_verification_enabled=False,
    )
    approvals = Approvals(rt)

    @app.command("/gpu")
    def gpu_command(ack, command, respond):
        ack()
        reply = dispatch(command.get("text", ""), CommandContext(user=command["user_id"], prices=rt.prices, rt=rt, channel=command.get("channel_id")))
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

    return app
