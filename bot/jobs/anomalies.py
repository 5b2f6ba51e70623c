"""The spend-anomaly job: every ``ledger.interval_seconds`` (the rollup's own pace), each ledger
hour written in the last ``anomalies.lookback_hours`` and not yet judged is judged
(:func:`actions.alerts.anomalies.judge_hour`) and its alerts and recovery notes posted to the
team's channel and the admin channel. So an hour the rollup writes is judged within minutes of
being written; hours a backfill fills further back are not news and are left alone.

Once, across replicas and restarts: each (cluster, hour) is claimed as the job run
``spend-anomalies:<cluster>`` of that hour (:meth:`~actions.store.database.Store.claim_job_run`)
before it is read, and each alert and recovery as a store fact (``spend-anomaly:<cluster>:<scope>@<hour>``,
:meth:`~actions.store.database.Store.record_fact`, first writer wins) before it is posted. An
episode's alert is keyed by its first hour and its recovery by its first normal hour, so the hours
in between post nothing. A claimed message whose post fails is audited (``anomaly-post-failed``),
not posted again.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from actions.alerts.alert import Alert, in_cluster
from actions.alerts.anomalies import (
    HOUR,
    SPEND_ANOMALY,
    WEEK,
    Judgement,
    SpendSeries,
    baseline_hours,
    judge_hour,
    spend_lines,
)
from actions.model.times import floor_hour, utc_now
from actions.policy.teams import TeamDirectory
from actions.pricing.book import PriceBook
from actions.store.database import Store
from actions.store.ledger_hours import LedgerHours
from actions.text import one_line, plain
from bot.chat.blocks import context, header, section, short_time
from bot.runtime.chat import Chat, ChatError, Message
from bot.settings.anomalies import AnomalySettings

log = logging.getLogger(__name__)

JOB_ID = "spend-anomalies"
SYSTEM = "system"
EVENT_TYPE = "gpu_spend_anomaly"
# How far back a recovery note looks for its episode's alert, to say when it began.
EPISODE_LOOKBACK_HOURS = 48


@dataclass
class AnomalyRun:
    """What one run did: the (cluster, hour) pairs ``judged``, and the messages ``posted``
    (alerts and recoveries, one per scope however many channels), ``duplicate`` (claimed before)
    and ``unposted`` (claimed, not posted)."""

    judged: list[tuple[str, datetime]] = field(default_factory=list)
    posted: list[Alert] = field(default_factory=list)
    duplicate: int = 0
    unposted: int = 0


def anomaly_message(alert: Alert, episode: str | None = None) -> Message:
    """The channel message of a spend anomaly or its recovery: title, text, contributors, and
    where it comes from. ``episode``: a line on the episode a recovery ends."""
    icon = ":chart_with_upwards_trend:" if alert.kind == SPEND_ANOMALY else ":white_check_mark:"
    first, *rest = alert.text.split("\n")
    blocks = [header(alert.title), section(f"{icon} {first}")]
    if episode:
        blocks.append(section(episode))
    if alert.fields:
        blocks.append({"type": "section", "fields": [
            {"type": "mrkdwn", "text": f"*{plain(label)}*\n{value}"[:2000]} for label, value in alert.fields[:10]
        ]})
    notes = [*rest, f"{alert.kind} · team {plain(alert.team)} · {plain(alert.period_key)}. From the usage ledger, "
             "priced with today's prices."]
    blocks.append(context(*notes))
    return Message(text=plain(alert.title), blocks=blocks,
                   metadata={"event_type": EVENT_TYPE, "event_payload": {"kind": alert.kind, "key": alert.period_key}})


@dataclass
class AnomaliesJob:
    """The spend anomalies of ``clusters`` (their names in the ledger; the first is the home one,
    whose alerts carry no cluster's name when it is the only one), priced with ``prices``, teams
    from ``teams`` (``team_label``: ``costs.team_label``), claimed in ``store`` as ``holder``,
    posted through ``chat`` to each team's channel and ``admin_channel``."""

    store: Store
    chat: Chat
    teams: TeamDirectory
    prices: PriceBook
    settings: AnomalySettings
    clusters: Sequence[str]
    holder: str
    team_label: str | None = "team"
    admin_channel: str | None = None
    clock: Callable[[], datetime] = utc_now

    def __post_init__(self) -> None:
        self.ledger = LedgerHours(self.store)

    def judge(self, cluster: str, hour: datetime, now: datetime) -> Judgement:
        """Read the hours a judgement of ``cluster``'s ``hour`` needs and judge it (no claim, no post)."""
        rule = self.settings.rule()
        held = self.ledger.held_of(cluster, baseline_hours(hour, rule.weeks))
        lines = spend_lines(self.ledger.requested(cluster, held), self.prices, self.teams, self.team_label)
        by_hour: dict[datetime, list] = {h: [] for h in held}
        for x in lines:
            by_hour[x.hour].append(x)
        first = (hour - WEEK * rule.weeks - timedelta(days=1)).date()
        series = SpendSeries(by_hour, self.ledger.first_days(cluster, first, hour.date()))
        return judge_hour(series, hour, now, rule)

    def run(self, now: datetime) -> AnomalyRun:
        """Judge each written hour of each cluster in the lookback not judged before, oldest
        first, and post what it gives. Raises RuntimeError naming the clusters that failed,
        after the others are done."""
        out = AnomalyRun()
        failed: list[str] = []
        end = floor_hour(now)
        for cluster in self.clusters:
            try:
                hours = self.ledger.held(cluster, end - HOUR * self.settings.lookback_hours, end)
                for hour in hours:
                    self._hour(cluster, hour, now, out)
            except Exception as e:  # noqa: BLE001 - one cluster's failure must not silence the others
                log.exception("spend anomalies: cluster %s failed at %s", cluster, now.isoformat())
                failed.append(f"cluster {cluster}: {one_line(e)}")
        log.info("spend anomalies at %s: judged %d hour(s), posted %d, duplicate %d, unposted %d",
                 now.isoformat(), len(out.judged), len(out.posted), out.duplicate, out.unposted)
        if failed:
            raise RuntimeError(f"spend anomalies at {now.isoformat()}: " + "; ".join(failed))
        return out

    def _hour(self, cluster: str, hour: datetime, now: datetime, out: AnomalyRun) -> None:
        run_id = self.store.claim_job_run(f"{JOB_ID}:{cluster}", hour, self.holder, now)
        if run_id is None:
            return  # judged before, here or by another replica
        try:
            judgement = self.judge(cluster, hour, now)
            for alert in (*judgement.alerts, *judgement.recoveries):
                self._post(cluster, alert, now, out)
        except Exception as e:
            self.store.finish_job_run(run_id, "error", self.clock(), one_line(e))
            raise
        self.store.finish_job_run(run_id, "ok", self.clock(), None if judgement.judged else "no baseline week held")
        out.judged.append((cluster, hour))

    def _fact(self, cluster: str, kind: str, key: str) -> str:
        return f"{kind}:{cluster}:{key}"

    def _episode(self, cluster: str, alert: Alert) -> str | None:
        """When the episode a recovery ends began, from its alert's claim."""
        scope, _, at = alert.period_key.rpartition("@")
        hour = datetime.strptime(at, "%Y-%m-%dT%H:00Z").replace(tzinfo=timezone.utc)
        for k in range(1, EPISODE_LOOKBACK_HOURS + 1):
            start = hour - HOUR * k
            if self.store.fact(self._fact(cluster, SPEND_ANOMALY, f"{scope}@{start.strftime('%Y-%m-%dT%H:00Z')}")):
                return f"The episode began in the hour from {short_time(start)}: {k} anomalous hour(s)."
        return None

    def _post(self, cluster: str, alert: Alert, now: datetime, out: AnomalyRun) -> None:
        token = f"{self.holder} {uuid.uuid4().hex}"
        name = self._fact(cluster, alert.kind, alert.period_key)
        if self.store.record_fact(name, token, now).value != token:
            out.duplicate += 1
            return
        episode = None if alert.kind == SPEND_ANOMALY else self._episode(cluster, alert)
        if len(self.clusters) > 1:
            (alert,) = in_cluster([alert], cluster, first=cluster == self.clusters[0])
        channels = [c for c in dict.fromkeys(
            (self.teams.channel_for(self.teams.team_for_name(alert.team)), self.admin_channel)) if c]
        problems = [] if channels else ["the team has no channel and no admin or default channel is configured"]
        message = anomaly_message(alert, episode)
        sent = 0
        for channel in channels:
            try:
                self.chat.post(channel, message)
                sent += 1
            except ChatError as e:
                problems.append(f"{channel}: {e}")
        if sent:
            out.posted.append(alert)
        else:
            out.unposted += 1
        if problems:
            log.warning("%s %s not posted everywhere: %s", alert.kind, alert.period_key, "; ".join(problems))
            self.store.audit(None, actor=SYSTEM, event="anomaly-post-failed", now=now, detail={
                "team": alert.team, "kind": alert.kind, "key": alert.period_key, "reasons": problems})

    def scheduled(self, scheduled_at: datetime) -> None:
        """The scheduler's run: :meth:`run` at ``clock()`` (the hours written by now)."""
        self.run(self.clock())
