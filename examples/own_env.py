"""The smallest env of your own that sf-train trains: a corridor to walk to its lit end.

Register it under an id when the module is imported, then name MODULE:ID (sf-train imports
MODULE, as ``gymnasium.make`` does)::

    PYTHONPATH=examples sf-train train --env own_env:Corridor-v0 --run-dir runs/corridor \\
        --frames 30000
    PYTHONPATH=examples sf-train eval runs/corridor --episodes 100

The sf-envs engine hosts it: each worker process makes its own copies from the id.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Corridor(gym.Env):
    """Cells ``0..length-1``; one end, drawn at each reset, is lit. The agent sees where it is
    and which end is lit, steps left or right, and gets +1 on reaching the lit end (the episode
    ends) or -1 at the dark one, -0.01 a step meanwhile; 4 x length steps at most."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}  # noqa: RUF012  (gymnasium's)

    def __init__(self, length: int = 9, render_mode: str | None = None) -> None:
        self.length = length
        self.render_mode = render_mode
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Discrete(2)  # 0: left, 1: right
        self.position = self.lit = self.steps = 0

    def _obs(self) -> np.ndarray:
        middle = (self.length - 1) / 2
        return np.array([(self.position - middle) / middle, 1.0 if self.lit else -1.0], np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.position = self.length // 2
        self.lit = int(self.np_random.integers(2))  # 0: the left end, 1: the right end
        self.steps = 0
        return self._obs(), {}

    def step(self, action):
        self.position += 1 if int(action) == 1 else -1
        self.steps += 1
        end = self.position in (0, self.length - 1)
        reward = -0.01
        if end:
            reward = 1.0 if (self.position == self.length - 1) == bool(self.lit) else -1.0
        truncated = not end and self.steps >= 4 * self.length
        return self._obs(), reward, end, truncated, {"position": self.position}

    def render(self) -> np.ndarray:
        frame = np.zeros((16, 16 * self.length, 3), np.uint8)
        lit = 0 if self.lit == 0 else self.length - 1
        frame[:, 16 * lit : 16 * lit + 16, 1] = 255
        frame[4:12, 16 * self.position + 4 : 16 * self.position + 12] = 255
        return frame


gym.register("Corridor-v0", entry_point=Corridor)
