"""Many clusters in one bot: ``clusters:`` in the config, every PromQL query narrowed to one
cluster's series behind a shared query endpoint, and per-cluster sweeps and reports.

The shared endpoint is a real Prometheus whose series carry a ``cluster`` external label, as
Thanos Query, Mimir and VictoriaMetrics present many clusters' Prometheis (Thanos docs,
"external_labels": each Prometheus is told apart by labels such as ``cluster``); the clusters'
API servers are two wire-level fakes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from actions.sources.prometheus import PrometheusApi
from actions.sources.promql_scope import scoped
from bot.settings import ConfigError, load_settings

# --- the config ------------------------------------------------------------------------------------


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bot.yaml"
    path.write_text(text)
    return path


def test_clusters_resolve_to_their_api_servers_and_telemetry(tmp_path):
    s = load_settings(_write(tmp_path, """
prometheus: {url: "http://thanos-query.monitoring:9090", headers: {X-Scope-OrgID: gpu}}
clusters:
  - name: gpu-east
    kubernetes: {in_cluster: true}
  - name: gpu-west
    kubernetes: {context: gpu-west, kubeconfig: /etc/bot/kubeconfig}
    prometheus: {url: "http://prometheus.gpu-west.example:9090"}
  - name: gpu-lab
    kubernetes: {context: lab}
    prometheus: {cluster_label: k8s_cluster, cluster_value: lab-01}
"""))
    east, west, lab = s.cluster_targets()
    # A shared endpoint: the top-level URL, every query matching cluster="gpu-east".
    assert (east.name, east.kubeconfig, east.context) == ("gpu-east", None, None)
    assert (east.prometheus_url, east.scope) == ("http://thanos-query.monitoring:9090", ("cluster", "gpu-east"))
    assert east.headers == {"X-Scope-OrgID": "gpu"}
    # Its own Prometheus: nothing to match.
    assert (west.context, west.kubeconfig, west.prometheus_url, west.scope) == (
        "gpu-west", "/etc/bot/kubeconfig", "http://prometheus.gpu-west.example:9090", None)
    assert lab.scope == ("k8s_cluster", "lab-01")


def test_without_clusters_the_one_cluster_is_named_by_cluster_name_and_queried_as_before(tmp_path):
    s = load_settings(_write(tmp_path, "cluster_name: gpu-main\nkubernetes: {context: main}\n"))
    (only,) = s.cluster_targets()
    assert (only.name, only.context, only.scope) == ("gpu-main", "main", None)
    assert load_settings(_write(tmp_path, "dry_run: true\n")).cluster_name == "default"


@pytest.mark.parametrize("text, expected", [
    ("clusters:\n  - {name: a, kubernetes: {context: a}}\n  - {name: a, kubernetes: {context: b}}\n",
     "cluster name(s) ['a'] are listed more than once"),
    ("clusters:\n  - {name: a, kubernetes: {in_cluster: true}}\n  - {name: b, kubernetes: {in_cluster: true}}\n",
     "clusters ['a', 'b'] all say in_cluster: true"),
    ("clusters:\n  - {name: a, kubernetes: {}}\n",
     "say how to reach this cluster's API server: kubernetes: {context: gpu-west}"),
    ("clusters:\n  - {name: a, kubernetes: {in_cluster: true, context: a}}\n",
     "in_cluster and kubeconfig/context exclude each other"),
    ("clusters:\n  - {name: Gpu_East, kubernetes: {context: a}}\n", "clusters.0.name (line 2)"),
    ("clusters:\n  - {name: a, kubernetes: {context: a}, prometheus: {url: 'prom:9090'}}\n",
     "'prom:9090' is not an http(s) URL; write it like http://prometheus.gpu-west.example:9090"),
    ("clusters:\n  - {name: a, kubernetes: {context: a}, prometheus: {cluster_label: 'k8s-cluster'}}\n",
     "'k8s-cluster' is not a Prometheus label name"),
    ("clusters:\n  - {name: a, kubernetes: {context: a}, promethus: {}}\n",
     "clusters.0.promethus (line 2): unknown setting; did you mean 'prometheus'?"),
    ("cluster_name: 'GPU east'\n", "'GPU east' is not a cluster name: lower-case letters, digits and '-', e.g. gpu-east"),
])
def test_a_bad_clusters_section_says_what_to_write(tmp_path, text, expected):
    with pytest.raises(ConfigError) as e:
        load_settings(_write(tmp_path, text))
    assert expected in str(e.value)


# --- PromQL narrowed to one cluster --------------------------------------------------------------


def test_every_selector_gets_the_cluster_matcher_and_strings_are_left_alone():
    q = ('label_replace(max by (pod) (max_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=""}[1h])), '
         '"engine_signal", "DCGM_FI_DEV_GPU_UTIL", "", "") or on (node) kube_node_labels '
         'or count by (__name__) ({__name__=~"kube_pod_info|DCGM_FI_DEV_POWER_USAGE"})')
    assert scoped(q, "cluster", "gpu-east") == (
        'label_replace(max by (pod) (max_over_time(DCGM_FI_DEV_GPU_UTIL{cluster="gpu-east",pod!=""}[1h])), '
        '"engine_signal", "DCGM_FI_DEV_GPU_UTIL", "", "") or on (node) kube_node_labels{cluster="gpu-east"} '
        'or count by (__name__) ({cluster="gpu-east",__name__=~"kube_pod_info|DCGM_FI_DEV_POWER_USAGE"})')
    # label_kube_x is a label name, not a selector
    assert scoped("max by (label_kube_x) (kueue_pending_workloads)", "c", "a\"b") == (
        'max by (label_kube_x) (kueue_pending_workloads{c="a\\"b"})')


def test_a_bad_scope_label_fails_when_the_api_is_built():
    with pytest.raises(ValueError, match="'k8s-cluster' is not a Prometheus label name"):
        PrometheusApi("http://127.0.0.1:1", scope=("k8s-cluster", "east"))
