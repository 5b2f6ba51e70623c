"""What would N GPUs for a while cost: read a request the way people type it, and price it
on-demand beside spot.

How a request is read (:func:`parse_estimate`; case-insensitive, the parts in any order, each at
most once):

- GPU count: ``16``, ``16x``, ``16 gpus``, ``eight h100s``; or nodes: ``2 nodes of p4d``,
  ``2 p5.48xlarge``, ``2x p5``, which are the nodes x the instance type's GPUs. Without a count,
  1 GPU, or 1 node of a named instance type.
- GPU model: a family of :mod:`actions.gpus`, with or without vendor and memory (``h100``,
  ``nvidia h100``, ``H100 80GB``, ``a100-40gb``, ``l40s``, ``mi300x``). A memory size keeps to
  the instance types with that much memory per GPU.
- Instance type: ``p5.48xlarge``, ``a3-megagpu-8g``, ``ND96amsr_A100_v4``, or a name the catalog
  or the config knows (``p4d``, ``p5``).
- Duration: ``90m``, ``36 hours``, ``1.5d``, ``a week``, ``two weeks``, ``1d12h``, ``1 day and
  12 hours``, ``a week and a half``, ``per day``, ``monthly``, ``a month`` (730 h), ``a year``
  (8,760 h). ``m`` is minutes; months are ``mo`` or ``month``. Or GPU-hours: ``1000 gpu-hours``.
- Prices, USD: ``at 3/hr``, ``@ $2.50 per gpu-hour`` are per GPU-hour; ``$98.32/h per p5`` and
  ``$55/hr per node`` are per instance-hour, and so is a price without a unit in a request that
  counts nodes (``2 nodes of p4d at $21.96/hr``). ``spot $1.20/hr`` or ``$1.20/hr on spot`` is a
  spot price, any other price the on-demand one.
- Capacity: ``spot``, ``on spot``, ``preemptible`` or ``on-demand`` picks the total the answer
  leads with; both are always shown.
- ``checkpoint(s) [every] DURATION`` (default 30m) and ``interrupt(s|ed|ions) [every] DURATION``
  (default 4h) tune the spot interruption adjustment below.

Any other word is ignored; :func:`reading` says how the request was read, and names ignored words
that hold a digit (a GPU model or instance type the bot does not know), so a misreading shows.

Pricing (:func:`compute_estimate`): prices given in the request win. A named instance type is
priced by the :class:`~actions.prices.PriceBook` (config, live prices, catalog). A GPU model is
priced at the config's flat ``prices.gpu_families`` price if there is one, else at the instance
type of that model (and memory) with the lowest on-demand price the PriceBook knows, which is a
price someone can actually pay, and spot for that same instance type. With no model, instance
type or price, the common models (:data:`COMPARED_MODELS`) are priced side by side.

Durations: a month is 730 h and a year 8,760 h, the convention cloud providers bill by (365 days
x 24 h a year, a twelfth of that a month).

Rounding: GPU-hours are rounded to 0.01, a rate to 0.0001 USD per GPU-hour, and every total is
that rate x those GPU-hours rounded to the cent, so the figures shown multiply out.

Spot interruptions (REFERENCE: GPU spot on AWS is interrupted roughly once per 4 hours): with an
interruption every ``I`` hours and a checkpoint every ``C`` hours, each interruption loses on
average ``C/2`` hours of work, which must be run again. So only ``I - C/2`` of every ``I`` paid
hours is progress, and the effective spot price is ``spot x I / (I - C/2)`` per GPU-hour of
progress. The time to restart and reload after an interruption is not counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from actions.gpus import gpu_family
from actions.model import CapacityType, PriceQuote, to_jsonable
from actions.prices import CatalogEntry, PriceBook, PriceNotFound, config_example

DEFAULT_CHECKPOINT_HOURS = 0.5
DEFAULT_INTERRUPTION_HOURS = 4.0  # REFERENCE: roughly one interruption per 4 h for GPU spot on AWS

HOURS_PER_MONTH = 730.0  # cloud billing convention: 8,760 h / 12
HOURS_PER_YEAR = 8_760.0  # 365 days x 24 h
MAX_GPUS = 100_000  # beyond the largest clusters built; a bigger figure is a typo, not a request
MAX_HOURS = 10 * HOURS_PER_YEAR  # list prices do not hold for longer than this

COMPARED_MODELS = ("H100", "A100", "L40S", "L4")
"""Priced side by side when a request names no model, instance type or price."""

EXAMPLES = ("16 h100 for a week", "2 nodes of p4d for 3 days", "4 gpus 10h at $3/hr")

MONTH_NOTE = (
    "a month is 730 h and a year 8,760 h, the convention cloud providers bill by "
    "(365 days x 24 h a year, a twelfth of that a month)"
)


class EstimateInputError(ValueError):
    """The request cannot be priced as typed: ``problem`` says why, ``understood`` what had been
    read of it (may be empty), ``examples`` are correct requests. ``str()`` gives all three in
    two lines."""

    def __init__(self, problem: str, examples: tuple[str, ...] | list[str], understood: str = ""):
        self.problem = problem
        self.examples = tuple(examples)
        self.understood = understood
        read = f" (I read: {understood})" if understood else ""
        hint = " or ".join(f"`{e}`" for e in self.examples)
        super().__init__(f"{problem}{read}\nwrite it like {hint}")


def _error(problem: str, *examples: str, understood: str = "") -> EstimateInputError:
    return EstimateInputError(problem, examples or EXAMPLES[:2], understood)


@dataclass(frozen=True)
class GivenPrice:
    """A price typed in the request: ``usd_per_hour`` USD per hour as typed, for one GPU or, when
    ``instance_type`` is set, for one instance of it holding ``instance_gpus`` GPUs."""

    usd_per_hour: float
    instance_type: str | None = None
    instance_gpus: int = 1

    @property
    def usd_per_gpu_hour(self) -> float:
        """USD per GPU-hour."""
        return self.usd_per_hour / self.instance_gpus

    def describe(self) -> str:
        """``"$3/GPU-hour"`` or ``"$98.32/h per p5.48xlarge (8 GPUs)"``."""
        if self.instance_type is None:
            return f"{usd_rate(self.usd_per_hour)}/GPU-hour"
        return f"{usd_rate(self.usd_per_hour)}/h per {self.instance_type} ({_plural(self.instance_gpus, 'GPU')})"


@dataclass(frozen=True)
class EstimateRequest:
    """A request as read: ``gpus`` GPUs for ``hours`` hours, or ``given_gpu_hours`` GPU-hours
    (then ``hours`` is ``None``, and so is ``gpus`` unless a count was given too).

    ``gpu_model`` is a family key (``"A100"``) and ``gpu_memory`` a size per GPU (``"40GB"``);
    ``instance_type`` the instance type named, holding ``instance_gpus`` GPUs, ``nodes`` of them
    when nodes were counted. Prices given are :class:`GivenPrice`; ``capacity`` is the capacity
    type the request asked for (``None``: not said). ``checkpoint_hours`` and
    ``interruption_hours`` are hours; ``*_given`` say whether they came from the request.
    ``notes`` say how parts were read (conventions, defaults); ``ignored`` lists ignored words that
    hold a digit. Raises EstimateInputError when the numbers do not describe a real job: fewer
    than 1 or more than :data:`MAX_GPUS` GPUs, a duration under a minute or over
    :data:`MAX_HOURS`, a price of $0 or less, or checkpoints too sparse to make progress.
    """

    gpus: int | None
    hours: float | None
    gpu_model: str | None = None
    gpu_memory: str | None = None
    instance_type: str | None = None
    instance_gpus: int | None = None
    nodes: int | None = None
    given_gpu_hours: float | None = None
    on_demand_price: GivenPrice | None = None
    spot_price: GivenPrice | None = None
    capacity: CapacityType | None = None
    checkpoint_hours: float = DEFAULT_CHECKPOINT_HOURS
    interruption_hours: float = DEFAULT_INTERRUPTION_HOURS
    checkpoint_given: bool = False
    interruption_given: bool = False
    count_given: bool = True
    notes: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    text: str = ""

    def __post_init__(self) -> None:
        read = _understood(self)
        if self.nodes is not None and self.nodes < 1:
            raise _error("the node count must be at least 1", "2 nodes of p4d for 3 days", understood=read)
        if self.gpus is not None and self.gpus < 1:
            raise _error("the GPU count must be at least 1", "1 h100 36h", understood=read)
        if self.gpus is not None and self.gpus > MAX_GPUS:
            raise _error(
                f"{self.gpus:,} GPUs is more than {MAX_GPUS:,}, more than the largest clusters hold; "
                "price what one job or team uses",
                "1024 h100 for a week",
                understood=read,
            )
        if self.hours is not None:
            if self.hours <= 0:
                raise _error("the duration must be longer than zero", "8 h100 for 3 days", understood=read)
            if self.hours < 1 / 60 - 1e-9:
                raise _error("the duration must be at least a minute", "1 h100 for 10 minutes", understood=read)
            if self.hours > MAX_HOURS:
                raise _error(
                    f"{format_number(self.hours)} h is more than 10 years ({MAX_HOURS:,.0f} h): list prices "
                    "do not hold that long; price a year at a time",
                    "16 h100 for a year",
                    understood=read,
                )
        if self.given_gpu_hours is not None:
            if self.given_gpu_hours <= 0:
                raise _error("the GPU-hours must be more than zero", "1000 gpu-hours of a100", understood=read)
            if self.given_gpu_hours > MAX_GPUS * MAX_HOURS:
                raise _error(
                    f"{format_number(self.given_gpu_hours)} GPU-hours is more than {MAX_GPUS:,} GPUs for 10 years",
                    "1000 gpu-hours of a100",
                    understood=read,
                )
        elif self.gpus is None or self.hours is None:
            raise _error("a request needs a GPU count and a duration, or GPU-hours", *EXAMPLES[:2], understood=read)
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
        for price in (self.on_demand_price, self.spot_price):
            if price is not None and price.usd_per_hour <= 0:
                raise _error("a price must be more than $0 an hour", "4 gpus 10h at $3/hr", understood=read)

    @property
    def gpu_hours(self) -> float:
        """GPUs x hours, or the GPU-hours given."""
        if self.given_gpu_hours is not None:
            return self.given_gpu_hours
        assert self.gpus is not None and self.hours is not None  # __post_init__ checked
        return self.gpus * self.hours

    @property
    def on_demand_usd_per_gpu_hour(self) -> float | None:
        """The on-demand price given, USD per GPU-hour, or ``None``."""
        return None if self.on_demand_price is None else self.on_demand_price.usd_per_gpu_hour

    @property
    def spot_usd_per_gpu_hour(self) -> float | None:
        """The spot price given, USD per GPU-hour, or ``None``."""
        return None if self.spot_price is None else self.spot_price.usd_per_gpu_hour


@dataclass(frozen=True)
class CostLine:
    """On-demand: ``usd_per_gpu_hour`` (USD per GPU-hour, rounded to 4 decimals as shown),
    ``total_usd`` (that rate x the estimate's GPU-hours, to the cent) and the quote it came from."""

    usd_per_gpu_hour: float
    total_usd: float
    quote: PriceQuote


@dataclass(frozen=True)
class SpotCost:
    """The spot price, list and interruption-adjusted, rounded like :class:`CostLine`.

    ``usd_per_gpu_hour``/``total_usd`` are the list spot price (USD per GPU-hour) and its total
    (USD); ``overhead_factor`` is ``I / (I - C/2)``; ``effective_usd_per_gpu_hour`` (list x
    factor) and ``effective_total_usd`` include the redone work. ``savings_pct`` is how much less
    the effective total costs than on-demand and ``list_savings_pct`` the same before
    interruptions, in percent, negative when spot costs more, ``None`` without an on-demand price.
    """

    usd_per_gpu_hour: float
    total_usd: float
    quote: PriceQuote
    overhead_factor: float
    effective_usd_per_gpu_hour: float
    effective_total_usd: float
    savings_pct: float | None
    list_savings_pct: float | None


@dataclass(frozen=True)
class Option:
    """One way to buy the GPU-hours: a GPU model on an instance type (``instance_gpus`` GPUs, in
    ``where``, e.g. ``"aws us-east-1"``), priced on-demand and on spot (each ``None`` when no
    price is known). ``notes`` say how the instance type was chosen and which price is missing
    and how to set it."""

    gpu_model: str | None
    instance_type: str | None
    instance_gpus: int | None
    where: str | None
    on_demand: CostLine | None
    spot: SpotCost | None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Estimate:
    """The cost of a request: ``gpu_hours`` (rounded to 0.01, as shown and as the totals are
    computed), one :class:`Option` per way of buying them (several when ``comparison``: the
    request named no model, instance type or price), the assumptions made, as sentences, and the
    ``reading`` of the request (:func:`reading`)."""

    request: EstimateRequest
    gpu_hours: float
    options: tuple[Option, ...]
    comparison: bool
    assumptions: tuple[str, ...]
    reading: str

    @property
    def answer(self) -> Option | None:
        """The one option priced, or ``None`` for a comparison."""
        return None if self.comparison else self.options[0]


# --- reading a request -----------------------------------------------------------------------------

_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+"
_START = r"(?<![\w.$/-])"  # a number on its own, not inside a word, a price or a range
_SNUM = rf"-?(?:{_NUM})"
_ONES = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORD_NUMBER = (
    rf"(?:{'|'.join(_TENS)})(?:[-\s](?:{'|'.join(_ONES)}))?|{'|'.join(_TEENS)}|{'|'.join(_ONES)}|zero"
)
_UNITS = r"years?|yrs?|y|months?|mos?|weeks?|wks?|w|days?|d|hours?|hrs?|h|minutes?|mins?|m"
_DURATION_WORDS = rf"half\s+an?|a\s+couple\s+of|couple\s+of|{_WORD_NUMBER}|an?|per"
_ATOM = (
    rf"(?:{_START}(?P<num>{_SNUM})\s*(?P<unit>{_UNITS})(?!\w)"
    rf"|\b(?P<word>{_DURATION_WORDS})\s+(?P<wunit>{_UNITS})(?!\w)"
    r"|\b(?P<adverb>hourly|daily|weekly|monthly|yearly|annually))"
    r"(?P<half>\s+and\s+a\s+half)?"
)
_ATOM_RE = re.compile(_ATOM)
_GLUED_RE = re.compile(rf"(?<![\w.])((?:{_NUM})(?:{_UNITS}))(?=\d)")
_ADVERB_UNITS = {"hourly": "h", "daily": "d", "weekly": "w", "monthly": "mo", "yearly": "y", "annually": "y"}
_JOINER_RE = re.compile(r"\s*(?:,|and)?\s*")

_NODE_WORD = r"(?:nodes?|instances?|machines?|vms?|servers?|hosts?|boxes|box)"


def _per_unit(group: str) -> str:
    """What a price is per, as the named ``group``: a GPU, a node, or the instance type named."""
    return rf"(?P<{group}>gpus?|{_NODE_WORD}|INSTANCE)"


_SEP = r"(?:\s*/\s*|\s+per\s+|\s+an?\s+|\s+each\s+)"
_PRICE_RE = re.compile(
    r"(?P<pre>(?:\bat\b|@)\s*)?(?P<dollar>\$\s*|\busd\s*)?(?<![\w.-])(?P<num>" + _NUM + r")"
    r"(?P<after>\s*(?:\$|usd\b|dollars?\b|bucks\b))?"
    rf"(?P<sep>{_SEP})(?:{_per_unit('unit')}(?:\s*[-/]\s*|\s+per\s+|\s+an?\s+|\s*))?"
    r"(?:hours?|hrs?|h)(?!\w)"
    rf"(?:(?:\s*/\s*|\s+per\s+|\s+(?:for\s+)?(?:an?|each|one)\s+|\s+for\s+){_per_unit('unit2')}(?!\w))?"
)
_SPOT_BEFORE_RE = re.compile(r"(?:\bon\s+)?\bspot(?:\s+price)?(?:\s+(?:is|of))?\s*[:=]?\s*$")
_LABELS_NEXT = r"(?!(?:\s+price)?(?:\s+(?:is|of))?\s*[:=]?\s*(?:at\b|@)?\s*\$?\s*\d)"
_SPOT_AFTER_RE = re.compile(rf"^\s*(?:on\s+|for\s+)?spot\b{_LABELS_NEXT}")
_ON_DEMAND = r"on[-\s]?demand|ondemand"
_ON_DEMAND_BEFORE_RE = re.compile(rf"\b(?:{_ON_DEMAND})(?:\s+price)?(?:\s+(?:is|of))?\s*[:=]?\s*$")
_ON_DEMAND_AFTER_RE = re.compile(rf"^\s*(?:{_ON_DEMAND})\b{_LABELS_NEXT}")
_LOOSE_PRICE_RE = re.compile(r"\$|(?:\bat\b|@)\s*-?\s*\d|\d\s*(?:usd|dollars?|bucks)\b")
_CHECKPOINT_RE = re.compile(rf"\bcheckpoint(?:s|ing|ed)?\s+(?:every\s+|each\s+)?(?P<d>{_ATOM})")
_INTERRUPT_RE = re.compile(rf"\binterrupt(?:s|ed|ions?)?\s+(?:every\s+|each\s+)?(?P<d>{_ATOM})")
_GPU_HOURS_RE = re.compile(
    rf"(?:{_START}(?P<num>{_SNUM})\s*|\b(?P<word>an?|one|per)\s+)gpu[-\s]?(?:hours?|hrs?|h)(?!\w)"
)
_COUNT = rf"(?:{_START}(?P<num>{_SNUM})|\b(?P<word>{_WORD_NUMBER})\b)\s*(?:x\s*)?"
_NODE_COUNT_RE = re.compile(
    rf"{_COUNT}(?:{_NODE_WORD}(?:\s+of)?(?:\s+INSTANCE)?|INSTANCE(?:\s+{_NODE_WORD})?)(?!\w)"
)
_GPU_COUNT_RE = re.compile(rf"{_COUNT}(?:gpus?|cards?|accelerators?|MODEL)(?!\w)")
_BARE_COUNT_RE = re.compile(rf"{_START}(?P<num>{_SNUM})(?:\s*x(?!\w))?")
_MEMORY_RE = re.compile(r"(?<![\w.$])(\d+)\s*gb(?!\w)")
_INSTANCE_SHAPES = (
    r"[a-z][a-z0-9]*(?:-[a-z0-9]+)?\.(?:\d*xlarge|metal(?:-\d+xl)?|large|medium)",  # AWS: p5.48xlarge
    r"[a-z]\d+[a-z]?-(?:highgpu|megagpu|ultragpu|edgegpu|standard|highmem|highcpu)-\d+g?",  # GCP: a3-megagpu-8g
    r"(?:standard_)?n[a-z]\d+[a-z]*(?:_[a-z0-9]+)*_v\d+",  # Azure: nd96amsr_a100_v4
)
_SPOT_WORDS_RE = re.compile(r"\b(?:on\s+)?(?:spot|preemptible)\b")
_ON_DEMAND_WORDS_RE = re.compile(rf"\b(?:{_ON_DEMAND})\b")

_WORD_VALUES: dict[str, float] = {w: i + 1 for i, w in enumerate(_ONES)}
_WORD_VALUES.update({w: i + 10 for i, w in enumerate(_TEENS)})
_WORD_VALUES.update({w: 10 * (i + 2) for i, w in enumerate(_TENS)})
_WORD_VALUES.update({"zero": 0, "a": 1, "an": 1, "per": 1, "half a": 0.5, "half an": 0.5})
_WORD_VALUES.update({"a couple of": 2, "couple of": 2})


def parse_estimate(text: str, prices: PriceBook | None = None) -> EstimateRequest:
    """Read a request such as ``what would 16 h100 cost for a week?``, ``2 nodes of p4d for 3
    days`` or ``4 gpus 10h at $3/hr`` (how, in the module docstring).

    ``prices`` names the instance types that may be typed (catalog, aliases, config) and how many
    GPUs each holds; without it only full instance type names are recognised, and nodes cannot be
    counted. Pure. Raises EstimateInputError saying what was read, what is wrong and a correct
    example: no duration, two of anything, a price that is not per hour, a GPU model that does
    not match the instance type, a count that is not a whole number, or a request that
    :class:`EstimateRequest` refuses.
    """
    return _Reader(text, prices).read()


class _Reader:
    """One request being read: each step takes its part out of ``self.s`` and keeps what it found
    in ``self.found`` (for error messages), so later steps never see it again."""

    def __init__(self, text: str, prices: PriceBook | None):
        self.original = " ".join(text.split())
        self.prices = prices
        self.s = _normalize(self.original)
        self.found: dict[str, str] = {}
        self.notes: list[str] = []
        self.unitless: set[bool] = set()  # is_spot of each price typed without "per GPU" or "per node"
        self.on_spot = False  # "on spot" was said with a spot price ("on spot at $2/hr")

    def fail(self, problem: str, *examples: str) -> EstimateInputError:
        order = ("count", "model", "instance", "gpu_hours", "duration", "price", "spot price", "capacity")
        said = [self.found[k] for k in order if k in self.found]
        return _error(problem, *examples, understood=", ".join(said))

    def read(self) -> EstimateRequest:
        if not self.s:
            raise self.fail("the request is empty", *EXAMPLES[:2])
        instance, instance_gpus, entry = self._instance()
        memory = self._memory()
        model = self._model(entry, memory)
        on_demand, spot = self._prices(instance, instance_gpus)
        checkpoint = self._interval(_CHECKPOINT_RE, "checkpoint", "16 a100 1w checkpoint 30m")
        interruption = self._interval(_INTERRUPT_RE, "interrupt", "8 h100 3d interruptions every 3h")
        given_gpu_hours = self._gpu_hours()
        hours = self._duration()
        capacity = self._capacity()
        gpus, nodes = self._counts(instance, instance_gpus)
        ignored = tuple(w for w in self.s.split() if re.search(r"\d", w) and w not in ("MODEL", "INSTANCE"))
        if memory and not (model or instance):
            ignored += (f"{memory.lower()} (no GPU model named)",)
            memory = None

        count_given = gpus is not None
        if given_gpu_hours is not None:
            if hours is not None:
                raise self.fail(
                    "give GPU-hours or a duration, not both", "1000 gpu-hours of a100", "8 a100 for 125 hours"
                )
            if gpus is not None and gpus >= 1:  # fewer is refused by EstimateRequest
                hours = given_gpu_hours / gpus
                given_gpu_hours = None
        else:
            if hours is None:
                raise self.fail(
                    f'could not find a duration in "{self.original}"',
                    f"{gpus or 16} {(model or 'h100').lower()} 1w",
                    "8 h100 for 3 days",
                )
            if gpus is None:
                nodes = 1 if instance_gpus else None
                gpus = instance_gpus or 1
                self.notes.append(
                    f"no count given: priced for 1 {instance} node ({_plural(gpus, 'GPU')})"
                    if nodes
                    else "no count given: priced for 1 GPU"
                )
        if nodes and instance_gpus and self.unitless:
            # "2 nodes of p4d at $21.96/hr": whoever counts nodes prices them per node.
            on_demand, spot = (
                GivenPrice(p.usd_per_hour, instance, instance_gpus) if p and is_spot in self.unitless else p
                for p, is_spot in ((on_demand, False), (spot, True))
            )
            self.notes.append(
                f"a price without a unit was read per {instance}, as nodes were counted; "
                "write it like `at $3/gpu-hour` for a price per GPU-hour"
            )
        return EstimateRequest(
            gpus=gpus,
            hours=hours,
            gpu_model=model,
            gpu_memory=memory,
            instance_type=instance,
            instance_gpus=instance_gpus,
            nodes=nodes,
            given_gpu_hours=given_gpu_hours,
            on_demand_price=on_demand,
            spot_price=spot,
            capacity=capacity,
            checkpoint_hours=checkpoint if checkpoint is not None else DEFAULT_CHECKPOINT_HOURS,
            interruption_hours=interruption if interruption is not None else DEFAULT_INTERRUPTION_HOURS,
            checkpoint_given=checkpoint is not None,
            interruption_given=interruption is not None,
            count_given=count_given,
            notes=tuple(self.notes),
            ignored=ignored,
            text=self.original,
        )

    # Each step below removes what it read from self.s.

    def _take(self, match: re.Match[str], placeholder: str = " ") -> None:
        self.s = self.s[: match.start()] + f" {placeholder} " + self.s[match.end() :]

    def _instance(self) -> tuple[str | None, int | None, CatalogEntry | None]:
        known = self.prices.instance_names() if self.prices else []
        names = "|".join([*(re.escape(n) for n in sorted(known, key=len, reverse=True)), *_INSTANCE_SHAPES])
        pattern = re.compile(rf"(?<![\w.-])(?:{names})(?![\w.-])")
        found: list[str] = []
        while m := pattern.search(self.s):
            name = self._canonical(m.group(0))
            if name not in found:
                found.append(name)
            self._take(m, "INSTANCE")
        if len(found) > 1:
            raise self.fail(f'"{self.original}" names {len(found)} instance types ({", ".join(found)}); give one', EXAMPLES[1])
        if not found:
            return None, None, None
        name = found[0]
        entry = self.prices.catalog.entry(name) if self.prices else None
        gpus = self.prices.instance_gpus(name) if self.prices else None
        self.found["instance"] = name
        return name, gpus, entry

    def _canonical(self, typed: str) -> str:
        if self.prices is None:
            return typed
        entry = self.prices.catalog.entry(typed)
        if entry is not None:
            return entry.instance_type
        configured = self.prices.overrides.instance(typed)
        return configured[0] if configured else typed

    def _memory(self) -> str | None:
        sizes = []
        while m := _MEMORY_RE.search(self.s):
            if f"{m.group(1)}GB" not in sizes:
                sizes.append(f"{m.group(1)}GB")
            self._take(m)
        if len(sizes) > 1:
            raise self.fail(f'"{self.original}" gives {len(sizes)} memory sizes ({", ".join(sizes)}); give one', "4 a100-40gb 10h")
        return sizes[0] if sizes else None

    def _model(self, entry: CatalogEntry | None, memory: str | None) -> str | None:
        models: list[str] = []
        for m in reversed(list(re.finditer(r"\S+", self.s))):
            word = m.group(0)
            if not re.search(r"\d", word):
                continue
            family = gpu_family(word) or (gpu_family(word[:-1]) if word.endswith("s") else None)
            if family is None:
                continue
            if family not in models:
                models.insert(0, family)
            self._take(m, "MODEL")
        if len(models) > 1:
            raise self.fail(f'"{self.original}" names {len(models)} GPU models ({", ".join(models)}); give one', EXAMPLES[0])
        model = models[0] if models else None
        if entry is not None:
            if model is not None and model != entry.gpu_model:
                raise self.fail(
                    f"{entry.instance_type} has {entry.gpu_model} GPUs, not {model}",
                    f"16 {entry.gpu_model.lower()} for a week on {entry.instance_type}",
                )
            if memory and not (entry.gpu_memory or "").upper().startswith(memory):
                raise self.fail(
                    f"{entry.instance_type} has {entry.gpu_model} {entry.gpu_memory or 'of unknown memory'}, not {memory}",
                    f"16 gpus for a week on {entry.instance_type}",
                )
            model = entry.gpu_model
        if model:
            self.found["model"] = model + (f" {memory}" if memory else "")
        return model

    def _prices(self, instance: str | None, instance_gpus: int | None) -> tuple[GivenPrice | None, GivenPrice | None]:
        on_demand: list[GivenPrice] = []
        spot: list[GivenPrice] = []
        pos = 0
        while m := _PRICE_RE.search(self.s, pos):
            by_dollar = m.group("dollar") or m.group("after") or m.group("pre")
            if not by_dollar and m.group("sep").strip() not in ("/", "per"):
                pos = m.end()  # "10 an hour" is a count and a duration, not a price
                continue
            start, end = m.start(), m.end()
            before, after = self.s[:start], self.s[end:]
            is_spot = False
            if b := _SPOT_BEFORE_RE.search(before):
                is_spot, start = True, b.start()
                self.on_spot |= b.group(0).startswith("on")
            elif a := _SPOT_AFTER_RE.search(after):
                is_spot, end = True, end + a.end()
                self.on_spot |= a.group(0).strip().startswith("on")
            elif b := _ON_DEMAND_BEFORE_RE.search(before):
                start = b.start()
            elif a := _ON_DEMAND_AFTER_RE.search(after):
                end = end + a.end()
            unit = m.group("unit") or m.group("unit2")
            price = GivenPrice(float(m.group("num").replace(",", "")))
            if unit is None:
                self.unitless.add(is_spot)
            if unit and not unit.startswith("gpu"):
                if instance is None:
                    raise self.fail(
                        f"a price per {unit.lower()} needs the instance type, to know how many GPUs it holds",
                        "2 nodes of p5 for 3 days at $55.04/hr per node",
                        "16 gpus 3d at $3/hr",
                    )
                if not instance_gpus:
                    raise self.fail(_gpus_unknown(instance), "16 gpus 3d at $3/hr")
                price = GivenPrice(price.usd_per_hour, instance, instance_gpus)
            (spot if is_spot else on_demand).append(price)
            self.s = self.s[:start] + " " + self.s[end:]
            pos = start
        for what, found, example in (("price", on_demand, "4 gpus 10h at $3/hr"), ("spot price", spot, "8 h100 3d spot $2.50/hr")):
            if len(found) > 1:
                raise self.fail(f'"{self.original}" gives {len(found)} values for the {what}; give one', example)
            if found:
                self.found[what] = f"{what} {found[0].describe()}"
        if _LOOSE_PRICE_RE.search(self.s):
            raise self.fail(
                f'could not read the price in "{self.original}": give it per hour, per GPU or per node',
                "4 gpus 10h at $3/hr",
                "2 nodes of p4d 3d at $21.96/hr per node",
            )
        return (on_demand[0] if on_demand else None), (spot[0] if spot else None)

    def _interval(self, pattern: re.Pattern[str], word: str, example: str) -> float | None:
        found = []
        while m := pattern.search(self.s):
            found.append(_atom_hours(_ATOM_RE.search(m.group("d"))))  # type: ignore[arg-type]
            self._take(m)
        what = "checkpoint interval" if word == "checkpoint" else "interruption interval"
        if len(found) > 1:
            raise self.fail(f'"{self.original}" gives {len(found)} values for the {what}; give one', example)
        if re.search(rf"\b{word}", self.s):
            raise self.fail(f'could not read the {what} in "{self.original}"', example)
        return found[0] if found else None

    def _gpu_hours(self) -> float | None:
        found = []
        while m := _GPU_HOURS_RE.search(self.s):
            found.append(_value(m.group("num"), m.group("word")))
            self._take(m)
        if len(found) > 1:
            raise self.fail(f'"{self.original}" gives GPU-hours {len(found)} times; give one', "1000 gpu-hours of a100")
        if found:
            self.found["gpu_hours"] = f"{format_number(found[0])} GPU-hours"
        return found[0] if found else None

    def _duration(self) -> float | None:
        self.s = _GLUED_RE.sub(r"\1 ", self.s)  # 1d12h -> 1d 12h, then read as one duration
        atoms = list(_ATOM_RE.finditer(self.s))
        groups: list[list[re.Match[str]]] = []
        for atom in atoms:
            last = groups[-1][-1] if groups else None
            joined = last is not None and _JOINER_RE.fullmatch(self.s[last.end() : atom.start()])
            if last is not None and joined and _atom_unit(atom) < _atom_unit(last):
                groups[-1].append(atom)  # 1d12h, 1 day and 12 hours: one duration
            else:
                groups.append([atom])
        if len(groups) > 1:
            said = ", ".join(self.s[g[0].start() : g[-1].end()].strip() for g in groups)
            raise self.fail(f'"{self.original}" has {len(groups)} durations ({said}); give one', "2 h100 36h")
        if not groups:
            return None
        hours = sum(_atom_hours(a) for a in groups[0])
        if any(_atom_unit(a) >= HOURS_PER_MONTH for a in groups[0]):
            self.notes.append(MONTH_NOTE)
        self.s = self.s[: groups[0][0].start()] + " " + self.s[groups[0][-1].end() :]
        self.found["duration"] = describe_hours(hours)
        return hours

    def _capacity(self) -> CapacityType | None:
        spot = self.on_spot or bool(_SPOT_WORDS_RE.search(self.s))
        on_demand = bool(_ON_DEMAND_WORDS_RE.search(self.s))
        self.s = _ON_DEMAND_WORDS_RE.sub(" ", _SPOT_WORDS_RE.sub(" ", self.s))
        if spot == on_demand:
            return None  # neither, or both: show both, neither first
        self.found["capacity"] = "on spot" if spot else "on-demand"
        return CapacityType.SPOT if spot else CapacityType.ON_DEMAND

    def _counts(self, instance: str | None, instance_gpus: int | None) -> tuple[int | None, int | None]:
        # (position, value): a replacement shifts only what follows it, so positions keep the order typed.
        node_at: list[tuple[int, float]] = []
        gpu_at: list[tuple[int, float]] = []
        for pattern, into in ((_NODE_COUNT_RE, node_at), (_GPU_COUNT_RE, gpu_at), (_BARE_COUNT_RE, gpu_at)):
            while m := pattern.search(self.s):
                into.append((m.start(), _value(m.group("num"), m.groupdict().get("word"))))
                # A counted instance type or model stays named: keep its placeholder.
                self._take(m, "INSTANCE" if "INSTANCE" in m.group(0) else "MODEL" if "MODEL" in m.group(0) else " ")
        nodes = [v for _, v in sorted(node_at)]
        gpus = [v for _, v in sorted(gpu_at)]
        for what, found in (("GPU counts", gpus), ("node counts", nodes)):
            if len(found) > 1:
                said = ", ".join(format_number(n) for n in found)
                raise self.fail(f'"{self.original}" has {len(found)} {what} ({said}); give one', EXAMPLES[0])
            if found and not float(found[0]).is_integer():
                raise self.fail(f'the {what[:-1]} "{format_number(found[0])}" must be a whole number', EXAMPLES[0])
        gpu_count = int(gpus[0]) if gpus else None
        node_count = int(nodes[0]) if nodes else None
        if node_count is None:
            if gpu_count is not None:
                self.found["count"] = _plural(gpu_count, "GPU")
            return gpu_count, None
        self.found["count"] = _plural(node_count, "node")
        if instance is None:
            raise self.fail(
                "nodes of which instance type? A node count needs one, to know how many GPUs a node holds",
                "2 nodes of p4d for 3 days",
                f"{8 * max(node_count, 1)} {(self.found.get('model') or 'h100').split()[0].lower()} for 3 days",
            )
        if not instance_gpus:
            raise self.fail(_gpus_unknown(instance), "16 gpus 3d at $3/hr")
        total = node_count * instance_gpus
        if gpu_count is not None and gpu_count != total:
            raise self.fail(
                f"{_plural(node_count, 'node')} of {instance} hold {_plural(total, 'GPU')}, not {gpu_count}",
                f"{node_count} nodes of {instance} for 3 days",
            )
        return total, node_count


def _normalize(text: str) -> str:
    s = text.lower().replace("×", " x ").replace("’", "'")
    s = re.sub(r"[\"'`?!()\[\]]", " ", s)
    s = re.sub(r"[.,;:]+(?=\s|$)", " ", s)  # sentence punctuation; 1.5, 1,000 and p5.48xlarge stay
    s = re.sub(r"(?<![\w.])(\d+)x(?=[a-z])", r"\1 x ", s)  # 8xh100 -> 8 x h100
    return " ".join(s.split())


def _value(num: str | None, word: str | None) -> float:
    if num is not None:
        return float(num.replace(",", ""))
    assert word is not None  # the patterns match one or the other
    key = " ".join(word.split())
    if key in _WORD_VALUES:
        return _WORD_VALUES[key]
    tens, _, ones = key.replace("-", " ").partition(" ")
    return _WORD_VALUES[tens] + (_WORD_VALUES[ones] if ones else 0)


def _unit_hours(unit: str) -> float:
    if unit.startswith("mo"):
        return HOURS_PER_MONTH
    if unit.startswith("m"):
        return 1 / 60
    return {"y": HOURS_PER_YEAR, "w": 168.0, "d": 24.0, "h": 1.0}[unit[0]]


def _atom_unit(atom: re.Match[str]) -> float:
    unit = atom.group("unit") or atom.group("wunit") or _ADVERB_UNITS[atom.group("adverb")]
    return _unit_hours(unit)


def _atom_hours(atom: re.Match[str]) -> float:
    number = 1.0 if atom.group("adverb") else _value(atom.group("num"), atom.group("word"))
    return number * _atom_unit(atom) * (1.5 if atom.group("half") else 1.0)


def _gpus_unknown(instance: str) -> str:
    return (
        f"how many GPUs does {instance} hold? It is not in the catalog; set it in the config, "
        f"e.g. {config_example(instance, None).split(' or ')[0]}"
    )


# --- how a request was read ------------------------------------------------------------------------


def reading(req: EstimateRequest) -> str:
    """How ``req`` was read, e.g. ``"16 GPUs x 168 h (1 week) = 2,688 GPU-hours"`` or ``"2 x
    p4d.24xlarge (16 A100 GPUs) x 72 h (3 days) = 1,152 GPU-hours, on spot"``: every part that
    changes the answer, so a misreading shows."""
    model = " ".join(p for p in (req.gpu_model, req.gpu_memory) if p)
    gpu_word = f"{model} GPU" if model else "GPU"
    if req.given_gpu_hours is not None:
        text = f"{format_number(req.gpu_hours)} {gpu_word}-hours"
        if req.instance_type:
            text += f" on {req.instance_type}"
    else:
        assert req.gpus is not None and req.hours is not None  # __post_init__ checked
        unsaid = "" if req.count_given else ", no count given"
        if req.nodes is not None:
            count = f"{req.nodes:,} x {req.instance_type} ({_plural(req.gpus, gpu_word)}{unsaid})"
        else:
            count = _plural(req.gpus, gpu_word) + (f" on {req.instance_type}" if req.instance_type else "")
            count += f" ({unsaid[2:]})" if unsaid else ""
        text = f"{count} x {describe_hours(req.hours)} = {_plural(req.gpu_hours, 'GPU-hour')}"
    if req.on_demand_price:
        text += f", at {req.on_demand_price.describe()}"
    if req.spot_price:
        text += f", spot at {req.spot_price.describe()}"
    if req.capacity is CapacityType.SPOT:
        text += ", on spot"
    elif req.capacity is CapacityType.ON_DEMAND:
        text += ", on-demand"
    if req.ignored:
        text += f"; ignored: {', '.join(req.ignored)}"
    return text


def _understood(req: EstimateRequest) -> str:
    """What a request that failed its checks said, in the words of :func:`reading`, without
    relying on the checks having passed."""
    parts = []
    if req.nodes is not None:
        parts.append(f"{req.nodes} nodes of {req.instance_type}")
    if req.gpus is not None:
        parts.append(_plural(req.gpus, "GPU"))
    if req.gpu_model:
        parts.append(req.gpu_model)
    if req.hours is not None:
        parts.append(describe_hours(req.hours) if req.hours > 0 else f"{format_number(req.hours)} h")
    if req.given_gpu_hours is not None:
        parts.append(f"{format_number(req.given_gpu_hours)} GPU-hours")
    return ", ".join(parts)


def describe_hours(hours: float) -> str:
    """A duration in hours as the answer shows it: ``168`` -> ``"168 h (1 week)"``, ``730`` ->
    ``"730 h (1 month)"``, ``1.5`` -> ``"1.5 h (90 min)"``, ``36`` -> ``"36 h"``."""
    text = f"{format_number(hours)} h"
    for size, unit in ((HOURS_PER_YEAR, "year"), (HOURS_PER_MONTH, "month"), (168.0, "week"), (24.0, "day")):
        n = hours / size
        if hours >= size and abs(n - round(n)) < 1e-9:
            return f"{text} ({_plural(round(n), unit)})"
    minutes = hours * 60
    if not float(hours).is_integer() and hours < 24 and abs(minutes - round(minutes)) < 1e-6:
        return f"{text} ({round(minutes)} min)"
    return text


def format_hours(hours: float) -> str:
    """A duration in hours in the request syntax: ``168`` -> ``"1w"``, ``72`` -> ``"3d"``,
    ``36`` -> ``"36h"``, ``0.5`` -> ``"30m"``."""
    for unit, size in (("w", 168.0), ("d", 24.0), ("h", 1.0)):
        if hours >= size and (hours / size).is_integer():
            return f"{int(hours / size)}{unit}"
    if (hours * 60).is_integer():
        return f"{int(hours * 60)}m"
    return f"{hours:g}h"


def format_number(x: float) -> str:
    """A quantity (hours, GPU-hours, a count) as the answer shows it, to 2 decimals at most:
    ``2688.0`` -> ``"2,688"``, ``4.5`` -> ``"4.5"``, ``0.1667`` -> ``"0.17"``."""
    text = f"{x:,.2f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _plural(n: float, word: str) -> str:
    return f"{format_number(n)} {word}{'' if n == 1 else 's'}"


def usd_rate(rate: float) -> str:
    """A rate in USD as the answer shows it, to 4 decimals at most and 2 at least: ``6.88`` ->
    ``"$6.88"``, ``2.7447`` -> ``"$2.7447"``, ``3`` -> ``"$3.00"``."""
    text = f"{rate:,.4f}".rstrip("0")
    if len(text.split(".")[1]) < 2:
        text = f"{rate:,.2f}"
    return f"${text}"



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
    """Price ``req`` on-demand and on spot (how, in the module docstring). Pure.

    Raises EstimateInputError when the request names a GPU model or instance type that has no
    price, saying which and how to set one in the config, with an example that gives a price.
    """
    gpu_hours = _round(req.gpu_hours, "0.01")
    comparison = not (req.gpu_model or req.instance_type or req.on_demand_price or req.spot_price)
    if comparison:
        options = tuple(_option(req, prices, gpu_hours, family) for family in COMPARED_MODELS)
    else:
        options = (_option(req, prices, gpu_hours, req.gpu_model, strict=True),)
    assumptions = list(req.notes)
    if any(o.spot for o in options):
        interruption = f"spot interrupted every {format_hours(req.interruption_hours)}"
        if not req.interruption_given:
            interruption += " (default: GPU spot on AWS is interrupted roughly once per 4 hours)"
        checkpoint = f"a checkpoint every {format_hours(req.checkpoint_hours)}"
        if not req.checkpoint_given:
            checkpoint += " (default)"
        assumptions.append(
            f"{interruption}, {checkpoint}: each interruption redoes half a checkpoint interval on "
            "average; restart time is not counted"
        )
    return Estimate(req, gpu_hours, options, comparison, tuple(assumptions), reading(req))


def _option(
    req: EstimateRequest, prices: PriceBook, gpu_hours: float, model: str | None, *, strict: bool = False
) -> Option:
    """``model`` (or the request's instance type or prices) priced for ``gpu_hours``. With
    ``strict`` a missing on-demand price is an error; without, the option says so in its notes."""
    notes: list[str] = []
    instance = req.instance_type
    flat: PriceQuote | None = None
    if instance is None and model is not None and req.on_demand_price is None:
        if model in prices.overrides.gpu_families:
            flat = prices.gpu_hour(model, CapacityType.ON_DEMAND)
        else:
            chosen = _cheapest(prices, model, req.gpu_memory, req.gpus)
            if chosen is not None:
                instance, why = chosen
                notes.append(why)

    on_demand: CostLine | None = None
    if req.on_demand_price is not None:
        on_demand = _line(_given(req.on_demand_price, CapacityType.ON_DEMAND, model), gpu_hours)
    elif flat is not None:
        on_demand = _line(flat, gpu_hours)
    elif instance is not None:
        try:
            on_demand = _line(prices.quote(instance, CapacityType.ON_DEMAND, None), gpu_hours)
        except PriceNotFound:
            missing = f"no price known for {instance}: set one in the config, e.g. `{config_example(instance, model)}`"
            if strict and req.spot_price is None:
                raise _no_price(req, missing) from None
            notes.append(missing)
    elif model is not None:
        name = model + (f" {req.gpu_memory}" if req.gpu_memory else "")
        missing = f"no price known for {name}: set one in the config, e.g. `{config_example(None, model)}`"
        if strict and req.spot_price is None:
            raise _no_price(req, missing)
        notes.append(missing)
    else:
        notes.append("no on-demand price: name a GPU model or add one like `at $3/hr`")

    spot_quote: PriceQuote | None = None
    if req.spot_price is not None:
        spot_quote = _given(req.spot_price, CapacityType.SPOT, model)
    elif req.on_demand_price is not None:
        notes.append("no spot price given: add one like `spot $1.20/hr` to compare with spot")
    elif flat is not None:
        notes.append(f"the config's flat {model} price (prices.gpu_families) is not a spot price: no spot shown")
    elif instance is not None and on_demand is not None:
        try:
            spot_quote = prices.quote(instance, CapacityType.SPOT, None, strict=True)
        except PriceNotFound:
            notes.append(
                f"no spot price known for {instance}: set one in the config, e.g. "
                f"`{config_example(instance, None, spot=True)}`"
            )
    spot = _spot(spot_quote, on_demand, req, gpu_hours) if spot_quote is not None else None
    entry = prices.catalog.entry(instance) if instance else None
    return Option(
        gpu_model=model or (entry.gpu_model if entry else None),
        instance_type=instance,
        instance_gpus=prices.instance_gpus(instance) if instance else None,
        where=f"{entry.cloud} {entry.region}" if entry else None,
        on_demand=on_demand,
        spot=spot,
        notes=tuple(notes),
    )


def _no_price(req: EstimateRequest, missing: str) -> EstimateInputError:
    if req.gpus and req.hours:
        example = f"{req.gpus} gpus {format_hours(req.hours)} at $3/hr"
    else:
        example = f"{format_number(req.gpu_hours)} gpu-hours at $3/hr"
    return _error(f"{missing}; or give your price", example, understood=_understood(req))


def _cheapest(prices: PriceBook, family: str, memory: str | None, gpus: int | None) -> tuple[str, str] | None:
    """The instance type of ``family`` (with ``memory`` per GPU) with the lowest on-demand price
    per GPU-hour the PriceBook knows, and a sentence saying so; ``None`` when there is none.
    Among equal prices, the largest instance that ``gpus`` fill, else the smallest."""
    entries = [
        e for e in prices.catalog.family_entries(family)
        if memory is None or (e.gpu_memory or "").upper().startswith(memory)
    ]
    if not entries:
        return None
    rates = {e.instance_type: _rate(prices.quote(e.instance_type, CapacityType.ON_DEMAND, None).usd_per_gpu_hour) for e in entries}
    wanted = gpus or max(e.gpus for e in entries)

    def key(e: CatalogEntry) -> tuple[float, bool, int]:
        fits = e.gpus <= wanted
        return rates[e.instance_type], not fits, -e.gpus if fits else e.gpus

    best = min(entries, key=key)
    name = family + (f" {memory}" if memory else "")
    where = f"{best.cloud} {best.region}"
    if len(entries) == 1:
        return best.instance_type, f"{name} priced as {best.instance_type} ({where}), the only {name} instance type known"
    low, high = min(rates.values()), max(rates.values())
    return best.instance_type, (
        f"{name} priced as {best.instance_type} ({where}), the lowest on-demand price of the "
        f"{len(entries)} {name} instance types known ({usd_rate(low)} to {usd_rate(high)} per GPU-hour)"
    )


def _round(x: float, places: str) -> float:
    """``x`` rounded half up in decimal, as a person would (4.09625 -> 4.0963 at "0.0001")."""
    return float(Decimal(repr(x)).quantize(Decimal(places), rounding=ROUND_HALF_UP))


def _rate(usd_per_gpu_hour: float) -> float:
    return _round(usd_per_gpu_hour, "0.0001")


def _times(rate: float, gpu_hours: float) -> float:
    """``rate`` x ``gpu_hours`` in USD to the cent, multiplied in decimal so no float error moves a cent."""
    total = Decimal(repr(rate)) * Decimal(repr(gpu_hours))
    return float(total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _line(quote: PriceQuote, gpu_hours: float) -> CostLine:
    rate = _rate(quote.usd_per_gpu_hour)
    return CostLine(rate, _times(rate, gpu_hours), quote)


def _spot(quote: PriceQuote, on_demand: CostLine | None, req: EstimateRequest, gpu_hours: float) -> SpotCost:
    factor = interruption_overhead(req.interruption_hours, req.checkpoint_hours)
    rate = _rate(quote.usd_per_gpu_hour)
    effective = _rate(rate * factor)
    od = on_demand.usd_per_gpu_hour if on_demand else None
    return SpotCost(
        usd_per_gpu_hour=rate,
        total_usd=_times(rate, gpu_hours),
        quote=quote,
        overhead_factor=factor,
        effective_usd_per_gpu_hour=effective,
        effective_total_usd=_times(effective, gpu_hours),
        savings_pct=None if od is None else (1 - effective / od) * 100,
        list_savings_pct=None if od is None else (1 - rate / od) * 100,
    )


def _given(price: GivenPrice, capacity: CapacityType, model: str | None) -> PriceQuote:
    per = f", {price.describe()}" if price.instance_type else ""
    return PriceQuote(
        usd_per_gpu_hour=price.usd_per_gpu_hour,
        capacity_type=capacity,
        source=f"given in the request{per}",
        as_of="",  # the user's own figure has no publication date
        basis="request",
        instance_type=price.instance_type,
        gpu_model=model,
    )


def versus_on_demand(pct: float | None) -> str:
    """How a spot total compares with on-demand, from ``savings_pct`` (percent, negative when
    spot costs more): ``"65% below on-demand"``, ``"spot costs 20% more here"``, ``"about the
    same as on-demand"``; ``""`` for ``None``."""
    if pct is None:
        return ""
    if round(pct) == 0:
        return "about the same as on-demand"
    if pct > 0:
        return f"{pct:.0f}% below on-demand"
    return f"spot costs {-pct:.0f}% more here"


# --- JSON ------------------------------------------------------------------------------------------


def estimate_to_jsonable(est: Estimate) -> dict[str, Any]:
    """The estimate as JSON-ready data (``gpu-cost-bot estimate ... --json``): money in USD
    (totals to the cent, per GPU-hour to 4 decimals, the figures the text shows), hours, percents
    0-100 to 1 decimal. ``options`` has one object per priced model; ``on_demand`` and ``spot``
    repeat the one option's when the request named one, and are ``null`` in a comparison."""
    req = est.request
    options = [_option_jsonable(o) for o in est.options]
    answer = None if est.comparison else options[0]
    return {
        "request": {
            "text": req.text,
            "reading": est.reading,
            "gpus": req.gpus,
            "nodes": req.nodes,
            "instance_type": req.instance_type,
            "gpu_model": req.gpu_model,
            "gpu_memory": req.gpu_memory,
            "hours": req.hours,
            "given_gpu_hours": req.given_gpu_hours,
            "on_demand_usd_per_gpu_hour": req.on_demand_usd_per_gpu_hour,
            "spot_usd_per_gpu_hour": req.spot_usd_per_gpu_hour,
            "capacity": req.capacity.value if req.capacity else None,
            "checkpoint_hours": req.checkpoint_hours,
            "interruption_hours": req.interruption_hours,
            "ignored": list(req.ignored),
        },
        "gpu_hours": est.gpu_hours,
        "comparison": est.comparison,
        "options": options,
        "on_demand": answer["on_demand"] if answer else None,
        "spot": answer["spot"] if answer else None,
        "assumptions": list(est.assumptions),
    }


def _option_jsonable(o: Option) -> dict[str, Any]:
    out: dict[str, Any] = {
        "gpu_model": o.gpu_model,
        "instance_type": o.instance_type,
        "instance_gpus": o.instance_gpus,
        "where": o.where,
        "on_demand": None,
        "spot": None,
        "notes": list(o.notes),
    }
    if o.on_demand is not None:
        out["on_demand"] = {
            "usd_per_gpu_hour": o.on_demand.usd_per_gpu_hour,
            "total_usd": o.on_demand.total_usd,
            "quote": to_jsonable(o.on_demand.quote),
        }
    if o.spot is not None:
        s = o.spot
        out["spot"] = {
            "usd_per_gpu_hour": s.usd_per_gpu_hour,
            "total_usd": s.total_usd,
            "overhead_factor": round(s.overhead_factor, 4),
            "effective_usd_per_gpu_hour": s.effective_usd_per_gpu_hour,
            "effective_total_usd": s.effective_total_usd,
            "savings_pct": None if s.savings_pct is None else round(s.savings_pct, 1),
            "list_savings_pct": None if s.list_savings_pct is None else round(s.list_savings_pct, 1),
            "quote": to_jsonable(s.quote),
        }
    return out
