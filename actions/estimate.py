"""What would N GPUs for T cost: parse a one-line request, price it on-demand and on spot.

Grammar (case-insensitive; words are separated by spaces; the parts after the count may come in
any order, each at most once)::

    request     := count [model] duration [price] [spot-price] [checkpoint] [interruptions]
    count       := INT ["x"] ["gpu" | "gpus"]                    16, 16x, 16 gpus
    model       := a GPU model or family                          a100, H100, A10G, l4, t4, v100,
                                                                   "nvidia h100", a100-80gb
    duration    := ["for"] NUMBER UNIT | ["for"] "a"|"an" UNIT      1w, 36h, for 3 days, a week
    UNIT        := m | min(s) | minute(s) | h | hr(s) | hour(s) | d | day(s) | w | wk(s) | week(s)
    price       := ("at" | "@") ["$"]NUMBER PER-HOUR | "$"NUMBER PER-HOUR    at $3/hr
    spot-price  := "spot" ["at" | "@"] ["$"]NUMBER PER-HOUR                  spot $1.20/hr
    PER-HOUR    := "/h" | "/hr" | "/hour" | "/gpu-hr" | " per hour" | " per gpu-hour" | " an hour"
    checkpoint  := "checkpoint(s)" ["every"] duration              default 30m
    interruptions := "interrupt(s|ed|ions)" ["every" | "each"] duration   default 4h

Prices are USD per GPU-hour. Without a model, ``at $X/hr`` is required; ``at $X/hr`` is the
on-demand price and, when given, spot is priced only if ``spot $Y/hr`` is given too. With a model
and no price, both come from the :class:`~actions.prices.PriceBook` (config, then catalog).

Spot interruptions (REFERENCE: GPU spot on AWS is interrupted roughly once per 4 hours): with an
interruption every ``I`` hours and a checkpoint every ``C`` hours, each interruption loses on
average ``C/2`` hours of work, which must be run again. So only ``I - C/2`` of every ``I`` paid
hours is progress, and the effective spot price is ``spot x I / (I - C/2)`` per GPU-hour of
progress. The time to restart and reload after an interruption is not counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from actions.model import CapacityType, PriceQuote, to_jsonable
from actions.policy import DEFAULT_IDLE_POWER_WATTS, gpu_family
from actions.prices import PriceBook, PriceNotFound

DEFAULT_CHECKPOINT_HOURS = 0.5
DEFAULT_INTERRUPTION_HOURS = 4.0  # REFERENCE: roughly one interruption per 4 h for GPU spot on AWS

KNOWN_MODELS = tuple(sorted(DEFAULT_IDLE_POWER_WATTS))

EXAMPLES = ("16 a100 1w", "8 h100 for 3 days", "4 gpus 10h at $3/hr")


class EstimateInputError(ValueError):
    """The request could not be understood; the message says what was wrong and shows a correct
    example."""


@dataclass(frozen=True)
class EstimateRequest:
    """A parsed request: ``gpus`` GPUs for ``hours`` hours.

    ``gpu_model`` is a family key (``"A100"``) or ``None``; prices given in the request are USD
    per GPU-hour (``None`` when not given); ``checkpoint_hours`` and ``interruption_hours`` are
    the checkpoint interval and mean time between spot interruptions, in hours, and
    ``*_given`` say whether they came from the request or the defaults. Raises
    EstimateInputError when the numbers cannot describe a job.
    """

    gpus: int
    hours: float
    gpu_model: str | None = None
    on_demand_usd_per_gpu_hour: float | None = None
    spot_usd_per_gpu_hour: float | None = None
    checkpoint_hours: float = DEFAULT_CHECKPOINT_HOURS
    interruption_hours: float = DEFAULT_INTERRUPTION_HOURS
    checkpoint_given: bool = False
    interruption_given: bool = False
    text: str = ""

    def __post_init__(self) -> None:
        if self.gpus < 1:
            raise _error("the GPU count must be at least 1", "1 h100 36h")
        if self.hours <= 0:
            raise _error("the duration must be longer than zero", "8 h100 for 3 days")
        if self.interruption_hours <= 0:
            raise _error("the interruption interval must be longer than zero", "8 h100 3d interruptions every 3h")
        if self.checkpoint_hours < 0:
            raise _error("the checkpoint interval cannot be negative", "16 a100 1w checkpoint 30m")
        if self.checkpoint_hours / 2 >= self.interruption_hours:
            raise _error(
                f"checkpointing every {format_hours(self.checkpoint_hours)} with an interruption every "
                f"{format_hours(self.interruption_hours)} never makes progress (half a checkpoint "
                "interval is lost per interruption); checkpoint more often",
                "8 h100 3d interruptions every 3h checkpoint 30m",
            )
        for name in ("on_demand_usd_per_gpu_hour", "spot_usd_per_gpu_hour"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise _error("a price must be more than $0 per GPU-hour", "4 gpus 10h at $3/hr")

    @property
    def gpu_hours(self) -> float:
        """GPUs x hours."""
        return self.gpus * self.hours


@dataclass(frozen=True)
class CostLine:
    """The on-demand price: USD per GPU-hour, USD in total, and the quote it came from."""

    usd_per_gpu_hour: float
    total_usd: float
    quote: PriceQuote


@dataclass(frozen=True)
class SpotCost:
    """The spot price, list and interruption-adjusted.

    ``usd_per_gpu_hour``/``total_usd`` are the list spot price and its total; ``overhead_factor``
    is ``I / (I - C/2)``; ``effective_usd_per_gpu_hour``/``effective_total_usd`` include the
    redone work; ``savings_pct`` is how much less the effective total costs than on-demand
    (percent, negative when spot costs more) and ``list_savings_pct`` the same before interruptions.
    """

    usd_per_gpu_hour: float
    total_usd: float
    quote: PriceQuote
    overhead_factor: float
    effective_usd_per_gpu_hour: float
    effective_total_usd: float
    savings_pct: float
    list_savings_pct: float


@dataclass(frozen=True)
class Estimate:
    """The cost of a request: ``gpu_hours``, on-demand, spot (``None`` when no spot price is
    known), and the assumptions made, as sentences."""

    request: EstimateRequest
    gpu_hours: float
    on_demand: CostLine
    spot: SpotCost | None
    assumptions: tuple[str, ...] = ()


# --- parsing ---------------------------------------------------------------------------------------

_NUM = r"\d[\d,]*(?:\.\d+)?"
_UNIT = r"(minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|wks?|w)\b"
_DURATION = rf"(?:(?<![\w.$]){_NUM}\s*|\b(?:an?)\s+){_UNIT}"
_PER_HOUR = r"(?:\s*/\s*|\s+per\s+|\s+an?\s+)(?:gpu[-\s]?)?(?:hours?|hrs?|h)\b"

_SPOT_RE = re.compile(rf"\bspot\s+(?:at\s+|@\s*)?\$?\s*({_NUM}){_PER_HOUR}")
_PRICE_RE = re.compile(rf"(?:(?:\bat\b|@)\s*\$?|\$)\s*({_NUM}){_PER_HOUR}")
_CHECKPOINT_RE = re.compile(rf"\bcheckpoint(?:s|ing|ed)?\s+(?:every\s+)?({_DURATION})")
_INTERRUPT_RE = re.compile(rf"\binterrupt(?:s|ed|ions?)?\s+(?:every\s+|each\s+)?({_DURATION})")
_DURATION_RE = re.compile(rf"(?:\bfor\s+)?({_DURATION})")
_DURATION_PARTS = re.compile(rf"(?:({_NUM})|(an?))\s*{_UNIT}")
_COUNT_RE = re.compile(r"(?<![\w.$])(\d+(?:\.\d+)?)\s*(?:x\b|×)?")

_UNIT_HOURS = {"m": 1 / 60, "h": 1.0, "d": 24.0, "w": 168.0}
_FILLER = {"gpu", "gpus", "x", "×", "for", "of", "nvidia", "tesla", "and", "with", "on", "running"}


def parse_estimate(text: str) -> EstimateRequest:
    """Parse a request such as ``16 a100 1w`` or ``4 gpus 10h at $3/hr`` (grammar above).

    Raises EstimateInputError saying what was missing, ambiguous or unknown, with an example.
    """
    original = " ".join(text.split())
    if not original:
        raise _error("the request is empty", EXAMPLES[0], also=EXAMPLES[1])
    rest = original.lower().replace("×", " x ")
    rest = re.sub(r"(?<![\w.])(\d+)x(?=[a-z])", r"\1 x ", rest)  # 8xh100 -> 8 x h100
    # A memory size (a100-80gb) is not a GPU count; the catalog prices the family as a whole.
    rest = re.sub(r"-?\b\d+\s*gb\b", " ", rest)

    spot, rest = _take_one(_SPOT_RE, rest, "spot price", original, "8 h100 3d spot $2.50/hr")
    price, rest = _take_one(_PRICE_RE, rest, "price", original, "4 gpus 10h at $3/hr")
    checkpoint, rest = _take_one(
        _CHECKPOINT_RE, rest, "checkpoint interval", original, "16 a100 1w checkpoint 30m"
    )
    interrupt, rest = _take_one(
        _INTERRUPT_RE, rest, "interruption interval", original, "8 h100 3d interruptions every 3h"
    )
    if "$" in rest:
        raise _error(
            f'could not read the price in "{original}" (give it per GPU-hour)', "4 gpus 10h at $3/hr"
        )
    for word, example in (
        ("checkpoint", "16 a100 1w checkpoint 30m"),
        ("interrupt", "8 h100 3d interruptions every 3h"),
    ):
        if word in rest:
            raise _error(f'could not read the {word} interval in "{original}"', example)

    durations = [m.group(1) for m in _DURATION_RE.finditer(rest)]
    if not durations:
        raise _error(f'could not find a duration in "{original}"', EXAMPLES[0], also=EXAMPLES[1])
    if len(durations) > 1:
        raise _error(
            f'"{original}" has {len(durations)} durations ({", ".join(durations)}); give one',
            "2 h100 36h",
        )
    hours = _hours(durations[0])
    rest = _DURATION_RE.sub(" ", rest)

    counts = _COUNT_RE.findall(rest)
    if not counts:
        raise _error(f'could not find a GPU count in "{original}"', EXAMPLES[0])
    if len(counts) > 1:
        raise _error(
            f'"{original}" has {len(counts)} GPU counts ({", ".join(counts)}); give one', EXAMPLES[0]
        )
    if "." in counts[0]:
        raise _error(f'the GPU count "{counts[0]}" must be a whole number', EXAMPLES[0])
    gpus = int(counts[0])
    rest = _COUNT_RE.sub(" ", rest)

    models: list[str] = []
    for word in re.split(r"[\s,]+", rest):
        if not word or word in _FILLER:
            continue
        family = gpu_family(word) or (gpu_family(word[:-1]) if word.endswith("s") else None)
        if family is None:
            raise _error(
                f'unknown GPU model "{word}" in "{original}"; known models: {", ".join(KNOWN_MODELS)}',
                EXAMPLES[1],
            )
        if family not in models:
            models.append(family)
    if len(models) > 1:
        raise _error(
            f'"{original}" names {len(models)} GPU models ({", ".join(models)}); give one', EXAMPLES[0]
        )
    model = models[0] if models else None

    if model is None and price is None:
        raise _error(
            f'no GPU model and no price in "{original}": name a model or give a price per GPU-hour',
            f"{gpus} a100 {format_hours(hours)}",
            also=f"{gpus} gpus {format_hours(hours)} at $3/hr",
        )

    return EstimateRequest(
        gpus=gpus,
        hours=hours,
        gpu_model=model,
        on_demand_usd_per_gpu_hour=_money(price) if price else None,
        spot_usd_per_gpu_hour=_money(spot) if spot else None,
        checkpoint_hours=_hours(checkpoint) if checkpoint else DEFAULT_CHECKPOINT_HOURS,
        interruption_hours=_hours(interrupt) if interrupt else DEFAULT_INTERRUPTION_HOURS,
        checkpoint_given=checkpoint is not None,
        interruption_given=interrupt is not None,
        text=original,
    )


def _take_one(
    pattern: re.Pattern[str], text: str, what: str, original: str, example: str
) -> tuple[str | None, str]:
    found = [m.group(1) for m in pattern.finditer(text)]
    if len(found) > 1:
        raise _error(f'"{original}" gives {len(found)} values for the {what}; give one', example)
    return (found[0] if found else None), pattern.sub(" ", text)


def _hours(duration: str) -> float:
    m = _DURATION_PARTS.search(duration)
    assert m is not None  # only called on text the duration pattern matched
    number = 1.0 if m.group(2) else float(m.group(1).replace(",", ""))
    unit = m.group(3)
    key = "m" if unit.startswith("m") else "w" if unit.startswith("w") else unit[0]
    return number * _UNIT_HOURS[key]


def _money(text: str) -> float:
    return float(text.replace(",", ""))


def _error(problem: str, example: str, also: str | None = None) -> EstimateInputError:
    hint = f"`{example}`" + (f" or `{also}`" if also else "")
    return EstimateInputError(f"{problem}: write it like {hint}")


def format_hours(hours: float) -> str:
    """A duration in hours in the request syntax: ``168`` -> ``"1w"``, ``72`` -> ``"3d"``,
    ``36`` -> ``"36h"``, ``0.5`` -> ``"30m"``."""
    for unit, size in (("w", 168.0), ("d", 24.0), ("h", 1.0)):
        if hours >= size and (hours / size).is_integer():
            return f"{int(hours / size)}{unit}"
    if (hours * 60).is_integer():
        return f"{int(hours * 60)}m"
    return f"{hours:g}h"


# --- computing -------------------------------------------------------------------------------------


def interruption_overhead(interruption_hours: float, checkpoint_hours: float) -> float:
    """``I / (I - C/2)``: paid hours per hour of progress when an interruption every ``I`` hours
    loses half a checkpoint interval ``C`` (both in hours). Raises EstimateInputError if
    ``C/2 >= I``."""
    lost = checkpoint_hours / 2
    if lost >= interruption_hours:
        raise _error(
            "half the checkpoint interval must be shorter than the interruption interval",
            "8 h100 3d interruptions every 3h checkpoint 30m",
        )
    return interruption_hours / (interruption_hours - lost)


def compute_estimate(req: EstimateRequest, prices: PriceBook) -> Estimate:
    """Price ``req`` on-demand and on spot.

    Prices given in the request win; otherwise they come from ``prices.gpu_hour`` for the
    request's GPU model (spot only when a real spot price is known). Raises EstimateInputError
    when no on-demand price can be found, with an example that gives one.
    """
    gpu_hours = req.gpu_hours
    model = req.gpu_model
    if req.on_demand_usd_per_gpu_hour is not None:
        od_quote = _given(req.on_demand_usd_per_gpu_hour, CapacityType.ON_DEMAND, model)
    elif model is not None:
        try:
            od_quote = prices.gpu_hour(model, CapacityType.ON_DEMAND)
        except PriceNotFound as e:
            raise _error(
                f"no price known for {model} ({e}); give one per GPU-hour",
                f"{req.gpus} {model.lower()} {format_hours(req.hours)} at $3/hr",
            ) from None
    else:
        raise _error(
            "no GPU model and no price: name a model or give a price per GPU-hour",
            f"{req.gpus} gpus {format_hours(req.hours)} at $3/hr",
        )
    od_rate = od_quote.usd_per_gpu_hour
    on_demand = CostLine(od_rate, od_rate * gpu_hours, od_quote)

    spot_quote: PriceQuote | None = None
    if req.spot_usd_per_gpu_hour is not None:
        spot_quote = _given(req.spot_usd_per_gpu_hour, CapacityType.SPOT, model)
    elif req.on_demand_usd_per_gpu_hour is None and model is not None:
        try:
            spot_quote = prices.gpu_hour(model, CapacityType.SPOT, strict=True)
        except PriceNotFound:
            spot_quote = None

    assumptions = []
    spot = None
    if spot_quote is not None:
        factor = interruption_overhead(req.interruption_hours, req.checkpoint_hours)
        rate = spot_quote.usd_per_gpu_hour
        effective = rate * factor
        spot = SpotCost(
            usd_per_gpu_hour=rate,
            total_usd=rate * gpu_hours,
            quote=spot_quote,
            overhead_factor=factor,
            effective_usd_per_gpu_hour=effective,
            effective_total_usd=effective * gpu_hours,
            savings_pct=(1 - effective / od_rate) * 100,
            list_savings_pct=(1 - rate / od_rate) * 100,
        )
        interruption = f"spot interrupted every {format_hours(req.interruption_hours)}"
        if not req.interruption_given:
            interruption += " (default: GPU spot on AWS is interrupted roughly once per 4 hours)"
        checkpoint = f"a checkpoint every {format_hours(req.checkpoint_hours)}"
        if not req.checkpoint_given:
            checkpoint += " (default)"
        assumptions += [
            f"{interruption}, {checkpoint}: each interruption redoes half a checkpoint interval on "
            "average; restart time is not counted",
        ]
    elif req.on_demand_usd_per_gpu_hour is not None:
        assumptions.append("no spot price given: add `spot $Y/hr` to compare with spot")
    else:
        assumptions.append(f"no spot price known for {model}")
    return Estimate(req, gpu_hours, on_demand, spot, tuple(assumptions))


def _given(usd_per_gpu_hour: float, capacity: CapacityType, model: str | None) -> PriceQuote:
    return PriceQuote(
        usd_per_gpu_hour=usd_per_gpu_hour,
        capacity_type=capacity,
        source="given in the request",
        as_of="",  # the user's own figure has no publication date
        basis="request",
        gpu_model=model,
    )


def estimate_to_jsonable(est: Estimate) -> dict[str, Any]:
    """The estimate as JSON-ready data (``gpu-cost-bot estimate ... --json``): money in USD
    rounded to cents (per GPU-hour to 4 decimals), hours, percents 0-100 to 1 decimal."""
    req = est.request
    out: dict[str, Any] = {
        "request": {
            "text": req.text,
            "gpus": req.gpus,
            "gpu_model": req.gpu_model,
            "hours": req.hours,
            "on_demand_usd_per_gpu_hour": req.on_demand_usd_per_gpu_hour,
            "spot_usd_per_gpu_hour": req.spot_usd_per_gpu_hour,
            "checkpoint_hours": req.checkpoint_hours,
            "interruption_hours": req.interruption_hours,
        },
        "gpu_hours": est.gpu_hours,
        "on_demand": {
            "usd_per_gpu_hour": round(est.on_demand.usd_per_gpu_hour, 4),
            "total_usd": round(est.on_demand.total_usd, 2),
            "quote": to_jsonable(est.on_demand.quote),
        },
        "spot": None,
        "assumptions": list(est.assumptions),
    }
    if est.spot is not None:
        s = est.spot
        out["spot"] = {
            "usd_per_gpu_hour": round(s.usd_per_gpu_hour, 4),
            "total_usd": round(s.total_usd, 2),
            "overhead_factor": round(s.overhead_factor, 4),
            "effective_usd_per_gpu_hour": round(s.effective_usd_per_gpu_hour, 4),
            "effective_total_usd": round(s.effective_total_usd, 2),
            "savings_pct": round(s.savings_pct, 1),
            "list_savings_pct": round(s.list_savings_pct, 1),
            "quote": to_jsonable(s.quote),
        }
    return out
