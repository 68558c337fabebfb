"""Small Gymnasium envs for the tests of the engine's Gymnasium units (importable in workers)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Walk(gym.Env):
    """A walk on a line with a Dict observation and MultiDiscrete actions.

    ``action = (move, stay)``: the position moves by ``move - 1`` unless ``stay``; the episode
    ends at ``|position| >= 3`` (terminated) or after ``limit`` steps (truncated). The info holds
    numbers (the position, a flag) and a string, which the engine leaves out.
    """

    observation_space = spaces.Dict(
        {
            "position": spaces.Box(-10, 10, (1,), np.int32),
            "image": spaces.Box(0, 255, (2, 3), np.uint8),
        }
    )
    action_space = spaces.MultiDiscrete([3, 2])

    def __init__(self, limit: int = 8) -> None:
        self.limit = limit
        self.position = 0
        self.steps = 0

    def _obs(self) -> dict[str, np.ndarray]:
        image = np.full((2, 3), self.position + 10, np.uint8)
        return {"position": np.array([self.position], np.int32), "image": image}

    def _info(self) -> dict[str, Any]:
        return {"position": self.position, "far": abs(self.position) >= 2, "note": "text"}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.position = int(self.np_random.integers(-1, 2))
        self.steps = 0
        return self._obs(), self._info()

    def step(self, action):
        move, stay = (int(a) for a in action)
        if not stay:
            self.position += move - 1
        self.steps += 1
        terminated = abs(self.position) >= 3
        truncated = self.steps >= self.limit and not terminated
        return self._obs(), float(self.position), terminated, truncated, self._info()


class TextObservation(gym.Env):
    """An env whose observations the engine cannot hold."""

    observation_space = spaces.Text(8)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return "hello", {}

    def step(self, action):
        return "hello", 0.0, True, False, {}


class SplitCartPole(gym.ObservationWrapper):
    """CartPole whose observation is a Dict of two vectors: the cart's and the pole's."""

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(gym.make("CartPole-v1", render_mode=render_mode))
        high = np.full(2, np.inf, np.float32)
        self.observation_space = spaces.Dict(
            {"cart": spaces.Box(-high, high), "pole": spaces.Box(-high, high)}
        )

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        return {"cart": observation[:2], "pole": observation[2:]}


if "SplitCartPole-v0" not in gym.registry:  # support.gym_envs:SplitCartPole-v0 for sf-train
    gym.register("SplitCartPole-v0", entry_point=SplitCartPole, max_episode_steps=500)


def make_walk(limit: int = 8) -> Walk:
    """A :class:`Walk`, for ``MODULE:FUNCTION`` sources."""
    return Walk(limit)


def not_an_env() -> object:
    return object()
