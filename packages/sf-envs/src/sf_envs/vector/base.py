"""What both faces share: the engine set-up from a scenario, spaces, action checks, batch views.

A :class:`BatchView` is the face-side picture of a batch of envs: for consecutive envs its arrays
are slices of the shared buffers (zero-copy); otherwise they are one preallocated gather buffer
per field, refilled by ``np.take(..., out=)``. Either way nothing is allocated per step.
"""

from __future__ import annotations

import os
from typing import Any, cast

import numpy as np
from gymnasium import spaces

from sf_envs.errors import ClosedEnvError, OptionError
from sf_envs.options import DoomOptions
from sf_envs.scenarios import get_scenario
from sf_envs.vector.buffers import (
    BufferLayout,
    FieldSpec,
    action_field,
    observation_fields,
    observation_names,
    observation_of,
)
from sf_envs.vector.engine import Engine, EngineSettings, EngineState
from sf_envs.vector.units import DoomUnitFactory, UnitFactory

__all__ = [
    "BatchView",
    "VectorCore",
    "copied",
    "default_workers",
]

# Fields a face returns for a batch; the rest (actions, seeds, running stats) stay inside.
_BATCH_FIELDS = (
    "reward",
    "terminated",
    "truncated",
    "restarted",
    "variables",
    "ep_return",
    "ep_length",
    "final_variables",
)


def _is_batch_field(name: str) -> bool:
    """Whether a face returns field ``name`` for a batch: the observations and the above."""
    return name in _BATCH_FIELDS or name.startswith(("obs", "final_obs"))


def default_workers(num_units: int) -> int:
    """One worker per core (ViZDoom is single-threaded), never more than there are units."""
    return max(1, min(os.cpu_count() or 1, num_units))


def copied(value: Any) -> Any:
    """A copy of an array, or of a dict of them (nested), for callers that keep results."""
    if isinstance(value, dict):
        return {k: copied(v) for k, v in value.items()}
    return value.copy()


def _layout(
    num_envs: int,
    observation_space: spaces.Space,
    action_space: spaces.Space,
    n_vars: int,
    same_step: bool,
) -> BufferLayout:
    obs = list(observation_fields(observation_space).values())
    fields = [
        *obs,
        FieldSpec("reward", (), "float32"),
        FieldSpec("terminated", (), "bool"),
        FieldSpec("truncated", (), "bool"),
        FieldSpec("restarted", (), "bool"),
        FieldSpec("variables", (n_vars,), "float64"),
        FieldSpec("run_return", (), "float32"),
        FieldSpec("run_length", (), "int32"),
        FieldSpec("ep_return", (), "float32"),
        FieldSpec("ep_length", (), "int32"),
        action_field(action_space),
        FieldSpec("seed", (), "int64"),
    ]
    if same_step:
        fields += [FieldSpec("final_" + f.name, f.shape, f.dtype) for f in obs]
        fields.append(FieldSpec("final_variables", (n_vars,), "float64"))
    return BufferLayout(num_envs, tuple(fields))


class BatchView:
    """Arrays for one batch of envs, plus the per-batch episode mask.

    Args:
        source: The shared arrays by field name.
        envs: ``slice`` for consecutive envs (views), or None for a gather buffer of ``size`` envs.
        size: Envs in the batch.
    """

    def __init__(self, source: dict[str, np.ndarray], envs: slice | None, size: int) -> None:
        self.gather = envs is None
        self.arrays: dict[str, np.ndarray] = {}
        for name, array in source.items():
            if not _is_batch_field(name):
                continue
            self.arrays[name] = (
                np.empty((size, *array.shape[1:]), array.dtype) if envs is None else array[envs]
            )
        self.env_id = (
            np.empty(size, np.int32)
            if envs is None
            else np.arange(envs.start, envs.stop, dtype=np.int32)
        )
        self.done = np.empty(size, bool)
        self._source = source

    def fill(self, index: np.ndarray) -> None:
        """Gathers envs ``index`` into the buffers (gather views only)."""
        for name, out in self.arrays.items():
            np.take(self._source[name], index, axis=0, out=out)
        self.env_id[:] = index

    def update_done(self) -> np.ndarray:
        return np.logical_or(self.arrays["terminated"], self.arrays["truncated"], out=self.done)


def _unit_factory(
    scenario: str, factory: UnitFactory | None, options: dict[str, Any]
) -> UnitFactory:
    """The given factory, or single-player games of ``scenario``; options must not disagree."""
    if factory is None:
        found = get_scenario(scenario)
        found.config_path  # noqa: B018  (a missing scenario pack fails here, not in every worker)
        return DoomUnitFactory(found.name, _doom_options(options))
    if options:
        # The factory's options shape the buffers its units write; other ones would corrupt them.
        own = getattr(factory, "options", None)
        if not isinstance(own, DoomOptions):
            raise OptionError(
                f"options {options} given beside a unit factory that takes none "
                f"({factory.env_id}); give them to the factory (make_gym_vec: env_kwargs)"
            )
        if _doom_options(options) != own:
            raise OptionError(
                f"options {options} disagree with the unit factory's {own}; "
                "give the options to the factory only"
            )
    return factory


