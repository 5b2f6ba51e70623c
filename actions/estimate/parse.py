"""What would N GPUs for a while cost: a request read the way people type it.

How a request is read (:func:`parse_estimate`; case-insensitive, the parts in any order, each at
most once):

- GPU count: ``16``, ``16x``, ``16 gpus``, ``eight h100s``, ``1,000``, ``1e3``, ``a dozen``,
  ``h100 x 8``; or nodes: ``2 nodes of p4d``, ``2 p5.48xlarge``, ``2x p5``, ``p5en x 2``, ``half
  a p5 node``, ``1.5 nodes``, which are the nodes x the instance type's GPUs (a whole number).
  Without a count, 1 GPU, or 1 node of a named instance type.
- GPU model: a family of :mod:`actions.hardware.gpus`, with or without vendor and memory (``h100``,
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
- Where and how bought (:mod:`actions.estimate.market`): a cloud (``AWS``, ``on gcp``), a region
  (``us-east-1``), an instance series (``gcp a3``), a commitment (``reserved``, ``1-year``,
  ``3-year``, ``savings plan``, ``committed use``).
- ``checkpoint(s) [every] DURATION`` (default 30m) and ``interrupt(s|ed|ions) [every] DURATION``
  (default 4h) tune the spot interruption adjustment below.

A number followed by a near miss of a unit (``3 dyas``) is refused with a suggestion, never read
as something else. Any other word that is not filler (:data:`~actions.estimate.grammar.FILLER`)
is ignored, and :func:`~actions.estimate.render.reading` names it, so a misreading shows.

How it is priced: :mod:`actions.estimate.price`.
"""

from __future__ import annotations

import re

