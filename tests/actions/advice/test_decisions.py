"""The advice decisions on hand-made usage (pure): the seed's worked spot example, annotations
that set the interruption and checkpoint intervals, capacity that is already spot or reserved,
commitments without a committed rate or with a configured reserved rate, reserved capacity never
priced at a live Reserved Instance rate, and discounts already bought."""

from __future__ import annotations

import pytest

from actions.advice.model import ConsumerUsage, TeamBaseline
from actions.advice.recommend import advise, advise_consumer, could_save, duration_hours
from actions.model.kube import CapacityType
from actions.policy.advice import AdvicePolicy
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.pricing.overrides import PriceOverrides
from tests.support.gpu_nodes import h100_cluster

H100 = "NVIDIA H100 80GB HBM3"
# The seed's worked example: $32/h on-demand, $12/h spot, for one GPU.
SEED = PriceBook(PriceCatalog.bundled(), PriceOverrides.model_validate({"instance_types": {
    "seed.gpu": {"on_demand_usd_per_hour": 32, "spot_usd_per_hour": 12, "gpus": 1, "note": "seed example"},
    "p5.48xlarge": {"reserved_usd_per_hour": 33.024, "note": "our 1-year reservation", "as_of": "2026-11-01"},
}}))
BUNDLED = PriceBook(PriceCatalog.bundled())


def job(**changes) -> ConsumerUsage:
    base = dict(
        key="idle-workload/ml/Job/train", team="ml", namespace="ml", consumer_kind="Job", name="train", role="job",
        pods=("train-0",), whole_gpus=1, gpus=1.0, gpu_model=H100, instance_type="seed.gpu",
        capacity=CapacityType.ON_DEMAND, window_seconds=7 * 86400, gpu_hours=168.0, peak_fb_mib=70000,
        peak_engine_pct=99, busy_gpus=1, restarts_cleanly="Kueue Workload w: requeued when evicted",
        landing=h100_cluster(),
    )
    base.update(changes)
    return ConsumerUsage(**base)


def test_the_seeds_worked_example_every_3h_with_30_minute_checkpoints_from_annotations():
    u = job(annotations={"gpu-cost-bot/interruption-interval": "3h", "gpu-cost-bot/checkpoint-interval": "30m"})
    [r] = advise_consumer(u, SEED, AdvicePolicy())
    assert r.kind == "spot"
    # $12 x 3 / (3 - 0.25) = $13.0909 per GPU-hour, 59% below $32; 730 GPU-hours a month:
    # $23,360.00 on-demand, $9,556.36 on spot, saved $13,803.64.
    assert "$13.0909 instead of $32.00" in r.summary
    assert (r.current_usd_per_month, r.advised_usd_per_month, r.saving_usd_per_month) == (23360.00, 9556.36, 13803.64)
    assert round(1 - 13.0909 / 32, 2) == 0.59
    assert dict(r.evidence)["interruption every / checkpoint every (from its annotations)"] == "3h / 30m"


def test_no_spot_for_what_is_on_spot_already_reserved_a_notebook_or_a_job_that_does_not_restart():
    policy = AdvicePolicy()
    assert advise_consumer(job(capacity=CapacityType.SPOT), SEED, policy) == []
    assert advise_consumer(job(capacity=CapacityType.RESERVED), SEED, policy) == []
    assert advise_consumer(job(role="notebook"), SEED, policy) == []
    assert advise_consumer(job(role="serving"), SEED, policy) == []
    assert advise_consumer(job(restarts_cleanly=None), SEED, policy) == []
    # No DCGM history in the window: its GPU-hours, so any saving, are unknown.
    assert advise_consumer(job(gpu_hours=None), SEED, policy) == []
    # Checkpoints so sparse that no work survives an interruption: no spot either.
    sparse = job(annotations={"gpu-cost-bot/interruption-interval": "1h", "gpu-cost-bot/checkpoint-interval": "3h"})
    assert advise_consumer(sparse, SEED, policy) == []


