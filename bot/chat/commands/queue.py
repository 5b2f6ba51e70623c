"""``/gpu queue [team]``: Kueue's queues, who waits for which GPUs, and where they sit idle."""

from __future__ import annotations

from collections.abc import Sequence

from actions.alerts.alert import gpus_text
from actions.kueue.queues import QueueReport, wait_sentence
from actions.sources.kube.reader import ClusterReadError
from bot.chat import blocks
from bot.chat.blocks.fit import fit_blocks, fit_rows, more_line
from bot.chat.commands.context import CommandContext, Reply, UsageError, cluster_arg
from bot.runtime.chat import Message
from bot.runtime.queue_starts import QueueStarts
from bot.runtime.runtime import UnknownCluster

NAME = "queue"
SUMMARY = "pending and admitted Kueue Workloads per LocalQueue and ClusterQueue, and idle GPUs of the same type"
EXAMPLE = "/gpu queue research"
CLUSTER_EXAMPLE = "/gpu queue research --cluster gpu-west"

HINT = "name a team: `/gpu queue <team>`"


def _wait(seconds: float | None) -> str:
    return "nothing pending" if seconds is None else f"oldest pending {blocks.duration(seconds)}"


def report_message(report: QueueReport, api_version: str | None, team: str | None, cluster: str = "") -> Message:
    """The answer as Block Kit: one section per ClusterQueue with its LocalQueues, then who waits
    and what idles elsewhere; ``cluster`` (one of several) is named in the heading."""
    scope = f" for team {team}" if team else ""
    where = f" in cluster {cluster}" if cluster else ""
    heading = f"Kueue queues{scope}{where}"
    title = blocks.plain(heading)
    if api_version is None:
        text = f"{title}: Kueue is not installed on this cluster (no kueue.x-k8s.io API)."
        return Message(text=text, blocks=[blocks.section(text)])
    if not report.local_queues:
        text = f"{title}: no GPU Workloads pending or admitted."
        return Message(text=text, blocks=[blocks.section(text)])
    sections: list[dict] = []
    for cq in report.cluster_queues:
        flavors = f" (GPU flavors {blocks.plain(', '.join(cq.flavors))})" if cq.flavors else ""
        lines = [
            f"*ClusterQueue {blocks.plain(cq.name)}*{flavors}: {len(cq.admitted)} admitted · "
            f"{gpus_text(cq.admitted_gpus)}, "
            f"{len(cq.pending)} pending · {gpus_text(cq.pending_gpus)}, {_wait(cq.oldest_pending_seconds)}"
        ]
        for lq in (q for q in report.local_queues if (q.cluster_queue or cq.name) == cq.name):
            lines.append(
                f"• LocalQueue {blocks.plain(f'{lq.namespace}/{lq.name}')} (team {blocks.plain(lq.team)}): "
                f"{len(lq.admitted)} admitted · "
                f"{gpus_text(lq.admitted_gpus)}, {len(lq.pending)} pending · {gpus_text(lq.pending_gpus)}, "
                f"{_wait(lq.oldest_pending_seconds)}"
            )
            for p in lq.pending[:5]:
                w = p.workload
                asks = blocks.plain(f"{w.gpus} × {p.gpu_family or 'GPU'}" + (f" ({', '.join(p.flavors)})" if p.flavors else ""))
                where = f", {blocks.plain(p.position_text)}" if p.position_text else ""
                start = report.starts.get(w.uid)
                starts = f"; starts {blocks.plain(start.text())}" if start else ""
                lines.append(f"    ◦ {blocks.plain(w.name)} waits {blocks.duration(p.waiting_seconds)}, asks {asks}{where}{starts}")
                if start and start.admitting:
                    lines.append(f"        {blocks.plain(start.admitting.sentence())}")
            if len(lq.pending) > 5:
                lines.append(f"    ◦ … and {len(lq.pending) - 5} more pending")
        sections += [blocks.section(t) for t in fit_rows(lines[1:], max_sections=1, title=lines[0], hint=HINT)]
    context = [
        blocks.plain(wait_sentence(p, report.idle_elsewhere[p.workload.uid]))
        for p in report.pending
        if p.workload.uid in report.idle_elsewhere
    ]
    tail: list[dict] = []
    if context:
        rows = [f"• {c}" for c in context]
        tail.append(blocks.section(fit_rows(rows, max_sections=1, title="*Idle elsewhere*", hint=HINT)[0]))
    tail.append(
        blocks.context(
            f"Workloads read as {blocks.plain(api_version)} at {blocks.short_time(report.at)}. "
            "A pending Workload's ClusterQueue is its LocalQueue's spec.clusterQueue, its flavors those the ClusterQueue "
            "offers for GPUs (GPU model from the ResourceFlavor's nodeLabels), its position Kueue's visibility API's. "
            "A start is a range: the runs ahead and running lasting their LocalQueue's p50, then p90, in the usage ledger."
        )
    )
    pending = len(report.pending)
    text = f"{title}: {pending} pending Workload(s) in {len(report.local_queues)} LocalQueue(s)"
    out = fit_blocks([blocks.header(heading[: -len(where)] if where else heading, where)], sections, tail,
                     lambda n: blocks.section(more_line(n, "more ClusterQueues", HINT)))
    return Message(text=text, blocks=out)


