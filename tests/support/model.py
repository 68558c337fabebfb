"""The observation and action spaces the model tests share, and random observations of them."""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces

__all__ = ["ACTIONS", "DICT", "MIXED", "SCREEN", "VECTORS", "make_obs"]

SCREEN = spaces.Box(0, 255, (1, 36, 64), dtype=np.uint8)
DICT = spaces.Dict(
    {"screen": SCREEN, "measurements": spaces.Box(-np.inf, np.inf, (5,), dtype=np.float32)}
)
#: A screen under another key, beside two vectors of different dtypes.
MIXED = spaces.Dict(
    {
        "speed": spaces.Box(-1, 1, (2,), dtype=np.float64),
        "pixels": SCREEN,
        "ammo": spaces.Box(0, 50, (3,), dtype=np.int32),
    }
)
#: Vectors alone.
VECTORS = spaces.Dict(
    {"cart": spaces.Box(-5, 5, (2,), np.float32), "pole": spaces.Box(-5, 5, (3,), np.float32)}
)
ACTIONS = spaces.MultiDiscrete([3, 2])


def _random(space: spaces.Box, lead: tuple[int, ...]) -> torch.Tensor:
    if space.dtype == np.uint8:
        return torch.randint(0, 256, (*lead, *space.shape), dtype=torch.uint8)
    if np.issubdtype(space.dtype, np.integer):
        return torch.randint(0, 50, (*lead, *space.shape), dtype=torch.int32)
    return torch.randn(*lead, *space.shape, dtype=torch.from_numpy(np.zeros(0, space.dtype)).dtype)


def make_obs(space, *lead):
    if isinstance(space, spaces.Dict):
        return {key: _random(part, lead) for key, part in space.spaces.items()}
    return _random(space, lead)
