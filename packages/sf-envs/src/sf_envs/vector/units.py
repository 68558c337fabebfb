"""The unit protocol: what a worker steps, and the single-player unit over :class:`DoomCore`.

A unit owns a fixed number of consecutive envs of the shared buffers. A single-player game is a
unit of one env; a multiplayer match of N learning agents is a unit of N envs that starts and
ends its episodes together. The engine only ever talks to units through :class:`Unit`, so
matches and any Gymnasium env (:mod:`sf_envs.vector.gym_unit`) plug in by providing a
:class:`UnitFactory` without any change to the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from gymnasium import spaces

from sf_envs.env import observation_space
from sf_envs.game import DoomCore, scenario_action_set
from sf_envs.options import DoomOptions
from sf_envs.scenarios import COMMON_GAME_VARIABLES, get_scenario

__all__ = [
    "DoomUnit",
    "DoomUnitFactory",
    "Unit",
    "UnitFactory",
    "UnitViews",
    "screens_and_measurements",
]

#: The observation of ``E`` envs as the shared buffers hold it: one array for a ``Box`` space,
#: one array per key for a ``Dict`` space (each ``[E, ...]``).
Observations = np.ndarray | dict[str, np.ndarray]


@dataclass
class UnitViews:
    """Views of one unit's envs in every shared field the unit writes (``E`` envs).

    Attributes:
        obs: The observations, shaped and typed as the factory's observation space says (Doom:
            ``[E, C, H, W]`` uint8 screens, or ``{"screen", "measurements"}`` with
            measurements enabled; see :func:`screens_and_measurements`).
        reward: ``[E]`` float32 reward of the last step.
        terminated: ``[E]`` bool.
        truncated: ``[E]`` bool.
        variables: ``[E, V]`` float64 game variables after the last step.
        episode_return: ``[E]`` float32 return so far in the running episode.
        episode_length: ``[E]`` int32 steps so far in the running episode.
    """

    obs: Observations
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    variables: np.ndarray
    episode_return: np.ndarray
    episode_length: np.ndarray


@runtime_checkable
class Unit(Protocol):
    """Something a worker steps: ``num_envs`` agents whose episodes start and end together."""

    num_envs: int

    def reset(self, seed: int | None, out: UnitViews) -> None:
        """Starts a new episode; writes each env's first obs, meas and variables, zeroes the
        running episode stats. Reward and done flags are the worker's to write.

        ``seed`` comes from an explicit reset; autoresets pass None, and the unit continues
        reproducibly from its last seed (each unit knows how its engine does that)."""

    def step(self, actions: np.ndarray, out: UnitViews) -> bool:
        """Steps env ``i`` with ``actions[i]``; writes all of ``out``; True when the episode ended.

        The worker resets the unit after an ended episode (at once or on the next step,
        depending on the autoreset mode), so a unit never resets itself.
        """

    def close(self) -> None:
        """Releases the engine(s); called once when the worker stops."""


class UnitFactory(Protocol):
    """Picklable recipe the parent sends to every worker; builds the units it is given to step.

    It also describes its envs, because the faces size the shared buffers and build their spaces
    from it before any unit exists: a match and a single-player game differ in all of these.

    Attributes:
        envs_per_unit: Envs of every unit it builds.
        variable_names: Names of the ``variables`` columns, identical for every unit.
        observation_space: Every env's observation space: a ``Box`` (any shape and dtype) or a
            ``Dict`` of them.
        action_space: Every env's action space: ``Discrete``, ``MultiDiscrete`` or ``Box``.
        env_id: What the envs are, for error messages, e.g. ``"sf/DoomBasic-v0"``.
    """

    # Read-only: a factory may compute them (properties) or hold them (frozen fields).
    @property
    def envs_per_unit(self) -> int: ...
    @property
    def variable_names(self) -> tuple[str, ...]: ...
    @property
    def observation_space(self) -> spaces.Box | spaces.Dict: ...
    @property
    def action_space(self) -> spaces.Discrete | spaces.MultiDiscrete | spaces.Box: ...
    @property
    def env_id(self) -> str: ...

    def __call__(self, unit_index: int, workdir: str) -> Unit:
        """Builds unit ``unit_index`` (global, 0-based) with its engine files under ``workdir``."""


def screens_and_measurements(obs: Observations) -> tuple[np.ndarray, np.ndarray | None]:
    """A Doom unit's screens and measurements (None when not enabled) in its observations."""
    if isinstance(obs, dict):
        return obs["screen"], obs["measurements"]
    return obs, None


class DoomUnit:
    """One single-player :class:`DoomCore` as a unit of one env."""

    num_envs = 1

    def __init__(self, core: DoomCore) -> None:
        self.core = core
        self._seeds = np.random.default_rng()

    def reset(self, seed: int | None, out: UnitViews) -> None:
        # Every episode is seeded: unseeded ones from a stream seeded by the last explicit seed,
        # so a seeded run stays reproducible across episodes.
        if seed is None:
            seed = int(self._seeds.integers(2**31))
        else:
            self._seeds = np.random.default_rng(seed)
        screens, meas = screens_and_measurements(out.obs)
        self.core.reset(seed, screens[0], None if meas is None else meas[0])
        out.variables[0] = self.core.variables
        out.episode_return[0] = 0.0
        out.episode_length[0] = 0

    def step(self, actions: np.ndarray, out: UnitViews) -> bool:
        screens, meas = screens_and_measurements(out.obs)
        reward, terminated, truncated = self.core.step(
            actions[0], screens[0], None if meas is None else meas[0]
        )
        out.reward[0] = reward
        out.terminated[0] = terminated
        out.truncated[0] = truncated
        out.variables[0] = self.core.variables
        out.episode_return[0] = self.core.episode_return
        out.episode_length[0] = self.core.episode_length
        return terminated or truncated

    def close(self) -> None:
        self.core.close()


@dataclass(frozen=True)
class DoomUnitFactory:
    """Builds a :class:`DoomUnit` per unit index for one single-player scenario."""

    scenario: str
    options: DoomOptions
    envs_per_unit: int = 1

    @property
    def variable_names(self) -> tuple[str, ...]:
        # The same order DoomCore uses for its variables, without starting an engine.
        return tuple(
            dict.fromkeys(COMMON_GAME_VARIABLES + get_scenario(self.scenario).measurements)
        )

    @property
    def observation_space(self) -> spaces.Box | spaces.Dict:
        return observation_space(self.options, len(get_scenario(self.scenario).measurements))

    @property
    def action_space(self) -> spaces.Discrete | spaces.MultiDiscrete:
        return scenario_action_set(get_scenario(self.scenario), self.options).space

    @property
    def env_id(self) -> str:
        return get_scenario(self.scenario).env_id

    def __call__(self, unit_index: int, workdir: str) -> Unit:
        return DoomUnit(DoomCore(self.scenario, self.options, workdir))