def test_activity_that_never_rose_while_power_says_work_is_not_right_sized():
    serving = job(role="serving", whole_gpus=2, gpus=2.0, busy_gpus=0, peak_engine_pct=0, peak_fb_mib=20000,
                  mean_power_w=220, idle_power_ceiling_w=150, instance_type="p5.48xlarge", restarts_cleanly=None)
    assert advise_consumer(serving, BUNDLED, AdvicePolicy()) == []
    idle = job(role="serving", whole_gpus=2, gpus=2.0, busy_gpus=0, peak_engine_pct=0, peak_fb_mib=20000,
               mean_power_w=125, idle_power_ceiling_w=150, instance_type="p5.48xlarge", restarts_cleanly=None)
    [r] = advise_consumer(idle, BUNDLED, AdvicePolicy())
    # 20,000 MiB x 1.1 = 22,000 MiB: MIG needs 3g.40gb (the 20 GB profiles hold 19,073 MiB), 3/7 of
    # $6.88; an L4's 24 GB (22,888 MiB) holds it too, at $0.8048 per GPU-hour on g6.xlarge: the L4 is advised.
    assert r.kind == "smaller-gpu" and "L4 (g6.xlarge)" in r.summary and "MIG 3g.40gb" in r.notes[-1]


def test_a_commitment_without_a_committed_rate_says_how_to_set_one_and_counts_for_nothing():
    steady = TeamBaseline("ml", H100, baseline_gpus=16.4, hours_in_use=720, hours=720, instance_type="p5.48xlarge")
    [r] = advise([], [steady], BUNDLED, AdvicePolicy())
    assert r.kind == "commitment" and "commit to 16 H100 GPUs" in r.summary
    assert r.saving_usd_per_month is None and "advice.commitment_rates.H100" in r.notes[0]
    assert could_save([r]) == 0


def test_a_configured_reserved_rate_prices_the_commitment():
    steady = TeamBaseline("ml", H100, baseline_gpus=8, hours_in_use=700, hours=720, instance_type="p5.48xlarge")
    [r] = advise([], [steady], SEED, AdvicePolicy())
    # $33.024 / 8 = $4.128 per GPU-hour reserved against $6.88 on-demand: 8 x 730 x 2.752 = $16,071.68.
    assert (r.current_usd_per_month, r.advised_usd_per_month, r.saving_usd_per_month) == (40179.20, 24107.52, 16071.68)
    assert r.prices[1].source == "config override prices.instance_types.p5.48xlarge (reserved): our 1-year reservation"
    assert r.prices[1].as_of == "2026-11-01"
    # 640 of 720 hours is under 90%: the hours without GPUs are the 10th percentile.
    thin = TeamBaseline("ml", H100, baseline_gpus=8, hours_in_use=640, hours=720, instance_type="p5.48xlarge")
    assert advise([], [thin], SEED, AdvicePolicy()) == []


def test_annotation_durations():
    assert duration_hours("30m") == 0.5 and duration_hours("3h") == 3 and duration_hours("1800") == 0.5
    assert duration_hours("1d") == 24 and duration_hours("soon") is None and duration_hours(None) is None


def test_overlapping_advice_for_one_consumer_counts_once():
    u = job(whole_gpus=8, gpus=8.0, gpu_hours=8 * 168.0, busy_gpus=2, instance_type="p5.48xlarge")
    recs = advise([u], [], BUNDLED, AdvicePolicy())
    assert [r.kind for r in recs] == ["fewer-gpus", "spot"]
    assert could_save(recs) == max(r.saving_usd_per_month for r in recs) == pytest.approx(30134.40)


def test_idle_reservations_are_priced_at_the_reserved_quote_and_left_alone_when_used():
    from actions.advice.model import ReservedUse

    idle = ReservedUse(H100, gpus=16, idle_share=0.25, hours=720, instance_type="p5.48xlarge", nodes=("a", "b"))
    [r] = advise([], [], BUNDLED, AdvicePolicy(), reserved=[idle])
    # No reserved rate configured: the catalog's on-demand $6.88 stands in, and the source says so.
    # 16 x 730 x $6.88 = $80,358.40 a month; a quarter idle: $20,089.60.
    assert (r.current_usd_per_month, r.saving_usd_per_month) == (80358.40, 20089.60)
    assert "reserved capacity priced at on-demand" in r.prices[0].source
    used = ReservedUse(H100, gpus=16, idle_share=0.1, hours=720, instance_type="p5.48xlarge")
    assert advise([], [], BUNDLED, AdvicePolicy(), reserved=[used]) == []
    # A team's advice never includes the cluster's reservations.
    assert advise([], [], BUNDLED, AdvicePolicy(), team="ml", reserved=[idle]) == []


