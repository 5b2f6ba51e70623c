"""Strings the watch cache keeps once: the values of pods, nodes and owners it holds for as long as
they live repeat the same namespaces, nodes, labels, annotations, owner kinds and tolerations."""

from __future__ import annotations

import sys
from typing import Mapping


def shared(value: str) -> str:
    """``value`` as the one string object equal to it (``sys.intern``). Each decoded copy costs
    some 60 bytes: 16 MB of the 53 MB one cluster's pods and nodes took (benchmarks/scale_fleet.py's
    fleet: 50,000 pods, 10,000 of them GPU pods). Unique strings (names, UIDs) are left as decoded."""
    return sys.intern(value)


def shared_map(mapping: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``mapping`` (labels, annotations, a selector) with its keys and values
    :func:`shared`."""
    return {sys.intern(k): sys.intern(v) for k, v in mapping.items()}
