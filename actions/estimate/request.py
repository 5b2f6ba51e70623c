"""What an estimate is asked and what it answers: the request as read (:class:`EstimateRequest`:
GPUs, hours, model, instance type, capacity, given prices, interruption and checkpoint intervals)
and the priced options (:class:`Estimate`). Plain data; money USD, rates USD per GPU-hour,
durations hours.
"""

from __future__ import annotations

from dataclasses import dataclass

from actions.estimate.energy import EnergyEstimate
from actions.model.kube import CapacityType
from actions.model.quote import PriceQuote
from actions.model.times import HOURS_PER_YEAR
from actions.text import describe_hours, format_hours, format_number, plural, usd_rate

DEFAULT_CHECKPOINT_HOURS = 0.5
DEFAULT_INTERRUPTION_HOURS = 4.0  # REFERENCE: roughly one interruption per 4 h for GPU spot on AWS
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


def error(problem: str, *examples: str, understood: str = "") -> EstimateInputError:
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
        return f"{usd_rate(self.usd_per_hour)}/h per {self.instance_type} ({plural(self.instance_gpus, 'GPU')})"


@dataclass(frozen=True)
class Market:
    """Where and how the GPUs are bought, as the request said it (each ``None`` when not said):
    ``cloud`` (``"aws"``, ``"gcp"``, ``"azure"``), ``region`` (``"us-east-1"``), ``series`` (an
    instance series of the catalog, ``"a3"``), ``commitment`` (:func:`~actions.estimate.market.commitment_kind`, or
    ``"commitment"`` when only a term was said) and ``commitment_years`` (1 or 3); ``said`` the
    words typed, for messages."""

    cloud: str | None = None
    region: str | None = None
    series: str | None = None
    commitment: str | None = None
    commitment_years: int | None = None
    said: tuple[str, ...] = ()

    def where(self) -> str:
        """``"on gcp in us-central1"``, ``"gcp a3"``; ``""`` when nothing was said."""
        parts = [f"on {self.cloud}" if self.cloud else "", f"in {self.region}" if self.region else ""]
        if self.series:
            parts.append(f"{self.series} series")
        return " ".join(p for p in parts if p)

    def commitment_words(self) -> str:
        """``"reserved (1-year)"``, ``"3-year commitment"``, ``"savings plan"``; ``""`` without one."""
        if self.commitment is None:
            return ""
        term = f"{self.commitment_years}-year" if self.commitment_years else ""
        if self.commitment == "commitment":
            return f"{term} commitment".strip()
        return f"{self.commitment} ({term})" if term else self.commitment


