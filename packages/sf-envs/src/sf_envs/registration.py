"""Gymnasium ids for every scenario, registered when ``sf_envs`` is imported."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from sf_envs.scenarios import SCENARIOS

__all__ = ["env_ids", "make", "register_envs"]


def env_ids() -> list[str]:
    """Every registered ``sf/Doom*-v0`` id, sorted."""
    return sorted(s.env_id for s in SCENARIOS.values())


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


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` for sf ids, with an error that lists the known ids for an unknown one."""
    if env_id not in env_ids():
        raise ValueError(f"unknown env id {env_id!r}; known ids: {', '.join(env_ids())}")
    return gym.make(env_id, **kwargs)
