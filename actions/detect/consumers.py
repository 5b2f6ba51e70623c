"""Who holds a GPU pod, as far as an action is concerned, and what the bot would do about it. Pure.

:func:`classify` maps a pod to a :class:`Consumer`: the object a person recognises, the Kueue
Workload that admitted it (if any) and the one action with an exact Restore for that kind:

| consumer | action |
|---|---|
| Kubeflow Notebook | annotation ``kubeflow-resource-stopped`` |
| JupyterHub single-user server (each named server its own) | stop through the Hub's REST API |
| a job under Kueue (Job, JobSet, TrainJob, RayJob, RayCluster, RayService, PyTorchJob and the other Kubeflow jobs, MPIJob, AppWrapper) | Workload ``spec.active: false`` |
| Deployment, StatefulSet or LeaderWorkerSet, under Kueue's pod integration or not | ``spec.replicas: 0``, the count remembered |
| RayCluster outside Kueue and outside a RayJob/RayService | ``spec.suspend: true`` |
| KServe InferenceService | annotation ``serving.kserve.io/stop: "true"`` |

Never deactivated: a Workload of Kueue's pod integration (one per Deployment pod, or a pod
group, a StatefulSet's or a LeaderWorkerSet group's). Kueue deletes such pods on eviction and the
ReplicaSet makes new ones with new Workloads, so nothing would stop; the owner is scaled instead.
A plain pod or pod group without a scalable owner, a job outside Kueue, or an object whose
controller the bot cannot read is reported only, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from actions.detect.memo import memoized
from actions.detect.owners import ISVC_POD_LABEL, Link, OwnerIndex
from actions.model.findings import ActionVerb, ProposedAction
from actions.model.kube import (
    JUPYTER_SERVER_API_VERSION,
    JUPYTER_SERVER_KIND,
    KSERVE_API_VERSION,
    LWS_API_VERSION,
    NOTEBOOK_API_VERSION,
    RAY_API_VERSION,
    GpuPod,
    KubeObject,
    ObjectRef,
    ScalableOwner,
    controller_of,
)
from actions.model.kueue import Workload
from actions.policy.rules import Policy

NOTEBOOK_LABEL = "notebook-name"  # set by the Kubeflow Notebook controller on its pods
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# kubespawner 7.1.0 (kubespawner/spawner.py _build_common_labels, _build_common_annotations): the
# label holds a slug of the user name; the annotation the real one.
HUB_USER = "hub.jupyter.org/username"
HUB_SERVER = "hub.jupyter.org/servername"
SINGLEUSER = "singleuser-server"
SCALABLE_KINDS = ("StatefulSet", "Deployment", "LeaderWorkerSet")
# Parents that own a RayCluster and recreate or manage it: suspending it under them would fight
# their controller (KubeRay v1.7.0 rayjob_controller.go, rayservice_controller.go).
RAY_PARENTS = ("RayJob", "RayService")


@dataclass(frozen=True)
class Consumer:
    """Who holds a pod's GPUs. ``name`` is the consumer's (``job``'s) name; ``workload`` the
    Kueue Workload's name when Kueue admitted it; ``report_reason`` why there is no action."""

    finding_kind: str  # "idle-notebook" | "idle-workload" | "idle-serving"
    consumer_kind: str
    namespace: str
    name: str
    action: ProposedAction | None
    annotations: tuple[tuple[str, str], ...] = ()
    job: ObjectRef | None = None
    workload: str | None = None
    report_reason: str | None = None

    @property
    def key(self) -> str:
        """Stable across sweeps. Notebooks keep the short form ``idle-notebook/<ns>/<name>``;
        the others name their kind too, as a Job and a JobSet may share a name."""
        if self.consumer_kind == "Notebook":
            return f"{self.finding_kind}/{self.namespace}/{self.name}"
        return f"{self.finding_kind}/{self.namespace}/{self.consumer_kind}/{self.name}"


def _annotations(*objs) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for o in objs:
        if o is not None:
            out.update(o.annotations)
    return tuple(out.items())


def _scale(kind_obj: KubeObject | ScalableOwner, finding_kind: str, workload: Workload | None) -> Consumer:
    kind, ns, name = kind_obj.kind, kind_obj.namespace, kind_obj.name
    api = LWS_API_VERSION if kind == "LeaderWorkerSet" else "apps/v1"
    replicas = kind_obj.replicas if kind_obj.replicas is not None else 1
    target = ObjectRef(api, kind, ns, name)
    return Consumer(
        finding_kind, kind, ns, name,
        ProposedAction(ActionVerb.SCALE_TO_ZERO, target, f"scale {kind} {ns}/{name} from {replicas} to 0 replicas"),
        _annotations(kind_obj, workload), target, workload.name if workload else None,
    )


def _report(finding_kind: str, kind: str, ns: str, name: str, reason: str, *, api: str = "",
            workload: Workload | None = None, annotations=()) -> Consumer:
    return Consumer(
        finding_kind, kind, ns, name, None, tuple(annotations),
        ObjectRef(api, kind, ns, name) if api else None, workload.name if workload else None, reason,
    )


def _jupyter(pod: GpuPod) -> Consumer:
    user = pod.annotations.get(HUB_USER) or pod.labels.get(HUB_USER) or pod.name
    server = pod.annotations.get(HUB_SERVER, "")
    # The target names the server as the Hub's API does ("<user>/" is the default one); people
    # know the default server by its user alone.
    target = ObjectRef(JUPYTER_SERVER_API_VERSION, JUPYTER_SERVER_KIND, pod.namespace, f"{user}/{server}")
    label = f"server {server!r} of {user}" if server else f"default server of {user}"
    return Consumer(
        "idle-notebook", "JupyterHub", pod.namespace, f"{user}/{server}" if server else user,
        ProposedAction(ActionVerb.STOP_JUPYTER_SERVER, target, f"stop the JupyterHub {label} (namespace {pod.namespace})"),
        _annotations(pod), target,
    )


def _top_scalable(chain: list[Link]) -> KubeObject | ScalableOwner | None:
    """The top of the chain when it is a Deployment, StatefulSet or LeaderWorkerSet the
    snapshot holds: one that another controller (a Notebook, an InferenceService) owns would be
    scaled back up by it."""
    if chain and chain[-1].kind in SCALABLE_KINDS and chain[-1].obj is not None:
        return chain[-1].obj
    return None


def _kueue(pod: GpuPod, chain: list[Link], wl: Workload) -> Consumer:
    ns = pod.namespace
    owner_kinds = {o.kind for o in wl.owners}
    if owner_kinds & {"Pod", "StatefulSet", "LeaderWorkerSet"} or wl.annotations.get("kueue.x-k8s.io/is-group-workload") == "true":
        scalable = _top_scalable(chain)
        if scalable is not None:
            # A Deployment's pods are one Workload each: none of them names the consumer.
            return _scale(scalable, "idle-serving", None if "Pod" in owner_kinds else wl)
        group = wl.annotations.get("kueue.x-k8s.io/is-group-workload") == "true" or len(wl.owners) > 1
        kind, name = ("PodGroup", wl.name) if group else ("Pod", pod.name)
        return _report(
            "idle-workload", kind, ns, name,
            "plain pods under Kueue's pod integration: Kueue deletes them on eviction and nothing makes them again, "
            "so there is no exact Restore; stop them by hand",
            api="v1" if kind == "Pod" else "", workload=wl, annotations=_annotations(pod, wl),
        )
    top = chain[-1].obj if chain else None
    if ns != wl.namespace:  # found by its job's uid: answered as found, not kept
        return _deactivate(wl, top, ns)
    return memoized(wl, "_consumer", lambda: _deactivate(wl, top, ns), top)


def _deactivate(wl: Workload, top: KubeObject | ScalableOwner | None, ns: str) -> Consumer:
    """A job under Kueue in namespace ``ns``: its Workload deactivated (``top``: the top of its
    pods' owner chain)."""
    job = controller_of(wl.owners) or (wl.owners[0] if wl.owners else None)
    kind, name = (job.kind, job.name) if job else ("Workload", wl.name)
    target = ObjectRef(wl.api_version, "Workload", ns, wl.name)
    return Consumer(
        "idle-workload", kind, ns, name,
        ProposedAction(
            ActionVerb.DEACTIVATE_WORKLOAD, target,
            f"deactivate Kueue Workload {ns}/{wl.name} of {kind} {name} (spec.active=false; its pods are evicted)",
        ),
        _annotations(top, wl), ObjectRef(job.api_version, kind, ns, name) if job else target, wl.name,
    )


def _outside_kueue(pod: GpuPod, chain: list[Link], index: OwnerIndex) -> Consumer | None:
    ns = pod.namespace
    isvc_name = pod.labels.get(ISVC_POD_LABEL)
    isvc = next((link.obj for link in chain if link.kind == "InferenceService" and link.obj is not None), None)
    if isvc is None and isvc_name:
        isvc = index.objects.get((ns, "InferenceService", isvc_name))
    if isinstance(isvc, KubeObject):
        target = ObjectRef(KSERVE_API_VERSION, "InferenceService", ns, isvc.name)
        return Consumer(
            "idle-serving", "InferenceService", ns, isvc.name,
            ProposedAction(
                ActionVerb.STOP_INFERENCE_SERVICE, target,
                f"stop InferenceService {ns}/{isvc.name} (annotation serving.kserve.io/stop: \"true\"; KServe deletes its predictor)",
            ),
            _annotations(isvc), target,
        )
    if isvc_name:
        return _report("idle-serving", "InferenceService", ns, isvc_name,
                       "the bot cannot read this InferenceService (serving.kserve.io); stop it by hand",
                       api=KSERVE_API_VERSION, annotations=_annotations(pod))
    if not chain:
        return _report("idle-workload", "Pod", ns, pod.name, "a bare pod has no owner to stop and restore; delete it by hand",
                       api="v1", annotations=_annotations(pod))
    top = chain[-1]
    if top.obj is None:
        return _report(
            "idle-workload", top.kind, ns, top.name,
            f"owned by {top.kind} {top.name}, which the bot cannot read; stop it by hand",
            api=top.ref.api_version, annotations=_annotations(pod),
        )
    if top.kind in SCALABLE_KINDS:
        return _scale(top.obj, "idle-serving", None)
    if top.kind == "RayCluster":
        target = ObjectRef(RAY_API_VERSION, "RayCluster", ns, top.name)
        return Consumer(
            "idle-workload", "RayCluster", ns, top.name,
            ProposedAction(
                ActionVerb.SUSPEND_RAYCLUSTER, target,
                f"suspend RayCluster {ns}/{top.name} (spec.suspend=true; KubeRay deletes its pods)",
            ),
            _annotations(top.obj), target,
        )
    ray = next((link for link in chain if link.kind == "RayCluster"), None)
    reason = (
        f"its RayCluster {ray.name} belongs to {top.kind} {top.name}, whose controller would fight a suspend; stop it by hand"
        if ray is not None and top.kind in RAY_PARENTS
        else f"{top.kind} {top.name} is not under Kueue, so the bot has no action with an exact Restore for it"
    )
    return _report("idle-workload", top.kind, ns, top.name, reason, api=top.ref.api_version,
                   annotations=_annotations(top.obj))


def classify(pod: GpuPod, index: OwnerIndex, policy: Policy) -> Consumer | None:
    """The consumer holding ``pod``, or ``None`` when the bot leaves it alone (a stopped
    Notebook's last pod, a pod of a Workload that is no longer admitted). Notebooks win over
    Kueue when both apply. An action the policy's ``act_on`` excludes is dropped, the finding
    then reported only."""
    consumer = _classify(pod, index, policy)
    if consumer is None or consumer.action is None:
        return consumer
    if not policy.acts_on(consumer.consumer_kind, consumer.action.target.kind):
        return Consumer(
            consumer.finding_kind, consumer.consumer_kind, consumer.namespace, consumer.name, None,
            consumer.annotations, consumer.job, consumer.workload,
            f"the policy acts on {', '.join(policy.act_on or [])} only; would {consumer.action.summary}",
        )
    return consumer


def running_consumers(
    pods: Iterable[GpuPod], index: OwnerIndex, policy_for: Callable[[str], Policy],
) -> dict[str, tuple[Consumer, list[GpuPod]]]:
    """The Running GPU pods of ``pods`` grouped by the consumer holding them (:func:`classify`
    with ``policy_for(namespace)``): consumer key -> (consumer, its pods), in pod order. Pure."""
    groups: dict[str, tuple[Consumer, list[GpuPod]]] = {}
    for pod in pods:
        if pod.phase != "Running" or pod.gpus <= 0:
            continue
        consumer = classify(pod, index, policy_for(pod.namespace))
        if consumer is not None:
            groups.setdefault(consumer.key, (consumer, []))[1].append(pod)
    return groups


def _notebook(nb: KubeObject) -> Consumer | None:
    return memoized(nb, "_consumer", lambda: _notebook_consumer(nb))


def _notebook_consumer(nb: KubeObject) -> Consumer | None:
    if "kubeflow-resource-stopped" in nb.annotations:
        return None
    ns = nb.namespace
    target = ObjectRef(NOTEBOOK_API_VERSION, "Notebook", ns, nb.name)
    return Consumer(
        "idle-notebook", "Notebook", ns, nb.name,
        ProposedAction(ActionVerb.STOP_NOTEBOOK, target, f"stop Notebook {ns}/{nb.name}"),
        tuple(nb.annotations.items()), target,
    )


def _classify(pod: GpuPod, index: OwnerIndex, policy: Policy) -> Consumer | None:
    ns = pod.namespace
    nb_name = pod.labels.get(NOTEBOOK_LABEL)
    nb = index.objects.get((ns, "Notebook", nb_name)) if nb_name else None
    if nb is not None:
        return _notebook(nb)
    if SINGLEUSER in (pod.labels.get("component"), pod.labels.get("app.kubernetes.io/component")) and (
        HUB_USER in pod.annotations or HUB_USER in pod.labels
    ):
        return _jupyter(pod)
    chain = index.chain(pod)
    if chain and chain[-1].kind == "Notebook" and chain[-1].obj is not None:
        return _notebook(chain[-1].obj)
    if policy.notebook_selector and all(pod.labels.get(k) == v for k, v in policy.notebook_selector.items()):
        owner = _top_scalable(chain)
        if owner is None:
            return _report("idle-notebook", "Pod", ns, pod.name, "no StatefulSet or Deployment to scale; stop it by hand",
                           api="v1", annotations=_annotations(pod))
        return _scale(owner, "idle-notebook", None)
    wl = index.workload_of(pod, chain)
    if wl is not None:
        if not (wl.admitted and wl.active and not wl.finished):
            return None
        return _kueue(pod, chain, wl)
    return _outside_kueue(pod, chain, index)
