"""Upstream answers bounded in size and time (issue 22, items 2 and 3), through the real Prometheus
client against small HTTP servers on 127.0.0.1 that misbehave as a hostile or broken upstream
would: an answer dripped a byte at a time, one far over the size limit (declared, undeclared
and chunked, and a gzip bomb), and a huge error body. The answer's shape is Prometheus's HTTP API
(prometheus/prometheus web/api/v1: ``{"status": "success", "data": {"resultType": "vector",
"result": [...]}}``)."""

from __future__ import annotations

import gzip
import json
import time

import pytest

from actions.sources.prometheus.api import PrometheusApi, TelemetryError
from tests.support.clock import T0
from tests.support.hostile_http import ANSWER, MiB, answer_json, drip, dripping, flood, upstream, write


def gzip_bomb(handler, sent):
    bomb = gzip.compress(b"[" * (256 * MiB), compresslevel=9)  # 256 MiB from about 250 KiB
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Encoding", "gzip")
    handler.send_header("Content-Length", str(len(bomb)))
    handler.end_headers()
    write(handler, sent, bomb)


def api(url: str, **options) -> PrometheusApi:
    return PrometheusApi(url, timeout_seconds=options.pop("timeout_seconds", 2), attempts=1,
                         max_response_bytes=options.pop("max_response_bytes", MiB), **options)


def test_an_answer_in_time_and_in_size_is_read():
    with upstream(lambda handler, sent: answer_json(handler, sent, ANSWER)) as (url, _):
        assert api(url).instant("up", "up", T0)[0]["metric"]["job"] == "dcgm-exporter"
        assert api(url).vector("up", "up", T0, ("job",))[0].metric.job == "dcgm-exporter"


@pytest.mark.parametrize("method", ["instant", "vector"])
def test_an_answer_dripped_a_byte_at_a_time_is_given_up_at_the_deadline(method):
    # Each byte comes well inside any per-read timeout; the whole would take 40 s.
    with upstream(drip) as (url, sent):
        started = time.monotonic()
        with pytest.raises(TelemetryError) as info:
            getattr(api(url), method)("idle", "up", T0, *((("job",),) if method == "vector" else ()))
        took = time.monotonic() - started
    assert "did not answer the idle query within 2 s" in str(info.value)
    assert took < 3.5 and sent["bytes"] < len(ANSWER)


@pytest.mark.parametrize("declared, chunked", [(True, False), (False, False), (False, True)],
                         ids=["content-length", "until-close", "chunked"])
def test_an_answer_over_the_limit_is_refused_after_reading_little_of_it(declared, chunked):
    with upstream(flood(declared, chunked)) as (url, sent):
        with pytest.raises(TelemetryError) as info:
            api(url, timeout_seconds=30).instant("idle", "up", T0)
    assert "answered the idle query with more than the bot reads" in str(info.value)
    assert "prometheus.max_response_bytes" in str(info.value)
    # Refused on its Content-Length, or within a read or two of the limit; the server's socket
    # buffers take some more before the connection closes.
    assert sent["bytes"] < 16 * MiB


def test_a_gzip_bomb_is_refused_by_its_decoded_size():
    with upstream(gzip_bomb) as (url, _):
        with pytest.raises(TelemetryError) as info:
            api(url, timeout_seconds=30).instant("idle", "up", T0)
    assert "the answer passed the limit of 1,048,576 bytes" in str(info.value)


def test_a_huge_error_body_never_reaches_a_message():
    with upstream(flood(declared=False, status=500)) as (url, _):
        with pytest.raises(TelemetryError) as info:
            api(url, timeout_seconds=30, max_response_bytes=128 * MiB).instant("idle", "up", T0)
    assert len(str(info.value)) < 1000


# --- the Kubernetes API: the real kubernetes client, its answers bounded the same way --------------


def kube_client(url: str, max_bytes: int = MiB):
    import kubernetes.client

    from actions.sources.kube.reader import bounded_answers

    cfg = kubernetes.client.Configuration()
    cfg.host = url
    return bounded_answers(kubernetes.client.ApiClient(configuration=cfg), max_bytes)


# A NodeList as the API server answers a list (k8s.io/api core/v1 NodeList), dripped.
NODE_LIST = json.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                        "items": []}).encode()


def test_a_kubernetes_api_that_drips_its_answer_is_given_up_at_the_timeout():
    from actions.sources.kube.reader import ClusterReadError, KubernetesSource

    with upstream(dripping(NODE_LIST)) as (url, sent):
        source = KubernetesSource(kube_client(url), timeout_seconds=2)
        import kubernetes.client.api.core_v1_api  # noqa: F401 - its first import takes seconds: not the answer's time
        started = time.monotonic()
        with pytest.raises(ClusterReadError) as info:
            source.snapshot(T0)
        took = time.monotonic() - started
    assert "took longer than its timeout in all" in str(info.value)
    assert took < 3.5 and sent["bytes"] < len(NODE_LIST)


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "until-close"])
def test_a_kubernetes_answer_over_the_limit_is_refused(declared):
    from actions.sources.kube.reader import ClusterReadError, KubernetesSource

    with upstream(flood(declared)) as (url, sent):
        with pytest.raises(ClusterReadError) as info:
            KubernetesSource(kube_client(url), timeout_seconds=30).snapshot(T0)
    assert "over the limit of 1,048,576" in str(info.value) or "passed the limit of 1,048,576 bytes" in str(info.value)
    assert sent["bytes"] < 16 * MiB


def test_the_writer_reads_through_the_same_bounds():
    from actions.executors.kubernetes import KubernetesWriter
    from actions.model.findings import ActionVerb, ProposedAction
    from actions.model.kube import ObjectRef
    from actions.remedy.patches import ExecutorError

    stop = ProposedAction(ActionVerb.STOP_NOTEBOOK, ObjectRef("kubeflow.org/v1", "Notebook", "ml", "nb"), "stop")
    with upstream(flood(declared=False)) as (url, _):
        with pytest.raises(ExecutorError) as info:
            KubernetesWriter(kube_client(url), timeout_seconds=30).apply(stop, T0)
    assert "passed the limit of 1,048,576 bytes" in str(info.value) and not info.value.uncertain


def test_a_jupyterhub_that_drips_its_answer_is_given_up_at_the_timeout():
    from actions.executors.jupyterhub import HubClient
    from actions.model.kube import JUPYTER_SERVER_API_VERSION, JUPYTER_SERVER_KIND, ObjectRef
    from actions.remedy.patches import ExecutorError

    target = ObjectRef(JUPYTER_SERVER_API_VERSION, JUPYTER_SERVER_KIND, "jhub", "alice/")
    with upstream(drip) as (url, sent):  # JupyterHub's GET /users/{name} answer, a byte at a time
        started = time.monotonic()
        with pytest.raises(ExecutorError) as info:
            HubClient(f"{url}/hub/api", "token", timeout_seconds=2).server(target)
        took = time.monotonic() - started
    assert "cannot reach the JupyterHub API" in str(info.value) and "took longer than its timeout" in str(info.value)
    assert took < 3.5 and sent["bytes"] < len(ANSWER)
