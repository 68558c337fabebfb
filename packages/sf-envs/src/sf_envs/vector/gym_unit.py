"""Any Gymnasium env as a unit of the engine: made inside the worker, stepped over shared memory.

A :class:`GymUnitFactory` names the env the way a user would hand it to Gymnasium: a registered
id (``"CartPole-v1"``), ``"MODULE:ID"`` (MODULE registers ID when imported, as in
``gymnasium.make``), or an importable function that returns an env, ``"MODULE:FUNCTION"`` or
the function itself (defined at a module's top level, so that it pickles to the workers). The
parent makes the env once to read its spaces and the numeric fields of its reset info; those
fields become the ``variables`` columns, so a worker writes the info of every step into shared
memory (a field missing from a step's info reads NaN).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sf_envs.errors import OptionError
from sf_envs.vector.buffers import action_field, observation_fields
from sf_envs.vector.units import UnitViews

__all__ = ["GymUnit", "GymUnitFactory", "make_gym_env"]

#: What names an env: a gymnasium id, ``MODULE:ID``, ``MODULE:FUNCTION`` or a function.
EnvSource = str | Callable[..., gym.Env]


def make_gym_env(source: EnvSource, kwargs: dict[str, Any] | None = None) -> gym.Env:
    """The env ``source`` names, made with ``kwargs``.

    Raises:
        OptionError: If ``source`` names nothing that makes an env.
    """
    kwargs = kwargs or {}
    if callable(source):
        return _checked(source(**kwargs), source)
    module, _, name = source.rpartition(":")
    if module:
        try:
            imported = importlib.import_module(module)
        except ImportError as e:
            raise OptionError(f"cannot import {module!r} for env {source!r}: {e}") from e
        factory = getattr(imported, name, None)
        if callable(factory) and not isinstance(factory, type(gym)):
            return _checked(factory(**kwargs), source)
    try:
        return gym.make(source, **kwargs)
    except gym.error.Error as e:
        raise OptionError(
            f"unknown env {source!r} ({e}): name a registered gymnasium id, MODULE:ID for an "
            "id that MODULE registers, or MODULE:FUNCTION returning a gymnasium.Env"
        ) from e


def _checked(env: Any, source: object) -> gym.Env:
    if not isinstance(env, gym.Env):
        raise OptionError(f"{source!r} returned {type(env).__name__}, not a gymnasium.Env")
    return env


def _check_spaces(observation: spaces.Space, action: spaces.Space, source: object) -> None:
    observation_fields(observation)  # raises for what the engine cannot hold
    action_field(action)
    starts = getattr(action, "start", 0)
    if np.any(np.asarray(starts) != 0):
        raise OptionError(
            f"{source!r}: the engine's Discrete and MultiDiscrete actions start at 0, got "
            f"{action}; wrap the env to shift its actions"
        )


def _numeric_keys(info: dict[str, Any]) -> tuple[str, ...]:
    """The info fields that are numbers (bools included), in the info's order."""
    return tuple(
        k for k, v in info.items() if isinstance(v, (int, float, np.integer, np.floating, bool))
    )


@dataclass(frozen=True)
class GymUnitFactory:
    """Builds one env of ``source`` per unit; picklable, sent to every worker.

    Args:
        source: A gymnasium id, ``MODULE:ID``, ``MODULE:FUNCTION`` or a top-level function.
        kwargs: Keyword arguments the env is made with.

    Example:
        >>> factory = GymUnitFactory("CartPole-v1")
        >>> factory.action_space
        Discrete(2)
    """

    source: EnvSource
    kwargs: dict[str, Any] = field(default_factory=dict)
    envs_per_unit: int = 1

    @cached_property
    def _probe(self) -> tuple[spaces.Space, spaces.Space, tuple[str, ...]]:
        """The spaces and info fields of one env, made and closed in this process."""
        env = make_gym_env(self.source, self.kwargs)
        try:
            _check_spaces(env.observation_space, env.action_space, self.source)
            _, info = env.reset(seed=0)
            return env.observation_space, env.action_space, _numeric_keys(info)
        finally:
            env.close()

    @property
    def observation_space(self) -> spaces.Box | spaces.Dict:
        space = self._probe[0]
        assert isinstance(space, (spaces.Box, spaces.Dict))  # checked by the probe
        return space

    @property
    def action_space(self) -> spaces.Discrete | spaces.MultiDiscrete | spaces.Box:
        space = self._probe[1]
        assert isinstance(space, (spaces.Discrete, spaces.MultiDiscrete, spaces.Box))
        return space

    @property
    def variable_names(self) -> tuple[str, ...]:
        return self._probe[2]

    @property
    def env_id(self) -> str:
        return self.source if isinstance(self.source, str) else self.source.__qualname__

    def __call__(self, unit_index: int, workdir: str) -> GymUnit:
        env = make_gym_env(self.source, self.kwargs)
        return GymUnit(env, self.variable_names)

    def __getstate__(self) -> dict[str, Any]:
        # The probe's spaces travel with the factory, so no worker makes an env to read them.
        self._probe  # noqa: B018
        return self.__dict__


class GymUnit:
    """One :class:`gymnasium.Env` as a unit of one env.

    Explicit resets pass their seed to ``env.reset``; autoresets pass none, so the env goes on
    from its own random state, reproducibly after a seeded reset.
    """

    num_envs = 1

    def __init__(self, env: gym.Env, info_keys: tuple[str, ...]) -> None:
        self.env = env
        self._info_keys = info_keys
        self._discrete = isinstance(env.action_space, spaces.Discrete)
        self._return = 0.0
        self._length = 0

    def reset(self, seed: int | None, out: UnitViews) -> None:
        obs, info = self.env.reset(seed=seed)
        self._write(obs, info, out)
        self._return = 0.0
        self._length = 0
        out.episode_return[0] = 0.0
        out.episode_length[0] = 0

    def step(self, actions: np.ndarray, out: UnitViews) -> bool:
        # A copy: the env may keep the action, and the shared row changes with the next send.
        action = int(actions[0]) if self._discrete else actions[0].copy()
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._write(obs, info, out)
        self._return += float(reward)
        self._length += 1
        out.reward[0] = reward
        out.terminated[0] = terminated
        out.truncated[0] = truncated
        out.episode_return[0] = self._return
        out.episode_length[0] = self._length
        return bool(terminated or truncated)

    def _write(self, obs: Any, info: dict[str, Any], out: UnitViews) -> None:
        if isinstance(out.obs, dict):
            for key, view in out.obs.items():
                view[0] = obs[key]
        else:
            out.obs[0] = obs
        row = out.variables[0]
        for j, key in enumerate(self._info_keys):
            row[j] = float(info.get(key, math.nan))

    def close(self) -> None:
        self.env.close()
