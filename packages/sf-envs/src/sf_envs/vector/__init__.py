"""The shared-memory vector engine and its two faces.

- :class:`DoomVectorEnv` — a ``gymnasium.vector.VectorEnv`` (NEXT_STEP or SAME_STEP autoreset).
- :class:`DoomAsyncVectorEnv` — EnvPool-style ``send(actions, env_ids)`` / ``recv()``.

Both come from ``gymnasium.make_vec("sf/Doom<Name>-v0", num_envs=..., [batch_size=...])``.
Modules: ``buffers`` (shared memory), ``protocol`` (messages), ``units`` (what a worker steps),
``worker`` (the worker process), ``procs`` (process-group cleanup), ``engine`` (lifecycle,
restarts, timeouts), ``base`` (shared face code), ``gym_vector``/``async_env`` (faces), ``make``.
"""

from __future__ import annotations

from sf_envs.vector.async_env import DoomAsyncVectorEnv
from sf_envs.vector.engine import Engine, EngineSettings, VectorEnvError
from sf_envs.vector.gym_vector import DoomVectorEnv
from sf_envs.vector.make import make_vec
from sf_envs.vector.units import DoomUnit, DoomUnitFactory, RowBlock, Unit, UnitFactory

__all__ = [
    "DoomAsyncVectorEnv",
    "DoomUnit",
    "DoomUnitFactory",
    "DoomVectorEnv",
    "Engine",
    "EngineSettings",
    "RowBlock",
    "Unit",
    "UnitFactory",
    "VectorEnvError",
    "make_vec",
]