@dataclass(frozen=True)
class EstimateRequest:
    """A request as read: ``gpus`` GPUs for ``hours`` hours, or ``given_gpu_hours`` GPU-hours
    (then ``hours`` is ``None``, and so is ``gpus`` unless a count was given too).

    ``gpu_model`` is a family key (``"A100"``) and ``gpu_memory`` a size per GPU (``"40GB"``);
    ``instance_type`` the instance type named, holding ``instance_gpus`` GPUs, ``nodes`` of them
    when nodes were counted (a fraction, ``0.5``, for half a node). ``market`` is the cloud,
    region, instance series and commitment said. Prices given are :class:`GivenPrice`; ``capacity`` is the capacity
    type the request asked for (``None``: not said). ``checkpoint_hours`` and
    ``interruption_hours`` are hours; ``*_given`` say whether they came from the request.
    ``notes`` say how parts were read (conventions, defaults); ``ignored`` lists the words not
    used (neither read nor filler). Raises EstimateInputError when the numbers do not describe a
    real job: fewer than 1 or more than :data:`MAX_GPUS` GPUs, a duration under a minute or over
    :data:`MAX_HOURS`, a price of $0 or less, or checkpoints too sparse to make progress.
    """

    gpus: int | None
    hours: float | None
    gpu_model: str | None = None
    gpu_memory: str | None = None
    instance_type: str | None = None
    instance_gpus: int | None = None
    nodes: float | None = None
    given_gpu_hours: float | None = None
    on_demand_price: GivenPrice | None = None
    spot_price: GivenPrice | None = None
    capacity: CapacityType | None = None
    checkpoint_hours: float = DEFAULT_CHECKPOINT_HOURS
    interruption_hours: float = DEFAULT_INTERRUPTION_HOURS
    checkpoint_given: bool = False
    interruption_given: bool = False
    count_given: bool = True
    market: Market = Market()
    notes: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    text: str = ""

    def __post_init__(self) -> None:
        read = words_read(self)
        if self.nodes is not None and self.nodes <= 0:
            raise error("the node count must be more than zero", "2 nodes of p4d for 3 days", understood=read)
        if self.gpus is not None and self.gpus < 1:
            raise error("the GPU count must be at least 1", "1 h100 36h", understood=read)
        if self.gpus is not None and self.gpus > MAX_GPUS:
            raise error(
                f"{self.gpus:,} GPUs is more than {MAX_GPUS:,}, more than the largest clusters hold; "
                "price what one job or team uses",
                "1024 h100 for a week",
                understood=read,
            )
        if self.hours is not None:
            if self.hours <= 0:
                raise error("the duration must be longer than zero", "8 h100 for 3 days", understood=read)
            if self.hours < 1 / 60 - 1e-9:
                raise error("the duration must be at least a minute", "1 h100 for 10 minutes", understood=read)
            if self.hours > MAX_HOURS:
                raise error(
                    f"{format_number(self.hours)} h is more than 10 years ({MAX_HOURS:,.0f} h): list prices "
                    "do not hold that long; price a year at a time",
                    "16 h100 for a year",
                    understood=read,
                )
        if self.given_gpu_hours is not None:
            if self.given_gpu_hours <= 0:
                raise error("the GPU-hours must be more than zero", "1000 gpu-hours of a100", understood=read)
            if self.given_gpu_hours > MAX_GPUS * MAX_HOURS:
                raise error(
                    f"{format_number(self.given_gpu_hours)} GPU-hours is more than {MAX_GPUS:,} GPUs for 10 years",
                    "1000 gpu-hours of a100",
                    understood=read,
                )
        elif self.gpus is None or self.hours is None:
            raise error("a request needs a GPU count and a duration, or GPU-hours", *EXAMPLES[:2], understood=read)
        if self.interruption_hours <= 0:
            raise error("the interruption interval must be longer than zero", "8 h100 3d interruptions every 3h")
        if self.checkpoint_hours < 0:
            raise error("the checkpoint interval cannot be negative", "16 a100 1w checkpoint 30m")
        if self.checkpoint_hours / 2 >= self.interruption_hours:
            raise error(
                f"checkpointing every {format_hours(self.checkpoint_hours)} with an interruption every "
                f"{format_hours(self.interruption_hours)} never makes progress (half a checkpoint "
                "interval is lost per interruption); checkpoint more often",
                "8 h100 3d interruptions every 3h checkpoint 30m",
            )
        if self.market.commitment and self.capacity is CapacityType.SPOT:
            raise error(
                f"spot capacity cannot be bought under a commitment ({self.market.commitment_words()}): "
                "say one or the other",
                "8 h100 for a week on spot",
                understood=read,
            )
        for price in (self.on_demand_price, self.spot_price):
            if price is not None and price.usd_per_hour <= 0:
                raise error("a price must be more than $0 an hour", "4 gpus 10h at $3/hr", understood=read)

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
    and how to set it. ``energy`` is the energy of the GPU-hours on it, an upper bound
    (:mod:`actions.estimate.energy`; ``None`` until :func:`~actions.estimate.price.compute_estimate` sets it)."""

    gpu_model: str | None
    instance_type: str | None
    instance_gpus: int | None
    where: str | None
    on_demand: CostLine | None
    spot: SpotCost | None
    notes: tuple[str, ...] = ()
    energy: EnergyEstimate | None = None


@dataclass(frozen=True)
class Estimate:
    """The cost of a request: ``gpu_hours`` (rounded to 0.01, as shown and as the totals are
    computed), one :class:`Option` per way of buying them (several when ``comparison``: the
    request named no model, instance type or price), the assumptions made, as sentences, and the
    ``reading`` of the request (:func:`~actions.estimate.render.reading`)."""

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

    @property
    def energy_kwh(self) -> float | None:
        """At most this many kWh at the GPUs (the answer's board power x GPU-hours); ``None`` in a
        comparison (each option has its own) or when the model's board power is unknown."""
        answer = self.answer
        return answer.energy.kwh if answer is not None and answer.energy is not None else None


def words_read(req: EstimateRequest) -> str:
    """What a request that failed its checks said, in the words of :func:`~actions.estimate.render.reading`, without
    relying on the checks having passed."""
    parts = []
    if req.nodes is not None:
        parts.append(f"{format_number(req.nodes)} nodes of {req.instance_type}")
    if req.gpus is not None:
        parts.append(plural(req.gpus, "GPU"))
    if req.gpu_model:
        parts.append(req.gpu_model)
    if req.hours is not None:
        parts.append(describe_hours(req.hours) if req.hours > 0 else f"{format_number(req.hours)} h")
    if req.given_gpu_hours is not None:
        parts.append(f"{format_number(req.given_gpu_hours)} GPU-hours")
    return ", ".join(parts)
