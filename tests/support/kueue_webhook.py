"""Kueue's StatefulSet webhook as the wire-level fake API server plays it: a one-GPU StatefulSet
Kueue manages, the webhook's name and its denial of a pod-template change, word for word (the
sources are named beside each)."""

from __future__ import annotations

from actions.advice.model import ConsumerUsage, Recommendation
from actions.advice.recommend import advise_consumer
from actions.model.findings import GpuResize
from actions.model.kube import CapacityType, ObjectRef
from actions.policy.advice import AdvicePolicy
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from tests.support.fakes.kube_api import FakeKubeApi
from tests.support.gpu_nodes import h100_cluster

# The label that puts a StatefulSet under Kueue (kueue v0.19.2 pkg/controller/constants QueueLabel).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# A resize to one MIG 1g.10gb slice, with the nodeSelector that lands it on a node offering it.
MIG_NODE = ("nvidia.com/mig-1g.10gb.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb")
TO_MIG = GpuResize(before=(("nvidia.com/gpu", 1),), after=(("nvidia.com/mig-1g.10gb", 1),), node_selector=(MIG_NODE,))
# Kueue's validating webhook for StatefulSets (kueue v0.19.2
# pkg/controller/jobs/statefulset/statefulset_webhook.go, kubebuilder marker name=vstatefulset.kb.io,
# sideEffects=None: the API server calls it on dry runs too).
KUEUE_STS_WEBHOOK = "vstatefulset.kb.io"
# Its ValidateUpdate, while Kueue manages the set, runs jobframework.ValidateImmutablePodGroupPodSpec
# (kueue v0.19.2 pkg/controller/jobframework/validation.go) over pkg/util/pod SpecShape: each
# container's resources.requests, and the pod's nodeSelector among others, must not change; each
# difference is apivalidation.ValidateImmutableField's field.Invalid(path, new value, "field is
# immutable") (k8s.io/apimachinery v0.36.2 pkg/api/validation/objectmeta.go), printed by
# field.Error.Error() as "<path>: Invalid value: <new value as JSON>: field is immutable" (pkg/util/
# validation/field/errors.go), several joined by ErrorList.ToAggregate() as "[a, b]" (pkg/util/errors
# errors.go; their order is a set's, unsorted). controller-runtime v0.24.1 admission.Denied answers
# it with 403 Forbidden; the API server prefixes the webhook's name (k8s.io/apiserver v0.36.2
# pkg/admission/plugin/webhook/errors/statuserror.go ToStatusErr).
KUEUE_DENIAL = (
    '[spec.template.spec.containers[0].resources.requests: Invalid value: {"cpu":"4","nvidia.com/mig-1g.10gb":"1"}: '
    "field is immutable, "
    'spec.template.spec.nodeSelector: Invalid value: {"nvidia.com/mig-1g.10gb.product":'
    '"NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"}: field is immutable]'
)


def one_gpu_statefulset(labels: dict) -> dict:
    """A StatefulSet whose pod template's one container requests one whole GPU (requests listed:
    Kueue's pod-template shape compares requests, not limits)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "vector-db", "namespace": "serving", "uid": "sts-vector-db", "generation": 2,
                     "labels": labels},
        "spec": {
            "replicas": 1,
            "serviceName": "vector-db",
            "selector": {"matchLabels": {"app": "vector-db"}},
            "template": {
                "metadata": {"labels": {"app": "vector-db"}},
                "spec": {"containers": [{
                    "name": "db", "image": "vector-db:2",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "4", "nvidia.com/gpu": "1"}},
                }]},
            },
        },
    }


def vector_db_pod() -> dict:
    """vector-db-0, the StatefulSet's running pod on gpu-od-1 holding its one whole GPU, as the
    StatefulSet controller names and owns it (``<set>-<ordinal>``, a controller ownerReference)."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "vector-db-0", "namespace": "serving", "uid": "pod-vector-db-0",
                     "creationTimestamp": "2026-11-13T12:00:00Z", "labels": {"app": "vector-db"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "vector-db",
                                          "uid": "sts-vector-db", "controller": True}]},
        "spec": {"nodeName": "gpu-od-1", "containers": [{
            "name": "db", "image": "vector-db:2",
            "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "4", "nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Running", "startTime": "2026-11-13T12:00:00Z"},
    }


def add_vector_db(fake: FakeKubeApi, labels: dict) -> None:
    """The StatefulSet (:func:`one_gpu_statefulset`, ``labels``) and its running pod."""
    fake.add(one_gpu_statefulset(labels))
    fake.add(vector_db_pod())


def touches_the_pod_template(patch, old=None) -> bool:
    """What Kueue's webhook refuses in these tests: a patch of the pod template (a resize); a
    scale to zero, which it allows, leaves the template alone."""
    return "template" in ((patch or {}).get("spec") or {})


# The same ValidateUpdate allows only a scale to zero and a scale up from zero, and the latter
# only once the scale-down is over: while status.replicas > 0 it adds field.Forbidden(spec.replicas,
# "scaling down is still in progress"), printed "<path>: Forbidden: <detail>" (k8s.io/apimachinery
# pkg/util/validation/field/errors.go); an aggregate of one error prints that error alone.
KUEUE_STILL_SCALING_DOWN = "spec.replicas: Forbidden: scaling down is still in progress"


def still_scaling_down(patch, old) -> bool:
    """Whether Kueue's webhook denies ``patch`` as a scale-up from zero while pods of the
    scale-down still count in ``old``'s ``status.replicas``."""
    wanted = ((patch or {}).get("spec") or {}).get("replicas")
    spec, status = (old or {}).get("spec") or {}, (old or {}).get("status") or {}
    return bool(wanted) and spec.get("replicas") == 0 and int(status.get("replicas") or 0) > 0


def kueue_managed(fake: FakeKubeApi) -> None:
    add_vector_db(fake, {"app": "vector-db", QUEUE_LABEL: "team-a"})
    fake.deny("StatefulSet", "serving", "vector-db", webhook=KUEUE_STS_WEBHOOK, message=KUEUE_DENIAL,
              when=touches_the_pod_template)
    fake.deny("StatefulSet", "serving", "vector-db", webhook=KUEUE_STS_WEBHOOK, message=KUEUE_STILL_SCALING_DOWN,
              when=still_scaling_down)


def vector_db_mig_advice() -> Recommendation:
    """The MIG advice (one ``nvidia.com/mig-1g.10gb`` for one whole H100) on
    :func:`one_gpu_statefulset`, team serving, made from a week of history, on H100 nodes that
    offer the slice."""
    usage = ConsumerUsage(
        key="idle-serving/serving/StatefulSet/vector-db", team="serving", namespace="serving",
        consumer_kind="StatefulSet", name="vector-db", role="serving", pods=("vector-db-0",), whole_gpus=1, gpus=1.0,
        gpu_model="NVIDIA H100 80GB HBM3", instance_type="p5.48xlarge", capacity=CapacityType.ON_DEMAND,
        window_seconds=7 * 86400, gpu_hours=168.0, peak_fb_mib=6000, peak_engine_pct=9, busy_gpus=1,
        target=ObjectRef("apps/v1", "StatefulSet", "serving", "vector-db"), landing=h100_cluster(),
    )
    [rec] = [r for r in advise_consumer(usage, PriceBook(PriceCatalog.bundled()), AdvicePolicy()) if r.kind == "mig"]
    return rec