def test_commitment_rates_are_keyed_by_gpu_family_and_must_name_their_source():
    from pydantic import ValidationError

    rate = {"usd_per_gpu_hour": 4.1, "source": "our quote", "as_of": "2026-11-01"}
    assert list(AdvicePolicy.model_validate({"commitment_rates": {"nvidia h100 80gb hbm3": rate}}).commitment_rates) == ["H100"]
    with pytest.raises(ValidationError, match="H100 twice"):
        AdvicePolicy.model_validate({"commitment_rates": {"h100": rate, "H100": rate}})
    with pytest.raises(ValidationError, match="source"):
        AdvicePolicy.model_validate({"commitment_rates": {"h100": {"usd_per_gpu_hour": 4.1, "as_of": "2026-11-01"}}})


def test_fewer_gpus_for_a_consumer_of_several_pods_counts_them_together():
    u = job(pods=("w-0", "w-1"), whole_gpus=16, gpus=16.0, gpu_hours=16 * 168.0, busy_gpus=5.2,
            instance_type="p5.48xlarge", restarts_cleanly=None)
    [r] = advise_consumer(u, BUNDLED, AdvicePolicy())
    # 5.2 busy at once at the 99th percentile needs 6: 16 x 730 x $6.88 = $80,358.40, 6/16 of it $30,134.40.
    assert "6 GPUs instead of 16" in r.summary and "6 GPUs in all (now 16 over 2 pods)" in r.change
    assert (r.current_usd_per_month, r.advised_usd_per_month) == (80358.40, 30134.40)


def test_a_job_restarts_cleanly_by_its_backoff_limit_and_kubernetes_default_of_6():
    import json

    from actions.advice.usage import consumer_pods, consumer_usages
    from actions.policy.rules import Policy
    from actions.policy.teams import TeamDirectory
    from actions.sources.kube.dump import snapshot_from_kubectl_dump
    from tests.support.advice_fleet import ADVISE_AT, _node, _owner, _pod

    items = [_node("nb-1")]
    for name, spec in (("plain", {}), ("once", {"backoffLimit": 0}), ("retries", {"backoffLimit": 2})):
        items.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": name, "namespace": "ml", "uid": f"uid-Job-ml-{name}", "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": spec})
        items.append(_pod("ml", f"{name}-abcde", "nb-1", 1, _owner("batch/v1", "Job", "ml", name)))
    snapshot = snapshot_from_kubectl_dump(json.dumps({"kind": "List", "apiVersion": "v1", "items": items}).encode(), ADVISE_AT)
    teams = TeamDirectory([])
    groups = consumer_pods(snapshot, Policy(), teams)
    usages = {u.name: u for u in consumer_usages(snapshot, groups, [], {}, Policy(), teams, 7 * 86400)}
    # batch/v1 JobSpec: backoffLimit defaults to 6 (Kubernetes API reference, Job v1).
    assert usages["plain"].restarts_cleanly == "Job backoffLimit 6: a failed pod is replaced"
    assert usages["retries"].restarts_cleanly == "Job backoffLimit 2: a failed pod is replaced"
    assert usages["once"].restarts_cleanly is None
    assert usages["plain"].gpu_hours is None and usages["plain"].capacity is CapacityType.ON_DEMAND


def test_a_live_reserved_instance_price_prices_the_commitment_when_no_rate_is_configured():
    from datetime import datetime, timezone

    from actions.pricing.live import LiveOffer, LivePrice

    fetched = datetime(2026, 11, 23, 6, 0, tzinfo=timezone.utc)
    live = {("p5.48xlarge", LiveOffer.RESERVED_INSTANCE): LivePrice(
        "p5.48xlarge", LiveOffer.RESERVED_INSTANCE, 36.0,
        "AWS Pricing API (Reserved Instance, 1 year standard, No Upfront, us-east-1)", fetched, "us-east-1")}
    book = PriceBook(PriceCatalog.bundled(), live=live)
    steady = TeamBaseline("ml", H100, baseline_gpus=8, hours_in_use=720, hours=720, instance_type="p5.48xlarge")
    [r] = advise([], [steady], book, AdvicePolicy())
    # $36 / 8 = $4.50 per GPU-hour against the catalog's $6.88: 8 x 730 x $2.38 = $13,899.20.
    assert r.saving_usd_per_month == 13899.20
    assert r.prices[1].source.startswith("AWS Pricing API (Reserved Instance") and r.prices[1].as_of == "2026-11-23T06:00:00Z"
    # Without a live or configured reserved rate there is none: on-demand never stands in for it.
    assert PriceBook(PriceCatalog.bundled()).commitment_quote("p5.48xlarge") is None


