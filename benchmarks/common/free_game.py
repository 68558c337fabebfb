"""A game that costs nothing, behind the real vector engine: what the machinery alone costs.

Importing this module registers ``sf-bench/FreeBasic-v0``: the sf-envs engine (its worker
processes, shared memory and both faces) over units that return a fixed screen instead of
running ViZDoom. The spaces, options and game variables are Doom basic's, so observations have
the same shapes as ``sf/DoomBasic-v0`` with the same options, and sf-train takes it as
``--env common.free_game:sf-bench/FreeBasic-v0`` with ``benchmarks/`` on ``PYTHONPATH`` (the
engine's workers import it to build their units).

Each episode lasts :data:`EPISODE_STEPS` steps and pays 1 at its last, so the trainer's episode
bookkeeping runs as on a real game.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from sf_envs.options import DoomOptions
from sf_envs.vector.make import make_vec
from sf_envs.vector.units import DoomUnitFactory, Unit, UnitViews

ENV_ID = "sf-bench/FreeBasic-v0"
#: Steps of every episode (Doom basic's episodes last up to 75 steps at frame skip 4).
EPISODE_STEPS = 64
_ENGINE_KWARGS = frozenset(
    {"num_workers", "copy", "step_timeout_s", "start_timeout_s", "max_restarts", "pin_workers"}
)


class FreeUnit:
    """One env whose screen is written once per episode and whose steps do nothing else."""

    num_envs = 1

    def __init__(self) -> None:
        self._steps = 0

    def reset(self, seed: int | None, out: UnitViews) -> None:
        out.obs[0] = 128
        if out.meas is not None:
            out.meas[0] = 0.0
        out.variables[0] = 0.0
        out.episode_return[0] = 0.0
        out.episode_length[0] = 0
        self._steps = 0

    def step(self, actions: np.ndarray, out: UnitViews) -> bool:
        self._steps += 1
        ended = self._steps >= EPISODE_STEPS
        out.reward[0] = 1.0 if ended else 0.0
        out.terminated[0] = ended
        out.truncated[0] = False
        out.episode_return[0] += out.reward[0]
        out.episode_length[0] = self._steps
        return ended

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class FreeUnitFactory(DoomUnitFactory):
    """Doom basic's spaces and options, with :class:`FreeUnit` s in place of its games."""

    def __call__(self, unit_index: int, workdir: str) -> Unit:
        return FreeUnit()


def make_free_vec(
    scenario: str = "basic", num_envs: int = 1, batch_size: int | None = None, **kwargs: Any
) -> Any:
    """The ``vector_entry_point`` of :data:`ENV_ID`: the engine's faces over free units."""
    engine = {k: v for k, v in kwargs.items() if k in _ENGINE_KWARGS}
    options = DoomOptions.create(**{k: v for k, v in kwargs.items() if k not in _ENGINE_KWARGS})
    factory = FreeUnitFactory(scenario, options)
    return make_vec(scenario, num_envs, batch_size, factory=factory, **engine)


if ENV_ID not in gym.registry:
    gym.register(
        ENV_ID,
        entry_point="sf_envs.env:DoomEnv",  # single envs are never made from this id
        vector_entry_point=make_free_vec,
        kwargs={"scenario": "basic"},
    )
