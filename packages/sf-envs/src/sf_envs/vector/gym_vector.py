"""The ``gymnasium.vector.VectorEnv`` face of the engine (synchronous: every env, every step)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from sf_envs.errors import OptionError
from sf_envs.vector import protocol
from sf_envs.vector.base import BatchView, VectorCore, copied
from sf_envs.vector.engine import EngineSettings
from sf_envs.vector.units import UnitFactory

__all__ = ["DoomVectorEnv"]


class DoomVectorEnv(VectorEnv):
    """``num_envs`` copies of a scenario stepped by worker processes over shared memory.

    Args:
        scenario: Scenario name, e.g. ``"basic"``.
        num_envs: Number of envs.
        num_workers: Worker processes; one per core by default.
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (gymnasium's default: the step after an
            episode ends resets and returns the first obs with reward 0) or ``SAME_STEP`` (the
            step that ends an episode already returns the next episode's first obs; the last
            obs is in ``info["final_obs"]`` and its info in ``info["final_info"]``).
        copy: Return copies (the default, safe to keep). With False, obs and info arrays are
            views into shared memory, overwritten by the next call: faster for callers that
            consume them at once.
        factory: Builds the units in the workers instead of single-player games (matches); the
            spaces and options are then its own and ``scenario`` is not used. See
            :class:`~sf_envs.vector.units.UnitFactory`.
        step_timeout_s: A worker silent this long is declared hung, killed and restarted.
        start_timeout_s: Limit for a worker to start its engines.
        max_restarts: Failures per worker tolerated within 5 minutes before raising.
        pin_workers: Pin each worker and its engines to one CPU; None pins when the workers
            deal evenly to the CPUs (see :class:`~sf_envs.vector.engine.EngineSettings`).
        **options: :class:`~sf_envs.options.DoomOptions` fields (``frame_skip``, ``obs_size``...).

    ``info`` holds every game variable (lower-case names, float64) each step, with ``_name``
    masks; when an episode ends, ``info["episode_summary"] = {"r", "l", "_r", "_l"}`` and
    ``info["_episode_summary"]``; a worker restart reports its envs as truncated with
    ``info["worker_restarted"]``.

    Example:
        >>> import gymnasium as gym, sf_envs
        >>> envs = gym.make_vec("sf/DoomBasic-v0", num_envs=4, num_workers=2)
        >>> obs, info = envs.reset(seed=0)
        >>> obs.shape
        (4, 3, 72, 128)
        >>> envs.close()
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP}  # noqa: RUF012  (as gymnasium declares it)

    def __init__(
        self,
        scenario: str,
        num_envs: int,
        num_workers: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        factory: UnitFactory | None = None,
        step_timeout_s: float = 60.0,
        start_timeout_s: float = 120.0,
        max_restarts: int = 3,
        pin_workers: bool | None = None,
        **options: Any,
    ) -> None:
        mode = AutoresetMode(autoreset_mode)
        if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise OptionError(f"autoreset_mode must be NEXT_STEP or SAME_STEP, got {mode}")
        self._core = VectorCore(
            scenario,
            num_envs,
            num_workers,
            None,
            mode is AutoresetMode.SAME_STEP,
            factory,
            EngineSettings(step_timeout_s, start_timeout_s, max_restarts, pin_workers=pin_workers),
            options,
        )
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self.autoreset_mode = mode  # where Gymnasium's own vector envs (and TorchRL) read it
        self.num_envs = num_envs
        self.copy = copy
        self.single_observation_space = self._core.single_observation_space
        self.single_action_space = self._core.single_action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._view = BatchView(self._core.shared, slice(0, num_envs), num_envs)
        self._all = list(range(self._core.engine.num_groups))
        self._true = np.ones(num_envs, bool)
        self._needs_reset = True

    @property
    def worker_pids(self) -> list[int]:
        return self._core.engine.worker_pids

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Resets every env; ``seed=s`` seeds env ``i`` with ``s + i``."""
        if options:
            raise ValueError(f"reset options are not supported, got {options!r}")
        engine = self._core.live_engine()
        self._core.write_seeds(seed, self.num_envs)
        self._run(engine, protocol.RESET)
        self._needs_reset = False
        return self._output(self._core.obs_of(self._view)), self._infos(done=False)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        engine = self._core.live_engine()
        if self._needs_reset:
            raise RuntimeError("step() called before reset(); call reset() first")
        self._core.shared["actions"][:] = self._core.check_actions(actions, self.num_envs)
        self._run(engine, protocol.STEP)
        view = self._view
        done = view.update_done()
        return (
            self._output(self._core.obs_of(view)),
            self._output(view.arrays["reward"]),
            self._output(view.arrays["terminated"]),
            self._output(view.arrays["truncated"]),
            self._infos(done=bool(done.any())),
        )

    def close_extras(self, **kwargs: Any) -> None:
        """Stops the workers and frees shared memory (``close()`` makes it idempotent)."""
        self._core.close()

    def __enter__(self) -> DoomVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, engine: Any, opcode: bytes) -> None:
        engine.submit(opcode, self._all)
        remaining = len(self._all)
        while remaining:
            remaining -= len(engine.collect())

    def _infos(self, done: bool) -> dict[str, Any]:
        arrays = self._view.arrays
        info: dict[str, Any] = {}
        variables = arrays["variables"]
        for j, name in enumerate(self._core.variable_names):
            info[name] = variables[:, j]
            info["_" + name] = self._true
        if done:
            mask = self._view.done
            info["episode_summary"] = {
                "r": arrays["ep_return"],
                "l": arrays["ep_length"],
                "_r": mask,
                "_l": mask,
            }
            info["_episode_summary"] = mask
            restarted = arrays["restarted"]
            if restarted.any():
                info["worker_restarted"] = restarted
                info["_worker_restarted"] = restarted
            if "final_variables" in arrays:  # SAME_STEP
                info["final_obs"] = self._core.obs_of(self._view, "final_")
                info["_final_obs"] = mask
                final_vars = arrays["final_variables"]
                final_info: dict[str, Any] = {
                    name: final_vars[:, j] for j, name in enumerate(self._core.variable_names)
                }
                final_info.update({"_" + name: mask for name in self._core.variable_names})
                final_info["episode_summary"] = info["episode_summary"]
                final_info["_episode_summary"] = mask
                info["final_info"] = final_info
                info["_final_info"] = mask
        return self._output(info) if self.copy else info

    def _output(self, value: Any) -> Any:
        return copied(value) if self.copy else value
