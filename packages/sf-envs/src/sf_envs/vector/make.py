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
from sf_envs.vector.gym_vector import DoomVectorEnv
from sf_envs.vector.units import UnitFactory

__all__ = ["make_vec"]


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
