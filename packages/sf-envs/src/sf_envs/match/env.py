"""Matches as PettingZoo ``ParallelEnv``\\ s, made with :func:`make_match`."""

from __future__ import annotations

import functools
import os
from typing import Any, ClassVar, cast

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from sf_envs.env import observation_space
from sf_envs.errors import ClosedEnvError, OptionError
from sf_envs.match.core import ENGINE_LOG, MatchCore
from sf_envs.match.scenarios import MatchConfig

__all__ = ["MatchEnv", "make_match"]


class MatchEnv(ParallelEnv):
    """A multiplayer Doom match: agents ``player_0`` ... act at once, scripted bots fill in.

    Agents never terminate (they respawn after a death); all are truncated together at the time
    limit. Every step, each agent's info holds its counters since the match start (``frags``,
    ``deaths``, ``hits``, ``damage_dealt``, ``damage_taken``), its ``placement`` (1 is best, bots
    included) and ``objective``: the unshaped frags of this step, whatever the reward shaping. On
    the last step it also holds ``win`` (1.0 for the sole leader) and ``match``: frags of every
    player including bots, the winner (None on a draw) and the bots' names and levels.

    Use :func:`make_match` to create one.

    Example:
        >>> import sf_envs
        >>> env = sf_envs.make_match("duel_bots", bot_skill=2, timelimit=0.1)
        >>> obs, infos = env.reset(seed=0)
        >>> obs["player_0"].shape
        (3, 72, 128)
        >>> env.close()
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "sf_match_v0",
        "render_modes": ["rgb_array"],
        "render_fps": 35,
        "is_parallelizable": True,
    }

    def __init__(
        self, config: MatchConfig, render_mode: str | None = None, workdir: str | None = None
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if config.num_agents == 0:
            raise OptionError(
                f"this {config.scenario.name} match has no learning agent, so nothing to step "
                "from outside; play it with sf_envs.match.MatchCore (scripted players act on "
                "their own), or add an agent with num_agents=1"
            )
        self.config = config
        self.render_mode = render_mode
        n = config.num_agents
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agents: list[str] = []
        self._obs_space = observation_space(config.options, len(MatchCore.MEASUREMENTS))
        self._action_set = config.action_set
        self._action_space = self._action_set.space
        self._screens = np.zeros((n, *config.options.obs_shape), dtype=np.uint8)
        self._meas = (
            np.zeros((n, len(MatchCore.MEASUREMENTS)), dtype=np.float32)
            if config.options.measurements
            else None
        )
        shape = cast(tuple[int, ...], self._action_space.shape)  # a Discrete's or MultiDiscrete's
        self._actions = np.zeros((n, *shape), dtype=np.int64)
        self._bots = [{"name": b.name, "level": b.level} for b in config.bots]
        self._core: MatchCore | None = MatchCore(config, workdir, console_log=True)
        #: Where the engines' console goes (network handshake, map loads, fatal errors) instead
        #: of the caller's terminal; removed with the match's folder on close().
        self.engine_log = os.path.join(self._core.workdir, ENGINE_LOG)

    @functools.cache  # noqa: B019 - PettingZoo wants the same object per agent
    def observation_space(self, agent: str) -> spaces.Space:
        self._index(agent)
        return self._obs_space

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> spaces.Space:
        self._index(agent)
        return self._action_space

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        core = self._live_core()
        # Unseeded resets continue the engines' random state (see MatchCore.reset).
        core.reset(seed, self._screens, self._meas)
        self.agents = list(self.possible_agents)
        infos = {a: {**self._stats(i), "bots": self._bots} for i, a in enumerate(self.agents)}
        return self._observations(), infos

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[
        dict[str, Any],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        core = self._live_core()
        if not self.agents:
            raise RuntimeError(
                "step() called before reset() or after the match ended; call reset()"
            )
        self._check_actions(actions)
        rewards, terminated, truncated = core.step(self._actions, self._screens, self._meas)
        agents = self.agents
        infos = {a: self._stats(i) for i, a in enumerate(agents)}
        if truncated.any():
            result = {**core.result(), "bots": self._bots}
            for agent, info in infos.items():
                info["win"] = float(result["winner"] == agent)
                info["match"] = result
            self.agents = []
        return (
            self._observations(agents),
            dict(zip(agents, rewards.tolist(), strict=True)),
            dict(zip(agents, terminated.tolist(), strict=True)),
            dict(zip(agents, truncated.tolist(), strict=True)),
            infos,
        )

    def render(self) -> np.ndarray | None:
        """``player_0``'s full-resolution view (HWC RGB) with ``render_mode="rgb_array"``."""
        if self.render_mode != "rgb_array":
            return None
        screen = self._live_core().players[0].last_screen
        return None if screen is None else np.ascontiguousarray(screen.transpose(1, 2, 0))

    def close(self) -> None:
        if self._core is not None:
            self._core.close()
            self._core = None
        self.agents = []

    @property
    def core(self) -> MatchCore:
        """The underlying lock-step core (tic counters, scoreboard, engine PIDs, port)."""
        return self._live_core()

    def _stats(self, i: int) -> dict[str, Any]:
        core = cast(MatchCore, self._core)  # open: called by reset and step
        stats: dict[str, Any] = core.agent_stats(i)
        stats["objective"] = float(core.players[i].events[0])
        return stats

    def _observations(self, agents: list[str] | None = None) -> dict[str, Any]:
        # Copies, so that observations a caller keeps are not overwritten by the next step.
        agents = self.agents if agents is None else agents
        if self._meas is None:
            return {a: self._screens[i].copy() for i, a in enumerate(agents)}
        return {
            a: {"screen": self._screens[i].copy(), "measurements": self._meas[i].copy()}
            for i, a in enumerate(agents)
        }

    def _index(self, agent: str) -> int:
        try:
            return self.possible_agents.index(agent)
        except ValueError:
            raise ValueError(
                f"unknown agent {agent!r}; agents are {', '.join(self.possible_agents)}"
            ) from None

    def _check_actions(self, actions: dict[str, Any]) -> None:
        if not isinstance(actions, dict) or set(actions) != set(self.agents):
            given = sorted(actions) if isinstance(actions, dict) else actions
            raise ValueError(f"step() needs one action for each of {self.agents}, got {given!r}")
        for agent, action in actions.items():
            self._actions[self._index(agent)] = self._action_set.check(action, agent)

    def _live_core(self) -> MatchCore:
        if self._core is None:
            raise ClosedEnvError(
                f"this {self.config.scenario.name} match is closed; make a new one"
            )
        return self._core


def make_match(
    scenario: str, *, render_mode: str | None = None, workdir: str | None = None, **kwargs: Any
) -> MatchEnv:
    """Creates a match env: ``make_match("duel_bots", bot_skill=2, frame_skip=4)``.

    Every setting is validated before any engine starts (a bad multiplayer setup segfaults
    Python inside the engine rather than raising); see
    :meth:`~sf_envs.match.scenarios.MatchConfig.create` for the keyword arguments.

    Raises:
        ValueError: listing every invalid setting and its fix.
        MatchError: when the engines fail to start.
    """
    return MatchEnv(MatchConfig.create(scenario, **kwargs), render_mode, workdir)
