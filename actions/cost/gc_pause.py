"""Pausing Python's cyclic garbage collector while a large report is read and priced.

A month of a large fleet is 100,000s of short-lived objects without reference cycles (ledger
rows, pods, owners, the engine's sums); their number alone triggers the garbage collector's full
passes, each over every live object: 16 full passes in three 30-day reports of 10,000 GPUs, about
40% of the report's time (``python benchmarks/report.py --ledger``). Reference counting frees them
all the same, so :func:`gc_paused` turns the garbage collector off around such CPU-bound work
(never around network waits, so it is off for seconds at most) and back on after.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_holders = 0
_resume = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, back on after it when it was on before.
    Re-entrant and thread-safe: with reports in several threads it resumes when the last one
    ends. Raises nothing of its own."""
    global _holders, _resume
    with _lock:
        if _holders == 0:
            _resume = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _resume:
                gc.enable()
