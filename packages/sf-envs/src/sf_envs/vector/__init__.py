"""The shared-memory vector engine and its two faces.

Glossary (one word per idea, here and in every module of this package):

- **env** — one agent as users see it: ``env_id`` in ``[0, num_envs)``, its entry along the
  leading axis of every shared array, one action and one observation per step.
- **unit** — what a worker builds and steps as a whole (:class:`~.units.Unit`): a single-player
  game is a unit of one env, a match of N learning agents a unit of N envs whose episodes start
  and end together, any Gymnasium env a unit of one env (:mod:`~.gym_unit`). A :class:`~.units.UnitFactory` builds them inside the workers.
- **group** — the consecutive units a worker steps per command; groups are what the engine
  schedules and what the async face hands out (a batch is one group per worker).
- **batch** — the envs one ``step``/``recv`` returns: all of them (gymnasium face) or
  ``batch_size`` of them (async face).
- **worker** — a process (``python -m sf_envs.vector.worker``) that holds the units of its groups;
  inside it, a ``_GroupStepper`` steps them. The parent keeps a ``_WorkerHandle`` per worker.
- **engine** — the workers, their shared buffers, their lifecycle, restarts and timeouts
  (:class:`~.engine.Engine`); it knows nothing of observations or autoreset semantics.
- **face** — a user-facing class over the engine: :class:`DoomVectorEnv` (a
  ``gymnasium.vector.VectorEnv``, NEXT_STEP or SAME_STEP autoreset) and
  :class:`DoomAsyncVectorEnv` (EnvPool-style ``send(actions, env_ids)`` / ``recv()``). Both own
  a :class:`~.base.VectorCore`: the engine, the spaces and the checks of user input.

Both faces come from ``gymnasium.make_vec("sf/Doom<Name>-v0", num_envs=..., [batch_size=...])``,
and for any Gymnasium env from ``make_gym_vec(ENV, num_envs=..., [batch_size=...])``.
Modules: ``buffers`` (shared memory), ``protocol`` (messages), ``units`` (what a worker steps),
``gym_unit`` (any Gymnasium env as a unit),
``worker`` (the worker process), ``engine`` (lifecycle, restarts, timeouts; processes are
found and killed through :mod:`sf_envs.lifecycle`), ``base`` (what the faces share), ``gym_vector``/``async_env``
(faces), ``make``. The engine's internals are imported from their modules, not from here.
"""

from __future__ import annotations

from sf_envs.vector.async_env import DoomAsyncVectorEnv
from sf_envs.vector.engine import VectorEnvError
from sf_envs.vector.gym_vector import DoomVectorEnv
from sf_envs.vector.make import make_gym_vec, make_vec

__all__ = [
    "DoomAsyncVectorEnv",
    "DoomVectorEnv",
    "VectorEnvError",
    "make_gym_vec",
    "make_vec",
]
