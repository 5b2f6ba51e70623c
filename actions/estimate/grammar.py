"""The words and patterns :mod:`actions.estimate.parse` reads a request with: numbers as digits,
in scientific notation or as words (``1,000``, ``1e3``, ``eight``, ``a dozen``), durations (``3
days``, ``a couple of weeks``, ``10h``), prices (``$3/hr``, ``at 2.5``), GPU and node counts
(``half a p5 node``, ``p5en x 2``), spot and on-demand, checkpoint and interruption intervals,
and the filler words a request may hold without their being ignored.
"""

from __future__ import annotations

import difflib
import re

from actions.model.times import HOURS_PER_MONTH, HOURS_PER_YEAR

# --- reading a request -----------------------------------------------------------------------------

NUM = r"(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:e\+?\d+)?"  # 1,000.5, .5, 1e3
START = r"(?<![\w.$/-])"  # a number on its own, not inside a word, a price or a range
SNUM = rf"-?(?:{NUM})"
ONES = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
WORD_NUMBER = (
    rf"(?:{'|'.join(TENS)})(?:[-\s](?:{'|'.join(ONES)}))?|{'|'.join(TEENS)}|{'|'.join(ONES)}|zero"
)
UNITS = r"years?|yrs?|y|months?|mos?|weeks?|wks?|w|days?|d|hours?|hrs?|h|minutes?|mins?|m"
DURATION_WORDS = rf"half\s+an?|a\s+couple\s+of|couple\s+of|{WORD_NUMBER}|an?|per"
ATOM = (
    rf"(?:{START}(?P<num>{SNUM})\s*(?P<unit>{UNITS})(?!\w)"
    rf"|\b(?P<word>{DURATION_WORDS})\s+(?P<wunit>{UNITS})(?!\w)"
    r"|\b(?P<adverb>hourly|daily|weekly|monthly|yearly|annually))"
    r"(?P<half>\s+and\s+a\s+half)?"
)
ATOM_RE = re.compile(ATOM)
GLUED_RE = re.compile(rf"(?<![\w.])((?:{NUM})(?:{UNITS}))(?=\d)")
ADVERB_UNITS = {"hourly": "h", "daily": "d", "weekly": "w", "monthly": "mo", "yearly": "y", "annually": "y"}
JOINER_RE = re.compile(r"\s*(?:,|and)?\s*")

NODE_WORD = r"(?:nodes?|instances?|machines?|vms?|servers?|hosts?|boxes|box)"


def per_unit(group: str) -> str:
    """What a price is per, as the named ``group``: a GPU, a node, or the instance type named."""
    return rf"(?P<{group}>gpus?|{NODE_WORD}|INSTANCE)"


