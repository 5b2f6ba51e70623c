"""What one sweep costs as the cluster grows: decoding pods, reading the cluster, deciding idleness.

For each N in --pods (N pods of about 5.3 KB of JSON each, 20% of them CPU-only) it measures:

1. decoding one PodList response three ways: the ``kubernetes`` client's models
   (``ApiClient.deserialize(text, "V1PodList", "application/json")``, what
   ``list_pod_for_all_namespaces`` does), plain ``json.loads``, and the bot's
   ``kubeobjects.decode_pod_page``. Each run is a fresh, warmed-up subprocess; "MB" is the growth
   of its peak RSS (VmHWM) during the decode, the response bytes being in memory before it.
2. ``KubernetesSource(page_size=500).snapshot()`` through the real client against ``FakeKubeApi``
   serving the N pods (the fake runs in its own process, so its CPU is not counted): the one-off
   client setup, a first and a second snapshot, and the pod list requests per snapshot.
3. ``detect_idle`` over a snapshot of the GPU pods (half notebooks, half Kueue jobs; half of the
   consumers idle): seconds per call and microseconds per pod; growth of the latter with N means
   superlinear behaviour.

Figures are medians of --repeat runs. Run from the repository root:

    python benchmarks/sweep.py [--pods 1000,10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import multiprocessing
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
SOURCE_MAX_PODS = 10000  # part 2 is skipped above this (the fake keeps every object in memory)
_DEMO = json.loads((ROOT / "bot" / "demo_data" / "cluster.json").read_bytes())["items"]
_BASE_POD = next(o for o in _DEMO if o["kind"] == "Pod" and o["metadata"]["name"] == "llm-explore-0")
_BASE_NODE = next(o for o in _DEMO if o["kind"] == "Node")
_SA_VOLUME = {"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    {"downwardAPI": {"items": [{"path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}


def _env(names: list[str], prefix: str) -> list[dict]:
    return [{"name": n, "value": f"{prefix}-{n.lower()}"} for n in names]


def make_pod(i: int, gpu: bool | None = None) -> dict:
    """A pod like a real GPU pod (two containers, env, volumes, tolerations, statuses); every fifth
    is CPU-only unless ``gpu`` says; even ones are Kubeflow notebook pods, odd ones pods of
    Kueue-admitted Jobs."""
    p = copy.deepcopy(_BASE_POD)
    m, spec, status = p["metadata"], p["spec"], p["status"]
    ns, uid = f"team-{i % 40:02d}", f"{i:08x}-710e-540f-ac81-964ffb64d106"
    if i % 2 == 0:
        owner = f"nb-{i:06d}"
        name = f"{owner}-0"
        m["labels"].update({"app": owner, "notebook-name": owner, "statefulset": owner,
                            "statefulset.kubernetes.io/pod-name": name})
        m["ownerReferences"][0].update(name=owner, uid=f"{i:08x}-f074-5a77-a2a9-3a5301b1caa7")
    else:
        owner, name = f"job-{i:06d}", f"job-{i:06d}-worker-0"
        m["labels"] = {"batch.kubernetes.io/job-name": owner, "job-name": owner, "controller-uid": uid,
                       "kueue.x-k8s.io/queue-name": "training-queue", "kueue.x-k8s.io/podset": "main"}
        m["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": owner, "uid": uid,
                                 "controller": True, "blockOwnerDeletion": True}]
    m.update(name=name, namespace=ns, uid=uid, resourceVersion=str(400000 + i))
    main = spec["containers"][0]
    main["name"] = "main"
    if not (i % 5 != 4 if gpu is None else gpu):  # CPU-only
        [main["resources"][key].pop("nvidia.com/gpu") for key in ("limits", "requests")]
    main["env"] += _env(["HF_HOME", "TRANSFORMERS_CACHE", "WANDB_PROJECT", "WANDB_ENTITY", "NCCL_DEBUG",
                         "OMP_NUM_THREADS"], ns) + [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
        {"name": "AWS_SECRET_ACCESS_KEY", "valueFrom": {"secretKeyRef": {"name": "s3-creds", "key": "secret"}}}]
    main["volumeMounts"] = [{"name": "workspace", "mountPath": "/home/jovyan"},
                            {"name": "dshm", "mountPath": "/dev/shm"},
                            {"name": _SA_VOLUME["name"], "readOnly": True,
                             "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
    sidecar = {"name": "log-shipper", "image": "fluent/fluent-bit:3.1.9", "imagePullPolicy": "IfNotPresent",
               "args": ["--config=/fluent-bit/etc/fluent-bit.conf", "--quiet"],
               "env": _env(["LOG_LEVEL", "FLUENT_ELASTICSEARCH_HOST", "CLUSTER_NAME"], ns),
               "resources": {"limits": {"memory": "128Mi"}, "requests": {"cpu": "50m", "memory": "64Mi"}},
               "volumeMounts": [{"name": "fluent-bit-config", "mountPath": "/fluent-bit/etc"}],
               "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
    spec.update(containers=[main, sidecar], nodeName=f"gpu-node-{i // 8:05d}", volumes=[
        {"name": "workspace", "persistentVolumeClaim": {"claimName": f"workspace-{owner}"}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
        {"name": "fluent-bit-config", "configMap": {"name": "fluent-bit-config", "defaultMode": 420}},
        _SA_VOLUME])
    spec["tolerations"].append({"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                "effect": "NoExecute", "tolerationSeconds": 300})
    (statuses := status["containerStatuses"])[0]["name"] = "main"
    statuses.append({**copy.deepcopy(statuses[0]), "name": "log-shipper", "image": sidecar["image"],
                     "imageID": "docker.io/fluent/fluent-bit@sha256:" + "9c1e" * 16})
    status.update(podIP=f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}", hostIP=f"10.0.{i // 8 % 256}.41")
    return p


def pod_list(n: int) -> bytes:
    """A PodList response body (list items carry no kind/apiVersion on the wire)."""
    items = [{k: v for k, v in make_pod(i).items() if k not in ("apiVersion", "kind")} for i in range(n)]
    return json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "500000"},
                       "items": items}).encode()


def _serve_fake(n: int, conn) -> None:
    """Serve the N pods, their H100 nodes (8 pods a node) and the demo's other objects."""
    from tests.support.fakes.kube_api import FakeKubeApi

    nodes = [copy.deepcopy(_BASE_NODE) for _ in range((n + 7) // 8)]
    for k, node in enumerate(nodes):
        node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = f"gpu-node-{k:05d}"
    others = [o for o in _DEMO if o["kind"] not in ("Pod", "Node")]
    with FakeKubeApi([make_pod(i) for i in range(n)] + nodes + others) as fake:
        conn.send(fake.url)
        conn.recv()
        conn.send(sum(r.path == "/api/v1/pods" for r in fake.requests))


def _rss_mb(field: str) -> float:
    """VmRSS / VmHWM of this process in MB. Not ``ru_maxrss``: across exec Linux carries the
    parent's RSS at fork into it, which hides any growth smaller than the parent."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(kind: str, n: int, path: str) -> dict:
    """One measurement in a fresh process: seconds and growth of peak RSS in MB."""
    import kubernetes.client

    from actions.sources.kube.objects import decode_pod_page
    from actions.sources.kube.reader import KubernetesSource

    data, extra = Path(path).read_bytes() if path != "-" else b"", {}
    if kind == "source":
        ctx = multiprocessing.get_context("fork")
        ours, theirs = ctx.Pipe()
        ctx.Process(target=_serve_fake, args=(n, theirs), daemon=True).start()
        client = kubernetes.client.ApiClient(kubernetes.client.Configuration())
        client.configuration.host = ours.recv()
        t0 = time.perf_counter()
        source = KubernetesSource(client, page_size=500)  # builds CoreV1Api etc.: a one-off cost
        extra["setup"] = time.perf_counter() - t0
    api = kubernetes.client.ApiClient()
    decode = {"models": lambda d: api.deserialize(d.decode(), "V1PodList", "application/json").items,
              "json": lambda d: json.loads(d)["items"],
              "msgspec": lambda d: decode_pod_page(d)[0],
              "source": lambda d: source.snapshot(NOW).pods}[kind]
    if kind != "source":
        decode(pod_list(1))  # warm up, as a long-running bot is after its first sweep
    try:  # reset the high-water mark to the current RSS
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    before, t0 = _rss_mb("VmRSS"), time.perf_counter()
    out = decode(data)
    seconds, peak_mb = time.perf_counter() - t0, _rss_mb("VmHWM") - before
    extra["items"] = len(out)
    if kind == "source":
        t0 = time.perf_counter()
        source.snapshot(NOW)
        extra["again"] = time.perf_counter() - t0
        ours.send("done")
        extra["pod_requests"] = ours.recv() // 2  # two snapshots were taken
    return {"seconds": seconds, "peak_mb": peak_mb, **extra}


def oneshot_child(workdir: str, in_process_sweeps: int, at: datetime = NOW) -> dict:
    """``sweep --once`` as the CLI runs it, in this fresh process, with its CPU seconds per phase;
    then ``in_process_sweeps`` more sweeps in the same process (what ``run`` does every
    interval), reading the big kinds from watch caches as ``run`` does. Prints
    nothing itself; the caller times the interpreter's exit."""
    marks: list[tuple[str, float]] = [("interpreter", time.process_time())]

    def mark(name: str) -> None:
        marks.append((name, time.process_time()))

    # As installed in production (`pip install .`): without the test extra's kubernetes-validate,
    # which the kubernetes client's dynamic module imports whenever it is there (1.8 s of
    # jsonschema at import), so the figures are not the test environment's.
    sys.modules["kubernetes_validate"] = None  # type: ignore[assignment]
    import bot.cli.main  # noqa: F401 - the CLI's own imports, as `gpu-cost-bot sweep` pays them
    from bot.settings import load_settings
    from bot.wiring.jobs import sweep_for
    from bot.wiring.runtime import build_runtime, cluster_caches, keep_alive_to_exit

    mark("imports")
    settings = load_settings(Path(workdir) / "bot.yaml")
    keep_alive_to_exit()  # as the CLI does: start-up objects leave the collector's reach
    mark("config")
    sync_cpu = 0.0
    with open(os.devnull, "w") as devnull:
        # As `run` builds it when there are more sweeps: with watch caches, started after the
        # first sweep (which lists, as `sweep --once` does) and synced before the next ones.
        rt = build_runtime(settings, clock=lambda: at, out=devnull, watch=in_process_sweeps > 0)
        keep_alive_to_exit()
        mark("runtime")
        sweeps = [_phased_sweep(rt, sweep_for, at)]
        if in_process_sweeps:
            t0 = time.process_time()
            caches = [c.start() for c in cluster_caches(rt)]
            while not all(c.synced for c in caches):
                time.sleep(0.05)
            sync_cpu = time.process_time() - t0
            sweeps += [_phased_sweep(rt, sweep_for, at) for _ in range(in_process_sweeps)]
            for c in caches:
                c.stop()
    keep_alive_to_exit()
    first = sweeps[0]
    for name, seconds in first["phases"].items():
        marks.append((name, marks[-1][1] + seconds))
    phases = {name: t - marks[k][1] for k, (name, t) in enumerate(marks[1:])}
    phases["interpreter"] = marks[0][1]
    return {"phases": phases, "cpu_before_exit": time.process_time(), "counts": first["counts"],
            "findings": first["findings"], "again": [s["phases"] for s in sweeps[1:]], "sync_cpu": sync_cpu,
            "peak_rss_mb": _rss_mb("VmHWM")}


def _phased_sweep(rt, sweep_for, at: datetime) -> dict:
    """One sweep as ``Sweep.run`` does it (detection, reconcile, the policy's due actions, the
    gauges), with CPU seconds per phase."""
    from actions.detect.detection import detect
    from actions.policy.namespaces import PolicyBook

    phases, t = {}, time.process_time()

    def lap(name: str) -> None:
        nonlocal t
        now_cpu = time.process_time()
        phases[name], t = now_cpu - t, now_cpu

    snapshot = rt.snapshot(at)
    lap("kubernetes")
    book = PolicyBook(rt.policy, rt.teams, snapshot.namespace_annotations)
    fetched = {key: rt.telemetry.fetch(at, p)
               for key, p in book.telemetry_policies({p.namespace for p in snapshot.pods}).items()}
    lap("prometheus")
    found = detect(snapshot, fetched, rt.prices, book, rt.teams, at)
    lap("detect")
    sweep = sweep_for(rt)
    counts = sweep.proposals.reconcile(found.findings, at)
    counts.update(sweep.auto.act_due(at))
    sweep.proposals.refresh_metrics()
    lap("reconcile")
    return {"phases": phases, "counts": counts, "findings": len(found.findings)}


def measure(kind: str, n: int, path: str, repeat: int) -> dict:
    runs = [json.loads(subprocess.run([sys.executable, __file__, "--child", kind, str(n), path], cwd=ROOT,
                                      capture_output=True, text=True, check=True).stdout.splitlines()[-1])
            for _ in range(repeat)]
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def idle_inputs(data: bytes):
    """A snapshot and telemetry for the GPU pods of ``data``: Notebooks and admitted Workloads for
    their owners, H100 nodes, one telemetry series per GPU; half of the consumers idle."""
    from actions.model.kube import CapacityType, Node, Notebook, OwnerRef
    from actions.model.kueue import Workload
    from actions.model.snapshot import ClusterSnapshot
    from actions.model.telemetry import GpuTelemetry, TelemetrySnapshot
    from actions.sources.kube.objects import decode_pod_page

    long_ago = NOW - timedelta(days=1)
    pods = [dataclasses.replace(p, created=long_ago, started=long_ago) for p in decode_pod_page(data)[0]]
    notebooks, workloads, gpus = [], [], []
    for k, p in enumerate(pods):
        if "notebook-name" in p.labels:
            notebooks.append(Notebook(p.namespace, p.labels["notebook-name"]))
        else:
            job = p.owners[0].name
            workloads.append(Workload(p.namespace, f"{job}-1a2b3", f"wl-{k}", "kueue.x-k8s.io/v1beta2",
                                      "training-queue", True, long_ago, True, "gpu-cluster-queue",
                                      owners=(OwnerRef("batch/v1", "Job", job, True),)))
        idle = (k // 2) % 2 == 0  # half of the notebooks and half of the jobs
        gpus += [GpuTelemetry(p.namespace, p.name, f"GPU-{k:08d}-{g}", "NVIDIA H100 80GB HBM3",
                              "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.0 if idle else 85.0, 70.0 if idle else 420.0,
                              1.0, p.node, None, NOW - timedelta(hours=6)) for g in range(p.gpus)]
    nodes = {p.node: Node(p.node, {}, "p5.48xlarge", CapacityType.ON_DEMAND, "gpu-on-demand",
                          "NVIDIA-H100-80GB-HBM3", 8) for p in pods if p.node}
    snapshot = ClusterSnapshot(NOW, tuple(pods), nodes, tuple(notebooks), workloads=tuple(workloads),
                               workload_api_version="kueue.x-k8s.io/v1beta2")
    return snapshot, TelemetrySnapshot(NOW, 3600, tuple(gpus))


def time_detect(data: bytes, repeat: int) -> tuple[float, int, int]:
    from actions.detect.idle import detect_idle
    from actions.policy.rules import Policy
    from actions.policy.teams import TeamDirectory
    from actions.pricing.book import PriceBook
    from actions.pricing.catalog import PriceCatalog

    snapshot, telemetry = idle_inputs(data)
    prices, policy, teams = PriceBook(PriceCatalog.bundled()), Policy(), TeamDirectory([])
    times, found = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        found = len(detect_idle(snapshot, telemetry, prices, policy, teams, NOW))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(snapshot.pods), found


def _serve_objects(gpus: int, pods: int, conn) -> None:
    """Serve the scale fleet's objects until told to stop (its own process: its CPU is not the bot's)."""
    from benchmarks.scale_fleet import cluster_objects
    from tests.support.fakes.kube_api import FakeKubeApi

    with FakeKubeApi(cluster_objects(gpus, pods)) as fake:
        conn.send(fake.url)
        conn.recv()


def prometheus_cpu(url: str) -> float:
    """Prometheus's own ``process_cpu_seconds_total``, read from its /metrics (it scrapes nothing)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("process_cpu_seconds_total "):
                return float(line.split()[1])
    raise RuntimeError(f"{url}/metrics has no process_cpu_seconds_total")


def run_oneshot(workdir: Path, prom_url: str, in_process_sweeps: int, minutes_before: int = 0) -> dict:
    """One ``sweep --once`` in a fresh process: its phases, its exit, its whole CPU (from wait4,
    children included) and Prometheus's CPU while it ran."""
    prom_before = prometheus_cpu(prom_url)
    # Only this child is reaped in between (the fake and Prometheus outlive it).
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, __file__, "--child", "oneshot", f"{in_process_sweeps}:{minutes_before}",
                           str(workdir)],
                          cwd=ROOT, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise RuntimeError(f"the sweep failed:\n{proc.stderr[-3000:]}")
    r = json.loads(proc.stdout.splitlines()[-1])
    r["prometheus_cpu"] = prometheus_cpu(prom_url) - prom_before
    r["total_cpu"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return r


def part4(gpus: int, pods: int, cache: Path, in_process_sweeps: int) -> None:
    """One-shot sweeps end to end against a fake API server and a real Prometheus."""
    from actions.policy.rules import Policy
    from actions.sources.prometheus.telemetry_promql import (
        LOOKBACK_STEP_SECONDS,
        lookback_queries,
        presence_query,
        window_queries,
    )
    from actions.telemetry.activity import span_seconds
    from actions.telemetry.presence import step_range
    from benchmarks.scale_fleet import HISTORY_HOURS, tsdb
    from tests.support.prometheus_server import serving_tsdb

    data = tsdb(cache, gpus)
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    fake = ctx.Process(target=_serve_objects, args=(gpus, pods, theirs), daemon=True)
    fake.start()
    # The old subqueries take minutes of Prometheus CPU on a busy machine: past the default 2 m.
    with tempfile.TemporaryDirectory(prefix="sweep-oneshot-") as tmp, \
            serving_tsdb(data, Path(tmp), extra_args=("--query.timeout=15m",)) as prom:
        work = Path(tmp)
        kube_url = ours.recv()
        (work / "kubeconfig").write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "bench",
            "clusters": [{"name": "bench", "cluster": {"server": kube_url}}],
            "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
            "users": [{"name": "bench", "user": {"token": "bench"}}]}))
        (work / "bot.yaml").write_text(json.dumps({
            "dry_run": True, "database_url": f"sqlite:///{work / 'bot.db'}",
            "slack": {"default_channel": "C0GPUCOST"},  # posted to the console chat, into /dev/null
            "prometheus": {"url": prom, "timeout_seconds": 900},
            "kubernetes": {"kubeconfig": str(work / "kubeconfig"), "timeout_seconds": 120}}))
        print(f"\n4. One-shot `sweep --once` at {gpus} GPUs, {pods} pods: fake API server (own process),"
              f" real Prometheus ({HISTORY_HOURS} h of DCGM history), SQLite; CPU seconds")
        names = ["interpreter", "imports", "config", "runtime", "kubernetes", "prometheus", "detect", "reconcile"]
        print(f"{'':27} " + " ".join(f"{n[:10]:>10}" for n in [*names, "exit", "bot total", "prom CPU", "peak MB"]))
        runs = []
        for label, extra, minutes in (("1st sweep (empty store)", 0, 15),
                                      ("2nd sweep, 15 min later", in_process_sweeps, 0)):
            runs.append((label, r := run_oneshot(work, prom, extra, minutes)))
            exit_cpu = r["total_cpu"] - r["cpu_before_exit"]
            cells = [r["phases"][n] for n in names] + [exit_cpu, r["total_cpu"], r["prometheus_cpu"], r["peak_rss_mb"]]
            print(f"{label:27} " + " ".join(f"{c:>10.2f}" for c in cells), flush=True)
        print(f"   findings {runs[1][1]['findings']}; proposals 1st {runs[0][1]['counts']}, 2nd {runs[1][1]['counts']}")
        print("   (reconcile includes rendering every proposal and writing it to a console chat; Slack's HTTP calls are not in it)")
        print("   (prom CPU: the 2nd row is three sweeps; a fresh process has no steps of the window in memory;"
              " a sweep inside `run` 15 min after the last is the 'following' total below)")
        if runs[1][1]["again"]:
            print("   watch caches (pods, nodes, StatefulSets, Notebooks, Workloads, Jobs, ...) started after that sweep,"
                  f" synced in {runs[1][1]['sync_cpu']:.2f} s CPU (their first lists, on their own threads)")
        for k, phases in enumerate(runs[1][1]["again"], 1):
            print(f"   sweep {k + 1} inside the same process (as `run`): "
                  + ", ".join(f"{n} {v:.2f}" for n, v in phases.items()) + f"; total {sum(phases.values()):.2f}")
        print("   Prometheus CPU per query (each run alone): a first sweep asks about the whole window and 7-day"
              " lookback; a following one inside `run`, once its sweeps span the window (state in the store, the window's"
              " steps in memory), about the 15 min since the last, plus a step; `sweep --json` (no store) runs the"
              " window's four and the lookback's first two")

        def cost(q: str, at: float | tuple[float, float] = NOW.timestamp()) -> tuple[float, float, int]:
            """Prometheus CPU of ``q`` at ``at``, or as a range query every sample step over ``at``."""
            before, t0 = prometheus_cpu(prom), time.perf_counter()
            params = {"query": q, "time": at} if isinstance(at, float) else \
                {"query": q, "start": at[0], "end": at[1], "step": policy.sample_step_seconds}
            with urllib.request.urlopen(f"{prom}/api/v1/{'query' if isinstance(at, float) else 'query_range'}?"
                                        + urllib.parse.urlencode(params), timeout=900) as resp:
                n = len(json.loads(resp.read())["data"]["result"])
            return prometheus_cpu(prom) - before, time.perf_counter() - t0, n

        policy = Policy()
        now, before = NOW.timestamp(), (NOW - timedelta(minutes=15)).timestamp()
        span = span_seconds(before, now, policy.activity_lookback_seconds, LOOKBACK_STEP_SECONDS)
        step = policy.sample_step_seconds
        since, last = step_range(before, now, step)
        rows = [*[(name, q, now, ("first", "following", "no store")) for name, q in window_queries(policy).items()
                  if name != "coverage"],
                ("coverage", window_queries(policy)["coverage"], now, ("first", "no store")),
                (f"presence {last - since + 1} steps", presence_query(), (since * step, last * step), ("following",)),
                *[(f"{name} 7d", q, now, ("first",) if name == "last_sample" else ("first", "no store"))
                  for name, q in lookback_queries(policy).items()],
                (f"last_active {span:g}s", lookback_queries(policy, span)["last_active"], now, ("following",))]
        totals = {"first": 0.0, "following": 0.0, "no store": 0.0}
        for name, q, at, sweeps in rows:
            cpu, wall, n = cost(q, at)
            for sweep in sweeps:
                totals[sweep] += cpu
            print(f"     {name:>23}: {cpu:6.2f} s CPU, {wall:6.2f} s wall, {n} series ({', '.join(sweeps)})", flush=True)
        print(f"     a first sweep's queries: {totals['first']:.2f} s CPU; a following sweep's: {totals['following']:.2f} s;"
              f" without a store: {totals['no store']:.2f} s")
        ours.send("stop")


