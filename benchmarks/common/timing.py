"""Timing a loop: steps per second of a function called again and again."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["steps_per_second"]


def steps_per_second(step: Callable[[], int], seconds: float, warmup: int = 20) -> float:
    """Steps per second of calling ``step`` (it returns how many steps it did) for ``seconds``,
    after ``warmup`` calls (processes started, kernels compiled, caches warm) left uncounted."""
    for _ in range(warmup):
        step()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += step()
    return steps / (time.perf_counter() - start)