SEP = r"(?:\s*/\s*|\s+per\s+|\s+an?\s+|\s+each\s+)"
PRICE_RE = re.compile(
    r"(?P<pre>(?:\bat\b|@)\s*)?(?P<dollar>\$\s*|\busd\s*)?(?<![\w.-])(?P<num>" + NUM + r")"
    r"(?P<after>\s*(?:\$|usd\b|dollars?\b|bucks\b))?"
    rf"(?P<sep>{SEP})(?:{per_unit('unit')}(?:\s*[-/]\s*|\s+per\s+|\s+an?\s+|\s*))?"
    r"(?:hours?|hrs?|h)(?!\w)"
    rf"(?:(?:\s*/\s*|\s+per\s+|\s+(?:for\s+)?(?:an?|each|one)\s+|\s+for\s+){per_unit('unit2')}(?!\w))?"
)
SPOT_BEFORE_RE = re.compile(r"(?:\bon\s+)?\bspot(?:\s+price)?(?:\s+(?:is|of))?\s*[:=]?\s*$")
LABELS_NEXT = r"(?!(?:\s+price)?(?:\s+(?:is|of))?\s*[:=]?\s*(?:at\b|@)?\s*\$?\s*\d)"
SPOT_AFTER_RE = re.compile(rf"^\s*(?:on\s+|for\s+)?spot\b{LABELS_NEXT}")
ON_DEMAND = r"on[-\s]?demand|ondemand"
ON_DEMAND_BEFORE_RE = re.compile(rf"\b(?:{ON_DEMAND})(?:\s+price)?(?:\s+(?:is|of))?\s*[:=]?\s*$")
ON_DEMAND_AFTER_RE = re.compile(rf"^\s*(?:{ON_DEMAND})\b{LABELS_NEXT}")
LOOSE_PRICE_RE = re.compile(r"\$|(?:\bat\b|@)\s*-?\s*\d|\d\s*(?:usd|dollars?|bucks)\b")
CHECKPOINT_RE = re.compile(rf"\bcheckpoint(?:s|ing|ed)?\s+(?:every\s+|each\s+)?(?P<d>{ATOM})")
INTERRUPT_RE = re.compile(rf"\binterrupt(?:s|ed|ions?)?\s+(?:every\s+|each\s+)?(?P<d>{ATOM})")
GPU_HOURS_RE = re.compile(
    rf"(?:{START}(?P<num>{SNUM})\s*|\b(?P<word>an?|one|per)\s+)gpu[-\s]?(?:hours?|hrs?|h)(?!\w)"
)
COUNT_WORDS = rf"half\s+a\s+dozen|(?:a\s+)?dozen|{WORD_NUMBER}"
COUNT = rf"(?:{START}(?P<num>{SNUM})|\b(?P<word>{COUNT_WORDS})\b)\s*(?:x\s*)?"
HALF = r"\b(?P<half>half\s+(?:of\s+)?an?)\s+"  # half a p5 node: half of one node
NODE_COUNT_RE = re.compile(
    rf"(?:{COUNT}|{HALF})(?:{NODE_WORD}(?:\s+of)?(?:\s+INSTANCE)?|INSTANCE(?:\s+{NODE_WORD})?)(?!\w)"
)
GPU_COUNT_RE = re.compile(rf"(?:{COUNT}|{HALF})(?:gpus?|cards?|accelerators?|MODEL)(?!\w)")
# A count after what it counts: p5en x 2 is 2 nodes, h100 x 8 is 8 GPUs.
AFTER = rf"\s*(?:x|\*)\s*(?:(?P<num>{NUM})(?![\w.])|(?P<word>{COUNT_WORDS})\b)"
NODE_AFTER_RE = re.compile(rf"\bINSTANCE(?:\s+{NODE_WORD})?{AFTER}")
GPU_AFTER_RE = re.compile(rf"(?:\bMODEL|\bgpus?){AFTER}")
BARE_COUNT_RE = re.compile(rf"{START}(?P<num>{SNUM})(?:\s*x(?!\w))?")
MEMORY_RE = re.compile(r"(?<![\w.$])(\d+)\s*gb(?!\w)")
INSTANCE_SHAPES = (
    r"[a-z][a-z0-9]*(?:-[a-z0-9]+)?\.(?:\d*xlarge|metal(?:-\d+xl)?|large|medium)",  # AWS: p5.48xlarge
    r"[a-z]\d+[a-z]?-(?:highgpu|megagpu|ultragpu|edgegpu|standard|highmem|highcpu)-\d+g?",  # GCP: a3-megagpu-8g
    r"(?:standard_)?n[a-z]\d+[a-z]*(?:_[a-z0-9]+)*_v\d+",  # Azure: nd96amsr_a100_v4
)
SPOT_WORDS_RE = re.compile(r"\b(?:on\s+)?(?:spot|preemptible)\b")
ON_DEMAND_WORDS_RE = re.compile(rf"\b(?:{ON_DEMAND})\b")

