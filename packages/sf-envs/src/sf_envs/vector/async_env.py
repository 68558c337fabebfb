"""The EnvPool-style asynchronous face: ``send(actions, env_ids)`` / ``recv()``.

Contract (what sf-train relies on)::

    recv() -> (obs, reward, terminated, truncated, info)
    info["env_id"]   int32 (batch_size,)  which envs these results are
    info["_episode_summary"] bool mask; info["episode_summary"] = {"r": float32, "l": int32}, valid where masked
    info["final_obs"], info["final_info"] (+ "_final_obs"/"_final_info" masks): SAME_STEP autoreset
    info["worker_restarted"] (+ mask): present when a failed worker's envs are reported truncated

Autoreset is SAME_STEP: the obs returned with ``terminated | truncated`` is already the next
episode's first obs.

What ``recv`` returns is a copy, safe to keep (``copy=True``, the default, as Gymnasium's vector
envs do). With ``copy=False`` every returned array, ``info["env_id"]`` included, is a view into
preallocated memory, valid until the first of: the next ``recv``/``step``/``reset``, or a
``send`` to those envs (their worker writes the next step into the same memory). When the ready
groups form one consecutive range of envs (the double-buffered steady state, see
:mod:`sf_envs.vector.engine`) the views point straight into shared memory; otherwise the envs
are gathered into one preallocated batch buffer, which the next gathered ``recv`` overwrites.
:attr:`DoomAsyncVectorEnv.zero_copy_batches` / ``gathered_batches`` count which happened.
"""

from __future__ import annotations

import enum
from collections import deque
from typing import Any, ClassVar

import numpy as np
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from sf_envs.errors import OptionError
from sf_envs.vector import protocol
from sf_envs.vector.base import BatchView, VectorCore, copied, default_workers
from sf_envs.vector.engine import EngineSettings
from sf_envs.vector.units import UnitFactory

__all__ = ["DoomAsyncVectorEnv", "GroupState"]


class GroupState(enum.IntEnum):
    """Where a group is, from the caller's point of view: the values of the face's state array."""

    IDLE = 0  # results handed out (or never stepped): the caller may send to it
    PENDING = 1  # sent to its worker
    READY = 2  # done, queued for the next recv


# numpy compares and stores an IntEnum member as a Python object, several times slower than an
# int, so the per-step code uses the plain values.
_IDLE, _PENDING, _READY = (int(state) for state in GroupState)


