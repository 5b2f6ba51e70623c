"""The running process from a Runtime and the settings: Slack (Socket Mode or HTTP) or the
console, the worker pools, housekeeping, the scheduler, and serving until SIGTERM.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actions.model.times import utc_now
from actions.store.database import Store
from bot.chat.console import ConsoleSession
from bot.chat.messages import MessageSync
from bot.chat.proposals import Proposals
from bot.chat.verify import Verifier
from bot.runtime.runtime import Runtime
from bot.service.http import HttpOptions
from bot.service.metrics import BotMetrics
from bot.service.process import Process, exit_now, run_until_signalled
from bot.service.work import Periodic, WorkerPool
from bot.settings import Settings
from bot.wiring.jobs import background_for
from bot.wiring.runtime import build_runtime, cluster_caches, keep_alive_to_exit

if TYPE_CHECKING:
    # Imported where they are used: Slack's SDK and the digests' charts (matplotlib) are a second
    # of start-up that `sweep --once`, `check` and the console never use, APScheduler's
    # schedulers a tenth that a one-shot sweep never starts.
    from bot.chat.slack.app import SlackWork


log = logging.getLogger(__name__)


# --- the process -----------------------------------------------------------------------------------


def slack_work(settings: Settings, metrics: BotMetrics | None = None) -> SlackWork:
    """The worker pools of the Slack listeners, sized by ``server``; ``metrics`` counts what
    they refuse."""
    from bot.chat.slack.app import SlackWork

    s = settings.server
    refused = metrics.work_refused_by if metrics is not None else None
    return SlackWork(
        commands=WorkerPool("commands", s.command_workers, s.command_queue, refused),
        presses=WorkerPool("presses", s.press_workers, s.press_queue, refused),
        replies=WorkerPool("replies", 2, 64),
    )


def housekeeping(rt: Runtime, settings: Settings) -> Callable[[], None]:
    """One round of what every replica does every ``server.housekeeping_seconds``: settle actions
    whose outcome is unknown, verify what done actions did (:mod:`bot.chat.verify`), then write
    the messages that do not show their request's state."""
    proposals = Proposals(rt)
    verifier = Verifier(rt)
    messages = MessageSync(rt, recent_days=settings.slack.sync_recent_days)

    def round_() -> None:
        now = rt.clock()
        settled = proposals.settle(now)
        if set(settled) - {"waiting"}:
            log.info("housekeeping: settled %s", settled)
        verified = verifier.run(now)
        if set(verified) - {"waiting"}:
            log.info("housekeeping: verified %s", verified)
        synced = messages.sync_due(now)
        if synced["synced"] or synced["failed"]:
            log.info("housekeeping: messages %s", synced)

    return round_


def seen_once(store: Store) -> Callable[[Sequence[str], float], bool]:
    """The front's claim of a Slack request (its keys, until Unix seconds) in ``store``, shared
    by every replica; judged by the wall clock, as Slack's timestamps are."""
    def first_sight(keys: Sequence[str], until: float) -> bool:
        return store.first_sight(keys, utc_now(), datetime.fromtimestamp(until, timezone.utc))
    return first_sight


def slack_process(
    settings: Settings, rt: Runtime, bolt: Any, metrics: BotMetrics, *, host: str = "0.0.0.0",
    work: SlackWork | None = None,
) -> Process:
    """The bot with Slack, not started: HTTP mode serves ``/slack/events`` on ``slack.http_port``,
    Socket Mode connects with ``SLACK_APP_TOKEN``; the probes and metrics are on ``server.port``;
    ``work`` (the listeners' pools) is cancelled by a shutdown. Raises SystemExit when the mode's
    secret is missing."""
    from bot.chat.slack.front import SocketModeConnection, events_route

    s = settings
    proposals = Proposals(rt)
    if s.slack.mode == "socket":
        if not s.slack_app_token:
            raise SystemExit("slack.mode is socket but SLACK_APP_TOKEN is not set")
        front: dict[str, Any] = {"connection": SocketModeConnection(bolt, s.slack_app_token.get_secret_value())}
    else:
        if not s.slack_signing_secret:
            raise SystemExit("slack.mode is http but SLACK_SIGNING_SECRET is not set")
        secret = s.slack_signing_secret.get_secret_value()
        front = {"mounted": events_route(
            bolt, secret, max_body_bytes=s.server.max_body_bytes, first_sight=seen_once(rt.store),
            clock_skew_seconds=s.slack.clock_skew_seconds,
        )}
    server = s.server
    return Process(
        store=rt.store, inflight=rt.inflight, metrics=metrics,
        start_background=lambda: background_for(rt, s),
        # Only requests past their deadline: a patch another replica (or a previous life) sent
        # may still land before it, and the housekeeping reads those back once it passes.
        recover=lambda: proposals.settle(rt.clock(), why="The bot restarted"),
        settle=lambda ids, why: proposals.interrupted(ids, rt.clock(), why),
        events_port=s.slack.http_port, probe_port=server.port,
        grace_seconds=server.shutdown_grace_seconds, host=host,
        http=HttpOptions(threads=server.http_threads, backlog=server.backlog, max_body_bytes=server.max_body_bytes),
        pools=work.pools if work is not None else (),
        housekeeping=housekeeping(rt, s), housekeeping_seconds=server.housekeeping_seconds,
        watches=cluster_caches(rt),
        **front,
    )


