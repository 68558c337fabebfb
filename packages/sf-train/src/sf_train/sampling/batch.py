"""A trajectory batch: ``B`` trajectories of ``T`` steps in preallocated storage, time-major
``[T, B]`` (:class:`TrajectoryBatch`), and what :meth:`Sampler.collect
<sf_train.sampling.sampler.Sampler.collect>` hands out with a complete one: the episodes that
ended meanwhile (:class:`Episodes`) and the steps counted (:class:`CollectResult`).

The sampler alone writes a trajectory batch, each env's steps into a column; the learner reads
the whole batch. Nothing is allocated per step. On CUDA hosts the (CPU) tensors are pinned so
the copy to the GPU can overlap with compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor

from sf_train.model.network import Obs

__all__ = ["CollectResult", "Episodes", "TrajectoryBatch"]


def _alloc(shape: tuple[int, ...], dtype: torch.dtype, pin: bool) -> Tensor:
    return torch.zeros(shape, dtype=dtype, pin_memory=pin)


def _shape(space: spaces.Space) -> tuple[int, ...]:
    # A Box's shape (gymnasium types a Space's as optional).
    return cast(tuple[int, ...], space.shape)


def _torch_dtype(space: spaces.Space) -> torch.dtype:
    return torch.uint8 if space.dtype == "uint8" else torch.float32


class TrajectoryBatch:
    """A trajectory batch: ``B`` trajectories of ``T`` steps, what one learner step trains on.

    Attributes:
        obs: Observations ``[T + 1, B, ...]``; row ``T`` is the observation after the last
            step, whose value bootstraps V-trace. A tensor, or a dict for Dict spaces.
        actions: Actions taken, ``[T, B, *action_shape]``: int64, or float32 for Box actions.
        log_probs: Behaviour-policy log-probs of the actions, ``[T, B]``.
        values: Behaviour-time value estimates, ``[T, B]`` (for value clipping).
        rewards: Rewards, ``[T, B]``.
        dones: Whether the episode ended after step ``t`` (terminated or truncated), ``[T, B]``.
        truncation_values: Where a time limit cut the episode after step ``t``, the behaviour
            policy's value of the final observation (the bootstrap that the cut hides), else 0,
            ``[T, B]``.
        policy_versions: Version of the policy that chose each action, ``[T, B]`` int64.
        valid: Whether step ``t`` was played, ``[T, B]``; false only in the padding after an
            episode whose row went to another policy of a population.
        rnn_state: Recurrent state before step 0, ``[B, H]`` (already zeroed at episode starts).
        policy: The policy (of a population) whose trajectories it holds.
    """

    def __init__(
        self,
        T: int,
        B: int,
        observation_space: spaces.Space,
        action_shape: tuple[int, ...],
        rnn_size: int,
        pin_memory: bool | None = None,
        policy: int = 0,
        action_dtype: torch.dtype = torch.int64,
    ) -> None:
        pin = torch.cuda.is_available() if pin_memory is None else pin_memory
        self.T, self.B = T, B
        self.policy = policy
        self.obs: Obs
        if isinstance(observation_space, spaces.Dict):
            self.obs = {
                k: _alloc((T + 1, B, *_shape(s)), _torch_dtype(s), pin)
                for k, s in observation_space.spaces.items()
            }
        else:
            self.obs = _alloc(
                (T + 1, B, *_shape(observation_space)), _torch_dtype(observation_space), pin
            )
        self.actions = _alloc((T, B, *action_shape), action_dtype, pin)
        self.log_probs = _alloc((T, B), torch.float32, pin)
        self.values = _alloc((T, B), torch.float32, pin)
        self.rewards = _alloc((T, B), torch.float32, pin)
        self.dones = _alloc((T, B), torch.bool, pin)
        self.truncation_values = _alloc((T, B), torch.float32, pin)
        self.policy_versions = _alloc((T, B), torch.int64, pin)
        self.valid = torch.ones((T, B), dtype=torch.bool, pin_memory=pin)
        self.rnn_state = _alloc((B, rnn_size), torch.float32, pin)

    def resets(self) -> Tensor:
        """Episode starts for the ``T + 1`` observation rows, ``[T + 1, B]`` bool.

        Row 0 is false because ``rnn_state`` is already zeroed where an episode starts.
        """
        return torch.cat([torch.zeros(1, self.B, dtype=torch.bool), self.dones], dim=0)

    def to(self, device: torch.device) -> dict[str, Tensor | dict[str, Tensor]]:
        """All fields on ``device`` as a dict (non-blocking from pinned memory)."""

        def move(x: Tensor) -> Tensor:
            return x.to(device, non_blocking=True)

        obs = (
            {k: move(v) for k, v in self.obs.items()}
            if isinstance(self.obs, dict)
            else move(self.obs)
        )
        fields = (
            "actions",
            "log_probs",
            "values",
            "rewards",
            "dones",
            "truncation_values",
            "policy_versions",
            "valid",
        )
        out: dict[str, Tensor | dict[str, Tensor]] = {f: move(getattr(self, f)) for f in fields}
        out["obs"] = obs
        out["rnn_state"] = move(self.rnn_state)
        out["resets"] = move(self.resets())
        return out


@dataclass(slots=True)
class Episodes:
    """The episodes that ended while trajectory batches were filled, one row each.

    One object per ``recv()`` in which episodes ended (rare next to steps), joined once per
    :class:`CollectResult`; nothing here is touched per step.

    Attributes:
        returns: Each episode's return (the env's reward, without shaping), float64.
        lengths: Its length in agent steps, int64.
        env_ids: The env it ended in, int64.
        policies: The policy that played it, int64.
        versions: That policy's version at the episode's last action, int64.
        shaping: The shaping reward it earned on top of its return (0 without shaping
            weights; see :meth:`Sampler.set_shaping
            <sf_train.sampling.sampler.Sampler.set_shaping>`), float64.
        variables: The env's game variables at its end, ``[episodes, V]`` float64 (from
            ``info["final_info"]["variables"]``); None when the env reports none.
    """

    returns: np.ndarray
    lengths: np.ndarray
    env_ids: np.ndarray
    policies: np.ndarray
    versions: np.ndarray
    shaping: np.ndarray
    variables: np.ndarray | None = None

    @staticmethod
    def empty() -> Episodes:
        """No episodes."""
        ints = np.zeros(0, np.int64)
        return Episodes(np.zeros(0), ints, ints, ints, ints, np.zeros(0))

    @staticmethod
    def joined(parts: Sequence[Episodes]) -> Episodes:
        """The rows of ``parts``, in order (their variables: of the parts that have them)."""
        if not parts:
            return Episodes.empty()
        variables = [p.variables for p in parts if p.variables is not None]
        return Episodes(
            np.concatenate([p.returns for p in parts]),
            np.concatenate([p.lengths for p in parts]),
            np.concatenate([p.env_ids for p in parts]),
            np.concatenate([p.policies for p in parts]),
            np.concatenate([p.versions for p in parts]),
            np.concatenate([p.shaping for p in parts]),
            np.concatenate(variables) if variables else None,
        )

    def __len__(self) -> int:
        return len(self.returns)

    def rows(self, selected: np.ndarray) -> Episodes:
        """The episodes of ``selected`` (a mask or indices of rows)."""
        return Episodes(
            self.returns[selected],
            self.lengths[selected],
            self.env_ids[selected],
            self.policies[selected],
            self.versions[selected],
            self.shaping[selected],
            None if self.variables is None else self.variables[selected],
        )

    def shifted(self, offset: int) -> Episodes:
        """The same episodes with ``offset`` added to their env ids (a sampler process's envs
        among all of the trainer's)."""
        return replace(self, env_ids=self.env_ids + offset)


@dataclass
class CollectResult:
    """What :meth:`Sampler.collect <sf_train.sampling.sampler.Sampler.collect>` hands out: a
    complete trajectory batch and what happened while it was sampled.

    Attributes:
        batch: The trajectory batch; give it back with :meth:`Sampler.release
            <sf_train.sampling.sampler.Sampler.release>` once learned.
        episodes: The episodes (of every policy) that ended since the previous result.
        env_steps: Steps of the learning agents (every env that is not an opponent's) since
            the previous result.
        dropped_steps: Learning-agent steps discarded since the previous result because of a
            fault (see :mod:`sf_train.sampling.sampler`); ``env_steps`` does not count them.
        policy_steps: ``env_steps`` by policy, ``[num_policies]``.
    """

    batch: TrajectoryBatch
    episodes: Episodes
    env_steps: int
    dropped_steps: int = 0
    policy_steps: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))

    @property
    def policy(self) -> int:
        """The policy whose trajectories ``batch`` holds."""
        return self.batch.policy
