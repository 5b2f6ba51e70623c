"""Socket Mode end to end: the bot's SlackBot connects with Bolt's real Socket Mode client to a
websocket peer on 127.0.0.1 that speaks Slack's Socket Mode protocol (``apps.connections.open``,
``hello``, envelopes and their acks); the Web API and response URLs are FakeSlack."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.parse
import urllib.request

from aiohttp import WSMsgType, web

from bot.chat.slack.app import build_app
from bot.chat.slack.web import web_client
from bot.service.metrics import BotMetrics
from bot.settings import Settings
from bot.wiring.process import slack_process
from tests.support.demo_world import make_runtime
from tests.support.fakes.slack_api import FakeSlack
from tests.support.fakes.slack_requests import slash_command_body
from tests.support.logs import bot_json_lines
from tests.support.prometheus_server import free_port
from tests.support.waiting import wait_for


class SocketModePeer:
    """Slack's side of Socket Mode: ``POST /api/apps.connections.open`` answers a ``ws://`` URL
    (and ``auth.test`` the bot's identity);
    the websocket there says ``hello``, carries the envelopes given to :meth:`send`, and records
    every message the app sends back (its acks) in ``received``."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        self.connected = threading.Event()
        self._ws: web.WebSocketResponse | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> "SocketModePeer":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/api/apps.connections.open", self._open)
        app.router.add_post("/api/auth.test", self._auth_test)
        app.router.add_get("/link", self._link)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    async def _open(self, request: web.Request) -> web.Response:
        assert request.headers["Authorization"] == "Bearer xapp-test"
        return web.json_response({"ok": True, "url": f"ws://127.0.0.1:{self.port}/link"})

    async def _auth_test(self, request: web.Request) -> web.Response:
        # Bolt checks the bot token once, on the first request it handles.
        return web.json_response({
            "ok": True, "url": "https://gpu-team.slack.com/", "team": "gpu-team", "user": "gpu-cost-bot",
            "team_id": "T1", "user_id": "UBOT", "bot_id": "BBOT",
        })

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._ws = ws
        await ws.send_json({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0GPUCOST"}})
        self.connected.set()
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                self.received.append(json.loads(message.data))
        return ws

    def send(self, envelope: dict) -> None:
        assert self._ws is not None, "no app connected"
        asyncio.run_coroutine_threadsafe(self._ws.send_json(envelope), self._loop).result(10)


def readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_socket_mode_answers_a_slash_command_and_serves_the_probes(tmp_path):
    with bot_json_lines() as json_lines, FakeSlack() as slack, SocketModePeer() as peer:
        rt = make_runtime(f"sqlite:///{tmp_path}/bot.db", slack)
        port = free_port()
        settings = Settings(slack={"mode": "socket"}, server={"port": port}, SLACK_APP_TOKEN="xapp-test")
        bolt = build_app(rt, web_client("xoxb-test", peer.base_url), "")
        bot = slack_process(settings, rt, bolt, BotMetrics(), host="127.0.0.1").start()
        try:
            assert peer.connected.wait(10)
            assert wait_for(lambda: readyz(port)[0] == 200, "readiness")
            body = dict(urllib.parse.parse_qsl(
                slash_command_body(text="estimate 16 gpus 1w at $3/hr", user_id="U0ASKER", response_url=slack.response_url("est"))
            ))
            peer.send({"envelope_id": "env-1", "type": "slash_commands", "accepts_response_payload": True, "payload": body})
            (answer,) = wait_for(lambda: slack.responses_to("est"), "the estimate")
            assert "$8,064.00" in answer["text"] + json.dumps(answer.get("blocks"))
            assert wait_for(lambda: [m for m in peer.received if m.get("envelope_id") == "env-1"], "the ack")
        finally:
            bot.stop()
        assert not bot.connection.connected()
        lines = json_lines()
    (named,) = [l for l in lines if l["logger"] == "bot.chat.slack.request_ids"]
    assert named["message"] == "slack /gpu" and named["request_id"] == body["trigger_id"]
    assert "http_request_id" not in named  # no HTTP request in Socket Mode