def part1(sizes: list[int], datasets: dict[int, bytes], repeat: int) -> None:
    print("1. Decoding one PodList response (fresh warmed-up process per run; MB = growth of peak RSS)")
    print(f"{'pods':>6} {'KB/pod':>6} | {'k8s models s':>12} {'json.loads s':>12} {'msgspec s':>9} |"
          f" {'models MB':>9} {'json MB':>7} {'msgspec MB':>10} | {'GPU pods':>8}")
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        for n in sizes:
            data = datasets[n]
            (path := Path(tmp) / f"pods-{n}.json").write_bytes(data)
            r = {k: measure(k, n, str(path), repeat) for k in ("models", "json", "msgspec")}
            print(f"{n:>6} {len(data) / n / 1024:>6.1f} | {r['models']['seconds']:>12.3f}"
                  f" {r['json']['seconds']:>12.3f} {r['msgspec']['seconds']:>9.4f} | {r['models']['peak_mb']:>9.0f}"
                  f" {r['json']['peak_mb']:>7.0f} {r['msgspec']['peak_mb']:>10.1f} | {r['msgspec']['items']:>8}")
            path.unlink()


def part2(sizes: list[int], repeat: int) -> None:
    print("\n2. KubernetesSource(page_size=500).snapshot(), real client, FakeKubeApi in its own process")
    print(f"{'pods':>6} | {'setup s':>7} {'1st snapshot s':>14} {'2nd snapshot s':>14} {'peak MB':>7} |"
          f" {'pod list requests':>17} {'GPU pods':>8}")
    for n in sizes:
        if n > SOURCE_MAX_PODS:
            print(f"{n:>6} | skipped (over {SOURCE_MAX_PODS})")
            continue
        r = measure("source", n, "-", repeat)
        print(f"{n:>6} | {r['setup']:>7.2f} {r['seconds']:>14.2f} {r['again']:>14.2f} {r['peak_mb']:>7.1f} |"
              f" {r['pod_requests']:>17.0f} {r['items']:>8.0f}")


