"""``/gpu queue [team]``: Kueue's queues, who waits for which GPUs, and where they sit idle."""

from __future__ import annotations

from actions.alerts import gpus_text
from actions.queue import QueueReport, wait_sentence
from actions.sources.kubernetes import ClusterReadError
from bot.chat import Message, blocks
from bot.chat.commands.context import CommandContext, Reply, UsageError, cluster_arg
from bot.chat.runtime import UnknownCluster

NAME = "queue"
SUMMARY = "pending and admitted Kueue Workloads per LocalQueue and ClusterQueue, and idle GPUs of the same type"
EXAMPLE = "/gpu queue research"
CLUSTER_EXAMPLE = "/gpu queue research --cluster gpu-west"

MAX_LINES = 40  # keeps every section well under Slack's 3000 characters


def _wait(seconds: float | None) -> str:
    return "nothing pending" if seconds is None else f"oldest pending {blocks.duration(seconds)}"


def report_message(report: QueueReport, api_version: str | None, team: str | None) -> Message:
    """The answer as Block Kit: one section per ClusterQueue with its LocalQueues, then who waits
    and what idles elsewhere."""
    scope = f" for team {team}" if team else ""
    heading = f"Kueue queues{scope}"
    title = blocks.plain(heading)
    if api_version is None:
        text = f"{title}: Kueue is not installed on this cluster (no kueue.x-k8s.io API)."
        return Message(text=text, blocks=[blocks.section(text)])
    if not report.local_queues:
        text = f"{title}: no GPU Workloads pending or admitted."
        return Message(text=text, blocks=[blocks.section(text)])
    out: list[dict] = [blocks.header(heading)]
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
                lines.append(f"    ◦ {blocks.plain(w.name)} waits {blocks.duration(p.waiting_seconds)}, asks {asks}{where}")
            if len(lq.pending) > 5:
                lines.append(f"    ◦ … and {len(lq.pending) - 5} more pending")
        out.append(blocks.section("\n".join(lines[:MAX_LINES])))
    context = [
        blocks.plain(wait_sentence(p, report.idle_elsewhere[p.workload.uid]))
        for p in report.pending
        if p.workload.uid in report.idle_elsewhere
    ]
    if context:
        out.append(blocks.section("*Idle elsewhere*\n" + "\n".join(f"• {c}" for c in context[:10])))
    out.append(
        blocks.context(
            f"Workloads read as {blocks.plain(api_version)} at {blocks.short_time(report.at)}. "
            "A pending Workload's ClusterQueue is its LocalQueue's spec.clusterQueue, its flavors those the ClusterQueue "
            "offers for GPUs (GPU model from the ResourceFlavor's nodeLabels), its position Kueue's visibility API's."
        )
    )
    pending = len(report.pending)
    text = f"{title}: {pending} pending Workload(s) in {len(report.local_queues)} LocalQueue(s)"
    return Message(text=text, blocks=out[:50])


def handle(args: str, ctx: CommandContext) -> Reply:

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
    try:
        snapshot, _, report = rt.read_queues(now, team=team, cluster=cluster)
    except UnknownCluster as e:
        raise UsageError(blocks.plain(str(e)), f"/gpu queue --cluster {rt.cluster_names()[0]}") from None
    except ClusterReadError as e:
        return Reply(blocks.error_message(f"I could not read the cluster: {blocks.plain(e)}"))
    return Reply(report_message(report, snapshot.workload_api_version, team))
