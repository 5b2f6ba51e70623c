"""A budget as people type it after ``/gpu budget set``: ``lq training/training-queue 2000 gpu-hours
per month ask``, ``clusterqueue cq-h100 $50k/week auto``, ``team research 500 gpu hours/week``.
Pure; a misunderstanding raises :class:`BudgetWordsError` saying what was understood, with a
correct example.
"""

from __future__ import annotations

import re
from datetime import date

from actions.budgets.model import CLUSTERQUEUE, GPU_HOURS, HOLD, LOCALQUEUE, ON_EXHAUSTED, TEAM, USD, WARN, Budget

SCOPE_WORDS = {
    "lq": LOCALQUEUE, "localqueue": LOCALQUEUE, "local-queue": LOCALQUEUE, "queue": LOCALQUEUE,
    "cq": CLUSTERQUEUE, "clusterqueue": CLUSTERQUEUE, "cluster-queue": CLUSTERQUEUE,
    "team": TEAM,
}
EXAMPLE = "/gpu budget set localqueue training/training-queue 2000 gpu-hours/month ask"
_AMOUNT = re.compile(r"^(?P<usd>\$)?(?P<n>\d[\d,]*(?:\.\d+)?)(?P<k>k)?$", re.I)
_UNIT = re.compile(r"\b(?:gpu[- ]?hours?|gpu[- ]?hrs?|gpu[- ]?h|gpuh)\b", re.I)
_PERIOD = re.compile(
    r"(?:/|\bper\s+|\bevery\s+|\ba\s+)(?P<p>month|mo|week|wk|(?P<days>\d{1,3})\s*(?:d|days?))\b"
    r"(?:\s+from\s+(?P<from>\d{4}-\d{2}-\d{2}))?", re.I)


class BudgetWordsError(ValueError):
    """What was typed cannot be read as a budget; the message says what was understood."""

    def __init__(self, problem: str, example: str = EXAMPLE):
        super().__init__(problem)
        self.example = example


def is_budget_rule(first_word: str) -> bool:
    """Whether ``/gpu budget set`` names a scope (``lq``, ``clusterqueue``, ``team``...) first, as
    this grammar reads it, rather than a team with USD per month (the short form)."""
    return first_word.lower() in SCOPE_WORDS


def read_budget(text: str, cluster: str = "") -> Budget:
    """The budget ``text`` (what follows ``/gpu budget set``) says. Raises BudgetWordsError."""
    words = text.split()
    if len(words) < 3 or words[0].lower() not in SCOPE_WORDS:
        raise BudgetWordsError("Say what the budget is for, its name and the amount.")
    scope, name = SCOPE_WORDS[words[0].lower()], words[1]
    if scope == LOCALQUEUE and name.count("/") != 1:
        raise BudgetWordsError(f"A LocalQueue is named namespace/name; `{name}` has no namespace.",
                               f"/gpu budget set localqueue training/{name.split('/')[-1]} 2000 gpu-hours/month")
    rest = " ".join(words[2:])
    if re.search(r"\b(?:drain|holdanddrain)\b", rest, re.I):
        raise BudgetWordsError("HoldAndDrain evicts running Workloads, so it is set only in the bot's config "
                               "(budgets[].stop_policy: HoldAndDrain); from chat a budget holds (Hold).")
    period, anchor = "month", None
    if (m := _PERIOD.search(rest)) is not None:
        p = m["p"].lower()
        period = "month" if p in ("month", "mo") else "week" if p in ("week", "wk") else f"{int(m['days'])}d"
        if m["from"]:
            anchor = date.fromisoformat(m["from"])
        elif period.endswith("d"):
            raise BudgetWordsError(f"A period of {period} needs the day it starts: add `from 2026-11-02`.",
                                   f"/gpu budget set {words[0]} {name} 500 gpu-hours every {period} from 2026-11-02")
        rest = rest[:m.start()] + " " + rest[m.end():]
    unit = GPU_HOURS if _UNIT.search(rest) else USD
    rest = _UNIT.sub(" ", rest)
    then = [w.lower() for w in rest.split() if w.lower() in ON_EXHAUSTED]
    rest = " ".join(w for w in rest.split() if w.lower() not in ON_EXHAUSTED)
    amounts = [m for w in rest.split() if (m := _AMOUNT.match(w))]
    if len(amounts) != 1 or len(rest.split()) != 1:
        raise BudgetWordsError(f"Read {words[0]} `{name}`, but not one amount in `{' '.join(words[2:])}`.",
                               f"/gpu budget set {words[0]} {name} 2000 gpu-hours/month")
    m = amounts[0]
    amount = float(m["n"].replace(",", "")) * (1000 if m["k"] else 1)
    if m["usd"] and unit == GPU_HOURS:
        raise BudgetWordsError(f"`{m.group(0)}` is dollars but the unit says GPU-hours: say one.")
    try:
        return Budget(scope, name, amount, unit, period, anchor, then[-1] if then else WARN, HOLD, cluster=cluster,
                      source="chat")
    except ValueError as e:
        raise BudgetWordsError(str(e)) from None
