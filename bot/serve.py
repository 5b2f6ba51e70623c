"""``gpu-cost-bot run``: the scheduled sweeps plus a chat front end, in one process."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from socketserver import ThreadingMixIn

from bot.settings import Settings

log = logging.getLogger(__name__)


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def wsgi_app(bolt_app):
    """Slack events at ``/slack/events``, liveness at ``/healthz``."""
    from slack_bolt.adapter.wsgi import SlackRequestHandler

    slack = SlackRequestHandler(bolt_app)

    def application(environ, start_response):
        if environ.get("PATH_INFO") == "/healthz":
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"ok\n"]
        return slack(environ, start_response)

    return application


def serve(settings: Settings, *, chat: str, cluster_state: Path | None, telemetry_file: Path | None) -> None:
    """Run until interrupted. ``chat`` is ``slack`` (Socket Mode or HTTP per ``slack.mode``) or
    ``console`` (a prompt on this terminal)."""
    from bot.console import ConsoleSession
    from bot.scheduler import start_background
    from bot.wiring import build_runtime

    if chat == "console":
        rt = build_runtime(settings, cluster_state=cluster_state, telemetry_file=telemetry_file)
        scheduler = start_background(rt, settings)
        try:
            ConsoleSession(rt, user="UCONSOLE", out=sys.stdout).loop()
        finally:
            scheduler.shutdown(wait=True)
        return

    from bot.app import build_app
    from bot.slack_chat import SlackChat, UserGroups, web_client

    if not settings.slack_bot_token:
        raise SystemExit("SLACK_BOT_TOKEN is not set; `gpu-cost-bot check` lists what is missing")
    client = web_client(settings.slack_bot_token.get_secret_value(), settings.slack.base_url)
    groups = UserGroups(client)
    rt = build_runtime(
        settings, chat=SlackChat(client), cluster_state=cluster_state, telemetry_file=telemetry_file,
        group_members=groups.members,
    )
    secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
    bolt = build_app(rt, client, secret)
    scheduler = start_background(rt, settings)
    try:
        if settings.slack.mode == "socket":
            from slack_bolt.adapter.socket_mode import SocketModeHandler

            if not settings.slack_app_token:
                raise SystemExit("slack.mode is socket but SLACK_APP_TOKEN is not set")
            SocketModeHandler(bolt, settings.slack_app_token.get_secret_value()).start()
        else:
            if not secret:
                raise SystemExit("slack.mode is http but SLACK_SIGNING_SECRET is not set")
            server = make_server(
                "0.0.0.0", settings.slack.http_port, wsgi_app(bolt),
                server_class=_ThreadingWSGIServer, handler_class=WSGIRequestHandler,
            )
            log.info("serving Slack events on :%d/slack/events", settings.slack.http_port)
            server.serve_forever()
    finally:
        scheduler.shutdown(wait=True)
