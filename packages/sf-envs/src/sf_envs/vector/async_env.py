"""The EnvPool-style asynchronous face: ``send(actions, env_ids)`` / ``recv()``.

Contract (what sf-train relies on)::

    recv() -> (obs, reward, terminated, truncated, info)
    info["env_id"]   int32 (batch_size,)  which envs these rows are
    info["_episode_summary"] bool mask; info["episode_summary"] = {"r": float32, "l": int32}, valid where masked
    info["final_obs"], info["final_info"] (+ "_final_obs"/"_final_info" masks): SAME_STEP autoreset
    info["worker_restarted"] (+ mask): present when a failed worker's envs are reported truncated

Autoreset is SAME_STEP: the obs returned with ``terminated | truncated`` is already the next
episode's first obs. Every returned array is a view into preallocated memory, valid until the
next ``recv``/``step``/``reset``: when the ready groups form one consecutive range of rows (the
double-buffered steady state, see :mod:`sf_envs.vector.engine`) the views point straight into
shared memory; otherwise the rows are gathered into one preallocated batch buffer (one copy).
:attr:`DoomAsyncVectorEnv.zero_copy_batches` / ``gathered_batches`` count which happened.
"""

from __future__ import annotations

from collections import deque
from typing import Any, ClassVar

import numpy as np
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from sf_envs.vector import protocol
from sf_envs.vector.base import BatchView, EngineClient, default_workers
from sf_envs.vector.engine import EngineSettings
from sf_envs.vector.units import UnitFactory

__all__ = ["DoomAsyncVectorEnv"]

# Group states, from the caller's point of view.
_IDLE = 0  # results handed out (or never stepped): the caller may send to it
_PENDING = 1  # sent to its worker
_READY = 2  # done, queued for the next recv