# Words a request may hold that change nothing: not listed as ignored (any other word left over is).
FILLER = frozenset("""
    a an the of for to on in at by with from per and or x if so then each every
    what whats how much many would will could can should does do did is are was be been
    it its i we you me my our us your they them that this these those there here
    cost costs costing price prices priced pricing estimate estimated estimating quote total
    run running runs train training rent renting use using get buy need needs want like please
    tell come comes take takes about around roughly approximately approx just only some
    s d ll m re ve
    gpu gpus node nodes instance instances machine machines vm vms server servers host hosts
    box boxes card cards accelerator accelerators nvidia amd tesla
""".split())
UNIT_NAMES = ("year", "years", "month", "months", "week", "weeks", "day", "days", "hour", "hours",
              "minute", "minutes", "gpu", "gpus", "node", "nodes")  # fmt: skip
NEAR_UNIT_RE = re.compile(rf"(?:{START}(?:{NUM})|\b(?:{WORD_NUMBER}|an?)\b)\s*(?P<word>[a-z]{{3,}})(?!\w)")


def misspelt_unit(s: str) -> tuple[str, str] | None:
    """``("3 dyas", "3 days")``: the first number in ``s`` followed by a word that is close to a
    unit (difflib's similarity at least 0.75) without being one, and what it likely meant."""
    for m in NEAR_UNIT_RE.finditer(s):
        word = m.group("word")
        if word in UNIT_NAMES or word in FILLER:
            continue
        close = difflib.get_close_matches(word, UNIT_NAMES, n=1, cutoff=0.75)
        if close:
            typed = m.group(0)
            return typed, typed[: m.start("word") - m.start()] + close[0]
    return None


WORD_VALUES: dict[str, float] = {w: i + 1 for i, w in enumerate(ONES)}
WORD_VALUES.update({w: i + 10 for i, w in enumerate(TEENS)})
WORD_VALUES.update({w: 10 * (i + 2) for i, w in enumerate(TENS)})
WORD_VALUES.update({"zero": 0, "a": 1, "an": 1, "per": 1, "half a": 0.5, "half an": 0.5})
WORD_VALUES.update({"a couple of": 2, "couple of": 2, "dozen": 12, "a dozen": 12, "half a dozen": 6})
WORD_VALUES.update({"half of a": 0.5, "half of an": 0.5})


def normalize(text: str) -> str:
    s = text.lower().replace("×", " x ").replace("’", "'")
    s = re.sub(r"[\"'`?!()\[\]]", " ", s)
    s = re.sub(r"[.,;:]+(?=\s|$)", " ", s)  # sentence punctuation; 1.5, 1,000 and p5.48xlarge stay
    s = re.sub(r"(?<![\w.])(\d+)x(?=[a-z])", r"\1 x ", s)  # 8xh100 -> 8 x h100
    return " ".join(s.split())


def value(num: str | None, word: str | None) -> float:
    if num is not None:
        return float(num.replace(",", ""))
    assert word is not None  # the patterns match one or the other
    key = " ".join(word.split())
    if key in WORD_VALUES:
        return WORD_VALUES[key]
    tens, _, ones = key.replace("-", " ").partition(" ")
    return WORD_VALUES[tens] + (WORD_VALUES[ones] if ones else 0)


def unit_hours(unit: str) -> float:
    if unit.startswith("mo"):
        return HOURS_PER_MONTH
    if unit.startswith("m"):
        return 1 / 60
    return {"y": HOURS_PER_YEAR, "w": 168.0, "d": 24.0, "h": 1.0}[unit[0]]


def atom_unit(atom: re.Match[str]) -> float:
    unit = atom.group("unit") or atom.group("wunit") or ADVERB_UNITS[atom.group("adverb")]
    return unit_hours(unit)


def atom_hours(atom: re.Match[str]) -> float:
    number = 1.0 if atom.group("adverb") else value(atom.group("num"), atom.group("word"))
    return number * atom_unit(atom) * (1.5 if atom.group("half") else 1.0)