class DoomAsyncVectorEnv:
    """``num_envs`` envs stepped asynchronously; ``recv`` returns the first ``batch_size`` ready.

    Args:
        scenario: Scenario name, e.g. ``"basic"``.
        num_envs: Number of envs.
        batch_size: Envs per ``recv``; below ``num_envs`` the pool is asynchronous. Must divide
            ``num_envs`` and be a multiple of ``num_workers`` (each worker steps its share of a
            batch as one group, so a batch is one command per worker).
        num_workers: Worker processes; one per core by default.
        copy: Return copies (the default, safe to keep). With False, views valid until the next
            ``recv`` or a ``send`` to those envs (see the module docstring): no copy, for callers
            that consume each batch before sending its actions, as sf-train does.

    The remaining arguments (``factory``, ``step_timeout_s``, ``start_timeout_s``,
    ``max_restarts``, ``pin_workers`` and the env ``**options``) are as for
    :class:`~sf_envs.vector.gym_vector.DoomVectorEnv`.

    Example:
        >>> import gymnasium as gym, numpy as np, sf_envs
        >>> pool = gym.make_vec("sf/DoomBasic-v0", num_envs=4, batch_size=2, num_workers=2)
        >>> pool.async_reset(seed=0)
        >>> obs, rew, term, trunc, info = pool.recv()
        >>> pool.send(np.zeros(2, np.int64), info["env_id"])
        >>> pool.close()
    """

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.SAME_STEP}
    autoreset_mode: ClassVar[AutoresetMode] = AutoresetMode.SAME_STEP
    render_mode: ClassVar[str | None] = None
    spec: Any = None

    def __init__(
        self,
        scenario: str,
        num_envs: int,
        batch_size: int | None = None,
        num_workers: int | None = None,
        copy: bool = True,
        factory: UnitFactory | None = None,
        step_timeout_s: float = 60.0,
        start_timeout_s: float = 120.0,
        max_restarts: int = 3,
        pin_workers: bool | None = None,
        **options: Any,
    ) -> None:
        batch_size = num_envs if batch_size is None else batch_size
        if not isinstance(batch_size, int) or not 1 <= batch_size <= num_envs:
            raise OptionError(f"batch_size must be in [1, num_envs={num_envs}], got {batch_size!r}")
        workers = default_workers(batch_size) if num_workers is None else num_workers
        per_unit = 1 if factory is None else factory.envs_per_unit
        if num_envs % batch_size or batch_size % (workers * per_unit):
            raise OptionError(
                f"batch_size={batch_size} must divide num_envs={num_envs} and be a multiple of "
                f"num_workers={workers} (x {per_unit} envs per unit); e.g. num_envs=16, "
                "batch_size=8, num_workers=2"
            )
        self._core = VectorCore(
            scenario,
            num_envs,
            workers,
            batch_size // (workers * per_unit),
            True,
            factory,
            EngineSettings(step_timeout_s, start_timeout_s, max_restarts, pin_workers=pin_workers),
            options,
        )
        self.num_envs = num_envs
        self.batch_size = batch_size
        self.copy = copy
        self.single_observation_space = self._core.single_observation_space
        self.single_action_space = self._core.single_action_space
        self.observation_space = batch_space(self.single_observation_space, batch_size)
        self.action_space = batch_space(self.single_action_space, batch_size)
        engine = self._core.engine
        self._envs_per_group = engine.envs_per_group
        self._batch_groups = batch_size // engine.envs_per_group
        #: A :class:`GroupState` value per group.
        self._state = np.full(engine.num_groups, _IDLE, np.int8)
        self._stepped = False  # True once async_reset has been called
        self._ready: deque[int] = deque()
        self._group_of_env = np.repeat(np.arange(engine.num_groups), engine.envs_per_group)
        self._views: dict[int, BatchView] = {}  # consecutive batches, by first group
        self._gather = BatchView(self._core.shared, None, batch_size)
        self._last_groups: list[int] = []
        self._last_env_id: np.ndarray | None = None
        self.zero_copy_batches = 0
        self.gathered_batches = 0

    @property
    def unwrapped(self) -> DoomAsyncVectorEnv:
        return self

    @property
    def worker_pids(self) -> list[int]:
        return self._core.engine.worker_pids

    @property
    def worker_restarts(self) -> int:
        """Workers restarted so far (each one's envs came back with ``worker_restarted``)."""
        return self._core.engine.restarts

    @property
    def variable_names(self) -> tuple[str, ...]:
        """Lower-case names of the game-variable columns (``final_info["variables"]``)."""
        return self._core.variable_names

    def async_reset(self, seed: int | list[int] | None = None) -> None:
        """Resets every env (``seed=s`` seeds env ``i`` with ``s + i``); results come by recv."""
        engine = self._core.live_engine()
        while (self._state == _PENDING).any():  # let in-flight steps land before reusing envs
            for g in engine.collect():
                self._state[g] = _IDLE
        self._ready.clear()
        self._core.write_seeds(seed, self.num_envs)
        groups = list(range(engine.num_groups))
        self._state[:] = _PENDING
        engine.submit(protocol.RESET, groups)
        self._stepped = True

    def reset(self, seed: int | list[int] | None = None) -> tuple[Any, dict[str, Any]]:
        """``async_reset`` then ``recv``: the first ``batch_size`` envs' first observations."""
        self.async_reset(seed)
        obs, _, _, _, info = self.recv()
        return obs, info

    def send(self, actions: Any, env_ids: Any = None) -> None:
        """Starts stepping ``env_ids`` (all envs when None) with ``actions`` (one per env id).

        ``env_ids`` must cover whole groups, as every ``info["env_id"]`` from :meth:`recv` does.
        """
        engine = self._core.live_engine()
        if not self._stepped:
            raise NoAsyncCallError("send() before async_reset(); call async_reset() first", "send")
        if env_ids is None:
            env_ids = np.arange(self.num_envs)
        groups = self._groups_of(env_ids)
        busy = [g for g in groups if self._state[g] != _IDLE]
        if busy:
            raise AlreadyPendingCallError(
                f"envs {self._envs_text(busy)} are already stepping or waiting to be received; "
                "recv() them before sending to them again",
                "send",
            )
        count = len(env_ids)
        actions = self._core.check_actions(actions, count)
        if groups == self._last_groups and env_ids is self._last_env_id and self._is_view():
            start = engine.group_envs[groups[0]][0]
            self._core.shared["actions"][start : start + count] = actions
        else:
            self._core.shared["actions"][env_ids] = actions
        self._state[groups] = _PENDING
        engine.submit(protocol.STEP, groups)

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Waits for the first ``batch_size`` ready envs and returns their results (copies, or
        views with ``copy=False``)."""
        engine = self._core.live_engine()
        in_flight = int((self._state != _IDLE).sum())
        if in_flight < self._batch_groups:
            raise NoAsyncCallError(
                f"recv() needs {self.batch_size} envs in flight but only "
                f"{in_flight * self._envs_per_group} are: send() actions (or async_reset()) first",
                "recv",
            )
        while len(self._ready) < self._batch_groups:
            for g in engine.collect():
                self._state[g] = _READY
                self._ready.append(g)
        groups = sorted(self._ready.popleft() for _ in range(self._batch_groups))
        self._state[groups] = _IDLE
        view = self._view_of(groups)
        self._last_groups = groups
        self._last_env_id = view.env_id
        done = view.update_done()
        arrays = view.arrays
        info: dict[str, Any] = {
            "env_id": view.env_id,
            "_episode_summary": done,
            "episode_summary": {"r": arrays["ep_return"], "l": arrays["ep_length"]},
            "variables": arrays["variables"],
            "final_obs": self._core.obs_of(view, "final_"),
            "_final_obs": done,
            "final_info": {"variables": arrays["final_variables"]},
            "_final_info": done,
        }
        restarted = arrays["restarted"]
        if restarted.any():
            info["worker_restarted"] = restarted
            info["_worker_restarted"] = restarted
        results = (
            self._core.obs_of(view),
            arrays["reward"],
            arrays["terminated"],
            arrays["truncated"],
            info,
        )
        return tuple(copied(r) for r in results) if self.copy else results

    def step(
        self, actions: Any, env_ids: Any = None
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """``send`` then ``recv``."""
        self.send(actions, env_ids)
        return self.recv()

    def close(self) -> None:
        """Stops the workers and frees shared memory; idempotent."""
        self._core.close()

    def __enter__(self) -> DoomAsyncVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"DoomAsyncVectorEnv({self._core.env_id}, num_envs={self.num_envs}, "
            f"batch_size={self.batch_size})"
        )

    def _is_view(self) -> bool:
        return self._last_env_id is not None and self._last_env_id is not self._gather.env_id

    def _view_of(self, groups: list[int]) -> BatchView:
        first = groups[0]
        if groups[-1] - first == len(groups) - 1:
            self.zero_copy_batches += 1
            view = self._views.get(first)
            if view is None:
                start = self._core.engine.group_envs[first][0]
                envs = slice(start, start + self.batch_size)
                view = self._views[first] = BatchView(self._core.shared, envs, self.batch_size)
            return view
        self.gathered_batches += 1
        group_envs = self._core.engine.group_envs
        index = np.concatenate([np.arange(*group_envs[g]) for g in groups])
        self._gather.fill(index)
        return self._gather

    def _groups_of(self, env_ids: Any) -> list[int]:
        if env_ids is self._last_env_id:
            return self._last_groups
        ids = np.asarray(env_ids)
        if ids.ndim != 1 or ids.dtype.kind not in "iu" or not len(ids):
            raise ValueError(f"env_ids must be a 1-D integer array, got {env_ids!r}")
        if ids.min() < 0 or ids.max() >= self.num_envs:
            raise ValueError(f"env_ids must be in [0, {self.num_envs}), got {env_ids!r}")
        groups = np.unique(self._group_of_env[ids])
        if len(np.unique(ids)) != len(ids) or len(ids) != len(groups) * self._envs_per_group:
            raise ValueError(
                f"env_ids must be distinct and cover whole groups of {self._envs_per_group} "
                "consecutive envs, as info['env_id'] from recv() does"
            )
        return groups.tolist()

    def _envs_text(self, groups: list[int]) -> str:
        """The envs of ``groups`` with their states, e.g. ``0..1 (pending), 4..5 (ready)``."""
        envs = self._core.engine.group_envs
        return ", ".join(
            f"{envs[g][0]}..{envs[g][1] - 1} ({GroupState(int(self._state[g])).name.lower()})"
            for g in groups
        )
