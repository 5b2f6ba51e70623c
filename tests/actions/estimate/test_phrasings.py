"""Requests written the way people write them, each with the GPU count, hours and total it must
come to, worked by hand from the bundled catalog (USD per instance-hour / GPUs per instance)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pytest

from actions.estimate.parse import parse_estimate
from actions.estimate.price import compute_estimate
from actions.model.kube import CapacityType
from actions.pricing.book import PriceBook
from actions.pricing.catalog import PriceCatalog
from actions.text import usd
from bot.chat.commands.estimate import estimate_text

SPOT, ON_DEMAND = CapacityType.SPOT, CapacityType.ON_DEMAND


def cents(x: float) -> float:
    return float(Decimal(repr(x)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def rate(x: float) -> float:
    """USD per GPU-hour as the answer shows and multiplies it: 4 decimals, half up."""
    return float(Decimal(repr(x)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


# The cheapest instance type of each model in the catalog, per GPU-hour (on-demand unless said).
H100 = 55.04 / 8  # p5.48xlarge; p5.4xlarge costs the same $6.88 for 1 GPU
A100 = rate(21.957642 / 8)  # p4d.24xlarge (A100 40GB): $2.7447
A100_80GB = rate(27.44705 / 8)  # p4de.24xlarge: $3.4309
H200 = 63.296 / 8  # p5en.48xlarge: $7.912
B200 = rate(113.9328 / 8)  # p6-b200.48xlarge: $14.2416
MI300X = 48.00 / 8  # Standard_ND96isr_MI300X_v5, eastus2: $6.00
L40S = 1.861  # g6e.xlarge, 1 GPU
L4 = 0.7068  # g2-standard-4, 1 GPU (GCP), below g6.xlarge's $0.8048
T4 = 0.526  # g4dn.xlarge, 1 GPU
H100_SPOT = rate(19.4933 / 8)  # p5.48xlarge spot: $2.4367
T4_SPOT = 0.3196  # g4dn.xlarge spot

# text, GPUs (None: GPU-hours given), hours (None: GPU-hours given), GPU-hours, the total the answer
# leads with (USD: on-demand, or spot when the request asked for spot), the capacity asked for.
FAMILIES = {
    "question with filler words": [
        ("how much would it cost to run 16 h100 for a week?", 16, 168, 2688, cents(16 * 168 * H100), None),
        ("how much is 8 a100 for 3 days?", 8, 72, 576, cents(8 * 72 * A100), None),
        ("please estimate 4 l4 for 10 hours", 4, 10, 40, cents(4 * 10 * L4), None),
        ("What's the cost of 2 H100s for 36 hours, please?", 2, 36, 72, cents(2 * 36 * H100), None),
        ("can you tell me what 8 t4 would cost for a day", 8, 24, 192, cents(8 * 24 * T4), None),
        ("I need 4 A100s for a week, what will that come to?", 4, 168, 672, cents(4 * 168 * A100), None),
        ("price of 1 h100 per hour", 1, 1, 1, 6.88, None),
        ("how much is an h100 for an hour", 1, 1, 1, 6.88, None),  # no count: 1 GPU, and it says so
    ],
    "duration": [
        ("1 h100 90m", 1, 1.5, 1.5, cents(1.5 * H100), None),
        ("2 a100 36 hours", 2, 36, 72, cents(2 * 36 * A100), None),
        ("8 h100 for a week", 8, 168, 1344, cents(8 * 168 * H100), None),
        ("8 h100 for two weeks", 8, 336, 2688, cents(8 * 336 * H100), None),
        ("4 h100 1d12h", 4, 36, 144, cents(4 * 36 * H100), None),
        ("4 h100 for 1 day and 12 hours", 4, 36, 144, cents(4 * 36 * H100), None),
        ("16 a100 for a month", 16, 730, 11680, cents(16 * 730 * A100), None),
        ("2 l4 for a year", 2, 8760, 17520, cents(2 * 8760 * L4), None),
        ("8 h100 for 1.5 days", 8, 36, 288, cents(8 * 36 * H100), None),
        ("1 h100 for 30 minutes", 1, 0.5, 0.5, cents(0.5 * H100), None),
        ("8 a100 for a week and a half", 8, 252, 2016, cents(8 * 252 * A100), None),
        ("1 l40s per day", 1, 24, 24, cents(24 * L40S), None),
        ("16 h100 for 3 wks", 16, 504, 8064, cents(16 * 504 * H100), None),
        ("2 h100 for twenty-four hours", 2, 24, 48, cents(2 * 24 * H100), None),
        ("8 t4 monthly", 8, 730, 5840, cents(8 * 730 * T4), None),
    ],
    "GPU-hours": [
        ("1000 gpu-hours of a100", None, None, 1000, cents(1000 * A100), None),
        ("500 GPU hours on h100", None, None, 500, cents(500 * H100), None),
        ("8 h100 1000 gpu-hours", 8, 125, 1000, cents(1000 * H100), None),
    ],
    "GPU model with vendor and memory": [
        ("4 nvidia h100 10h", 4, 10, 40, cents(40 * H100), None),
        ("4 H100 80GB 10h", 4, 10, 40, cents(40 * H100), None),
        ("4 a100-40gb 10h", 4, 10, 40, cents(40 * A100), None),  # p4d, never the 80GB p4de
        ("4 A100 80GB 10h", 4, 10, 40, cents(40 * A100_80GB), None),
        ("2 l40s 36h", 2, 36, 72, cents(72 * L40S), None),
        ("8 h200 for a week", 8, 168, 1344, cents(1344 * H200), None),
        ("8 b200 for a day", 8, 24, 192, cents(192 * B200), None),
        ("8 amd mi300x for a day", 8, 24, 192, cents(192 * MI300X), None),
        ("16 A100s for a week", 16, 168, 2688, cents(2688 * A100), None),
        ("8xH100 for a week", 8, 168, 1344, cents(1344 * H100), None),
        ("sixteen h100s for a week", 16, 168, 2688, cents(2688 * H100), None),
        ("4 Tesla T4 for 10h", 4, 10, 40, cents(40 * T4), None),
    ],
    "instance type and nodes": [
        ("16 gpus 1 week p5.48xlarge", 16, 168, 2688, cents(16 * 168 * 55.04 / 8), None),
        ("2 nodes of p4d for 3 days", 16, 72, 1152, cents(16 * 72 * A100), None),
        ("2 p5 for a day", 16, 24, 384, cents(16 * 24 * H100), None),
        ("1 a3-megagpu-8g for a week", 8, 168, 1344, cents(1344 * rate(92.9376 / 8)), None),
        ("ND96amsr_A100_v4 for 3 days", 8, 72, 576, cents(576 * rate(32.77 / 8)), None),  # 1 node: no count
        ("2x Standard_ND96amsr_A100_v4 for 3 days", 16, 72, 1152, cents(1152 * rate(32.77 / 8)), None),
        ("4 g6e.12xlarge for a day", 16, 24, 384, cents(384 * rate(10.49264 / 4)), None),
        ("2 p4d nodes for 12 hours", 16, 12, 192, cents(192 * A100), None),
        ("what does a p5 cost for a month", 8, 730, 5840, cents(5840 * H100), None),
    ],
    "price": [
        ("4 gpus 10h at $3/hr", 4, 10, 40, 120.00, None),
        ("16 gpus for a week at 3/hr", 16, 168, 2688, 8064.00, None),
        ("16 gpus for a week @ $98.32/h per p5", 16, 168, 2688, cents(2688 * 98.32 / 8), None),
        ("2 nodes of p4d for 3 days at $21.96/hr per node", 16, 72, 1152, cents(1152 * 21.96 / 8), None),
        ("2 nodes of p4d at $21.96/hr for 3 days", 16, 72, 1152, cents(1152 * 21.96 / 8), None),  # nodes: per node
        ("10 gpus 2h at $1,000/hr", 10, 2, 20, 20000.00, None),
        ("3 a10g 12 hours @ $1.25 per hour", 3, 12, 36, 45.00, None),
        ("1 l4 an hour at $0.80/gpu-hr", 1, 1, 1, 0.80, None),
        ("4 gpus for 10 hours at 2.5 dollars an hour", 4, 10, 40, 100.00, None),
        ("8 h100 for 3 days at $2 per gpu per hour", 8, 72, 576, 1152.00, None),
    ],
    "capacity word": [
        ("16 h100 for a week on spot", 16, 168, 2688, cents(2688 * H100_SPOT), SPOT),
        ("16 h100 spot 1w", 16, 168, 2688, cents(2688 * H100_SPOT), SPOT),
        ("8 a100 for 3 days on-demand", 8, 72, 576, cents(576 * A100), ON_DEMAND),
        ("16 h100 for a week on spot at $2/hr", 16, 168, 2688, 5376.00, SPOT),  # 2,688 x $2: a spot price
        ("8 h100 3d spot $2.50/hr", 8, 72, 576, cents(576 * H100), None),
        ("8 t4 for 3 days preemptible", 8, 72, 576, cents(576 * T4_SPOT), SPOT),
        ("4 gpus 10h at $3/hr on-demand and $1/hr spot", 4, 10, 40, 120.00, None),
    ],
}
PHRASINGS = [(family, *case) for family, cases in FAMILIES.items() for case in cases]


@pytest.fixture(scope="module")
def prices() -> PriceBook:
    return PriceBook(PriceCatalog.bundled())


def test_every_family_is_covered_by_many_phrasings():
    assert len(PHRASINGS) >= 40
    assert all(len(cases) >= 3 for cases in FAMILIES.values())


@pytest.mark.parametrize(
    "family,text,gpus,hours,gpu_hours,total,capacity", PHRASINGS, ids=[p[1] for p in PHRASINGS]
)
def test_phrasing_reads_to_the_right_figures(prices, family, text, gpus, hours, gpu_hours, total, capacity):
    req = parse_estimate(text, prices)
    assert req.gpus == gpus
    assert req.hours == (None if hours is None else pytest.approx(hours))
    assert req.capacity is capacity
    est = compute_estimate(req, prices)
    assert est.gpu_hours == gpu_hours
    o = est.answer
    lead = o.spot if capacity is SPOT else o.on_demand
    assert lead.total_usd == total
    shown = estimate_text(est)
    assert shown.startswith(f"*{est.reading}: {usd(total)}")  # the reading, then the total asked for


def test_the_spot_price_in_a_sentence_is_the_spot_one(prices):
    o = compute_estimate(parse_estimate("16 h100 for a week on spot at $2/hr", prices), prices).answer
    assert (o.on_demand.total_usd, o.spot.total_usd) == (cents(2688 * H100), 5376.00)
    o = compute_estimate(parse_estimate("4 gpus 10h at $3/hr on-demand and $1/hr spot", prices), prices).answer
    assert (o.on_demand.usd_per_gpu_hour, o.spot.usd_per_gpu_hour) == (3.00, 1.00)
    o = compute_estimate(parse_estimate("1 gpu 1h at $32/hr spot $12/hr", prices), prices).answer
    assert (o.on_demand.usd_per_gpu_hour, o.spot.usd_per_gpu_hour) == (32.00, 12.00)


@pytest.mark.parametrize("text", [
    "what would 16 GPUs for a week cost",
    "how much for 16 gpus for a week?",
    "16 gpus 1w",
    "16 gpus for a week on spot",
])
def test_no_model_no_price_phrasings_compare_models(prices, text):
    est = compute_estimate(parse_estimate(text, prices), prices)
    assert est.comparison and est.gpu_hours == 16 * 168
    h100 = est.options[0]
    assert (h100.gpu_model, h100.on_demand.total_usd) == ("H100", cents(2688 * H100))


def test_words_that_are_not_understood_are_ignored_and_named(prices):
    req = parse_estimate("what would 16 rtx4090 cost for a week", prices)
    assert (req.gpus, req.hours, req.gpu_model) == (16, 168, None)
    assert req.ignored == ("rtx4090",)
    est = compute_estimate(req, prices)
    assert est.reading == "16 GPUs x 168 h (1 week) = 2,688 GPU-hours; ignored: rtx4090"


@pytest.mark.parametrize("text,reading", [
    ("what would 16 GPUs for a week cost", "16 GPUs x 168 h (1 week) = 2,688 GPU-hours"),
    ("2 nodes of p4d for 3 days", "2 x p4d.24xlarge (16 A100 GPUs) x 72 h (3 days) = 1,152 GPU-hours"),
    ("ND96amsr_A100_v4 for 3 days",
     "1 x Standard_ND96amsr_A100_v4 (8 A100 GPUs, no count given) x 72 h (3 days) = 576 GPU-hours"),
    ("4 a100-40gb 10h", "4 A100 40GB GPUs x 10 h = 40 GPU-hours"),
    ("1000 gpu-hours of a100", "1,000 A100 GPU-hours"),
    ("16 h100 for a month on spot", "16 H100 GPUs x 730 h (1 month) = 11,680 GPU-hours, on spot"),
    ("16 gpus for a week @ $98.32/h per p5",
     "16 H100 GPUs on p5.48xlarge x 168 h (1 week) = 2,688 GPU-hours, at $98.32/h per p5.48xlarge (8 GPUs)"),
])
def test_the_reading_repeats_how_the_request_was_understood(prices, text, reading):
    assert compute_estimate(parse_estimate(text, prices), prices).reading == reading
