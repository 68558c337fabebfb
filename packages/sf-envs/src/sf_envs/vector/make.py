"""``make_vec``: the ``vector_entry_point`` of every ``sf/Doom*-v0`` id.

``gymnasium.make_vec(id, num_envs=n, **kwargs)`` calls it as ``make_vec(num_envs=n,
scenario=<name>, **kwargs)`` (gymnasium 1.x, ``vectorization_mode`` left at its default or set
to ``"vector_entry_point"``); ``"sync"``/``"async"`` modes bypass it and wrap single
:class:`~sf_envs.env.DoomEnv` s as usual. Ids over matches build a unit factory first and come
here with it (:func:`sf_envs.match.single.make_match_vec`).
"""

from __future__ import annotations

from typing import Any

from sf_envs.errors import OptionError
from sf_envs.vector.async_env import DoomAsyncVectorEnv
from sf_envs.vector.gym_unit import EnvSource, GymUnitFactory
from sf_envs.vector.gym_vector import DoomVectorEnv
from sf_envs.vector.units import UnitFactory

__all__ = ["ENGINE_KWARGS", "make_gym_vec", "make_vec", "split_engine_kwargs"]

#: The keyword arguments of the vector faces themselves; every other one configures the envs.
ENGINE_KWARGS = frozenset(
    {
        "num_workers",
        "autoreset_mode",
        "copy",
        "step_timeout_s",
        "start_timeout_s",
        "max_restarts",
        "pin_workers",
    }
)


def split_engine_kwargs(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``kwargs`` as (the engine's, the envs'): how a ``vector_entry_point`` that builds its own
    unit factory (matches, Atari) tells them apart."""
    engine = {k: v for k, v in kwargs.items() if k in ENGINE_KWARGS}
    return engine, {k: v for k, v in kwargs.items() if k not in ENGINE_KWARGS}


def make_vec(
    scenario: str,
    num_envs: int = 1,
    batch_size: int | None = None,
    factory: UnitFactory | None = None,
    **kwargs: Any,
) -> DoomVectorEnv | DoomAsyncVectorEnv:
    """The gymnasium face, or the async face when ``batch_size`` is given.

    Args:
        scenario: Scenario name (filled in by the registered id).
        num_envs: Number of envs.
        batch_size: Ask for the send/recv face returning this many envs per ``recv``.
        factory: Builds the units (e.g. matches) instead of ``scenario``'s single-player games;
            the spaces and options are then the factory's.
        **kwargs: ``num_workers``, timeouts, ``autoreset_mode`` (gymnasium face only) and the
            :class:`~sf_envs.options.DoomOptions` fields.
    """
    if batch_size is None:
        return DoomVectorEnv(scenario, num_envs, factory=factory, **kwargs)
    if "autoreset_mode" in kwargs:
        raise OptionError(
            "the async face (batch_size=...) always autoresets SAME_STEP; drop autoreset_mode "
            "or drop batch_size for the gymnasium VectorEnv face"
        )
    return DoomAsyncVectorEnv(scenario, num_envs, batch_size=batch_size, factory=factory, **kwargs)


def make_gym_vec(
    env: EnvSource,
    num_envs: int = 1,
    batch_size: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> DoomVectorEnv | DoomAsyncVectorEnv:
    """Any Gymnasium env on the engine: either face, as :func:`make_vec` gives for Doom.

    Args:
        env: A gymnasium id (``"CartPole-v1"``), ``"MODULE:ID"``, ``"MODULE:FUNCTION"`` or a
            top-level function returning a ``gymnasium.Env`` (see
            :mod:`sf_envs.vector.gym_unit`).
        num_envs: Number of envs.
        batch_size: Ask for the send/recv face returning this many envs per ``recv``.
        env_kwargs: Keyword arguments every env is made with.
        **kwargs: The engine's: ``num_workers``, ``autoreset_mode`` (gymnasium face only),
            ``copy``, ``step_timeout_s``, ``start_timeout_s``, ``max_restarts``, ``pin_workers``.

    Example:
        >>> from sf_envs.vector import make_gym_vec
        >>> envs = make_gym_vec("CartPole-v1", num_envs=4, num_workers=2)
        >>> obs, info = envs.reset(seed=0)
        >>> obs.shape
        (4, 4)
        >>> envs.close()
    """
    factory = GymUnitFactory(env, dict(env_kwargs or {}))
    return make_vec(factory.env_id, num_envs, batch_size, factory=factory, **kwargs)