from actions.estimate.grammar import (
    ATOM_RE,
    BARE_COUNT_RE,
    CHECKPOINT_RE,
    FILLER,
    GLUED_RE,
    GPU_AFTER_RE,
    GPU_COUNT_RE,
    GPU_HOURS_RE,
    INSTANCE_SHAPES,
    INTERRUPT_RE,
    JOINER_RE,
    LOOSE_PRICE_RE,
    MEMORY_RE,
    NODE_AFTER_RE,
    NODE_COUNT_RE,
    ON_DEMAND_AFTER_RE,
    ON_DEMAND_BEFORE_RE,
    ON_DEMAND_WORDS_RE,
    PRICE_RE,
    SPOT_AFTER_RE,
    SPOT_BEFORE_RE,
    SPOT_WORDS_RE,
    atom_hours,
    atom_unit,
    misspelt_unit,
    normalize,
    value,
)
from actions.estimate.market import check_entry, read_market, read_series
from actions.estimate.request import (
    DEFAULT_CHECKPOINT_HOURS,
    DEFAULT_INTERRUPTION_HOURS,
    EXAMPLES,
    MONTH_NOTE,
    EstimateInputError,
    EstimateRequest,
    GivenPrice,
    error,
)
from actions.hardware.gpus import gpu_family
from actions.model.kube import CapacityType
from actions.model.times import HOURS_PER_MONTH
from actions.pricing.book import PriceBook, config_example
from actions.pricing.catalog import CatalogEntry
from actions.text import describe_hours, format_number, plural


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
        self.s = normalize(self.original)
        self.found: dict[str, str] = {}
        self.notes: list[str] = []
        self.unitless: set[bool] = set()  # is_spot of each price typed without "per GPU" or "per node"
        self.on_spot = False  # "on spot" was said with a spot price ("on spot at $2/hr")

    def fail(self, problem: str, *examples: str) -> EstimateInputError:
        order = ("count", "model", "instance", "gpu_hours", "duration", "price", "spot price", "capacity")
        said = [self.found[k] for k in order if k in self.found]
        return error(problem, *examples, understood=", ".join(said))

    def read(self) -> EstimateRequest:
        if not self.s:
            raise self.fail("the request is empty", *EXAMPLES[:2])
        self.s, market = read_market(self.s)
        instance, instance_gpus, entry = self._instance()
        if self.prices is not None:
            self.s, market = read_series(self.s, market, self.prices.catalog)
        if instance is not None:
            check_entry(market, entry, instance)
        memory = self._memory()
        model = self._model(entry, memory)
        on_demand, spot = self._prices(instance, instance_gpus)
        checkpoint = self._interval(CHECKPOINT_RE, "checkpoint", "16 a100 1w checkpoint 30m")
        interruption = self._interval(INTERRUPT_RE, "interrupt", "8 h100 3d interruptions every 3h")
        given_gpu_hours = self._gpu_hours()
        hours = self._duration()
        capacity = self._capacity()
        if typo := misspelt_unit(self.s):
            said, meant = typo
            fixed = re.sub(re.escape(said.split()[-1]), meant.split()[-1], self.original, count=1, flags=re.I)
            raise self.fail(f'"{said}": did you mean "{meant}"?', fixed, EXAMPLES[0])
        gpus, nodes = self._counts(instance, instance_gpus)
        ignored = tuple(dict.fromkeys(w for w in self.s.split() if w not in FILLER and w not in ("MODEL", "INSTANCE")))
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
                    f"no count given: priced for 1 {instance} node ({plural(gpus, 'GPU')})"
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
            market=market,
            notes=tuple(self.notes),
            ignored=ignored,
            text=self.original,
        )

    # Each step below removes what it read from self.s.

    def _take(self, match: re.Match[str], placeholder: str = " ") -> None:
        self.s = self.s[: match.start()] + f" {placeholder} " + self.s[match.end() :]

    def _instance(self) -> tuple[str | None, int | None, CatalogEntry | None]:
        known = self.prices.instance_names() if self.prices else []
        names = "|".join([*(re.escape(n) for n in sorted(known, key=len, reverse=True)), *INSTANCE_SHAPES])
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
        while m := MEMORY_RE.search(self.s):
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
        while m := PRICE_RE.search(self.s, pos):
            by_dollar = m.group("dollar") or m.group("after") or m.group("pre")
            if not by_dollar and m.group("sep").strip() not in ("/", "per"):
                pos = m.end()  # "10 an hour" is a count and a duration, not a price
                continue
            start, end = m.start(), m.end()
            before, after = self.s[:start], self.s[end:]
            is_spot = False
            if b := SPOT_BEFORE_RE.search(before):
                is_spot, start = True, b.start()
                self.on_spot |= b.group(0).startswith("on")
            elif a := SPOT_AFTER_RE.search(after):
                is_spot, end = True, end + a.end()
                self.on_spot |= a.group(0).strip().startswith("on")
            elif b := ON_DEMAND_BEFORE_RE.search(before):
                start = b.start()
            elif a := ON_DEMAND_AFTER_RE.search(after):
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
        if LOOSE_PRICE_RE.search(self.s):
            raise self.fail(
                f'could not read the price in "{self.original}": give it per hour, per GPU or per node',
                "4 gpus 10h at $3/hr",
                "2 nodes of p4d 3d at $21.96/hr per node",
            )
        return (on_demand[0] if on_demand else None), (spot[0] if spot else None)

    def _interval(self, pattern: re.Pattern[str], word: str, example: str) -> float | None:
        found = []
        while m := pattern.search(self.s):
            found.append(atom_hours(ATOM_RE.search(m.group("d"))))  # type: ignore[arg-type]
            self._take(m)
        what = "checkpoint interval" if word == "checkpoint" else "interruption interval"
        if len(found) > 1:
            raise self.fail(f'"{self.original}" gives {len(found)} values for the {what}; give one', example)
        if re.search(rf"\b{word}", self.s):
            raise self.fail(f'could not read the {what} in "{self.original}"', example)
        return found[0] if found else None

    def _gpu_hours(self) -> float | None:
        found = []
        while m := GPU_HOURS_RE.search(self.s):
            found.append(value(m.group("num"), m.group("word")))
            self._take(m)
        if len(found) > 1:
            raise self.fail(f'"{self.original}" gives GPU-hours {len(found)} times; give one', "1000 gpu-hours of a100")
        if found:
            self.found["gpu_hours"] = f"{format_number(found[0])} GPU-hours"
        return found[0] if found else None

    def _duration(self) -> float | None:
        self.s = GLUED_RE.sub(r"\1 ", self.s)  # 1d12h -> 1d 12h, then read as one duration
        atoms = list(ATOM_RE.finditer(self.s))
        groups: list[list[re.Match[str]]] = []
        for atom in atoms:
            last = groups[-1][-1] if groups else None
            joined = last is not None and JOINER_RE.fullmatch(self.s[last.end() : atom.start()])
            if last is not None and joined and atom_unit(atom) < atom_unit(last):
                groups[-1].append(atom)  # 1d12h, 1 day and 12 hours: one duration
            else:
                groups.append([atom])
        if len(groups) > 1:
            said = ", ".join(self.s[g[0].start() : g[-1].end()].strip() for g in groups)
            raise self.fail(f'"{self.original}" has {len(groups)} durations ({said}); give one', "2 h100 36h")
        if not groups:
            return None
        hours = sum(atom_hours(a) for a in groups[0])
        if any(atom_unit(a) >= HOURS_PER_MONTH for a in groups[0]):
            self.notes.append(MONTH_NOTE)
        self.s = self.s[: groups[0][0].start()] + " " + self.s[groups[0][-1].end() :]
        self.found["duration"] = describe_hours(hours)
        return hours

    def _capacity(self) -> CapacityType | None:
        spot = self.on_spot or bool(SPOT_WORDS_RE.search(self.s))
        on_demand = bool(ON_DEMAND_WORDS_RE.search(self.s))
        self.s = ON_DEMAND_WORDS_RE.sub(" ", SPOT_WORDS_RE.sub(" ", self.s))
        if spot == on_demand:
            return None  # neither, or both: show both, neither first
        self.found["capacity"] = "on spot" if spot else "on-demand"
        return CapacityType.SPOT if spot else CapacityType.ON_DEMAND

    def _counts(self, instance: str | None, instance_gpus: int | None) -> tuple[int | None, float | None]:
        # (position, value): a replacement shifts only what follows it, so positions keep the order typed.
        node_at: list[tuple[int, float]] = []
        gpu_at: list[tuple[int, float]] = []
        for pattern, into in (
            (NODE_AFTER_RE, node_at), (NODE_COUNT_RE, node_at), (GPU_AFTER_RE, gpu_at), (GPU_COUNT_RE, gpu_at),
            (BARE_COUNT_RE, gpu_at),
        ):  # fmt: skip
            while m := pattern.search(self.s):
                said = m.groupdict()
                into.append((m.start(), value(said["num"], said.get("word") or said.get("half"))))
                # A counted instance type or model stays named: keep its placeholder.
                self._take(m, "INSTANCE" if "INSTANCE" in m.group(0) else "MODEL" if "MODEL" in m.group(0) else " ")
        nodes = [v for _, v in sorted(node_at)]
        gpus = [v for _, v in sorted(gpu_at)]
        for what, found in (("GPU counts", gpus), ("node counts", nodes)):
            if len(found) > 1:
                said = ", ".join(format_number(n) for n in found)
                raise self.fail(f'"{self.original}" has {len(found)} {what} ({said}); give one', EXAMPLES[0])
            if found and not float(found[0]).is_integer() and what == "GPU counts":
                raise self.fail(f'the GPU count "{format_number(found[0])}" must be a whole number', EXAMPLES[0])
        gpu_count = int(gpus[0]) if gpus else None
        node_count = (int(nodes[0]) if float(nodes[0]).is_integer() else nodes[0]) if nodes else None
        if node_count is None:
            if gpu_count is not None:
                self.found["count"] = plural(gpu_count, "GPU")
            return gpu_count, None
        self.found["count"] = plural(node_count, "node")
        if instance is None:
            raise self.fail(
                "nodes of which instance type? A node count needs one, to know how many GPUs a node holds",
                "2 nodes of p4d for 3 days",
                f"{8 * max(node_count, 1)} {(self.found.get('model') or 'h100').split()[0].lower()} for 3 days",
            )
        if not instance_gpus:
            raise self.fail(_gpus_unknown(instance), "16 gpus 3d at $3/hr")
        total = node_count * instance_gpus
        if not float(total).is_integer():
            raise self.fail(
                f"{plural(node_count, 'node')} of {instance} ({plural(instance_gpus, 'GPU')} each) is "
                f"{format_number(total)} GPUs: give a count that makes whole GPUs",
                f"{max(1, int(total))} gpus for 3 days on {instance}",
            )
        total = int(total)
        if gpu_count is not None and gpu_count != total:
            raise self.fail(
                f"{plural(node_count, 'node')} of {instance} hold {plural(total, 'GPU')}, not {gpu_count}",
                f"{node_count} nodes of {instance} for 3 days",
            )
        return total, node_count


def _gpus_unknown(instance: str) -> str:
    return (
        f"how many GPUs does {instance} hold? It is not in the catalog; set it in the config, "
        f"e.g. {config_example(instance, None).split(' or ')[0]}"
    )
