"""One call per cluster, made side by side: each cluster waits on its own API server, Prometheus or
database, so several clusters cost the slowest one's wait, not the sum, and one cluster's failure
is kept apart from the others' results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def side_by_side(fn: Callable[[T], R], items: Sequence[T], limit: int, thread_name: str) -> list[R | Exception]:
    """``fn(item)`` for each of ``items``, in their order, at most ``limit`` at once in threads
    named ``thread_name`` (one item: in the caller's thread); where ``fn`` raised an Exception the
    list holds that exception instead of a result. Raises nothing of its own."""

    def one(item: T) -> R | Exception:
        try:
            return fn(item)
        except Exception as e:  # noqa: BLE001 - one item's failure must not stop the others
            return e

    if len(items) == 1:
        return [one(items[0])]
    with ThreadPoolExecutor(max_workers=min(limit, len(items)), thread_name_prefix=thread_name) as pool:
        return list(pool.map(one, items))