def _doom_options(options: dict[str, Any]) -> DoomOptions:
    try:
        return DoomOptions.create(**options)
    except TypeError as exc:
        raise OptionError(
            f"{exc}; the vector env takes num_envs, num_workers, batch_size, "
            "autoreset_mode and the DoomOptions fields"
        ) from None


class VectorCore:
    """What both faces share: the engine of a unit factory, the spaces, and the checks of input.

    The faces own one each, as :class:`~sf_envs.env.DoomEnv` owns a :class:`~sf_envs.game.DoomCore`.
    """

    def __init__(
        self,
        scenario: str,
        num_envs: int,
        num_workers: int | None,
        units_per_group: int | None,
        same_step: bool,
        factory: UnitFactory | None,
        settings: EngineSettings,
        options: dict[str, Any],
    ) -> None:
        if not isinstance(num_envs, int) or num_envs < 1:
            raise OptionError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.factory = _unit_factory(scenario, factory, options)
        self.env_id = self.factory.env_id
        per_unit = self.factory.envs_per_unit
        if num_envs % per_unit:
            raise OptionError(f"num_envs={num_envs} must be a multiple of {per_unit} envs per unit")
        num_units = num_envs // per_unit
        self.num_workers = default_workers(num_units) if num_workers is None else num_workers
        if not isinstance(self.num_workers, int) or not 1 <= self.num_workers <= num_units:
            raise OptionError(f"num_workers must be in [1, {num_units}], got {num_workers!r}")
        self.variable_names = tuple(v.lower() for v in self.factory.variable_names)
        self.single_observation_space = self.factory.observation_space
        self.single_action_space = self.factory.action_space
        self._obs_names = observation_names(self.single_observation_space)
        self.engine = Engine(
            self.factory,
            num_units=num_units,
            units_per_group=units_per_group or num_units // self.num_workers,
            num_workers=self.num_workers,
            layout=_layout(
                num_envs,
                self.single_observation_space,
                self.single_action_space,
                len(self.variable_names),
                same_step,
            ),
            same_step=same_step,
            name=self.env_id,
            settings=settings,
        )
        self.shared = self.engine.buffers.arrays
        self._rng = np.random.default_rng()

    def live_engine(self) -> Engine:
        if self.engine.state is EngineState.CLOSED:
            raise ClosedEnvError(f"the vector env of {self.env_id} is closed; make a new one")
        return self.engine

    def write_seeds(self, seed: int | list[int] | None, num_envs: int) -> None:
        """Env ``i`` gets ``seed + i``; None draws fresh seeds from a stream seeded by the last
        explicit seed, so reset(seed=s) followed by unseeded resets stays reproducible."""
        if seed is None:
            seeds = self._rng.integers(2**31, size=num_envs)
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            self._rng = np.random.default_rng(int(seed))
            seeds = int(seed) + np.arange(num_envs)
        elif isinstance(seed, (list, tuple, np.ndarray)) and len(seed) == num_envs:
            seeds = np.asarray(seed, dtype=np.int64)
        else:
            raise ValueError(
                f"seed must be None, an int (env i gets seed + i) or {num_envs} ints, got {seed!r}"
            )
        self.shared["seed"][:] = seeds

    def check_actions(self, actions: Any, count: int) -> np.ndarray:
        """The actions as an array of ``count`` entries of the action space: integers within
        Discrete/MultiDiscrete bounds, or finite numbers for a Box (the env clips or refuses
        values out of its bounds, as it would in a single env)."""
        space = self.single_action_space
        array = np.asarray(actions)
        shape = (count, *cast(tuple[int, ...], space.shape))
        if isinstance(space, spaces.Box):
            if (
                array.shape != shape
                or array.dtype.kind not in "iuf"
                or not np.isfinite(array).all()
            ):
                raise ValueError(
                    f"actions must be a finite numeric array of shape {shape} (action space "
                    f"{space}), got shape {array.shape}, dtype {array.dtype}"
                )
            return array
        high = np.asarray(space.n if isinstance(space, spaces.Discrete) else space.nvec)
        if (
            array.shape != shape
            or array.dtype.kind not in "iu"
            or (count and (array.min() < 0 or (array >= high).any()))
        ):
            got = f"shape {array.shape}, dtype {array.dtype}"
            if array.shape == shape and array.dtype.kind in "iu":
                got += f", values in [{array.min()}, {array.max()}]"
            raise ValueError(
                f"actions must be an integer array of shape {shape} with values in the "
                f"action space {space} (each in [0, {high})), got {got}"
            )
        return array

    def obs_of(self, view: BatchView, prefix: str = "") -> Any:
        """The observations of a batch (``prefix="final_"``: the last ones of ended episodes),
        as the observation space has them: one array, or a dict by key."""
        return observation_of(view.arrays, self._obs_names, prefix=prefix)

    def close(self) -> None:
        self.engine.close()
