"""Drives a vector env through its async ``send``/``recv`` face and fills trajectory batches.

Every ``recv()`` gives a batch of ready envs; one batched forward pass picks all their actions
and ``send()`` returns them at once, so with ``batch_size < num_envs`` half of the envs step
while the policy thinks about the other half.

Trajectories are assigned to buffer columns first-come first-served: an env that finishes its
``T`` steps takes the next free column, in the oldest batch that still has one. A batch is
handed out when all of its ``B`` columns are complete, so envs of uneven speed never stall
each other and every batch holds exactly ``B`` whole trajectories.

Faults (a vector worker killed or hung, an engine lost under it) are handled by dropping, never
by patching, the trajectories they touch:

- The engine restarts a failed worker and reports its envs' next results with
  ``info["worker_restarted"]``: reward 0, ``truncated``, a new episode's first observation, and
  a ``final_obs`` that no game produced. Those envs' unfinished trajectories are dropped (their
  columns become *holes* that the next env needing a column fills from step 0), they start a new
  trajectory at the new observation with their recurrent state reset, and the cut episode counts
  neither in the returns nor as a time limit to bootstrap.
- Until then, and while a replacement starts (a second or two), the failed worker's envs are
  silent, and the oldest batch waits for their columns while the learner has nothing to train
  on. The engine declares a hung worker dead only after its ``step_timeout_s`` (a minute by
  default, so that a slow but healthy game is not killed), so waiting is no option: an env not
  heard from for :data:`STUCK_ROUNDS` rounds of ``recv()`` is *stuck*, and the next env that
  needs a column takes over the column it writes in the oldest batch (the stuck env's
  trajectory is dropped, the column rewritten from step 0), so that batch completes ``T``
  steps later. Healthy envs answer every round, so they never take columns from each other;
  in a run without faults no env is stuck and nothing is dropped.
- A stuck env that answers again (or its replacement) takes the next free column. If the
  healthy envs have filled every buffer meanwhile, an env without a column keeps acting (its
  recurrent state stays in step) but records nothing until a column is free.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from gymnasium import spaces

from sf_train.acting import ObsBatch, PolicyRunner
from sf_train.buffer import TrajectoryBuffer
from sf_train.model import ActorCritic

__all__ = ["AsyncVectorEnv", "PolicySource", "RestartingEnv", "Rollout", "Sampler", "StatefulEnv"]


class AsyncVectorEnv(Protocol):
    """The EnvPool-style face of the sf-envs engine that the sampler needs."""

    num_envs: int
    batch_size: int
    single_observation_space: spaces.Space
    single_action_space: spaces.Space

    def async_reset(self, seed: int | None = None) -> None: ...

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]: ...

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None: ...


@runtime_checkable
class StatefulEnv(Protocol):
    """A vector env that can save and restore everything that decides its future steps; the
    trainer checkpoints it in synchronous mode, so a resumed run continues bit for bit."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


@runtime_checkable
class RestartingEnv(Protocol):
    """A vector env that replaces failed workers and counts it (the sf-envs engine does); the
    trainer logs each restart and keeps the count in TensorBoard."""

    @property
    def worker_restarts(self) -> int: ...


STUCK_ROUNDS = 8
"""An env not heard from for this many rounds of ``recv()`` (a round: ``num_envs / batch_size``
calls, in which every healthy env answers once) counts as stuck, and the oldest batch's column
it writes goes to another env. Rounds, not seconds, so that a pause of the whole sampler (a
checkpoint's evaluation) makes no env stuck; 8 leaves room for healthy envs of uneven speed,
and at thousands of steps per second it is still a fraction of a second."""

PolicySource = Callable[[], AbstractContextManager[int]]
"""Weights that another thread may update: calling it gives a context manager that keeps the
sampler's model fixed while it is held and yields the version of those weights."""


