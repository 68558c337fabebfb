"""Atari games on the vector engine: one game per unit, ``make_atari_vec`` for the ids'
``vector_entry_point``."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from gymnasium import spaces

from sf_envs.atari.core import VARIABLES, AtariCore
from sf_envs.atari.env import atari_spaces
from sf_envs.atari.options import AtariOptions
from sf_envs.vector.async_env import DoomAsyncVectorEnv
from sf_envs.vector.gym_vector import DoomVectorEnv
from sf_envs.vector.make import make_vec, split_engine_kwargs
from sf_envs.vector.units import UnitViews

__all__ = ["AtariUnit", "AtariUnitFactory", "atari_env_id", "make_atari_vec"]


class AtariUnit:
    """One :class:`AtariCore` as a unit of one env; unseeded games continue from the last seed."""

    num_envs = 1

    def __init__(self, core: AtariCore) -> None:
        self.core = core

    def reset(self, seed: int | None, out: UnitViews) -> None:
        assert isinstance(out.obs, np.ndarray)
        self.core.reset(seed, out.obs[0])
        out.variables[0] = self.core.variables
        out.episode_return[0] = 0.0
        out.episode_length[0] = 0

    def step(self, actions: np.ndarray, out: UnitViews) -> bool:
        assert isinstance(out.obs, np.ndarray)
        core = self.core
        reward, terminated, truncated = core.step(int(actions[0]), out.obs[0])
        out.reward[0] = reward
        out.terminated[0] = terminated
        out.truncated[0] = truncated
        out.variables[0] = core.variables
        out.episode_return[0] = core.episode_return
        out.episode_length[0] = core.episode_length
        return terminated or truncated

    def close(self) -> None:
        self.core.close()


@dataclass(frozen=True)
class AtariUnitFactory:
    """Builds an :class:`AtariUnit` per unit index for one game."""

    options: AtariOptions
    envs_per_unit: int = 1

    @property
    def variable_names(self) -> tuple[str, ...]:
        return VARIABLES

    @cached_property
    def _num_actions(self) -> int:
        core = AtariCore(self.options)
        try:
            return len(core.actions)
        finally:
            core.close()

    @property
    def observation_space(self) -> spaces.Box:
        return atari_spaces(self.options, self._num_actions)[0]

    @property
    def action_space(self) -> spaces.Discrete:
        return atari_spaces(self.options, self._num_actions)[1]

    @property
    def env_id(self) -> str:
        return atari_env_id(self.options.game)

    def __call__(self, unit_index: int, workdir: str) -> AtariUnit:
        return AtariUnit(AtariCore(self.options))

    def __getstate__(self) -> dict[str, Any]:
        self._num_actions  # noqa: B018  (travels with the factory: no worker loads a ROM to count)
        return self.__dict__


def atari_env_id(game: str) -> str:
    """``"space_invaders"`` -> ``"sf/Atari-SpaceInvaders-v0"``."""
    return "sf/Atari-" + "".join(part.capitalize() for part in game.split("_")) + "-v0"


def make_atari_vec(
    num_envs: int = 1, batch_size: int | None = None, **kwargs: Any
) -> DoomVectorEnv | DoomAsyncVectorEnv:
    """The engine over ``num_envs`` games: the gymnasium face, or the async face with
    ``batch_size``; ``kwargs`` are the engine's (``num_workers``, ...) and the
    :class:`AtariOptions`."""
    engine, game = split_engine_kwargs(kwargs)
    options = AtariOptions.create(**game)
    factory = AtariUnitFactory(options)
    return make_vec(factory.env_id, num_envs, batch_size, factory=factory, **engine)
