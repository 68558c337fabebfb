"""A match as a vector-engine unit: one env per learning agent, episodes that end together.

The engine (:mod:`sf_envs.vector`) runs each unit inside a worker process, so a match that
crashes or hangs takes down only its worker, which the engine restarts (on a freshly leased
port, since every :class:`~sf_envs.match.core.MatchCore` leases its own). That is why matches in
workers skip the start probe that guards matches in the caller's process.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from sf_envs.env import observation_space
from sf_envs.match.core import MatchCore
from sf_envs.match.scenarios import MatchConfig
from sf_envs.options import DoomOptions
from sf_envs.vector.units import UnitViews, screens_and_measurements

__all__ = ["MATCH_VARIABLES", "MatchUnit", "MatchUnitFactory"]

#: The ``variables`` columns of a match env: the agent's stats since the match start.
MATCH_VARIABLES: tuple[str, ...] = (
    "FRAGS",
    "DEATHS",
    "HITS",
    "DAMAGE_DEALT",
    "DAMAGE_TAKEN",
    "PLACEMENT",
)


class MatchUnit:
    """One :class:`MatchCore` as a unit of ``num_agents`` envs (env ``i`` is ``player_i``)."""

    def __init__(self, core: MatchCore) -> None:
        self.core = core
        self.num_envs = core.num_agents

    def reset(self, seed: int | None, out: UnitViews) -> None:
        self.core.reset(seed, *screens_and_measurements(out.obs))
        self._write_stats(out)
        out.episode_return[:] = 0.0
        out.episode_length[:] = 0

    def step(self, actions: np.ndarray, out: UnitViews) -> bool:
        rewards, terminated, truncated = self.core.step(actions, *screens_and_measurements(out.obs))
        out.reward[:] = rewards
        out.terminated[:] = terminated
        out.truncated[:] = truncated
        out.episode_return += rewards
        out.episode_length += 1
        self._write_stats(out)
        return bool(truncated.any())

    def _write_stats(self, out: UnitViews) -> None:
        for i in range(self.num_envs):
            out.variables[i] = list(self.core.agent_stats(i).values())

    def close(self) -> None:
        self.core.close()


@dataclass(frozen=True)
class MatchUnitFactory:
    """Builds one match per unit index; picklable, sent to every worker.

    Example:
        >>> factory = MatchUnitFactory(MatchConfig.create("duel", obs_size=(64, 48)))
        >>> factory.envs_per_unit
        2
    """

    config: MatchConfig

    @property
    def envs_per_unit(self) -> int:
        return self.config.num_agents

    @property
    def variable_names(self) -> tuple[str, ...]:
        return MATCH_VARIABLES

    @property
    def options(self) -> DoomOptions:
        return self.config.options

    @property
    def observation_space(self) -> spaces.Box | spaces.Dict:
        return observation_space(self.config.options, len(MatchCore.MEASUREMENTS))

    @property
    def action_space(self) -> spaces.Discrete | spaces.MultiDiscrete:
        return self.config.action_set.space

    @property
    def env_id(self) -> str:
        scenario = self.config.scenario
        return scenario.env_id or f"{scenario.name} match"

    def __call__(self, unit_index: int, workdir: str) -> MatchUnit:
        # Unguarded: a failed start kills only this worker, which the engine restarts.
        return MatchUnit(MatchCore(self.config, workdir, guarded=False))
