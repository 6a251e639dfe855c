"""Timing shared by the benchmark scripts (run as `python bench/NAME.py`, so this folder is on
the import path)."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def best_time(fn: Callable[[], T], repeat: int) -> tuple[float, T | None]:
    """The fastest of `repeat` runs of `fn` in seconds, and what the last run returned."""
    best, value = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value
