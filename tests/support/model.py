"""The observation and action spaces the model tests share, and random observations of them."""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces

__all__ = ["ACTIONS", "DICT", "SCREEN", "make_obs"]

SCREEN = spaces.Box(0, 255, (1, 36, 64), dtype=np.uint8)
DICT = spaces.Dict(
    {"screen": SCREEN, "measurements": spaces.Box(-np.inf, np.inf, (5,), dtype=np.float32)}
)
ACTIONS = spaces.MultiDiscrete([3, 2])


def make_obs(space, *lead):
    screen = torch.randint(0, 256, (*lead, 1, 36, 64), dtype=torch.uint8)
    if isinstance(space, spaces.Dict):
        return {"screen": screen, "measurements": torch.randn(*lead, 5)}
    return screen
