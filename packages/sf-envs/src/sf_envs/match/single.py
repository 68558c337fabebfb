"""Matches for single-agent trainers: plain ``gymnasium.Env`` s and the vector form of every id.

Single-agent trainers speak gymnasium, not PettingZoo, so a match of exactly one learning agent
(``sf/DoomDuelBots-v0``) gets the single-player conventions of :class:`~sf_envs.env.DoomEnv`: the
same observations, ``Discrete`` actions, the time limit as ``truncated``, ``info["episode_summary"]`` on
the last step. The match itself is :class:`~sf_envs.match.env.MatchEnv`; vectorised, each match
is one unit (:class:`~sf_envs.match.unit.MatchUnitFactory`) in the engine with one env per
learning agent, so a match of several agents (``sf/DoomDuel-v0``) is self-play for a trainer
that plays every env with its one policy.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from sf_envs.errors import ClosedEnvError, OptionError
from sf_envs.match.env import MatchEnv
from sf_envs.match.scenarios import MATCH_SCENARIOS, MatchConfig
from sf_envs.match.unit import MatchUnitFactory
from sf_envs.vector.async_env import DoomAsyncVectorEnv
from sf_envs.vector.gym_vector import DoomVectorEnv
from sf_envs.vector.make import make_vec, split_engine_kwargs

__all__ = ["SingleAgentMatchEnv", "make_match_vec", "refuse_single_env"]

_AGENT = "player_0"


def _single_agent_config(scenario: str, kwargs: dict[str, Any]) -> MatchConfig:
    config = MatchConfig.create(scenario, **kwargs)
    if config.num_agents != 1:
        single = sorted(s.name for s in MATCH_SCENARIOS.values() if s.env_id and s.num_agents == 1)
        raise OptionError(
            f"a single-agent env needs a match of one learning agent, but {scenario} has "
            f"{config.num_agents}; use {' or '.join(single)}, or sf_envs.make_match for more"
        )
    return config


class SingleAgentMatchEnv(gym.Env):
    """A match of one learning agent against scripted bots, as a ``gymnasium.Env``.

    Made with ``gym.make("sf/DoomDuelBots-v0", bot_skill=2, timelimit=1.0)``. Keyword arguments
    are those of :func:`~sf_envs.make_match` (``num_bots``, ``bot_skill``, ``map``,
    ``timelimit``, ``rewards``, ``timeout``) plus the :class:`~sf_envs.options.DoomOptions`
    fields, and observations follow them exactly as for :class:`~sf_envs.env.DoomEnv`. The agent
    respawns after a death, so episodes never terminate: the time limit returns
    ``truncated=True, terminated=False``. ``info`` holds the agent's counters since the match
    start every step (``frags``, ``deaths``, ``hits``, ``damage_dealt``, ``damage_taken``,
    ``placement``, ``objective``); the last step adds ``win``, ``match`` (every player's frags,
    the winner) and ``episode_summary = {"r": return, "l": length}``.

    Example:
        >>> import gymnasium as gym, sf_envs
        >>> env = gym.make("sf/DoomDuelBots-v0", timelimit=0.1, obs_size=(64, 48))
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, info["frags"]
        ((3, 48, 64), 0.0)
        >>> env.close()
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 35}  # noqa: RUF012  (as gymnasium declares it)

    def __init__(
        self,
        scenario: str,
        render_mode: str | None = None,
        workdir: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.config = _single_agent_config(scenario, kwargs)
        self.env_id = MatchUnitFactory(self.config).env_id
        self._match: MatchEnv | None = MatchEnv(self.config, render_mode, workdir)
        self.render_mode = render_mode
        self.observation_space = self._match.observation_space(_AGENT)
        self.action_space = self._match.action_space(_AGENT)
        self._return = 0.0
        self._length = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        match = self._live_match()
        # A seed starts a fresh engine; None continues its random state (see MatchCore.reset).
        obs, infos = match.reset(seed=seed)
        self._return = 0.0
        self._length = 0
        return obs[_AGENT], infos[_AGENT]

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        match = self._live_match()
        if not match.agents:
            raise RuntimeError(
                "step() called before reset() or after the match ended; call reset()"
            )
        obs, rewards, terminated, truncated, infos = match.step({_AGENT: action})
        reward = rewards[_AGENT]
        self._return += reward
        self._length += 1
        info = infos[_AGENT]
        if truncated[_AGENT] or terminated[_AGENT]:
            info["episode_summary"] = {"r": self._return, "l": self._length}
        return obs[_AGENT], reward, terminated[_AGENT], truncated[_AGENT], info

    def render(self) -> Any:
        return self._live_match().render()

    def close(self) -> None:
        if self._match is not None:
            self._match.close()
            self._match = None
        super().close()

    def _live_match(self) -> MatchEnv:
        if self._match is None:
            raise ClosedEnvError(f"{self.env_id} is closed; create a new env with gym.make()")
        return self._match


def make_match_vec(
    scenario: str, num_envs: int = 1, batch_size: int | None = None, **kwargs: Any
) -> DoomVectorEnv | DoomAsyncVectorEnv:
    """The ``vector_entry_point`` of the match ids: one env per learning agent.

    Args:
        scenario: Match scenario name (filled in by the registered id).
        num_envs: Number of envs: matches x learning agents per match. An env's episode is
            its agent's view of the whole match; the envs of one match start and end together.
        batch_size: Ask for the async send/recv face returning this many envs per ``recv``.
        **kwargs: The vector engine's (``num_workers``, ``autoreset_mode``, ``copy``,
            ``step_timeout_s``, ``start_timeout_s``, ``max_restarts``, ``pin_workers``); all
            others configure the matches as for :func:`~sf_envs.make_match`.
    """
    engine, match = split_engine_kwargs(kwargs)
    factory = MatchUnitFactory(MatchConfig.create(scenario, **match))
    return make_vec(scenario, num_envs, batch_size, factory=factory, **engine)


def refuse_single_env(scenario: str, **kwargs: Any) -> gym.Env:
    """The ``entry_point`` of the ids of several learning agents: ``gymnasium.make`` has room
    for one agent, so it gets an error naming the two forms that exist."""
    config = MatchConfig.create(scenario, **kwargs)
    env_id = MATCH_SCENARIOS[scenario].env_id
    raise OptionError(
        f"{env_id} is a match of {config.num_agents} learning agents and gymnasium.make gives "
        f"one agent: use gymnasium.make_vec({env_id!r}, num_envs=k * {config.num_agents}) "
        f"(one env per agent, self-play) or sf_envs.make_match({scenario!r}) (PettingZoo)"
    )
