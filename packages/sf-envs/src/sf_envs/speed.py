"""Timing an env under a fixed action sequence (shared by ``sf-envs bench`` and benchmarks/)."""

from __future__ import annotations

import time
from collections.abc import Iterable

import gymnasium as gym

__all__ = ["steps_per_second"]


def steps_per_second(env: gym.Env, actions: Iterable[int], seed: int = 0) -> float:
    """Steps ``env`` through ``actions`` (resetting at episode ends) and returns steps/s.

    A fixed action sequence, rather than ``action_space.sample()``, makes two envs that are
    compared play the same episodes, so resets weigh the same on both sides.
    """
    env.reset(seed=seed)
    steps = 0
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(int(action))
        steps += 1
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)