class DoomAsyncVectorEnv:
    """``num_envs`` envs stepped asynchronously; ``recv`` returns the first ``batch_size`` ready.

    Args:
        scenario: Scenario name, e.g. ``"basic"``.
        num_envs: Number of envs.
        batch_size: Envs per ``recv``; below ``num_envs`` the pool is asynchronous. Must divide
            ``num_envs`` and be a multiple of ``num_workers`` (each worker steps its share of a
            batch as one group, so a batch is one command per worker).
        num_workers: Worker processes; one per core by default.
        factory, step_timeout_s, start_timeout_s, max_restarts, pin_workers, **options: As for
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
        factory: UnitFactory | None = None,
        step_timeout_s: float = 60.0,
        start_timeout_s: float = 120.0,
        max_restarts: int = 3,
        pin_workers: bool | None = None,
        **options: Any,
    ) -> None:
        batch_size = num_envs if batch_size is None else batch_size
        if not isinstance(batch_size, int) or not 1 <= batch_size <= num_envs:
            raise ValueError(f"batch_size must be in [1, num_envs={num_envs}], got {batch_size!r}")
        workers = default_workers(batch_size) if num_workers is None else num_workers
        rpu = 1 if factory is None else factory.rows_per_unit
        if num_envs % batch_size or batch_size % (workers * rpu):
            raise ValueError(
                f"batch_size={batch_size} must divide num_envs={num_envs} and be a multiple of "
                f"num_workers={workers} (x {rpu} rows per unit); e.g. num_envs=16, batch_size=8, "
                "num_workers=2"
            )
        self._client = EngineClient(
            scenario,
            num_envs,
            workers,
            batch_size // (workers * rpu),
            True,
            factory,
            EngineSettings(step_timeout_s, start_timeout_s, max_restarts, pin_workers=pin_workers),
            options,
        )
        self.num_envs = num_envs
        self.batch_size = batch_size
        self.single_observation_space = self._client.single_observation_space
        self.single_action_space = self._client.single_action_space
        self.observation_space = batch_space(self.single_observation_space, batch_size)
        self.action_space = batch_space(self.single_action_space, batch_size)
        engine = self._client.engine
        self._group_size = engine.group_size
        self._batch_groups = batch_size // engine.group_size
        self._state = np.full(engine.num_groups, _IDLE, np.int8)
        self._stepped = False  # True once async_reset has been called
        self._ready: deque[int] = deque()
        self._group_of_row = np.repeat(np.arange(engine.num_groups), engine.group_size)
        self._views: dict[int, BatchView] = {}  # consecutive batches, by first group
        self._gather = BatchView(self._client.shared, None, batch_size)
        self._last_groups: list[int] = []
        self._last_env_id: np.ndarray | None = None
        self.zero_copy_batches = 0
        self.gathered_batches = 0

    @property
    def unwrapped(self) -> DoomAsyncVectorEnv:
        return self

    @property
    def worker_pids(self) -> list[int]:
        return self._client.engine.worker_pids

    @property
    def variable_names(self) -> tuple[str, ...]:
        """Lower-case names of the game-variable columns (``final_info["variables"]``)."""
        return self._client.variable_names

    def async_reset(self, seed: int | list[int] | None = None) -> None:
        """Resets every env (``seed=s`` seeds env ``i`` with ``s + i``); results come by recv."""
        engine = self._client.live_engine()
        while (self._state == _PENDING).any():  # let in-flight steps land before reusing rows
            for g in engine.collect():
                self._state[g] = _IDLE
        self._ready.clear()
        self._client.write_seeds(seed, self.num_envs)
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
        engine = self._client.live_engine()
        if not self._stepped:
            raise NoAsyncCallError("send() before async_reset(); call async_reset() first", "send")
        if env_ids is None:
            env_ids = np.arange(self.num_envs)
        groups = self._groups_of(env_ids)
        busy = [g for g in groups if self._state[g] != _IDLE]
        if busy:
            raise AlreadyPendingCallError(
                f"envs {self._rows_text(busy)} are already stepping or waiting to be received; "
                "recv() them before sending to them again",
                "send",
            )
        actions = self._client.check_actions(actions, len(env_ids))
        if groups == self._last_groups and env_ids is self._last_env_id and self._is_view():
            start = engine.group_rows[groups[0]][0]
            self._client.shared["actions"][start : start + len(env_ids)] = actions
        else:
            self._client.shared["actions"][env_ids] = actions
        self._state[groups] = _PENDING
        engine.submit(protocol.STEP, groups)

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Waits for the first ``batch_size`` ready envs and returns views of their results."""
        engine = self._client.live_engine()
        in_flight = int((self._state != _IDLE).sum())
        if in_flight < self._batch_groups:
            raise NoAsyncCallError(
                f"recv() needs {self.batch_size} envs in flight but only "
                f"{in_flight * self._group_size} are: send() actions (or async_reset()) first",
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
            "final_obs": self._client.obs_of(view, "final_"),
            "_final_obs": done,
            "final_info": {"variables": arrays["final_variables"]},
            "_final_info": done,
        }
        restarted = arrays["restarted"]
        if restarted.any():
            info["worker_restarted"] = restarted
            info["_worker_restarted"] = restarted
        obs = self._client.obs_of(view)
        return obs, arrays["reward"], arrays["terminated"], arrays["truncated"], info

    def step(
        self, actions: Any, env_ids: Any = None
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """``send`` then ``recv``."""
        self.send(actions, env_ids)
        return self.recv()

    def close(self) -> None:
        """Stops the workers and frees shared memory; idempotent."""
        self._client.close()

    def __enter__(self) -> DoomAsyncVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"DoomAsyncVectorEnv({self._client.env_id}, num_envs={self.num_envs}, "
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
                start = self._client.engine.group_rows[first][0]
                rows = slice(start, start + self.batch_size)
                view = self._views[first] = BatchView(self._client.shared, rows, self.batch_size)
            return view
        self.gathered_batches += 1
        rows = self._client.engine.group_rows
        index = np.concatenate([np.arange(*rows[g]) for g in groups])
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
        groups = np.unique(self._group_of_row[ids])
        if len(np.unique(ids)) != len(ids) or len(ids) != len(groups) * self._group_size:
            raise ValueError(
                f"env_ids must be distinct and cover whole groups of {self._group_size} "
                "consecutive envs, as info['env_id'] from recv() does"
            )
        return groups.tolist()

    def _rows_text(self, groups: list[int]) -> str:
        rows = self._client.engine.group_rows
        return ", ".join(f"{rows[g][0]}..{rows[g][1] - 1}" for g in groups)