@dataclass
class Rollout:
    """A complete batch and what happened while it was sampled.

    Attributes:
        buffer: The ``[T, B]`` trajectories; give it back with :meth:`Sampler.release`.
        episode_returns: Returns of the episodes that ended since the previous rollout.
        episode_lengths: Their lengths in agent steps.
        episode_env_ids: The env each of them ended in.
        env_steps: Steps of the learning agents (every env that is not an opponent's) since
            the previous rollout.
        episode_variables: The envs' game variables at each episode end, ``[episodes, V]``
            (from ``info["final_info"]["variables"]``); ``None`` when the env reports none.
        dropped_steps: Learning-agent steps discarded since the previous rollout because of a
            fault (see the module docstring); ``env_steps`` does not count them.
    """

    buffer: TrajectoryBuffer
    episode_returns: np.ndarray
    episode_lengths: np.ndarray
    episode_env_ids: np.ndarray
    env_steps: int
    episode_variables: np.ndarray | None = None
    dropped_steps: int = 0


@dataclass
class _Slot:
    """A batch being filled: how many columns are handed to envs and how many are complete.

    Attributes:
        owners: The env that writes or wrote each column (-1: none yet, or dropped).
        writing: Whether each column's trajectory is being written (assigned, not complete).
        holes: Columns (below ``assigned``) whose trajectories were dropped, to hand out again.
    """

    buffer: TrajectoryBuffer
    owners: np.ndarray
    writing: np.ndarray
    assigned: int = 0
    complete: int = 0
    holes: list[int] = field(default_factory=list)


def _copy(obs: Any) -> Any:
    """A copy of recv() observations, which are only valid until the next env call."""
    if isinstance(obs, dict):
        return {k: np.array(v) for k, v in obs.items()}
    return np.array(obs)


def _rows(obs: Any, rows: np.ndarray) -> ObsBatch:
    """The recv() rows ``rows`` (copies: recv() arrays are views)."""
    if isinstance(obs, dict):
        return {k: v[rows] for k, v in obs.items()}
    return obs[rows]


def _held(policy: int | PolicySource) -> AbstractContextManager[int]:
    """Holds the weights fixed while they act and yields their version."""
    return nullcontext(policy) if isinstance(policy, int) else policy()