def _live_ri(usd: float) -> dict:
    from datetime import datetime, timezone

    from actions.pricing.live import LiveOffer, LivePrice

    return {("p5.48xlarge", LiveOffer.RESERVED_INSTANCE): LivePrice(
        "p5.48xlarge", LiveOffer.RESERVED_INSTANCE, usd,
        "AWS Pricing API (Reserved Instance, 1 year standard, No Upfront, us-east-1)",
        datetime(2026, 11, 23, 6, 0, tzinfo=timezone.utc), "us-east-1")}


def test_idle_reservations_are_not_priced_at_a_live_reserved_instance_rate():
    from actions.advice.model import ReservedUse

    # Reserved capacity (Karpenter's capacity type reserved: capacity reservations and blocks) is
    # billed at on-demand (AWS EC2 User Guide, "Capacity Reservation pricing and billing"); a
    # published Reserved Instance rate is what a commitment would cost, not what they cost.
    book = PriceBook(PriceCatalog.bundled(), live=_live_ri(36.0))
    idle = ReservedUse(H100, gpus=16, idle_share=0.25, hours=720, instance_type="p5.48xlarge", nodes=("a", "b"))
    [r] = advise([], [], book, AdvicePolicy(), reserved=[idle])
    # As with no live price: 16 x 730 x $6.88 = $80,358.40 a month, a quarter idle $20,089.60.
    assert (r.current_usd_per_month, r.saving_usd_per_month) == (80358.40, 20089.60)
    assert "reserved capacity priced at on-demand" in r.prices[0].source


def test_a_savings_plan_already_bought_lowers_the_rate_paid_now_and_the_commitment_is_labelled_committed():
    from bot.chat.blocks.advice import recommendation_blocks

    prices = PriceOverrides.model_validate({"discounts": [
        {"kind": "savings-plan", "gpu_families": ["H100"], "percent": 25, "note": "compute SP", "as_of": "2026-11-01"}]})
    book = PriceBook(PriceCatalog.bundled(), prices, live=_live_ri(36.0))
    steady = TeamBaseline("ml", H100, baseline_gpus=8, hours_in_use=720, hours=720, instance_type="p5.48xlarge")
    [r] = advise([], [steady], book, AdvicePolicy())
    # Paid now: $6.88 x 0.75 = $5.16 per GPU-hour; a Reserved Instance at $36 / 8 = $4.50:
    # 8 x 730 x $0.66 = $3,854.40 a month.
    assert r.saving_usd_per_month == 3854.40
    paid, committed = r.prices
    assert paid.capacity_type is CapacityType.ON_DEMAND and paid.source.endswith(
        "savings-plan discount prices.discounts[0] (25% off: compute SP), as of 2026-11-01")
    assert committed.basis == "commitment"
    shown = recommendation_blocks(r)[1]["elements"][0]["text"]
    assert "| committed AWS Pricing API (Reserved Instance, 1 year standard" in shown
    assert shown.startswith("Prices: on-demand bundled catalog")


def test_the_advice_message_keeps_to_slacks_block_limits_and_escapes_names():
    from datetime import datetime, timezone

    from bot.chat.blocks.advice import advice_message, could_save_lines

    recs = advise([job(key=f"idle-workload/ml/Job/t{i}", name=f"t{i}<!channel>", whole_gpus=8, gpus=8.0,
                       gpu_hours=8 * 168.0, busy_gpus=2, instance_type="p5.48xlarge") for i in range(20)],
                  [], BUNDLED, AdvicePolicy())
    at = datetime(2026, 11, 30, 0, 30, tzinfo=timezone.utc)
    message = advice_message(recs, could_save(recs), at, "ml")
    # Slack: at most 50 blocks a message (REFERENCE, Block Kit limits); 15 shown, 2 blocks each,
    # then the count and the price sources, each written once.
    assert len(message.blocks) == 1 + 15 * 2 + 2 <= 50
    assert "25 more not shown" in message.blocks[-2]["elements"][0]["text"]
    assert message.blocks[-1]["elements"][0]["text"].startswith("Price sources: [1] bundled catalog")
    assert all(len(b["text"]["text"]) <= 3000 for b in message.blocks if b["type"] == "section")
    assert "<!channel>" not in str(message.blocks) and "&lt;!channel&gt;" in str(message.blocks)
    lines = could_save_lines(recs, could_save(recs))
    assert len(lines) == 1 + 3 + 1 and lines[-1] == "• and 37 more: `/gpu advise`"
    empty = advice_message([], 0.0, at, "ml")
    assert "No advice for team ml" in empty.text
