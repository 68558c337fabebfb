"""Gymnasium ids for every scenario, registered when ``sf_envs`` is imported.

Single-player scenarios and the single-agent match scenarios (one learning agent against bots,
:mod:`sf_envs.match_single`) share the ``sf/Doom*-v0`` namespace.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from sf_envs.match.scenarios import MATCH_SCENARIOS, MatchScenario
from sf_envs.scenarios import SCENARIOS

__all__ = ["env_ids", "make", "match_env_ids", "register_envs"]


def env_ids() -> list[str]:
    """Every single-player ``sf/Doom*-v0`` id, sorted (the match ids: :func:`match_env_ids`)."""
    return sorted(s.env_id for s in SCENARIOS.values())


def match_env_ids() -> list[str]:
    """Every single-agent match id (one agent against bots), sorted.

    Kept apart from :func:`env_ids` because matches cannot honour gymnasium's reset-seed
    determinism: ViZDoom picks deathmatch spawn spots with a generator its seed does not reach.
    """
    return sorted(s.env_id for s in _single_agent_matches())


def _single_agent_matches() -> list[MatchScenario]:
    return [s for s in MATCH_SCENARIOS.values() if s.env_id is not None]


def register_envs() -> None:
    """Registers one gymnasium id per scenario; safe to call more than once."""
    for scenario in SCENARIOS.values():
        if scenario.env_id in gym.registry:
            continue
        gym.register(
            id=scenario.env_id,
            entry_point="sf_envs.env:DoomEnv",
            vector_entry_point="sf_envs.vector.make:make_vec",
            kwargs={"scenario": scenario.name},
        )
    for match in _single_agent_matches():
        if match.env_id in gym.registry:
            continue
        gym.register(
            id=match.env_id,
            entry_point="sf_envs.match_single:SingleAgentMatchEnv",
            vector_entry_point="sf_envs.match_single:make_match_vec",
            kwargs={"scenario": match.name},
        )


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` for sf ids, with an error that lists the known ids for an unknown one."""
    known = env_ids() + match_env_ids()
    if env_id not in known:
        raise ValueError(f"unknown env id {env_id!r}; known ids: {', '.join(known)}")
    return gym.make(env_id, **kwargs)
