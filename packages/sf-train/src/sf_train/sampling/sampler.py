"""Drives a vector env through its async ``send``/``recv`` face and fills trajectory batches.

Every ``recv()`` gives a batch of ready envs; one batched forward pass picks all their actions
and ``send()`` returns them at once, so with ``batch_size < num_envs`` half of the envs step
while the policy thinks about the other half.

Each learning env writes its trajectory into a column of one of its policy's batches, and a
batch is handed out when all of its ``B`` columns hold whole trajectories;
:class:`~sf_train.sampling.columns.Columns` decides which column and step each env writes (first-come
first-served, so that envs of uneven speed never stall each other) and how faults and policy
changes free columns.

Faults (a vector worker killed or hung, an engine lost under it) are handled by dropping, never
by patching, the trajectories they touch. The engine restarts a failed worker and reports its
envs' next results with ``info["worker_restarted"]``: reward 0, ``truncated``, a new episode's
first observation, and a ``final_obs`` that no game produced. Those envs' unfinished
trajectories are dropped, they start a new trajectory at the new observation with their
recurrent state reset, and the cut episode counts neither in the returns nor as a time limit to
bootstrap. Until then the failed worker's envs are silent, and their columns go to other envs
once they count as stuck (:data:`~sf_train.sampling.columns.STUCK_ROUNDS`). An env without a column
keeps acting (its recurrent state stays in step) but records nothing.

Several policies (a population) share one vector env. Each policy has its own runner (recurrent
states), its own ring of batches and its own trajectories; every row of the vector env is
acted by one policy at a time, and a game's rows are given their policies by a
:data:`~sf_train.sampling.protocols.Pairing` at each episode start. A row that changes policy closes its column at the
episode's end, padding the rest (see :mod:`sf_train.sampling.columns`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from typing import Any, cast

import numpy as np
import torch

from sf_train.model.network import ActorCritic
from sf_train.sampling.acting import ObsBatch, PolicyRunner
from sf_train.sampling.batch import CollectResult, Episodes, TrajectoryBatch
from sf_train.sampling.columns import Columns
from sf_train.sampling.lives import LifeLosses
from sf_train.sampling.protocols import AsyncVectorEnv, Pairing, PolicySource, UniformPairing
from sf_train.sampling.shaping import Shaping
from sf_train.sampling.stacked import StackedRunner

__all__ = ["Sampler"]


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
    """Fills trajectory batches (:class:`~sf_train.sampling.batch.TrajectoryBatch`) from an
    async vector env with batched inference; the one writer of their tensors.

    Args:
        venv: The vector env (async face); the sampler calls ``async_reset`` on :meth:`start`.
        model: The policy, or the policies of a population (one model each); each acts
            through its own :class:`~sf_train.sampling.acting.PolicyRunner`.
        T: Trajectory length.
        B: Trajectories per batch (of each policy); the number of learning envs (``venv.num_envs``
            without opponents) divided by the number of policies is the natural choice.
        device: Device of the models.
        num_batches: Trajectory batches in each policy's ring; 3 lets envs run one batch ahead while the
            learner holds another.
        generator: Random generator for action sampling (on ``device``), for reproducibility.
        bootstrap_truncations: Store the value of the final observation where a time limit
            truncated an episode (``TrajectoryBatch.truncation_values``); the env must report
            it in ``info["final_obs"]``, as the sf-envs engine does.
        opponent_envs: Envs (rows) played by a frozen opponent instead of ``model``, e.g. the
            second agent of every duel; nothing of theirs is recorded. Set the opponent's weights
            with :meth:`set_opponent` before the first :meth:`collect`. One policy only.
        pairing: With several policies: who plays each game's next episode (default: a
            :class:`~sf_train.sampling.protocols.UniformPairing`); replace it with :meth:`set_pairing`.
        agents_per_game: Rows of one game (consecutive env ids), which a pairing fills together.
        batches: Each policy's ring of trajectory batches to fill, in place of ``num_batches``
            new ones (a sampler process fills batches in shared memory that its trainer
            allocated).

    Attributes:
        runners: Act for the learning envs, one per policy; each holds every env's recurrent
            state for its policy.
        stacked: With several policies, acts for all of them in one batched pass (over the
            runners' models and memories); None with one.
        opponent: Acts for ``opponent_envs`` with a frozen copy of ``model``; None without.
        columns: Which batch, column and step each learning env writes into.
    """

    def __init__(
        self,
        venv: AsyncVectorEnv,
        model: ActorCritic | Sequence[ActorCritic],
        T: int,
        B: int,
        device: torch.device,
        num_batches: int = 3,
        generator: torch.Generator | None = None,
        bootstrap_truncations: bool = False,
        opponent_envs: np.ndarray | None = None,
        pairing: Pairing | None = None,
        agents_per_game: int = 1,
        batches: Sequence[Sequence[TrajectoryBatch]] | None = None,
        life_loss_ends: bool = False,
    ) -> None:
        models = [model] if isinstance(model, ActorCritic) else list(model)
        n = venv.num_envs
        if n % agents_per_game:
            raise ValueError(f"num_envs={n} is not a multiple of agents_per_game={agents_per_game}")
        self.venv = venv
        self.bootstrap_truncations = bootstrap_truncations
        self.life_losses = LifeLosses(venv, n) if life_loss_ends else None
        self.runners = [PolicyRunner(m, n, device, generator) for m in models]
        self.stacked = StackedRunner(self.runners) if len(models) > 1 else None
        self._is_opponent = np.zeros(n, dtype=bool)
        self.opponent: PolicyRunner | None = None
        if opponent_envs is not None and len(opponent_envs):
            if len(models) > 1:
                raise ValueError("opponent_envs need a single policy; a population plays itself")
            self._is_opponent[np.asarray(opponent_envs)] = True
            frozen = copy.deepcopy(models[0]).eval().requires_grad_(False)
            self.opponent = PolicyRunner(frozen, n, device, generator)
        first = models[0]
        batches = batches or [
            [
                TrajectoryBatch(
                    T,
                    B,
                    venv.single_observation_space,
                    first.action_dist.action_shape,
                    m.rnn_size,
                    policy=policy,
                    action_dtype=first.action_dist.action_dtype,
                )
                for _ in range(num_batches)
            ]
            for policy, m in enumerate(models)
        ]
        self.columns = Columns(batches, n, recvs_per_round=-(-n // venv.batch_size))
        # Who plays each row now, and who takes it over at its next episode start (-1: same).
        self._agents = agents_per_game
        self.pairing: Pairing = pairing or UniformPairing(len(models))
        self._policy = np.zeros(n, dtype=np.int64)
        self._next_policy = np.full(n, -1, dtype=np.int64)
        self._version = np.zeros(n, dtype=np.int64)
        self.shaping = Shaping(len(models), n)
        self._started = np.zeros(n, dtype=bool)  # the env's first observation came
        self._parked: tuple[Any, np.ndarray] | None = None
        self._episodes: list[Episodes] = []  # ended since the last collect(), by recv()

    @property
    def runner(self) -> PolicyRunner:
        """The first (with one policy, the only) policy's runner."""
        return self.runners[0]

    @property
    def num_policies(self) -> int:
        return len(self.runners)

    @property
    def policy_of_env(self) -> np.ndarray:
        """The policy acting for each env now (a copy)."""
        return self._policy.copy()

    def start(self, seed: int | None = None) -> None:
        """Pairs every game's first episode and resets all envs (starts them stepping)."""
        for game in range(self.venv.num_envs // self._agents):
            self._policy[self._seats(game)] = self._paired(game)
        self.venv.async_reset(seed=seed)

    def set_pairing(self, pairing: Pairing) -> None:
        """Replaces the pairing; it decides from each game's next episode start on."""
        self.pairing = pairing

    def set_shaping(self, policy: int, weights: np.ndarray | None) -> None:
        """Sets ``policy``'s shaping weights (``None``: no shaping); see
        :meth:`Shaping.set_weights <sf_train.sampling.shaping.Shaping.set_weights>`."""
        self.shaping.set_weights(policy, weights)

    def release(self, batch: TrajectoryBatch) -> None:
        """Returns a trajectory batch handed out by :meth:`collect`, once the learner is done
        with it."""
        self.columns.release(batch)

    def set_opponent(self, state_dict: dict[str, Any]) -> None:
        """Loads weights (a state dict of ``model``) into the opponent, between collects. Its
        envs forget their recurrent memory, which belonged to the previous opponent."""
        if self.opponent is None:
            raise RuntimeError("set_opponent() on a sampler without opponent_envs")
        self.opponent.model.load_state_dict(state_dict)
        self.opponent.reset(np.flatnonzero(self._is_opponent))

    def _seats(self, game: int) -> slice:
        return slice(game * self._agents, (game + 1) * self._agents)

    def _paired(self, game: int) -> np.ndarray:
        if self.num_policies == 1:
            return np.zeros(self._agents, dtype=np.int64)
        seats = np.asarray(self.pairing(game, self._agents), dtype=np.int64)
        if seats.shape != (self._agents,) or not ((seats >= 0) & (seats < self.num_policies)).all():
            raise ValueError(
                f"the pairing gave {seats.tolist()} for game {game}: give one policy index in "
                f"0..{self.num_policies - 1} per seat ({self._agents} seats)"
            )
        return seats

    def _by_policy(self, env_ids: np.ndarray, rows: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """Groups recv() rows by the policy acting for their env."""
        if self.num_policies == 1:
            return [(0, rows)] if len(rows) else []
        policies = self._policy[env_ids[rows]]
        return [(int(p), rows[policies == p]) for p in np.unique(policies)]

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
        (``learning``: which recv() rows are not the opponent's), then hands the games whose
        episodes ended to their next players."""
        columns = self.columns
        for filling, rows in columns.by_batch(env_ids, np.arange(len(env_ids))):
            e = env_ids[rows]
            t, c = torch.from_numpy(columns.t[e]), torch.from_numpy(columns.col[e])
            batch = filling.batch
            batch.rewards[t, c] = torch.from_numpy(np.asarray(reward, np.float32)[rows])
            batch.dones[t, c] = torch.from_numpy(done[rows])
            batch.truncation_values[t, c] = torch.from_numpy(truncation_values[rows])
            full = rows[columns.advance(filling, e)]
            if len(full):
                _write_obs(batch, columns.t[env_ids[full]], columns.col[env_ids[full]], obs, full)
        if done.any():
            ended = env_ids[done]
            for runner in self.runners:
                runner.reset(ended)
            if self.opponent is not None:
                self.opponent.reset(ended)
            self._pair_next(ended)
        columns.refill(env_ids[learning], self._policy)
        self._write_current(obs, env_ids, np.flatnonzero(learning))

    def _pair_next(self, ended: np.ndarray) -> None:
        """Gives the envs whose episodes just ended their next policies: a game's pairing is
        drawn when its first seat ends, and each seat takes its new policy at its own end."""
        if self.num_policies == 1:
            return
        for e in ended[ended % self._agents == 0].tolist():
            game = e // self._agents
            self._next_policy[self._seats(game)] = self._paired(game)
        for e in ended.tolist():
            policy = self._next_policy[e]
            if policy < 0:
                continue
            self._next_policy[e] = -1
            if policy != self._policy[e]:
                padded = self.columns.leave(e)
                if padded is not None:
                    _pad(*padded)
                self._policy[e] = policy

    def _write_current(self, obs: Any, env_ids: np.ndarray, rows: np.ndarray) -> None:
        """Writes the current observations of recv() rows ``rows`` (and, at a trajectory
        start, the recurrent state, and the column's steps as valid until padded)."""
        columns = self.columns
        for filling, sub in columns.by_batch(env_ids, rows):
            e = env_ids[sub]
            batch = filling.batch
            _write_obs(batch, columns.t[e], columns.col[e], obs, sub)
            first = e[columns.t[e] == 0]
            if len(first):
                cols = torch.from_numpy(columns.col[first])
                runner = self.runners[int(self._policy[first[0]])]  # one batch, one policy
                memory = runner.rnn_state[torch.from_numpy(first)]
                batch.rnn_state[cols] = memory.cpu()
                batch.valid[:, cols] = True

    def _truncation_values(
        self,
        terminated: np.ndarray,
        truncated: np.ndarray,
        info: dict[str, Any],
        env_ids: np.ndarray,
        real: np.ndarray,
        sources: Sequence[int | PolicySource],
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
        for policy, rows in self._by_policy(env_ids, cut):
            with _held(sources[policy]):
                cut_values = self.runners[policy].values(
                    _rows(info["final_obs"], rows), env_ids[rows]
                )
            values[rows] = cut_values.cpu().numpy()
        return values

    @torch.no_grad()
    def _act(self, obs: Any, env_ids: np.ndarray, sources: Sequence[int | PolicySource]) -> None:
        """Chooses every row's action (each learning row by its policy, the opponent's rows
        by the opponent), records the learning rows' choices and sends all of them in one
        call."""
        dist = self.runner.model.action_dist
        actions = torch.zeros((len(env_ids), *dist.action_shape), dtype=dist.action_dtype)
        learning = ~self._is_opponent[env_ids]
        opponent_rows = np.flatnonzero(~learning)
        if self.opponent is not None and len(opponent_rows):
            sampled = self.opponent.act(_rows(obs, opponent_rows), env_ids[opponent_rows])
            actions[torch.from_numpy(opponent_rows)] = sampled.cpu()
        learning_rows = np.flatnonzero(learning)
        if len(learning_rows):
            self._decide(obs, env_ids, learning_rows, actions, sources)
        self.venv.send(dist.for_env(actions).numpy(), env_ids)

    def _decide(
        self,
        obs: Any,
        env_ids: np.ndarray,
        learning_rows: np.ndarray,
        actions: torch.Tensor,
        sources: Sequence[int | PolicySource],
    ) -> None:
        """Chooses the actions of recv() rows ``learning_rows`` (into ``actions``), each by
        the policy playing its env, and records them in their batches."""
        ids = env_ids[learning_rows]
        with ExitStack() as held:
            versions = [held.enter_context(_held(source)) for source in sources]
            if self.stacked is None:
                decision = self.runner.decide(_rows(obs, learning_rows), ids)
            else:
                decision = self.stacked.decide(_rows(obs, learning_rows), ids, self._policy[ids])
        sampled, log_probs, values = (x.cpu() for x in decision)
        actions[torch.from_numpy(learning_rows)] = sampled
        columns = self.columns
        for policy, rows in self._by_policy(env_ids, learning_rows):
            policy_version = versions[policy]
            self._version[env_ids[rows]] = policy_version
            written = 0
            for filling, sub in columns.by_batch(env_ids, rows):
                e = env_ids[sub]
                t, c = torch.from_numpy(columns.t[e]), torch.from_numpy(columns.col[e])
                # Positions of these recv() rows among the learning rows just computed.
                r = torch.from_numpy(np.searchsorted(learning_rows, sub))
                batch = filling.batch
                batch.actions[t, c] = sampled[r]
                batch.log_probs[t, c] = log_probs[r]
                batch.values[t, c] = values[r]
                batch.policy_versions[t, c] = policy_version
                written += len(sub)
            columns.count(policy, len(rows), written)

    def collect(
        self, policy_version: int | PolicySource | Sequence[int | PolicySource]
    ) -> CollectResult:
        """Steps the envs until the oldest trajectory batch of some policy is complete and
        returns it, with the episodes that ended meanwhile.

        The envs of the ``recv()`` that completes the batch are left waiting (their
        observations are kept) and act at the start of the next call, with the weights the
        learner has produced in between: with ``batch_size == num_envs`` this makes sampling
        synchronous with zero policy lag.

        Args:
            policy_version: Version of the model's weights, stored with every step; or, when a
                learner updates the weights concurrently, a :data:`~sf_train.sampling.protocols.PolicySource` asked before
                every forward pass. With several policies, one of them per policy.
        """
        sources = (
            list(policy_version)
            if isinstance(policy_version, list | tuple)
            else [cast("int | PolicySource", policy_version)]
        )
        if len(sources) != self.num_policies:
            raise ValueError(
                f"collect() got {len(sources)} policy versions for {self.num_policies} policies"
            )
        ready = self.columns.ready()
        if ready is None and self._parked is not None:
            self._act(*self._parked, sources)
            self._parked = None
        while ready is None:
            obs, reward, terminated, truncated, info = self.venv.recv()
            env_ids = np.asarray(info["env_id"]).astype(np.int64)
            self.columns.answered(env_ids)
            done = np.logical_or(terminated, truncated)
            learning = ~self._is_opponent[env_ids]
            # Rows whose results a game produced: not those of a failed worker's replacement,
            # whose episode ends are neither real returns nor time limits (see the module doc).
            real = learning
            if "worker_restarted" in info:
                restarted = np.asarray(info["worker_restarted"], dtype=bool)
                self.columns.drop(env_ids[restarted & learning])
                real = learning & ~restarted
            fresh = ~self._started[env_ids]
            self._started[env_ids] = True
            if self.shaping.active:
                groups = self._by_policy(env_ids, np.arange(len(env_ids)))
                shaping = self.shaping.rewards(info, env_ids, fresh, groups)
                reward = np.asarray(reward, np.float64) + shaping
            mask = (
                np.asarray(info.get("_episode_summary", np.zeros(len(env_ids), dtype=bool))) & real
            )
            if mask.any():
                self._episodes.append(self._ended(info, env_ids, mask))
            self.shaping.end_episodes(env_ids[done])
            cut_values = self._truncation_values(
                terminated, truncated, info, env_ids, real, sources
            )
            # A lost life ends what is learnt (and remembered), not the game (algo.life_loss_ends).
            ends = done
            if self.life_losses is not None:
                ends = done | self.life_losses.lost(info, env_ids, done)
            self._record(obs, reward, ends, cut_values, env_ids, learning)
            ready = self.columns.ready()
            if ready is not None:
                self._parked = (_copy(obs), env_ids.copy())
                break
            self._act(obs, env_ids, sources)
        steps, dropped = self.columns.counts()
        episodes, self._episodes = Episodes.joined(self._episodes), []
        return CollectResult(
            self.columns.take(ready),
            episodes,
            int(steps.sum()),
            dropped_steps=dropped,
            policy_steps=steps,
        )

    def _ended(self, info: dict[str, Any], env_ids: np.ndarray, mask: np.ndarray) -> Episodes:
        """The episodes that recv() rows ``mask`` ended."""
        ended = env_ids[mask]
        summary = info["episode_summary"]
        variables = info.get("final_info", {}).get("variables")
        return Episodes(
            returns=np.asarray(summary["r"])[mask].astype(np.float64),
            lengths=np.asarray(summary["l"])[mask].astype(np.int64),
            env_ids=ended,
            policies=self._policy[ended],
            versions=self._version[ended],
            shaping=self.shaping.episode_returns[ended].astype(np.float64),
            variables=None if variables is None else np.asarray(variables)[mask].astype(np.float64),
        )

    def state_dict(self) -> dict[str, Any]:
        """What a fresh sampler needs to continue exactly where this one stands.

        Only defined between two :meth:`collect` calls of synchronous sampling
        (``batch_size == num_envs``) with one policy, when every env waits for its next action
        and nothing is in flight; the env's own state must be saved separately.

        Raises:
            RuntimeError: If some envs are still stepping (asynchronous sampling), or for
                several policies.
        """
        if self._parked is None or len(self._parked[1]) != self.venv.num_envs:
            raise RuntimeError(
                "the sampler can only be saved between collect() calls of synchronous sampling "
                "(batch_size == num_envs); asynchronous runs resume from fresh episodes"
            )
        if self.num_policies > 1:
            raise RuntimeError("a population's sampler resumes from fresh episodes")
        obs, env_ids = self._parked
        rnn_state = self.runner.rnn_state.cpu().clone()
        return {"rnn_state": rnn_state, "obs": _copy(obs), "env_ids": env_ids}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores :meth:`state_dict` into a sampler that has not started; call it instead of
        :meth:`start`, after restoring the env's state."""
        if not self.columns.untouched:
            raise RuntimeError("load_state_dict() needs a fresh sampler: do not start() it first")
        obs, env_ids = state["obs"], np.asarray(state["env_ids"], dtype=np.int64)
        self.runner.rnn_state.copy_(torch.as_tensor(state["rnn_state"]))
        self._started[env_ids] = True
        learning = ~self._is_opponent[env_ids]
        self.columns.refill(env_ids[learning], self._policy)
        self._write_current(obs, env_ids, np.flatnonzero(learning))
        self._parked = (obs, env_ids)


def _write_obs(
    batch: TrajectoryBatch, t: np.ndarray, c: np.ndarray, obs: Any, rows: np.ndarray
) -> None:
    """Copies recv() rows ``rows`` into the batch's cells ``(t, c)``."""
    tt, cc = torch.from_numpy(t), torch.from_numpy(c)
    if isinstance(obs, dict):
        for k, v in obs.items():
            batch.obs[k][tt, cc] = torch.from_numpy(np.ascontiguousarray(v[rows]))
    else:
        # A screen Box's batch is one tensor.
        cast(torch.Tensor, batch.obs)[tt, cc] = torch.from_numpy(np.ascontiguousarray(obs[rows]))


def _pad(batch: TrajectoryBatch, col: int, t: int) -> None:
    """Makes steps ``t`` to ``T - 1`` of column ``col`` padding after an episode's end: invalid
    and ``done``, so nothing flows back into the real steps (see
    :meth:`Columns.leave <sf_train.sampling.columns.Columns.leave>`)."""
    batch.valid[t:, col] = False
    batch.dones[t:, col] = True
    batch.rewards[t:, col] = 0.0
    batch.truncation_values[t:, col] = 0.0
    batch.policy_versions[t:, col] = batch.policy_versions[t - 1, col]