class Sampler:
    """Fills :class:`TrajectoryBuffer` batches from an async vector env with batched inference.

    Args:
        venv: The vector env (async face); the sampler calls ``async_reset`` on :meth:`start`.
        model: The policy; it acts through a :class:`~sf_train.acting.PolicyRunner`.
        T: Trajectory length.
        B: Trajectories per batch; the number of learning envs (``venv.num_envs`` without
            opponents) is the natural choice.
        device: Device of the model.
        num_buffers: Batches in the ring; 3 lets envs run one batch ahead while the learner
            holds another.
        generator: Random generator for action sampling (on ``device``), for reproducibility.
        bootstrap_truncations: Store the value of the final observation where a time limit
            truncated an episode (``TrajectoryBuffer.truncation_values``); the env must report
            it in ``info["final_obs"]``, as the sf-envs engine does.
        opponent_envs: Envs (rows) played by a frozen opponent instead of ``model``, e.g. the
            second agent of every duel; nothing of theirs is recorded. Set the opponent's weights
            with :meth:`set_opponent` before the first :meth:`collect`.

    Attributes:
        runner: Acts for the learning envs with ``model``; holds their recurrent states.
        opponent: Acts for ``opponent_envs`` with a frozen copy of ``model``; None without.
    """

    def __init__(
        self,
        venv: AsyncVectorEnv,
        model: ActorCritic,
        T: int,
        B: int,
        device: torch.device,
        num_buffers: int = 3,
        generator: torch.Generator | None = None,
        bootstrap_truncations: bool = False,
        opponent_envs: np.ndarray | None = None,
    ) -> None:
        self.venv = venv
        self.bootstrap_truncations = bootstrap_truncations
        n = venv.num_envs
        self.runner = PolicyRunner(model, n, device, generator)
        self._is_opponent = np.zeros(n, dtype=bool)
        self.opponent: PolicyRunner | None = None
        if opponent_envs is not None and len(opponent_envs):
            self._is_opponent[np.asarray(opponent_envs)] = True
            frozen = copy.deepcopy(model).eval().requires_grad_(False)
            self.opponent = PolicyRunner(frozen, n, device, generator)
        self.T, self.B = T, B
        self._free = deque(
            TrajectoryBuffer(
                T, B, venv.single_observation_space, model.action_dist.action_shape, model.rnn_size
            )
            for _ in range(num_buffers)
        )
        self._filling: list[_Slot] = []
        # Where each env writes: its slot (by object), column and step; None before its start
        # and while it has no column (after a fault).
        self._slot: list[_Slot | None] = [None] * n
        self._col = np.zeros(n, dtype=np.int64)
        self._t = np.zeros(n, dtype=np.int64)
        self._parked: tuple[Any, np.ndarray] | None = None
        self._returns: list[np.ndarray] = []
        self._lengths: list[np.ndarray] = []
        self._episode_envs: list[np.ndarray] = []
        self._variables: list[np.ndarray] = []
        self._steps = 0
        self._dropped = 0
        # The recv() count when each env last answered, to tell stuck envs (module docstring).
        self._recvs = 0
        self._heard = np.zeros(n, dtype=np.int64)
        self._stuck_after = STUCK_ROUNDS * -(-n // venv.batch_size)

    def start(self, seed: int | None = None) -> None:
        """Resets all envs (starts them stepping)."""
        self.venv.async_reset(seed=seed)

    def release(self, buffer: TrajectoryBuffer) -> None:
        """Returns a batch handed out by :meth:`collect`, once the learner is done with it."""
        self._free.append(buffer)

    def set_opponent(self, state_dict: dict[str, Any]) -> None:
        """Loads weights (a state dict of ``model``) into the opponent, between collects. Its
        envs forget their recurrent memory, which belonged to the previous opponent."""
        if self.opponent is None:
            raise RuntimeError("set_opponent() on a sampler without opponent_envs")
        self.opponent.model.load_state_dict(state_dict)
        self.opponent.reset(np.flatnonzero(self._is_opponent))

    def _assign(self, env_id: int) -> None:
        """Gives ``env_id`` a column to write its next trajectory into, or none (it records
        nothing for now) when every batch is taken by envs that answer."""
        found = self._free_column()
        if found is None:
            self._slot[env_id] = None
            return
        slot, col = found
        self._slot[env_id] = slot
        self._col[env_id] = col
        self._t[env_id] = 0
        slot.owners[col] = env_id
        slot.writing[col] = True

    def _free_column(self) -> tuple[_Slot, int] | None:
        """In order: a hole; a stuck env's column in the oldest batch (which the learner is
        waiting for); the next column of the oldest batch that has one; a fresh buffer."""
        for slot in self._filling:
            if slot.holes:
                return slot, slot.holes.pop()
        if self._filling:
            stuck = self._stuck_column(self._filling[0])
            if stuck is not None:
                return stuck
        for slot in self._filling:
            if slot.assigned < self.B:
                slot.assigned += 1
                return slot, slot.assigned - 1
        if self._free:
            slot = _Slot(
                self._free.popleft(), np.full(self.B, -1, np.int64), np.zeros(self.B, bool)
            )
            self._filling.append(slot)
            slot.assigned = 1
            return slot, 0
        if not self._filling:
            raise RuntimeError(
                "every trajectory buffer is in use: release() each rollout's buffer after "
                "training on it, or raise num_buffers"
            )
        return None

    def _stuck_column(self, slot: _Slot) -> tuple[_Slot, int] | None:
        """Frees the column of ``slot`` whose env has been silent longest, if that env is stuck
        (silent for more than STUCK_ROUNDS rounds of recv() calls); drops its trajectory."""
        cols = np.flatnonzero(slot.writing)
        if not len(cols):
            return None
        silent = self._recvs - self._heard[slot.owners[cols]]
        i = int(np.argmax(silent))
        if silent[i] <= self._stuck_after:
            return None
        self._drop(slot.owners[cols[i : i + 1]])
        return slot, slot.holes.pop()

    def _drop(self, env_ids: np.ndarray) -> None:
        """Discards the unfinished trajectories of ``env_ids`` (their columns become holes);
        they record nothing until :meth:`_assign` gives them a column again."""
        for e in env_ids.tolist():
            slot = self._slot[e]
            if slot is None:
                continue
            col = int(self._col[e])
            slot.holes.append(col)
            slot.owners[col] = -1
            slot.writing[col] = False
            # Steps 0..t hold actions (step t's is in flight or was lost), all counted.
            lost = int(self._t[e]) + 1
            self._steps -= lost
            self._dropped += lost
            self._slot[e] = None

    def _by_slot(self, env_ids: np.ndarray, rows: np.ndarray) -> list[tuple[_Slot, np.ndarray]]:
        """Groups recv() rows by the batch their env writes into (vectorised writes per group);
        rows of envs without a column are left out."""
        groups: dict[int, tuple[_Slot, list[int]]] = {}
        for r in rows:
            slot = self._slot[env_ids[r]]
            if slot is not None:
                groups.setdefault(id(slot), (slot, []))[1].append(int(r))
        return [(slot, np.array(rs)) for slot, rs in groups.values()]

    def _record(
        self,
        obs: Any,
        reward: np.ndarray,
        done: np.ndarray,
        truncation_values: np.ndarray,
        env_ids: np.ndarray,
        learning: np.ndarray,
    ) -> None:
        """Stores the results of the envs' previous actions and their new observations
        (``learning``: which recv() rows are not the opponent's)."""
        started = np.array([self._slot[e] is not None for e in env_ids], dtype=bool)
        for slot, rows in self._by_slot(env_ids, np.flatnonzero(started)):
            e = env_ids[rows]
            t, c = torch.from_numpy(self._t[e]), torch.from_numpy(self._col[e])
            slot.buffer.rewards[t, c] = torch.from_numpy(np.asarray(reward, np.float32)[rows])
            slot.buffer.dones[t, c] = torch.from_numpy(done[rows])
            slot.buffer.truncation_values[t, c] = torch.from_numpy(truncation_values[rows])
            self._t[e] += 1
            full = rows[self._t[e] == self.T]
            if len(full):
                slot.complete += len(full)
                slot.writing[self._col[env_ids[full]]] = False
                _write_obs(slot.buffer, self._t[env_ids[full]], self._col[env_ids[full]], obs, full)
        for e in env_ids[learning & (~started | (self._t[env_ids] == self.T))]:
            self._assign(int(e))
        if done.any():
            ended = env_ids[done]
            self.runner.reset(ended)
            if self.opponent is not None:
                self.opponent.reset(ended)
        self._write_current(obs, env_ids, np.flatnonzero(learning))

    def _write_current(self, obs: Any, env_ids: np.ndarray, rows: np.ndarray) -> None:
        """Writes the current observations of recv() rows ``rows`` (and, at a trajectory
        start, the recurrent state)."""
        for slot, sub in self._by_slot(env_ids, rows):
            e = env_ids[sub]
            _write_obs(slot.buffer, self._t[e], self._col[e], obs, sub)
            first = e[self._t[e] == 0]
            if len(first):
                cols = torch.from_numpy(self._col[first])
                memory = self.runner.rnn_state[torch.from_numpy(first)]
                slot.buffer.rnn_state[cols] = memory.cpu()

    def _truncation_values(
        self,
        terminated: np.ndarray,
        truncated: np.ndarray,
        info: dict[str, Any],
        env_ids: np.ndarray,
        real: np.ndarray,
        policy: int | PolicySource,
    ) -> np.ndarray:
        """Per recv() row: the value of the final observation where a time limit (and not a
        termination) ended the episode, else 0; only ``real`` rows (the learning agents' game
        results) can be cut by a time limit. Called before the ended envs' recurrent states
        are zeroed, so each final observation is seen with the memory of its own episode."""
        values = np.zeros(len(env_ids), dtype=np.float32)
        cut = np.flatnonzero(np.asarray(truncated) & ~np.asarray(terminated) & real)
        if not self.bootstrap_truncations or not len(cut):
            return values
        if "final_obs" not in info:
            raise ValueError(
                "the env reported time-limit truncations without info['final_obs'], which "
                "value bootstrapping needs: use an env that autoresets SAME_STEP with final_obs "
                "(as the sf-envs engine does) or turn value_bootstrap off"
            )
        with _held(policy):
            cut_values = self.runner.values(_rows(info["final_obs"], cut), env_ids[cut])
        values[cut] = cut_values.cpu().numpy()
        return values

    @torch.no_grad()
    def _act(self, obs: Any, env_ids: np.ndarray, policy: int | PolicySource) -> None:
        """Chooses every row's action (the opponent's rows by the opponent), records the
        learning rows' choices and sends all of them in one call."""
        actions = torch.zeros(
            (len(env_ids), *self.runner.model.action_dist.action_shape), dtype=torch.int64
        )
        learning = ~self._is_opponent[env_ids]
        opponent_rows = np.flatnonzero(~learning)
        if self.opponent is not None and len(opponent_rows):
            sampled = self.opponent.act(_rows(obs, opponent_rows), env_ids[opponent_rows])
            actions[torch.from_numpy(opponent_rows)] = sampled.cpu()
        rows = np.flatnonzero(learning)
        if len(rows):
            with _held(policy) as policy_version:
                decision = self.runner.decide(_rows(obs, rows), env_ids[rows])
            sampled, log_probs, values = (x.cpu() for x in decision)
            actions[torch.from_numpy(rows)] = sampled
            recorded = 0
            for slot, sub in self._by_slot(env_ids, rows):
                e = env_ids[sub]
                t, c = torch.from_numpy(self._t[e]), torch.from_numpy(self._col[e])
                # Positions of these recv() rows among the learning rows just computed.
                r = torch.from_numpy(np.searchsorted(rows, sub))
                slot.buffer.actions[t, c] = sampled[r]
                slot.buffer.log_probs[t, c] = log_probs[r]
                slot.buffer.values[t, c] = values[r]
                slot.buffer.policy_versions[t, c] = policy_version
                recorded += len(sub)
            self._steps += recorded
            self._dropped += len(rows) - recorded
        self.venv.send(actions.numpy(), env_ids)

    def collect(self, policy_version: int | PolicySource) -> Rollout:
        """Steps the envs until the oldest batch is complete and returns it.

        The envs of the ``recv()`` that completes the batch are left waiting (their
        observations are kept) and act at the start of the next call, with the weights the
        learner has produced in between: with ``batch_size == num_envs`` this makes sampling
        synchronous with zero policy lag.

        Args:
            policy_version: Version of the model's weights, stored with every step; or, when a learner
                updates the weights concurrently, a :data:`PolicySource` asked before every
                forward pass.
        """
        if self._parked is not None:
            self._act(*self._parked, policy_version)
            self._parked = None
        while True:
            obs, reward, terminated, truncated, info = self.venv.recv()
            env_ids = np.asarray(info["env_id"]).astype(np.int64)
            self._recvs += 1
            self._heard[env_ids] = self._recvs
            done = np.logical_or(terminated, truncated)
            learning = ~self._is_opponent[env_ids]
            # Rows whose results a game produced: not those of a failed worker's replacement,
            # whose episode ends are neither real returns nor time limits (see the module doc).
            real = learning
            if "worker_restarted" in info:
                restarted = np.asarray(info["worker_restarted"], dtype=bool)
                self._drop(env_ids[restarted & learning])
                real = learning & ~restarted
            mask = (
                np.asarray(info.get("_episode_summary", np.zeros(len(env_ids), dtype=bool))) & real
            )
            if mask.any():
                self._returns.append(
                    np.asarray(info["episode_summary"]["r"])[mask].astype(np.float64)
                )
                self._lengths.append(
                    np.asarray(info["episode_summary"]["l"])[mask].astype(np.int64)
                )
                self._episode_envs.append(env_ids[mask])
                variables = info.get("final_info", {}).get("variables")
                if variables is not None:
                    self._variables.append(np.asarray(variables)[mask].astype(np.float64))
            cut_values = self._truncation_values(
                terminated, truncated, info, env_ids, real, policy_version
            )
            self._record(obs, reward, done, cut_values, env_ids, learning)
            if self._filling and self._filling[0].complete == self.B:
                self._parked = (_copy(obs), env_ids.copy())
                break
            self._act(obs, env_ids, policy_version)
        slot = self._filling.pop(0)
        rollout = Rollout(
            slot.buffer,
            np.concatenate(self._returns) if self._returns else np.zeros(0),
            np.concatenate(self._lengths) if self._lengths else np.zeros(0, dtype=np.int64),
            np.concatenate(self._episode_envs) if self._episode_envs else np.zeros(0, np.int64),
            self._steps,
            np.concatenate(self._variables) if self._variables else None,
            self._dropped,
        )
        self._returns, self._lengths, self._episode_envs = [], [], []
        self._variables, self._steps, self._dropped = [], 0, 0
        return rollout

    def state_dict(self) -> dict[str, Any]:
        """What a fresh sampler needs to continue exactly where this one stands.

        Only defined between two :meth:`collect` calls of synchronous sampling
        (``batch_size == num_envs``), when every env waits for its next action and nothing
        is in flight; the env's own state must be saved separately.

        Raises:
            RuntimeError: If some envs are still stepping (asynchronous sampling).
        """
        if self._parked is None or len(self._parked[1]) != self.venv.num_envs:
            raise RuntimeError(
                "the sampler can only be saved between collect() calls of synchronous sampling "
                "(batch_size == num_envs); asynchronous runs resume from fresh episodes"
            )
        obs, env_ids = self._parked
        rnn_state = self.runner.rnn_state.cpu().clone()
        return {"rnn_state": rnn_state, "obs": _copy(obs), "env_ids": env_ids}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores :meth:`state_dict` into a sampler that has not started; call it instead of
        :meth:`start`, after restoring the env's state."""
        if any(s is not None for s in self._slot):
            raise RuntimeError("load_state_dict() needs a fresh sampler: do not start() it first")
        obs, env_ids = state["obs"], np.asarray(state["env_ids"], dtype=np.int64)
        self.runner.rnn_state.copy_(torch.as_tensor(state["rnn_state"]))
        for e in env_ids[~self._is_opponent[env_ids]]:
            self._assign(int(e))
        self._write_current(obs, env_ids, np.flatnonzero(~self._is_opponent[env_ids]))
        self._parked = (obs, env_ids)


def _write_obs(
    buf: TrajectoryBuffer, t: np.ndarray, c: np.ndarray, obs: Any, rows: np.ndarray
) -> None:
    """Copies recv() rows ``rows`` into the buffer cells ``(t, c)``."""
    tt, cc = torch.from_numpy(t), torch.from_numpy(c)
    if isinstance(obs, dict):
        for k, v in obs.items():
            buf.obs[k][tt, cc] = torch.from_numpy(np.ascontiguousarray(v[rows]))
    else:
        buf.obs[tt, cc] = torch.from_numpy(np.ascontiguousarray(obs[rows]))
