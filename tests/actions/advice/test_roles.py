"""Which consumers advice treats as serving, from the objects as their controllers build them
(tests/support/workload_shapes.py: KubeRay v1.7.0, Kueue v0.19.2, LWS v0.10.0, KServe v0.20.0):
serving is never advised spot, whoever admitted it and whatever its annotations say (issue 21)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from actions.advice.recommend import advise_consumer
from actions.advice.usage import consumer_pods, consumer_usages
from actions.policy.advice import AdvicePolicy
from actions.policy.rules import Policy
from actions.policy.teams import TeamDirectory
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.sources.kube.dump import snapshot_from_kubectl_dump
from tests.support import workload_shapes as shapes

INTERRUPTIBLE = {"gpu-cost-bot/interruptible": "true"}


def usage_of(build):
    """The one ConsumerUsage of the shape ``build`` makes, its GPU pods annotated interruptible,
    on the shapes' on-demand p5.48xlarge node, a week of full use."""
    objects, gpu_pods = build()
    for o in objects:
        if o["kind"] == "Pod" and o["metadata"]["name"] in gpu_pods:
            o["metadata"]["annotations"].update(INTERRUPTIBLE)
    items = [shapes.node(), shapes.namespace(), *objects]
    snapshot = snapshot_from_kubectl_dump(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}).encode(), shapes.NOW)
    teams = TeamDirectory([])
    groups = consumer_pods(snapshot, Policy(), teams)
    [usage] = consumer_usages(snapshot, groups, [], {}, Policy(), teams, 7 * 86400)
    # Fully used all week, so right-sizing has nothing to say and only spot could.
    return dataclasses.replace(usage, gpu_hours=168.0 * usage.whole_gpus, busy_gpus=usage.whole_gpus,
                               peak_engine_pct=99, peak_fb_mib=78000, gpu_model=shapes.MODEL)


@pytest.mark.parametrize("build", [shapes.rayservice, shapes.kueue_deployment, shapes.kueue_statefulset,
                                   shapes.leaderworkerset, shapes.inferenceservice], ids=lambda b: b.__name__)
def test_serving_is_never_advised_spot_even_admitted_by_kueue_and_annotated_interruptible(build):
    usage = usage_of(build)
    assert usage.role == "serving" and usage.restarts_cleanly is not None
    assert [r.kind for r in advise_consumer(usage, PriceBook(PriceCatalog.bundled()), AdvicePolicy())] == []


def test_a_rayjob_under_kueue_stays_a_job_and_is_advised_spot():
    usage = usage_of(shapes.rayjob)
    assert (usage.consumer_kind, usage.role) == ("RayJob", "job")
    assert [r.kind for r in advise_consumer(usage, PriceBook(PriceCatalog.bundled()), AdvicePolicy())] == ["spot"]
