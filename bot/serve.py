"""``gpu-cost-bot run``: the scheduled sweeps plus a chat front end, in one process, until SIGTERM.

With Slack (:class:`SlackBot`):

- HTTP mode: one threaded WSGI server on ``slack.http_port`` with ``/slack/events`` (Bolt checks
  Slack's request signature: a bad one is 401), ``/healthz``, ``/readyz`` and ``/metrics``; when
  ``server.port`` is another port, the probes and metrics are served there too.
- Socket Mode: Bolt's ``SocketModeHandler`` (no public endpoint), plus the probes and metrics on
  ``server.port``.

At start, requests a previous process left half-done (``approved``/``restoring``) are settled
against the cluster (``Approvals.recover``). On SIGTERM or SIGINT the bot drains: ``/readyz``
turns 503 and Slack requests are refused first, new approvals and restores are refused, the
scheduler stops after its running job, and actions in flight get ``server.shutdown_grace_seconds``
to finish; any that does not is recorded from what the cluster shows (never left ``approved`` or
``restoring``). Only then do the HTTP servers close.
"""

from __future__ import annotations

import contextvars
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from slack_bolt.adapter.socket_mode import SocketModeHandler

from actions.store import Store
from bot.approvals import ABANDONED_AFTER_SECONDS, Approvals
from bot.http import HttpServer, serve_http, wsgi_app
from bot.metrics import BotMetrics
from bot.runtime import Runtime, utc_now
from bot.settings import Settings

__all__ = ["Readiness", "ScopedSocketModeHandler", "SlackBot", "serve", "wsgi_app"]

log = logging.getLogger(__name__)


class Readiness:
    """What ``/readyz`` answers: ``(True, "ok")``, or ``(False, reason)`` when the process is
    shutting down, the database does not answer a cheap query, Slack is not connected
    (``slack_connected`` returns False) or the scheduler is not running.

    ``scheduler`` is set once started (None until then: not ready); an object without a
    ``running`` attribute counts as running.
    """

    def __init__(self, store: Store, slack_connected: Callable[[], bool] = lambda: True):
        self.store = store
        self.slack_connected = slack_connected
        self.scheduler: Any = None
        self.stopping = threading.Event()

    def __call__(self) -> tuple[bool, str]:
        if self.stopping.is_set():
            return False, "shutting down"
        try:
            self.store.count_by_state()
        except Exception as e:  # noqa: BLE001 - any database failure means not ready
            return False, f"database not reachable: {str(e).splitlines()[0]}"
        if not self.slack_connected():
            return False, "not connected to Slack (Socket Mode)"
        if self.scheduler is None or not getattr(self.scheduler, "running", True):
            return False, "scheduler not running"
        return True, "ok"


class ScopedSocketModeHandler(SocketModeHandler):
    """Bolt's Socket Mode handler, handling each envelope in a copy of the current context, so
    what Bolt sets while handling it (the request id, see ``bot.logs.slack_request_ids``) ends
    with it instead of staying on the pooled worker thread for the next envelope."""

    def handle(self, client, req) -> None:  # noqa: ANN001 - Bolt's signature
        contextvars.copy_context().run(super().handle, client, req)


def _join(thread: threading.Thread, deadline: float) -> bool:
    thread.join(max(0.0, deadline - time.monotonic()))
    return not thread.is_alive()


