"""The Bolt app: the ``/gpu`` slash command and the buttons, assembled in one place.

Every listener acknowledges at once and hands the work to a bounded pool (:class:`SlackWork`):
slash commands (cost reports, queue reads: seconds to minutes) on one, button presses (re-checks
and actions) on another, so a burst of reports never holds a press. Answers go through the
request's ``response_url`` and message updates. A pool that is full answers "busy" at once; a
shutdown cancels queued work and tells each requester. Bolt runs the listener in the request's
own thread (``process_before_response``): the ack goes out as soon as the work is queued, and no
listener pool of Bolt's can hold it past Slack's 3 seconds.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

import sqlalchemy.exc
from slack_bolt import App
from slack_sdk import WebClient

from actions.text import plain
from bot.chat.alert_snooze import DEFAULT_SNOOZE_SECONDS
from bot.chat.alert_snooze import snooze as snooze_alert
from bot.chat.approvals import Approvals
from bot.chat.approve_all import request_ids as approve_all_ids
from bot.chat.blocks.alerts import ALERT_SNOOZE, APPROVE_ALL, message_from_payload
from bot.chat.blocks.proposals import BUTTON_ACTIONS
from bot.chat.commands import CommandContext, dispatch
from bot.chat.outcomes import NOT_RECORDED, database_error_line
from bot.chat.slack.deadline import deadline_respond
from bot.chat.slack.home import HomeTab
from bot.chat.slack.request_ids import slack_request_ids
from bot.runtime.runtime import Runtime
from bot.service.work import WorkerPool

log = logging.getLogger(__name__)

BUTTONS = re.compile("^(" + "|".join(BUTTON_ACTIONS) + ")$")

BUSY = ":hourglass: The bot is busy right now, so nothing was done. Try again in a minute."
RESTARTING = ":arrows_counterclockwise: The bot is restarting, so nothing was done. Try again in a minute."


@dataclass
class SlackWork:
    """The pools the listeners hand their work to: ``commands`` (slash commands), ``presses``
    (buttons) and ``replies`` (the "busy" answers to presses, which need a call of their own)."""

    commands: WorkerPool = field(default_factory=lambda: WorkerPool("commands", 4, 16))
    presses: WorkerPool = field(default_factory=lambda: WorkerPool("presses", 4, 32))
    replies: WorkerPool = field(default_factory=lambda: WorkerPool("replies", 2, 64))

    @property
    def pools(self) -> tuple[WorkerPool, ...]:
        """All three, for a shutdown to cancel what they hold."""
        return (self.commands, self.presses, self.replies)


def _ephemeral(respond, text: str) -> None:  # noqa: ANN001 - Bolt's Respond
    try:
        respond(text=text, response_type="ephemeral", replace_original=False)
    except Exception as e:  # noqa: BLE001 - a request without a usable response_url gets no answer, and no crash
        log.warning("could not answer through the request's response_url (%s): %s", type(e).__name__, str(e)[:200])


def build_app(
    rt: Runtime, client: WebClient, signing_secret: str, *, alert_snooze_seconds: float | None = None,
    work: SlackWork | None = None,
) -> App:
    """A Bolt App answering ``/gpu`` and the buttons of ``bot.chat.blocks.proposals`` and
    ``bot.chat.blocks.alerts`` (an alert's Snooze holds follow-ups for ``alert_snooze_seconds``,
    default 4 h as ``alerts.snooze_seconds``), doing the work on ``work``'s pools (default: new
    pools of 4 workers each). The App Home (:mod:`bot.chat.slack.home`) is published when opened
    and after each press, for the presser and the approvers of the request pressed.
    """
    # Socket Mode needs no signing secret: Slack's websocket is already authenticated.
    app = App(
        client=client,
        signing_secret=signing_secret or None,
        request_verification_enabled=bool(signing_secret),
        token_verification_enabled=False,
        process_before_response=True,
    )
    app.use(slack_request_ids)
    app.use(deadline_respond)
    approvals = Approvals(rt)
    work = work or SlackWork()
    snooze_seconds = alert_snooze_seconds or DEFAULT_SNOOZE_SECONDS
    # Published on the commands pool: a Home reads the spend, as a slash command does.
    home = HomeTab(rt, client)
    home.register(app, work.commands)

    def refused(pool: WorkerPool) -> str:
        return RESTARTING if pool.closed else BUSY

    def press_refused(pool: WorkerPool, respond, body: dict) -> None:  # noqa: ANN001 - Bolt's Respond
        # A button's ack carries no text; the answer needs a call of its own, off this thread:
        # ephemeral in a channel, on the Home for a press there (it has no response_url).
        text = refused(pool)

        def answer() -> None:
            if body.get("response_url"):
                _ephemeral(respond, text)
            else:
                home.publish(body["user"]["id"], text)

        if not work.replies.submit(answer):
            log.warning("press refused (%s) and the reply dropped: too many replies queued", text)

    @app.command("/gpu")
    def gpu_command(ack, command, respond):
        user, channel, text = command["user_id"], command.get("channel_id"), command.get("text", "")

        def answer() -> None:
            ctx = CommandContext(user=user, prices=rt.prices, rt=rt, channel=channel, spend_usd=rt.spend_function())
            reply = dispatch(text, ctx)
            respond(
                text=reply.message.text,
                blocks=reply.message.blocks,
                response_type="ephemeral" if reply.ephemeral else "in_channel",
            )

        if work.commands.submit(answer, on_cancel=lambda: _ephemeral(respond, RESTARTING)):
            ack()
        else:
            why = "shutting down" if work.commands.closed else "busy"
            log.warning("/gpu %r refused: %s", text.split(" ", 1)[0] or "help", why)
            ack(text=refused(work.commands), response_type="ephemeral")

    @app.action(BUTTONS)
    def button(ack, body, action, respond):
        user, action_id, value = body["user"]["id"], action["action_id"], action.get("value")

        def press() -> None:
            outcome = approvals.press_button(action_id, value, user)
            # Quoted: they are what the payload said, whatever someone put there.
            log.info("press %r on #%r by %r: %s", action_id, value, user, outcome.message)
            # A press on the Home has no response_url: its answer is shown on the Home.
            if not outcome.ok and body.get("response_url"):
                _ephemeral(respond, outcome.message)
            home.after_press(user, value, outcome.message, changed=outcome.ok)

        ack()
        if not work.presses.submit(press, on_cancel=lambda: _ephemeral(respond, RESTARTING)):
            log.warning("press %r on #%r by %r refused: pool full or shutting down", action_id, value, user)
            press_refused(work.presses, respond, body)

    @app.action(APPROVE_ALL)
    def approve_all(ack, body, action, respond):
        user, value = body["user"]["id"], action.get("value")

        def press() -> None:
            try:
                ids = approve_all_ids(rt.store, value)
            except ValueError:
                _ephemeral(respond, f"This button carries no request ids ({plain(str(value)[:100])}).")
                return
            except sqlalchemy.exc.SQLAlchemyError as e:
                _ephemeral(respond, NOT_RECORDED.format(error=plain(database_error_line(e)), verb="Approve all"))
                return
            outcome = approvals.approve_all(ids, user)
            log.info("approve all %s by %s: %s", ids, user, outcome.message)
            _ephemeral(respond, outcome.message)
            home.after_press(user, None, outcome.message)

        ack()
        if not work.presses.submit(press, on_cancel=lambda: _ephemeral(respond, RESTARTING)):
            press_refused(work.presses, respond, body)

    @app.action(ALERT_SNOOZE)
    def alert_snooze(ack, body, action, respond):
        user, value, posted = body["user"]["id"], action.get("value"), body.get("message")

        def press() -> None:
            try:
                alert_id = int(value)
            except (TypeError, ValueError):
                alert_id = 0  # names no alert: refused and audited as such
            original = message_from_payload(posted.get("text", ""), posted.get("blocks")) if posted else None
            outcome = snooze_alert(rt, alert_id, user, snooze_seconds, original)
            log.info("alert snooze on #%s by %s: %s", alert_id, user, outcome.message)
            if not outcome.ok:
                _ephemeral(respond, outcome.message)
            home.after_press(user, None, outcome.message)

        ack()
        if not work.presses.submit(press, on_cancel=lambda: _ephemeral(respond, RESTARTING)):
            press_refused(work.presses, respond, body)

    return app
