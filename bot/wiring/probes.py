"""What ``gpu-cost-bot check --connect`` reaches and reports: each cluster's Prometheus and API
server, and the database, each probe a line that says what the service holds (or raises)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from actions.model.times import utc_now
from actions.text import shown_url
from bot.settings import Settings
from bot.settings.clusters import ClusterTarget


def cluster_probes(s: Settings) -> list[tuple[str, Callable[[], str]]]:
    """``(what, probe)`` for every cluster's Prometheus and API server, the first cluster first:
    ``Prometheus at URL`` and ``Kubernetes API`` for a bot of one cluster, each prefixed with
    ``cluster NAME:`` (and the label it matches) for a bot of several."""
    out: list[tuple[str, Callable[[], str]]] = []
    for t in s.cluster_targets():
        scope = f" ({t.scope[0]}={t.scope[1]!r})" if t.scope else ""
        who = f"cluster {t.name}: " if s.clusters else ""
        out.append((f"{who}Prometheus at {shown_url(t.prometheus_url)}{scope}", lambda t=t: prometheus_holds(s, t)))
        out.append((f"{who}Kubernetes API", lambda t=t: kubernetes_holds(s, t)))
    return out


def prometheus_holds(s: Settings, target: ClusterTarget) -> str:
    """How many DCGM and kube-state-metrics series ``target``'s Prometheus holds now (narrowed to
    its label on a shared endpoint), with a ``missing:`` line per family the bot needs and lacks.
    Raises TelemetryError when Prometheus cannot be reached or refuses."""
    from actions.model.telemetry import ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE
    from actions.sources.prometheus.api import PrometheusApi, series_counts

    api = PrometheusApi(target.prometheus_url, target.headers, verify_tls=s.prometheus.verify_tls,
                        timeout_seconds=s.prometheus.timeout_seconds, attempts=1, scope=target.scope,
                        max_response_bytes=s.prometheus.max_response_bytes)
    n = series_counts(api, utc_now())
    held = (
        f"DCGM {n[ENGINE_ACTIVE]} {ENGINE_ACTIVE}, {n[GPU_UTIL]} {GPU_UTIL}, {n[POWER_USAGE]} {POWER_USAGE}; "
        f"kube-state-metrics {n['kube_pod_info']} kube_pod_info, {n['kube_node_labels']} kube_node_labels, "
        f"{n['kube_namespace_labels']} kube_namespace_labels"
    )
    missing = []
    if not (n[ENGINE_ACTIVE] or n[GPU_UTIL]) or not n[POWER_USAGE]:
        missing.append("no DCGM activity or power series: install dcgm-exporter and let Prometheus scrape it")
    if not n["kube_pod_info"]:
        missing.append("no kube-state-metrics series: install kube-state-metrics (reports need it)")
    return held + "".join(f"\n  missing: {m}" for m in missing)


def kubernetes_holds(s: Settings, target: ClusterTarget) -> str:
    """What ``target``'s API server holds: GPU nodes and GPUs, GPU pods, Notebooks, Kueue's
    served version. Raises ClusterConfigError without a usable kubeconfig, ClusterReadError when
    the API server cannot be read."""
    from actions.sources.kube.reader import KubernetesSource, load_kube_config

    api = load_kube_config(target.kubeconfig, target.context, max_response_bytes=s.kubernetes.max_response_bytes)
    k = s.kubernetes
    snap = KubernetesSource(api, page_size=k.page_size, timeout_seconds=k.timeout_seconds).snapshot(utc_now())
    gpu_nodes = [n for n in snap.nodes.values() if n.gpu_capacity]
    kueue = f"Kueue {snap.workload_api_version} ({len(snap.workloads)} Workloads)" if snap.workload_api_version else "no Kueue"
    return (
        f"{api.configuration.host}: {len(gpu_nodes)} GPU node(s) with {sum(n.gpu_capacity for n in gpu_nodes)} GPUs, "
        f"{len(snap.pods)} GPU pod(s), {len(snap.notebooks)} Notebook(s), {kueue}"
    )


def database_holds(s: Settings) -> str:
    """Where the database's schema stands against the newest migration. Raises SQLAlchemyError
    when the database cannot be reached."""
    from actions.store.database import Store

    store = Store(s.database_url)
    if store.url.get_backend_name() == "sqlite" and store.url.database and not Path(store.url.database).exists():
        return f"{store.url.database} does not exist yet; `gpu-cost-bot migrate` (or `run`) creates it"
    try:
        applied, newest = store.schema_status()
    finally:
        store.close()
    if applied == newest:
        return f"{store.url.render_as_string(hide_password=True)}: schema at {applied}, the newest"
    return (f"{store.url.render_as_string(hide_password=True)}: schema at {applied or 'nothing'}, newest {newest}; "
            "`gpu-cost-bot migrate` (or `run`) brings it up")
