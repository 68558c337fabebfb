"""An Atari game as a ``gymnasium.Env``: the ``sf/Atari-*-v0`` ids' single env."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sf_envs.atari.core import VARIABLES, AtariCore
from sf_envs.atari.options import AtariOptions
from sf_envs.errors import ClosedEnvError, OptionError

__all__ = ["AtariEnv", "atari_spaces"]


def atari_spaces(options: AtariOptions, num_actions: int) -> tuple[spaces.Box, spaces.Discrete]:
    """The observation and action spaces of a game played with ``options``."""
    return spaces.Box(0, 255, options.obs_shape, dtype=np.uint8), spaces.Discrete(num_actions)


class AtariEnv(gym.Env):
    """An Atari game with the standard preprocessing (:class:`AtariOptions`), channels-first
    uint8 stacked frames; an episode is a whole game and its return the raw score. ``info``
    holds ``lives`` and ``episode_frame_number`` every step.

    Example:
        >>> import gymnasium as gym, sf_envs
        >>> env = gym.make("sf/Atari-Pong-v0")
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, info["lives"]
        ((4, 84, 84), 0.0)
        >>> env.close()
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 60}  # noqa: RUF012  (as gymnasium declares it)

    def __init__(self, render_mode: str | None = None, **options: Any) -> None:
        if render_mode not in (None, "rgb_array"):
            raise OptionError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self.options = AtariOptions.create(**options)
        self._core: AtariCore | None = AtariCore(self.options)
        self.observation_space, self.action_space = atari_spaces(
            self.options, len(self._core.actions)
        )
        self._obs = np.zeros(self.options.obs_shape, dtype=np.uint8)

    def _live(self) -> AtariCore:
        if self._core is None:
            raise ClosedEnvError("this env is closed; make a new one")
        return self._core

    def _info(self) -> dict[str, Any]:
        return dict(zip(VARIABLES, self._live().variables.tolist(), strict=True))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._live().reset(seed, self._obs)
        return self._obs.copy(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        core = self._live()
        reward, terminated, truncated = core.step(int(action), self._obs)
        info = self._info()
        if terminated or truncated:
            info["episode_summary"] = {"r": core.episode_return, "l": core.episode_length}
        return self._obs.copy(), reward, terminated, truncated, info

    def render(self) -> np.ndarray | None:
        return self._live().render() if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        if self._core is not None:
            self._core.close()
            self._core = None
