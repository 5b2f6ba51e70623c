"""Waiting in tests for what happens on another thread or process (Bolt runs listeners after the
ack, a scheduler fires on its own thread, a replica takes a Lease)."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], what: str, timeout: float = 15.0) -> T:
    """Poll ``condition`` every 50 ms until it returns something truthy and return that; raise
    AssertionError naming ``what`` when ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