def fleet_message(answers: Sequence[tuple[str, Message | str]]) -> Message:
    """The answer of a bot of several clusters: each cluster's :func:`report_message` in turn,
    or, for a cluster that could not be read, a line saying why (``(cluster, why)``). Slack
    takes 50 blocks per message: a cluster whose blocks no longer fit is left out whole and named
    in a last line, with the command that shows it."""
    out: list[dict] = []
    texts, left_out = [], []
    for cluster, answer in answers:
        if isinstance(answer, str):
            line = f"Kueue queues in cluster {blocks.plain(cluster)}: I could not read the cluster: {blocks.plain(answer)}"
            part, text = [blocks.section(line)], line
        else:
            part, text = answer.blocks, answer.text
        if left_out or len(out) + len(part) > blocks.MESSAGE_BLOCKS - 1:
            left_out.append(cluster)
            continue
        out += part
        texts.append(text)
    if left_out:
        names = ", ".join(blocks.plain(c) for c in left_out)
        out.append(blocks.section(f"… and {len(left_out)} more clusters ({names}): `/gpu queue --cluster {blocks.plain(left_out[0])}`"))
    return Message(text="; ".join(texts), blocks=out)


def handle(args: str, ctx: CommandContext) -> Reply:
    """``/gpu queue [team] [--cluster NAME]``: one cluster's queues (the only one, or the one
    named); with several clusters and none named, every cluster's, each in its own section, one
    that cannot be read named with why."""
    args, cluster = cluster_arg(args, CLUSTER_EXAMPLE)
    parts = args.split()
    if len(parts) > 1:
        raise UsageError(f"`/gpu queue` takes at most one team name, got {len(parts)} words.", EXAMPLE)
    rt = ctx.rt
    if rt is None:
        return Reply(blocks.error_message("`/gpu queue` needs the running bot's cluster connection."))
    # An unconfigured name is still a team: each namespace in no configured team is its own.
    team = parts[0] if parts else None
    now = rt.clock()
    if rt.clusters and cluster is None:
        answers: list[tuple[str, Message | str]] = []
        for name in rt.cluster_names():
            try:
                snapshot, _, report = QueueStarts(rt).read_queues(now, team=team, cluster=name)
            except ClusterReadError as e:
                answers.append((name, str(e)))
                continue
            answers.append((name, report_message(report, snapshot.workload_api_version, team, name)))
        return Reply(fleet_message(answers))
    try:
        snapshot, _, report = QueueStarts(rt).read_queues(now, team=team, cluster=cluster)
    except UnknownCluster as e:
        raise UsageError(blocks.plain(str(e)), f"/gpu queue --cluster {rt.cluster_names()[0]}") from None
    except ClusterReadError as e:
        return Reply(blocks.error_message(f"I could not read the cluster: {blocks.plain(e)}"))
    return Reply(report_message(report, snapshot.workload_api_version, team, cluster or ""))