class SlackBot:
    """The bot with Slack: build it, :meth:`start` it, :meth:`stop` it (what SIGTERM does).

    ``rt`` is the Runtime (its ``chat`` a SlackChat); ``bolt`` the Bolt app built on it;
    ``metrics`` the registry ``/metrics`` serves. ``host`` is where the HTTP servers bind.
    """

    def __init__(
        self, settings: Settings, rt: Runtime, bolt: Any, metrics: BotMetrics, *, host: str = "0.0.0.0"
    ):
        self.settings = settings
        self.rt = rt
        self.bolt = bolt
        self.metrics = metrics
        self.host = host
        self.socket_mode: Any = None
        self.readiness = Readiness(rt.store, self._slack_connected)
        self.servers: list[HttpServer] = []
        self.scheduler: Any = None

    def _slack_connected(self) -> bool:
        return self.socket_mode is None or bool(self.socket_mode.client.is_connected())

    @property
    def url(self) -> str:
        """Base URL of the first HTTP server (``/slack/events`` is there in HTTP mode)."""
        return self.servers[0].url

    def start(self) -> "SlackBot":
        """Settle requests a previous process left half-done, then serve Slack, the probes and
        the metrics, then start the scheduled jobs. Raises OSError when a port cannot be bound
        and SystemExit when the Slack mode's secret is missing."""
        s = self.settings
        # A lone replica is the only actor, so whatever is still mid-action was its previous
        # life's; with several, one may be acting right now, so only long-stale ones count.
        stale = ABANDONED_AFTER_SECONDS if s.leader_election.enabled else 0.0
        counts = Approvals(self.rt).recover(self.rt.clock(), older_than_seconds=stale, why="The bot restarted")
        if counts:
            log.warning("settled requests interrupted by the last shutdown: %s", counts, extra={"recovered": counts})
        probes = wsgi_app(None, metrics=self.metrics, ready=self.readiness)
        if s.slack.mode == "socket":
            if not s.slack_app_token:
                raise SystemExit("slack.mode is socket but SLACK_APP_TOKEN is not set")
            self.servers.append(serve_http(probes, self.host, s.server.port))
            self.socket_mode = ScopedSocketModeHandler(self.bolt, s.slack_app_token.get_secret_value())
            self.socket_mode.connect()
            log.info("connected to Slack in Socket Mode")
        else:
            if not s.slack_signing_secret:
                raise SystemExit("slack.mode is http but SLACK_SIGNING_SECRET is not set")
            events = wsgi_app(
                self.bolt, metrics=self.metrics, ready=self.readiness,
                accepting=lambda: not self.readiness.stopping.is_set(),
            )
            self.servers.append(serve_http(events, self.host, s.slack.http_port))
            if s.server.port != s.slack.http_port:
                self.servers.append(serve_http(probes, self.host, s.server.port))
        from bot.scheduler import start_background

        self.scheduler = start_background(self.rt, s)
        self.readiness.scheduler = self.scheduler
        return self

    def stop(self) -> dict[str, int]:
        """Drain and stop within ``server.shutdown_grace_seconds``: not ready and no new Slack
        requests, no new actions, the scheduler stopped after its running job, actions in flight
        finished, or settled from the cluster's state when the grace runs out. Returns the
        counts of such settled requests by the state they moved to (empty when all finished)."""
        grace = self.settings.server.shutdown_grace_seconds
        deadline = time.monotonic() + grace
        self.readiness.stopping.set()
        self.rt.inflight.close()
        if self.socket_mode is not None:
            try:
                self.socket_mode.close()
            except Exception as e:  # noqa: BLE001 - a broken websocket must not stop the drain
                log.warning("closing the Socket Mode connection failed: %s", e)
        stopper = None
        if self.scheduler is not None:
            stopper = threading.Thread(target=self.scheduler.shutdown, kwargs={"wait": True}, name="scheduler-stop", daemon=True)
            stopper.start()
        unfinished = self.rt.inflight.wait(max(0.0, deadline - time.monotonic()))
        settled: dict[str, int] = {}
        if unfinished:
            log.warning("%d action(s) still running after %g s; recording them from the cluster", len(unfinished), grace)
            settled = Approvals(self.rt).recover(
                self.rt.clock(), older_than_seconds=0, request_ids=unfinished,
                why=f"The bot shut down ({grace:g} s grace period over)", force=True,
            )
        if stopper is not None and not _join(stopper, deadline):
            log.warning("the running scheduled job did not finish within %g s; stopping anyway", grace)
        for server in self.servers:
            server.shutdown()
        log.info("stopped", extra={"settled": settled} if settled else None)
        return settled


def build_slack_bot(
    settings: Settings,
    *,
    cluster_state: Path | None = None,
    telemetry_file: Path | None = None,
    clock: Callable[[], Any] = utc_now,
    host: str = "0.0.0.0",
) -> SlackBot:
    """A :class:`SlackBot` for ``settings`` (not started): Web API client, metrics, Runtime and
    Bolt app. Raises SystemExit when ``SLACK_BOT_TOKEN`` is not set."""
    from bot.app import build_app
    from bot.slack_chat import SlackChat, UserGroups, web_client
    from bot.wiring import build_runtime

    if not settings.slack_bot_token:
        raise SystemExit("SLACK_BOT_TOKEN is not set; `gpu-cost-bot check` lists what is missing")
    metrics = BotMetrics()
    client = web_client(settings.slack_bot_token.get_secret_value(), settings.slack.base_url)
    rt = build_runtime(
        settings, chat=SlackChat(client, metrics), cluster_state=cluster_state, telemetry_file=telemetry_file,
        group_members=UserGroups(client, metrics=metrics).members, clock=clock, metrics=metrics,
    )
    secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
    bolt = build_app(rt, client, secret, alert_snooze_seconds=settings.alerts.snooze_seconds)
    return SlackBot(settings, rt, bolt, metrics, host=host)


def _on_signal(stop: threading.Event) -> Callable[[int, Any], None]:
    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if stop.is_set():
            log.warning("%s again: already shutting down", name)
        else:
            log.info("%s: shutting down", name)
        stop.set()

    return handler


def serve(settings: Settings, *, chat: str, cluster_state: Path | None, telemetry_file: Path | None) -> None:
    """Run until SIGTERM/SIGINT (call from the main thread). ``chat`` is ``slack`` (Socket Mode or
    HTTP per ``slack.mode``, see :class:`SlackBot`) or ``console`` (a prompt on this terminal,
    until end of input)."""
    if chat == "console":
        from bot.console import ConsoleSession
        from bot.scheduler import start_background
        from bot.wiring import build_runtime

        rt = build_runtime(settings, cluster_state=cluster_state, telemetry_file=telemetry_file, metrics=BotMetrics())
        Approvals(rt).recover(rt.clock(), older_than_seconds=0)
        scheduler = start_background(rt, settings)
        try:
            ConsoleSession(rt, user="UCONSOLE", out=sys.stdout).loop()
        finally:
            scheduler.shutdown(wait=True)
        return

    bot = build_slack_bot(settings, cluster_state=cluster_state, telemetry_file=telemetry_file)
    stop = threading.Event()
    # Installed for the whole run, drain included: a second signal is logged, not fatal.
    previous = {sig: signal.signal(sig, _on_signal(stop)) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        bot.start()
        log.info("gpu-cost-bot running (Slack %s mode, dry_run=%s)", settings.slack.mode, settings.dry_run)
        while not stop.wait(1.0):  # a timed wait, so the handler's Event is seen promptly
            pass
    finally:
        try:
            bot.stop()
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)