def build_slack_process(
    settings: Settings,
    *,
    cluster_state: Path | None = None,
    telemetry_file: Path | None = None,
    clock: Callable[[], datetime] = utc_now,
    host: str = "0.0.0.0",
) -> Process:
    """:func:`slack_process` with its Web API client, metrics, Runtime and Bolt app. Raises
    SystemExit when ``SLACK_BOT_TOKEN`` is not set."""
    from bot.chat.slack.app import build_app
    from bot.chat.slack.web import SlackChat, UserGroups, web_client

    if not settings.slack_bot_token:
        raise SystemExit("SLACK_BOT_TOKEN is not set; `gpu-cost-bot check` lists what is missing")
    metrics = BotMetrics(clusters=[t.name for t in settings.cluster_targets()])
    client = web_client(settings.slack_bot_token.get_secret_value(), settings.slack.base_url)
    rt = build_runtime(
        settings, chat=SlackChat(client, metrics), cluster_state=cluster_state, telemetry_file=telemetry_file,
        group_members=UserGroups(client, metrics=metrics).members, clock=clock, metrics=metrics, watch=True,
    )
    secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
    work = slack_work(settings, metrics)
    bolt = build_app(rt, client, secret, alert_snooze_seconds=settings.alerts.snooze_seconds, work=work)
    return slack_process(settings, rt, bolt, metrics, host=host, work=work)


CONSOLE_CHANNEL = "#console"


def serve(
    settings: Settings, *, chat: str, cluster_state: Path | None, telemetry_file: Path | None, user: str = "UCONSOLE"
) -> None:
    """Run until SIGTERM/SIGINT (call from the main thread). ``chat`` is ``slack`` (Socket Mode or
    HTTP per ``slack.mode``) or ``console``: a prompt on this terminal, until end of input, where
    ``user`` (a Slack user id; an approver from the config may approve) presses the buttons and
    teams without a channel are posted to :data:`CONSOLE_CHANNEL`."""
    if chat == "console":
        if not settings.slack.default_channel:
            settings = settings.model_copy(update={"slack": settings.slack.model_copy(update={"default_channel": CONSOLE_CHANNEL})})
        rt = build_runtime(settings, cluster_state=cluster_state, telemetry_file=telemetry_file, watch=True,
                           metrics=BotMetrics(clusters=[t.name for t in settings.cluster_targets()]))
        keep_alive_to_exit()
        Proposals(rt).settle(rt.clock(), why="The bot restarted")
        caches = [c.start() for c in cluster_caches(rt)]
        background = background_for(rt, settings)
        keeper = Periodic("housekeeping", settings.server.housekeeping_seconds, housekeeping(rt, settings)).start()
        try:
            ConsoleSession(rt, user=user, out=sys.stdout, alert_snooze_seconds=settings.alerts.snooze_seconds).loop()
        finally:
            keeper.stop()
            background.shutdown(wait=True)
            for cache in caches:
                cache.stop()
        return

    process = build_slack_process(settings, cluster_state=cluster_state, telemetry_file=telemetry_file)
    keep_alive_to_exit()

    def start() -> None:
        process.start()
        log.info("gpu-cost-bot running (Slack %s mode, dry_run=%s)", settings.slack.mode, settings.dry_run)

    run_until_signalled(start, process.stop)
    # The drain is over; threads still running (a cost report's query) must not hold the exit.
    exit_now(0)
