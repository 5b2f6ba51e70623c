"""Values derived from one immutable object, kept on it: a sweep inside ``run`` reads the same
objects from the watch caches every time (a changed object is a new object), so what is derived
from them alone is computed once per object, not once per sweep. Pure."""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")


def memoized(obj: object, name: str, compute: Callable[[], T], *inputs: object) -> T:
    """``compute()``, kept on the frozen dataclass ``obj`` under the attribute ``name`` and given
    back while the other objects it was computed from, ``inputs``, are the very same ones
    (identity, not equality: they are immutable, so the same object means the same value).
    ``compute`` must depend on nothing but ``obj`` and ``inputs``. The attribute is not a field:
    equality, ``dataclasses.replace`` and the JSON form of ``obj`` do not see it."""
    kept = obj.__dict__.get(name)
    if kept is not None and len(kept[0]) == len(inputs) and all(a is b for a, b in zip(kept[0], inputs)):
        return kept[1]
    value = compute()
    object.__setattr__(obj, name, (inputs, value))
    return value
