"""Timing helper shared by the benchmark scripts."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeat: int, number: int) -> float:
    """Best mean seconds per call over `repeat` rounds of `number` calls (the least noisy figure)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def best_of_each(fns: list[Callable[[], object]], repeat: int, number: int) -> list[float]:
    """`best_of` for several functions measured in turns, round by round, so that each sees the same
    machine state (allocator, caches, clock): side by side in the strict sense. The collector stays on while a
    function runs (its own collections are in its time); before each function's round it collects, so every
    function starts from the same collector state, none walking the young objects the previous one left."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            gc.collect()
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[k] = min(best[k], (time.perf_counter() - start) / number)
    return best