def part3(sizes: list[int], datasets: dict[int, bytes], repeat: int) -> None:
    print("\n3. detect_idle over the GPU pods (half notebooks, half Kueue jobs; half idle)")
    print(f"{'pods':>6} {'GPU pods':>8} | {'s/sweep':>8} {'us/GPU pod':>10} {'findings':>8}")
    per_pod = []
    for n in sizes:
        seconds, gpu_pods, found = time_detect(datasets[n], repeat)
        per_pod.append(seconds / gpu_pods * 1e6)
        print(f"{n:>6} {gpu_pods:>8} | {seconds:>8.4f} {per_pod[-1]:>10.1f} {found:>8}")
    if len(sizes) > 1:
        growth = per_pod[-1] / per_pod[0]
        print(f"   cost per GPU pod grew x{growth:.2f} from {sizes[0]} to {sizes[-1]} pods"
              f" ({'superlinear: look for a per-pod scan' if growth > 2 else 'linear'})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", default="1000,10000", help="comma-separated pod counts")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (the median is printed)")
    ap.add_argument("--parts", default="1,2,3,4", help="which parts to run (4: one-shot sweeps end to end)")
    ap.add_argument("--gpus", type=int, default=10000, help="part 4: GPUs (one per GPU pod)")
    ap.add_argument("--all-pods", type=int, default=50000, help="part 4: pods in all (the rest CPU-only)")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "gpu-cost-bot-bench"),
                    help="part 4: where the Prometheus data is built once and kept")
    ap.add_argument("--child", nargs=3, metavar=("KIND", "N", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, n, path = args.child
        if kind == "oneshot":  # N is the extra sweeps and the minutes before NOW, as "extra:minutes"
            extra, minutes = (int(x) for x in n.split(":"))
            print(json.dumps(oneshot_child(path, extra, NOW - timedelta(minutes=minutes))))
        else:
            print(json.dumps(child(kind, int(n), path)))
        return
    import kubernetes
    import msgspec

    sizes = [int(s) for s in args.pods.split(",") if s.strip()]
    print(f"gpu-cost-bot sweep benchmark: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"kubernetes {kubernetes.__version__}, msgspec {msgspec.__version__}; medians of {args.repeat} runs\n")
    parts = {x.strip() for x in args.parts.split(",")}
    datasets = {n: pod_list(n) for n in sizes} if parts & {"1", "3"} else {}
    if "1" in parts:
        part1(sizes, datasets, args.repeat)
    if "2" in parts:
        part2(sizes, args.repeat)
    if "3" in parts:
        part3(sizes, datasets, args.repeat)
    if "4" in parts:
        part4(args.gpus, args.all_pods, Path(args.cache), in_process_sweeps=2)


if __name__ == "__main__":
    main()
